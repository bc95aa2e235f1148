/* parquet_meta.c: a Parquet file's footer (FileMetaData, Thrift compact) into the schema tree and the row groups'
 * column chunks, every size and offset checked against the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "io/internal.h"
#include "io/parquet_internal.h"
#include "io/thrift.h"

#define FOOTER_MAX (256L << 20) /* the footer of a file with thousands of row groups is a few MB */

typedef struct {
    ThriftCursor c;
    char *err;
    size_t errlen;
} Rd;

/* a schema element as the footer gives it */
typedef struct {
    char *name;
    int type, type_length, repetition, n_children, converted, logical, int_bits, int_signed, has_rep;
} RawElem;

static int bad(char *err, size_t errlen, const char *fmt, const char *a) {
    snprintf(err, errlen, fmt, a);
    return -1;
}

/* LogicalType is a union: which member is set, and the width and sign of INTEGER */
static void read_logical(ThriftCursor *c, RawElem *e) {
    int last = 0, id, t;
    while (thrift_field(c, &last, &id, &t)) {
        e->logical = id;
        if (id == 10 && t == TH_STRUCT) { /* IntType { 1: bitWidth i8, 2: isSigned bool } */
            int l2 = 0, id2, t2;
            while (thrift_field(c, &l2, &id2, &t2)) {
                if (id2 == 1 && t2 == TH_BYTE && c->p < c->end) e->int_bits = (int8_t)*c->p++;
                else if (id2 == 2 && (t2 == TH_TRUE || t2 == TH_FALSE)) e->int_signed = thrift_field_bool(t2);
                else thrift_skip(c, t2);
            }
        } else {
            thrift_skip(c, t);
        }
    }
}

static void read_elem(ThriftCursor *c, RawElem *e) {
    int last = 0, id, t;
    *e = (RawElem){.type = -1, .converted = -1, .int_signed = 1};
    while (thrift_field(c, &last, &id, &t)) {
        if (id == 1 && t == TH_I32) e->type = thrift_i32(c);
        else if (id == 2 && t == TH_I32) e->type_length = thrift_i32(c);
        else if (id == 3 && t == TH_I32) e->repetition = thrift_i32(c), e->has_rep = 1;
        else if (id == 4 && t == TH_BINARY) {
            size_t n;
            const uint8_t *s = thrift_binary(c, &n);
            if (s && !e->name) {
                e->name = xmalloc(n + 1);
                memcpy(e->name, s, n);
                e->name[n] = 0;
            }
        } else if (id == 5 && t == TH_I32) e->n_children = thrift_i32(c);
        else if (id == 6 && t == TH_I32) e->converted = thrift_i32(c);
        else if (id == 10 && t == TH_STRUCT) read_logical(c, e);
        else thrift_skip(c, t);
    }
}

/* node `at` of the flat list becomes node index *next of the tree; its subtree follows it */
static int build(PqMeta *m, RawElem *raw, int n_raw, int *at, int parent, int depth, char *err, size_t errlen);

static int leaf_as(PqNode *nd, const RawElem *e, char *err, size_t errlen) {
    switch (nd->type) {
    case PQ_BOOLEAN: nd->as = PQ_AS_BOOL; return 0;
    case PQ_FLOAT: nd->as = PQ_AS_FLOAT; return 0;
    case PQ_DOUBLE: nd->as = PQ_AS_NUMBER; return 0;
    case PQ_INT32:
    case PQ_INT64:
        if (e->converted == 5 || e->logical == 5) return bad(err, errlen, "column %s: DECIMAL values are not read", nd->path);
        nd->as = PQ_AS_NUMBER;
        /* unsigned: UINT_8..UINT_64, or INTEGER(isSigned false): printed as unsigned (parquet.c) */
        if ((e->converted >= 11 && e->converted <= 14) || (e->logical == 10 && !e->int_signed)) nd->as = -1 - PQ_AS_NUMBER;
        return 0;
    case PQ_BYTE_ARRAY:
        if (e->converted == 5 || e->logical == 5) return bad(err, errlen, "column %s: DECIMAL values are not read", nd->path);
        nd->as = PQ_AS_STRING; /* STRING, ENUM, JSON or plain binary: text, checked as UTF-8 value by value */
        return 0;
    case PQ_INT96: return bad(err, errlen, "column %s: INT96 (legacy timestamps) is not read", nd->path);
    case PQ_FIXED:
        return bad(err, errlen, "column %s: FIXED_LEN_BYTE_ARRAY (UUID, decimal, float16) is not read", nd->path);
    default: return bad(err, errlen, "column %s: an unknown physical type", nd->path);
    }
}

