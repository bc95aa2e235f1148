/* parquet.c: rows of a Parquet file as JSON text (parquet.h): a row group's columns decoded (parquet_page.c),
 * then each row assembled from the columns' repetition and definition levels (Dremel's record assembly). */
#include "io/parquet.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "io/parquet_internal.h"

#define GROUP_BUDGET (4UL << 30)

struct ParquetReader {
    char *path;
    int fd;
    PqMeta m;
    PqColumn *cols; /* [n_leaves] of the current row group */
    int group;      /* current row group, -1 before the first */
    int64_t row_in_group, row; /* rows returned: of this group, of the file */
    char *buf;      /* the row's JSON text */
    size_t len, cap, max;
    char why[512];
};

int parquet_is_file(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat sb;
    char magic[4];
    int yes = !fstat(fd, &sb) && S_ISREG(sb.st_mode) && pread(fd, magic, 4, 0) == 4 && !memcmp(magic, "PAR1", 4);
    close(fd);
    return yes;
}

ParquetReader *parquet_open(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return NULL;
    }
    ParquetReader *r = xcalloc(1, sizeof *r);
    char why[512];
    if (pq_meta_read(fd, (int64_t)sb.st_size, &r->m, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        close(fd);
        free(r);
        return NULL;
    }
    size_t pl = strlen(path) + 1;
    r->path = memcpy(xmalloc(pl), path, pl);
    r->fd = fd, r->group = -1, r->max = jsonl_max_line();
    r->cols = xcalloc((size_t)r->m.n_leaves, sizeof(PqColumn));
    return r;
}

int64_t parquet_rows(const ParquetReader *r) { return r->m.num_rows; }

/* ---- the row's text ---- */

static int out(ParquetReader *r, const char *s, size_t n) {
    if (r->len + n > r->max) {
        snprintf(r->why, sizeof r->why, "its JSON text is longer than %zu bytes (raise the limit with --max-line-bytes)", r->max);
        return -1;
    }
    if (r->len + n + 1 > r->cap) {
        r->cap = r->len + n + 1 > 2 * r->cap ? r->len + n + 1 : 2 * r->cap;
        r->buf = xrealloc(r->buf, r->cap);
    }
    memcpy(r->buf + r->len, s, n);
    r->len += n;
    r->buf[r->len] = 0;
    return 0;
}

static int outs(ParquetReader *r, const char *s) { return out(r, s, strlen(s)); }

static int out_string(ParquetReader *r, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (out(r, "\"", 1)) return -1;
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        if (out(r, s + from, i - from)) return -1;
        char e[7] = {'\\', (char)ch, 0};
        if (ch == '\n') e[1] = 'n';
        else if (ch == '\t') e[1] = 't';
        else if (ch == '\r') e[1] = 'r';
        else if (ch < 0x20) snprintf(e, sizeof e, "\\u00%c%c", hex[ch >> 4], hex[ch & 15]);
        if (outs(r, e)) return -1;
        from = i + 1;
    }
    return out(r, s + from, n - from) || out(r, "\"", 1) ? -1 : 0;
}