static const PqMeta *sort_meta;
static int by_child_name(const void *a, const void *b) {
    return strcmp(sort_meta->nodes[*(const int *)a].name, sort_meta->nodes[*(const int *)b].name);
}

/* two children of one group with the same name would make a JSON object with a key twice */
static int duplicate_child(const PqMeta *m, const PqNode *nd, char *err, size_t errlen) {
    int *idx = xmalloc(sizeof(int) * (size_t)nd->n_children), rc = 0;
    memcpy(idx, nd->children, sizeof(int) * (size_t)nd->n_children);
    sort_meta = m;
    qsort(idx, (size_t)nd->n_children, sizeof(int), by_child_name);
    for (int i = 1; i < nd->n_children && !rc; i++)
        if (!strcmp(m->nodes[idx[i]].name, m->nodes[idx[i - 1]].name))
            rc = bad(err, errlen, "two columns named %s", m->nodes[idx[i]].path);
    free(idx);
    return rc;
}

static int build(PqMeta *m, RawElem *raw, int n_raw, int *at, int parent, int depth, char *err, size_t errlen) {
    if (*at >= n_raw) return bad(err, errlen, "%s", "the schema ends inside a group");
    if (depth > PQ_MAX_LEVEL) return bad(err, errlen, "%s", "the schema is nested too deeply");
    RawElem *e = &raw[(*at)++];
    int me = m->n_nodes++;
    PqNode *nd = &m->nodes[me];
    *nd = (PqNode){.name = e->name ? e->name : xcalloc(1, 1), .type = e->type, .elem = -1, .repeated = -1};
    e->name = NULL;
    if (st_utf8_check((const unsigned char *)nd->name, strlen(nd->name)) != strlen(nd->name))
        return bad(err, errlen, "%s", "a column name that is not UTF-8 text");
    nd->repetition = parent < 0 ? PQ_REQUIRED : e->repetition;
    if (parent >= 0 && (!e->has_rep || e->repetition < 0 || e->repetition > 2))
        return bad(err, errlen, "schema element %s has no valid repetition", nd->name);
    const PqNode *up = parent >= 0 ? &m->nodes[parent] : NULL;
    nd->def = (up ? up->def : 0) + (nd->repetition != PQ_REQUIRED);
    nd->rep = (up ? up->rep : 0) + (nd->repetition == PQ_REPEATED);
    if (nd->def > PQ_MAX_LEVEL) return bad(err, errlen, "%s", "the schema is nested too deeply");
    size_t pl = (up && up->path[0] ? strlen(up->path) + 1 : 0) + strlen(nd->name) + 1;
    nd->path = xmalloc(pl);
    snprintf(nd->path, pl, "%s%s%s", up && up->path[0] ? up->path : "", up && up->path[0] ? "." : "", parent < 0 ? "" : nd->name);
    if (e->converted == 1 || e->converted == 2 || e->logical == 2)
        return bad(err, errlen, "column %s: a map is not read (lists and structs are)", nd->path[0] ? nd->path : nd->name);
    nd->first_leaf = m->n_leaves;
    if (e->n_children <= 0) {
        if (parent < 0 || e->type < 0) return bad(err, errlen, "schema element %s: a group without children", nd->path);
        nd->kind = PQ_KIND_LEAF;
        if (leaf_as(nd, e, err, errlen)) return -1;
        m->leaves[m->n_leaves++] = me;
        nd->n_leaves = 1;
        nd = NULL;
    } else {
        if (e->n_children > n_raw - *at) return bad(err, errlen, "schema element %s: more children than elements", nd->path);
        nd->type = -1;
        nd->n_children = e->n_children;
        nd->children = xmalloc(sizeof(int) * (size_t)e->n_children);
        nd->kind = PQ_KIND_STRUCT;
        for (int i = 0; i < e->n_children; i++) {
            int ch = m->n_nodes;
            if (build(m, raw, n_raw, at, me, depth + 1, err, errlen)) return -1;
            m->nodes[me].children[i] = ch;
        }
        nd = &m->nodes[me];
        nd->n_leaves = m->n_leaves - nd->first_leaf;
        if (duplicate_child(m, nd, err, errlen)) return -1;
        if (e->converted == 3 || e->logical == 3) { /* LIST: one repeated child (the spec's backward-compatibility rules) */
            const PqNode *r = &m->nodes[nd->children[0]];
            if (nd->n_children != 1 || r->repetition != PQ_REPEATED)
                return bad(err, errlen, "column %s: a LIST without one repeated child", nd->path);
            nd->kind = PQ_KIND_LIST, nd->repeated = nd->children[0];
            char tuple[512];
            snprintf(tuple, sizeof tuple, "%s_tuple", nd->name);
            int two_level = r->kind == PQ_KIND_LEAF || r->n_children != 1 || !strcmp(r->name, "array") || !strcmp(r->name, tuple);
            nd->elem = two_level ? -1 : r->children[0];
        }
    }
    return 0;
}

/* repeated nodes that no LIST owns: lists of themselves (kind kept in `repeated`) */
static void mark_bare_repeated(PqMeta *m) {
    char *owned = xcalloc((size_t)m->n_nodes, 1);
    for (int j = 0; j < m->n_nodes; j++)
        if (m->nodes[j].kind == PQ_KIND_LIST) owned[m->nodes[j].repeated] = 1;
    for (int i = 1; i < m->n_nodes; i++)
        if (m->nodes[i].repetition == PQ_REPEATED && !owned[i]) m->nodes[i].repeated = i; /* parquet.c: a list of itself */
    free(owned);
}

static int read_chunk(ThriftCursor *c, const PqMeta *m, int leaf, PqChunk *ch, char *err, size_t errlen) {
    int last = 0, id, t, have_meta = 0;
    int64_t data_off = -1, dict_off = -1;
    const PqNode *nd = &m->nodes[m->leaves[leaf]];
    while (thrift_field(c, &last, &id, &t)) {
        if (id == 1 && t == TH_BINARY) return bad(err, errlen, "column %s: its data is in another file (file_path)", nd->path);
        if ((id == 8 || id == 9) && t != TH_STOP) return bad(err, errlen, "column %s: encrypted columns are not read", nd->path);
        if (id != 3 || t != TH_STRUCT) {
            thrift_skip(c, t);
            continue;
        }
        have_meta = 1;
        int l2 = 0, id2, t2, type = -1;
        while (thrift_field(c, &l2, &id2, &t2)) {
            if (id2 == 1 && t2 == TH_I32) type = thrift_i32(c);
            else if (id2 == 4 && t2 == TH_I32) ch->codec = thrift_i32(c);
            else if (id2 == 5 && t2 == TH_I64) ch->num_values = thrift_i64(c);
            else if (id2 == 7 && t2 == TH_I64) ch->size = thrift_i64(c);
            else if (id2 == 9 && t2 == TH_I64) data_off = thrift_i64(c);
            else if (id2 == 11 && t2 == TH_I64) dict_off = thrift_i64(c);
            else thrift_skip(c, t2);
        }
        if (!c->err && type != nd->type) return bad(err, errlen, "column %s: its chunk's type differs from the schema's", nd->path);
    }
    if (c->err) return 0; /* reported by the caller */
    if (!have_meta) return bad(err, errlen, "column %s: a chunk without metadata", nd->path);
    ch->start = dict_off > 0 && dict_off < data_off ? dict_off : data_off;
    if (ch->codec != 0 && ch->codec != 1 && ch->codec != 2 && ch->codec != 6) {
        snprintf(err, errlen, "column %s: %s compression is not read (Snappy, Zstandard, gzip and none are)", nd->path,
                 pq_codec_name(ch->codec));
        return -1;
    }
    return 0;
}