static int bad(ParquetReader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(ParquetReader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    return -1;
}

static int leaf_value(ParquetReader *r, const PqNode *nd, PqColumn *c) {
    if (c->vat >= c->n_val) return bad(r, "column %s: fewer values than its levels say", nd->path);
    const PqValue *v = &c->val[c->vat++];
    char num[48];
    int as = nd->as;
    if (as == PQ_AS_STRING) return out_string(r, c->heap + v->s.off, v->s.len);
    if (as == PQ_AS_BOOL) return outs(r, v->i ? "true" : "false");
    if (as < 0) { /* unsigned */
        uint64_t u = nd->type == PQ_INT32 ? (uint64_t)(uint32_t)v->i : (uint64_t)v->i;
        snprintf(num, sizeof num, "%llu", (unsigned long long)u);
    } else if (nd->type == PQ_INT32 || nd->type == PQ_INT64) {
        snprintf(num, sizeof num, "%lld", (long long)v->i);
    } else {
        if (isnan(v->d)) return outs(r, "null");
        if (isinf(v->d)) return bad(r, "column %s: an infinite value, which JSON cannot hold", nd->path);
        json_number_text(v->d, as == PQ_AS_FLOAT, num);
    }
    return outs(r, num);
}

static int value(ParquetReader *r, int i);

/* one entry consumed from every leaf under node i: the node is null, or an empty list (each entry's definition
 * level below limit) */
static int skip(ParquetReader *r, int i, int limit) {
    const PqNode *nd = &r->m.nodes[i];
    for (int l = nd->first_leaf; l < nd->first_leaf + nd->n_leaves; l++) {
        PqColumn *c = &r->cols[l];
        if (c->at >= c->n) return bad(r, "column %s: its levels end inside a row", r->m.nodes[r->m.leaves[l]].path);
        if (c->def[c->at] >= limit)
            return bad(r, "column %s: its levels disagree with the other columns'", r->m.nodes[r->m.leaves[l]].path);
        c->at++;
    }
    return 0;
}

/* the content of node i, its own null-ness and repetition already dealt with */
static int content(ParquetReader *r, int i) {
    const PqNode *nd = &r->m.nodes[i];
    if (nd->kind == PQ_KIND_LEAF) {
        PqColumn *c = &r->cols[nd->first_leaf];
        if (c->def[c->at] != nd->def) return bad(r, "column %s: a missing value where the schema requires one", nd->path);
        c->at++;
        return leaf_value(r, nd, c);
    }
    if (out(r, "{", 1)) return -1;
    for (int k = 0; k < nd->n_children; k++) {
        const PqNode *ch = &r->m.nodes[nd->children[k]];
        if ((k && out(r, ",", 1)) || out_string(r, ch->name, strlen(ch->name)) || out(r, ":", 1) ||
            value(r, nd->children[k]))
            return -1;
    }
    return out(r, "}", 1);
}

/* a list: node l, its repeated node rp, its element node el (-1: the repeated node's own content) */
static int list(ParquetReader *r, int l, int rp, int el) {
    const PqNode *R = &r->m.nodes[rp];
    PqColumn *d = &r->cols[R->first_leaf];
    if (d->def[d->at] < R->def) return skip(r, l, R->def) || outs(r, "[]") ? -1 : 0;
    if (out(r, "[", 1)) return -1;
    for (int first = 1;; first = 0) {
        if ((!first && out(r, ",", 1)) || (el >= 0 ? value(r, el) : content(r, rp))) return -1;
        if (d->at >= d->n || d->rep[d->at] != R->rep) break;
        if (d->def[d->at] < R->def) return bad(r, "column %s: an empty element inside a list", R->path);
    }
    return out(r, "]", 1);
}

static int value(ParquetReader *r, int i) {
    const PqNode *nd = &r->m.nodes[i];
    PqColumn *d = &r->cols[nd->first_leaf];
    if (d->at >= d->n) return bad(r, "column %s: its levels end inside a row", r->m.nodes[r->m.leaves[nd->first_leaf]].path);
    if (nd->repetition == PQ_OPTIONAL && d->def[d->at] < nd->def) return skip(r, i, nd->def) || outs(r, "null") ? -1 : 0;
    if (nd->repeated == i) return list(r, i, i, -1); /* a bare repeated field */
    if (nd->kind == PQ_KIND_LIST) return list(r, i, nd->repeated, nd->elem);
    return content(r, i);
}

/* ---- row groups ---- */

static void drop_group(ParquetReader *r) {
    for (int l = 0; l < r->m.n_leaves; l++) pq_column_free(&r->cols[l]);
}

static int load_group(ParquetReader *r, int g, char *err, size_t errlen) {
    size_t budget = GROUP_BUDGET;
    char why[768];
    drop_group(r);
    for (int l = 0; l < r->m.n_leaves; l++)
        if (pq_column_read(r->fd, &r->m, g, l, &r->cols[l], &budget, why, sizeof why)) {
            drop_group(r);
            snprintf(err, errlen, "%s: row group %d: %s", r->path, g + 1, why);
            return -1;
        }
    return 0;
}

int parquet_next(ParquetReader *r, const char **json, size_t *len, int64_t *row, char *err, size_t errlen) {
    while (r->group < 0 || r->row_in_group == r->m.groups[r->group].num_rows) {
        if (r->group >= 0) /* every level of the group consumed by its rows */
            for (int l = 0; l < r->m.n_leaves; l++)
                if (r->cols[l].at != r->cols[l].n)
                    return snprintf(err, errlen, "%s: row group %d, column %s: more values than its %lld rows", r->path,
                                    r->group + 1, r->m.nodes[r->m.leaves[l]].path, (long long)r->m.groups[r->group].num_rows), -1;
        if (r->group + 1 >= r->m.n_groups) return drop_group(r), 0;
        if (load_group(r, ++r->group, err, errlen)) return -1;
        r->row_in_group = 0;
    }
    r->row++, r->row_in_group++;
    r->len = 0;
    r->why[0] = 0;
    int rc = 0;
    for (int l = 0; l < r->m.n_leaves && !rc; l++) {
        const PqColumn *c = &r->cols[l];
        if (c->at >= c->n || c->rep[c->at] != 0)
            rc = bad(r, "column %s: its levels do not start a row here", r->m.nodes[r->m.leaves[l]].path);
    }
    if (!rc) rc = content(r, 0);
    if (rc) return snprintf(err, errlen, "%s:row %lld: %s", r->path, (long long)r->row, r->why), -1;
    *json = r->buf, *len = r->len, *row = r->row;
    return 1;
}

void parquet_close(ParquetReader *r) {
    if (!r) return;
    drop_group(r);
    pq_meta_free(&r->m);
    close(r->fd);
    free(r->cols), free(r->buf), free(r->path);
    free(r);
}