static int read_groups(ThriftCursor *c, PqMeta *m, char *err, size_t errlen) {
    int et;
    int64_t n = thrift_list(c, &et);
    if (c->err) return 0;
    if (n && et != TH_STRUCT) return bad(err, errlen, "%s", "row groups that are not structs");
    m->groups = xcalloc((size_t)n + 1, sizeof(PqGroup));
    for (int64_t g = 0; g < n && !c->err; g++) {
        PqGroup *G = &m->groups[m->n_groups++];
        G->chunks = xcalloc((size_t)m->n_leaves + 1, sizeof(PqChunk));
        G->num_rows = -1;
        int last = 0, id, t, seen = -1;
        while (thrift_field(c, &last, &id, &t)) {
            if (id == 1 && t == TH_LIST) {
                int ct;
                int64_t k = thrift_list(c, &ct);
                if (!c->err && (k != m->n_leaves || (k && ct != TH_STRUCT))) {
                    snprintf(err, errlen, "row group %lld has %lld column chunks for %d columns", (long long)g + 1,
                             (long long)k, m->n_leaves);
                    return -1;
                }
                for (int64_t i = 0; i < k && !c->err; i++)
                    if (read_chunk(c, m, (int)i, &G->chunks[i], err, errlen)) return -1;
                seen = (int)k;
            } else if (id == 3 && t == TH_I64) G->num_rows = thrift_i64(c);
            else thrift_skip(c, t);
        }
        if (!c->err && (seen < 0 || G->num_rows < 0)) {
            snprintf(err, errlen, "row group %lld has no columns or no row count", (long long)g + 1);
            return -1;
        }
    }
    return 0;
}

int pq_meta_read(int fd, int64_t file_size, PqMeta *m, char *err, size_t errlen) {
    *m = (PqMeta){0};
    uint8_t tail[8], head[4];
    if (file_size < 12) return bad(err, errlen, "%s", "too short for a Parquet file");
    if (pread(fd, head, 4, 0) != 4 || pread(fd, tail, 8, file_size - 8) != 8)
        return bad(err, errlen, "read error: %s", strerror(errno));
    if (memcmp(head, "PAR1", 4) || memcmp(tail + 4, "PAR1", 4)) {
        if (!memcmp(tail + 4, "PARE", 4)) return bad(err, errlen, "%s", "an encrypted Parquet file is not read");
        return bad(err, errlen, "%s", "not a Parquet file (no PAR1 magic at both ends)");
    }
    int64_t flen = (int64_t)tail[0] | (int64_t)tail[1] << 8 | (int64_t)tail[2] << 16 | (int64_t)tail[3] << 24;
    if (flen <= 0 || flen > file_size - 12) {
        snprintf(err, errlen, "the footer claims %lld bytes, more than the file's %lld", (long long)flen, (long long)file_size);
        return -1;
    }
    if (flen > FOOTER_MAX) return bad(err, errlen, "%s", "a footer larger than 256 MiB");
    uint8_t *buf = xmalloc((size_t)flen);
    if (pread(fd, buf, (size_t)flen, file_size - 8 - flen) != flen) {
        free(buf);
        return bad(err, errlen, "read error: %s", strerror(errno));
    }
    ThriftCursor c = {buf, buf + flen, NULL, 0};
    RawElem *raw = NULL;
    int64_t n_raw = 0, num_rows = -1;
    int rc = 0, last = 0, id, t, groups_seen = 0;
    while (!rc && thrift_field(&c, &last, &id, &t)) {
        if (id == 2 && t == TH_LIST && !raw) {
            int et;
            n_raw = thrift_list(&c, &et);
            if (c.err) break;
            if (n_raw < 1 || n_raw > PQ_MAX_NODES || et != TH_STRUCT) {
                rc = bad(err, errlen, "%s", "a schema with no elements, too many, or not structs");
                break;
            }
            raw = xcalloc((size_t)n_raw, sizeof(RawElem));
            for (int64_t i = 0; i < n_raw && !c.err; i++) read_elem(&c, &raw[i]);
            if (c.err) break;
            m->nodes = xcalloc((size_t)n_raw, sizeof(PqNode));
            m->leaves = xcalloc((size_t)n_raw, sizeof(int));
            int at = 0;
            raw[0].has_rep = 1;
            rc = build(m, raw, (int)n_raw, &at, -1, 0, err, errlen);
            if (!rc && at != n_raw) rc = bad(err, errlen, "%s", "schema elements left over after the root's children");
            if (!rc && m->n_leaves == 0) rc = bad(err, errlen, "%s", "a schema without columns");
        } else if (id == 3 && t == TH_I64) num_rows = thrift_i64(&c);
        else if (id == 4 && t == TH_LIST) {
            if (!m->nodes) {
                rc = bad(err, errlen, "%s", "row groups before the schema");
                break;
            }
            rc = read_groups(&c, m, err, errlen);
            groups_seen = 1;
        } else if (id == 8 && t == TH_STRUCT) rc = bad(err, errlen, "%s", "an encrypted Parquet file is not read");
        else thrift_skip(&c, t);
    }
    if (!rc && c.err) rc = bad(err, errlen, "a damaged footer: %s", c.err);
    if (!rc && (!m->nodes || !groups_seen || num_rows < 0)) rc = bad(err, errlen, "%s", "a footer without schema, row groups or row count");
    if (!rc) {
        mark_bare_repeated(m);
        int64_t sum = 0, data_end = file_size - 8 - flen;
        for (int g = 0; g < m->n_groups && !rc; g++) {
            sum += m->groups[g].num_rows;
            for (int l = 0; l < m->n_leaves && !rc; l++) {
                const PqChunk *ch = &m->groups[g].chunks[l];
                if (ch->start < 4 || ch->size <= 0 || ch->size > data_end - ch->start || ch->num_values < 0) {
                    snprintf(err, errlen, "row group %d, column %s: its chunk [%lld, +%lld) is not inside the file's "
                             "%lld data bytes", g + 1, m->nodes[m->leaves[l]].path, (long long)ch->start,
                             (long long)ch->size, (long long)data_end);
                    rc = -1;
                }
            }
            if (sum < 0) sum = -1;
        }
        if (!rc && sum != num_rows) {
            snprintf(err, errlen, "the footer says %lld rows, its row groups hold %lld", (long long)num_rows, (long long)sum);
            rc = -1;
        }
        m->num_rows = num_rows;
    }
    for (int64_t i = 0; raw && i < n_raw; i++) free(raw[i].name);
    free(raw);
    free(buf);
    if (rc) pq_meta_free(m);
    return rc;
}

void pq_meta_free(PqMeta *m) {
    for (int i = 0; i < m->n_nodes; i++) free(m->nodes[i].name), free(m->nodes[i].children), free(m->nodes[i].path);
    for (int g = 0; g < m->n_groups; g++) free(m->groups[g].chunks);
    free(m->nodes), free(m->leaves), free(m->groups);
    *m = (PqMeta){0};
}

const char *pq_codec_name(int codec) {
    static const char *names[] = {"uncompressed", "Snappy", "gzip", "LZO", "Brotli", "LZ4", "Zstandard", "LZ4_RAW"};
    return codec >= 0 && codec < 8 ? names[codec] : "an unknown";
}
