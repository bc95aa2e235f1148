/* records.c: records of JSON Lines, JSON array and Parquet files, one input of several files (records.h). */
#include "io/records.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "core/hash.h"
#include "io/file.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "io/parquet.h"

#define ARRAY_MAX (1L << 30) /* bytes of a JSON array file (AlpacaEval's 805 instructions take 0.3 MB) */

enum { K_LINES, K_ARRAY, K_PARQUET };

typedef struct {
    char **files;
    int n;
} Files;

/* what records_where needs of an input read in this process: its files and where their positions start */
typedef struct Known {
    char *input;
    Files f;
    long *base; /* [n]: file i's positions are (base[i], base[i + 1]] */
    int *kind;
    struct Known *next;
} Known;
static Known *known;

struct RecordReader {
    char *input;
    Files f;
    int at;         /* current file, -1 before the first */
    int kind;
    long base, last; /* positions: the current file's start, the last returned */
    long *bases;
    int *kinds;
    FILE *fp;
    JsonlReader jr;
    ParquetReader *pq;
    cJSON *arr, *elem;
    long n_elem;
    char *text;
    char why[1536]; /* a damaged file: records_next returned -1 */
    int status;     /* its exit status: 2 bad input, 1 a read error */
};

static void files_add(Files *f, const char *p) {
    f->files = xrealloc(f->files, sizeof(char *) * (size_t)(f->n + 1));
    size_t n = strlen(p) + 1;
    f->files[f->n++] = memcpy(xmalloc(n), p, n);
}

static void files_free(Files *f) {
    for (int i = 0; i < f->n; i++) free(f->files[i]);
    free(f->files);
    *f = (Files){0};
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int data_name(const char *name) {
    size_t n = strlen(name);
    static const char *ext[] = {".parquet", ".jsonl", ".json"};
    if (name[0] == '.') return 0;
    for (int i = 0; i < 3; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && !strcmp(name + n - e, ext[i])) return 1;
    }
    return 0;
}

/* the split a shard's name belongs to: "train-00000-of-00003.parquet" -> "train", "part_2.jsonl" -> "part" */
static void split_of(const char *name, char *out, size_t n) {
    snprintf(out, n, "%s", name);
    char *dot = strrchr(out, '.');
    if (dot) *dot = 0;
    size_t len = strlen(out);
    char *of = strstr(out, "-of-");
    if (of && of > out) {
        char *q = of + 4;
        while (isdigit((unsigned char)*q)) q++;
        if (!*q) *of = 0, len = strlen(out);
    }
    while (len && isdigit((unsigned char)out[len - 1])) out[--len] = 0;
    while (len && strchr("-_.", out[len - 1])) out[--len] = 0;
}

static int add_folder(Files *f, const char *dir, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) return snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1;
    Files mine = {0};
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!data_name(e->d_name)) continue;
        char *p = ppa_path_join(dir, e->d_name);
        struct stat sb;
        if (!stat(p, &sb) && S_ISREG(sb.st_mode)) files_add(&mine, p);
        free(p);
    }
    closedir(d);
    if (!mine.n) return snprintf(err, errlen, "%s: a folder without .parquet, .jsonl or .json files", dir), -1;
    qsort(mine.files, (size_t)mine.n, sizeof(char *), by_name);
    char first[256], other[256];
    split_of(strrchr(mine.files[0], '/') + 1, first, sizeof first);
    for (int i = 1; i < mine.n; i++) {
        split_of(strrchr(mine.files[i], '/') + 1, other, sizeof other);
        if (strcmp(first, other)) {
            snprintf(err, errlen, "%s: a folder of several splits ('%s' and '%s' files): give one split's files, e.g. "
                     "--data '%s/%s*'", dir, first, other, dir, first);
            files_free(&mine);
            return -1;
        }
    }
    for (int i = 0; i < mine.n; i++) files_add(f, mine.files[i]);
    files_free(&mine);
    return 0;
}

static int add_path(Files *f, const char *p, char *err, size_t errlen) {
    struct stat sb;
    if (!stat(p, &sb) && S_ISDIR(sb.st_mode)) return add_folder(f, p, err, errlen);
    if (!strpbrk(p, "*?[")) {
        files_add(f, p); /* opened (and refused when missing) in order */
        return 0;
    }
    glob_t g;
    int rc = glob(p, GLOB_ERR, NULL, &g);
    if (rc == GLOB_NOMATCH) return snprintf(err, errlen, "%s: no file matches", p), -1;
    if (rc) return snprintf(err, errlen, "%s: cannot expand the pattern", p), -1;
    for (size_t i = 0; i < g.gl_pathc; i++) files_add(f, g.gl_pathv[i]);
    globfree(&g);
    return 0;
}

static int expand(const char *input, Files *f, char *err, size_t errlen) {
    struct stat sb;
    *f = (Files){0};
    if (!strcmp(input, "-") || !stat(input, &sb) || !strchr(input, ',')) {
        if (!strcmp(input, "-")) files_add(f, "-");
        else if (add_path(f, input, err, errlen)) return files_free(f), -1;
        return 0;
    }
    char *copy = xmalloc(strlen(input) + 1), *save = NULL;
    strcpy(copy, input);
    int rc = 0;
    for (char *p = strtok_r(copy, ",", &save); p && !rc; p = strtok_r(NULL, ",", &save))
        if (*p) rc = add_path(f, p, err, errlen);
    free(copy);
    if (!rc && !f->n) {
        snprintf(err, errlen, "'%s': no file named", input);
        rc = -1;
    }
    if (rc) files_free(f);
    return rc;
}

RecordReader *records_open(const char *input, char *err, size_t errlen) {
    RecordReader *r = xcalloc(1, sizeof *r);
    if (expand(input, &r->f, err, errlen)) return free(r), NULL;
    size_t n = strlen(input) + 1;
    r->input = memcpy(xmalloc(n), input, n);
    r->at = -1;
    r->bases = xcalloc((size_t)r->f.n + 1, sizeof(long));
    r->kinds = xcalloc((size_t)r->f.n + 1, sizeof(int));
    /* every named file must open: refused here, before any record is read */
    for (int i = 0; i < r->f.n; i++) {
        const char *p = r->f.files[i];
        if (!strcmp(p, "-")) continue;
        FILE *fp = fopen(p, "r");
        if (!fp) {
            snprintf(err, errlen, "%s: cannot open: %s", p, strerror(errno));
            records_close(r);
            return NULL;
        }
        fclose(fp);
    }
    return r;
}

static void close_file(RecordReader *r) {
    if (r->fp && r->fp != stdin) fclose(r->fp);
    if (r->fp) jsonl_free(&r->jr);
    parquet_close(r->pq);
    cJSON_Delete(r->arr);
    free(r->text);
    r->fp = NULL, r->pq = NULL, r->arr = r->elem = NULL, r->text = NULL;
}

static int fail(RecordReader *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(RecordReader *r, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    r->status = status;
    return -1;
}

/* the first byte of f that is not a blank (EOF: none), the newlines before it into *newlines */
static int first_byte(FILE *f, long *newlines) {
    int c;
    *newlines = 0;
    while ((c = getc(f)) == ' ' || c == '\t' || c == '\r' || c == '\n') *newlines += c == '\n';
    return c;
}

static int open_file(RecordReader *r) {
    const char *p = r->f.files[r->at];
    char err[1024];
    r->base = r->last;
    r->bases[r->at] = r->base;
    if (strcmp(p, "-") && parquet_is_file(p)) {
        r->kind = K_PARQUET;
        return (r->pq = parquet_open(p, err, sizeof err)) ? 0 : fail(r, 2, "%s", err);
    }
    r->fp = strcmp(p, "-") ? fopen(p, "r") : stdin;
    if (!r->fp) return fail(r, 2, "%s: cannot open: %s", p, strerror(errno));
    long newlines; /* blanks before the first record: a JSON Lines reader's line count goes on after them */
    int c = first_byte(r->fp, &newlines);
    if (c != EOF) ungetc(c, r->fp);
    if (c != '[') {
        r->kind = K_LINES;
        jsonl_init(&r->jr, r->fp, strcmp(p, "-") ? p : "stdin");
        r->jr.line = newlines;
        return 0;
    }
    r->kind = K_ARRAY;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = xmalloc(cap + 1);
    while ((got = fread(buf + n, 1, cap - n, r->fp)) > 0)
        if ((n += got) == cap) {
            if (cap >= (size_t)ARRAY_MAX) return free(buf), fail(r, 2, "%s: a JSON array file larger than 1 GiB", p);
            buf = xrealloc(buf, (cap *= 2) + 1);
        }
    if (ferror(r->fp)) return free(buf), fail(r, 1, "%s: read error: %s", p, strerror(errno));
    r->arr = json_parse(buf, n, err, sizeof err);
    free(buf);
    if (!r->arr) return fail(r, 2, "%s: %s", p, err);
    if (!cJSON_IsArray(r->arr)) return fail(r, 2, "%s: a file starting with '[' must be one JSON array of records", p);
    r->elem = r->arr->child;
    r->n_elem = 0;
    r->kinds[r->at] = K_ARRAY;
    return 0;
}

int records_next(RecordReader *r, const char **text, size_t *len, long *loc) {
    for (;;) {
        if (r->at >= 0 && r->at < r->f.n) {
            r->kinds[r->at] = r->kind;
            if (r->kind == K_LINES) {
                char *line;
                if (jsonl_next(&r->jr, &line)) {
                    *text = line, *len = r->jr.len, *loc = r->last = r->base + r->jr.line;
                    return 1;
                }
                r->last = r->base + r->jr.line; /* the next file's lines follow this one's last line */
            } else if (r->kind == K_PARQUET) {
                char err[1024];
                int64_t row;
                int rc = parquet_next(r->pq, text, len, &row, err, sizeof err);
                if (rc < 0) return fail(r, 2, "%s", err);
                if (rc) return *loc = r->last = r->base + (long)row, 1;
            } else if (r->elem) {
                free(r->text);
                r->text = cJSON_PrintUnformatted(r->elem);
                if (!r->text) ppa_die(1, "%s: out of memory printing element %ld", r->f.files[r->at], r->n_elem + 1);
                r->elem = r->elem->next;
                *text = r->text, *len = strlen(r->text), *loc = r->last = r->base + ++r->n_elem;
                return 1;
            }
            close_file(r);
        }
        if (r->at + 1 >= r->f.n) {
            if (r->at < r->f.n) { /* remember where each file's positions start, for records_where */
                r->at = r->f.n;
                r->bases[r->f.n] = r->last;
                Known *k = xcalloc(1, sizeof *k);
                k->input = r->input, r->input = NULL;
                k->f = r->f, r->f = (Files){0};
                k->base = r->bases, k->kind = r->kinds, r->bases = NULL, r->kinds = NULL;
                k->next = known, known = k;
            }
            return 0;
        }
        r->at++;
        if (open_file(r)) return -1;
    }
}

const char *records_error(const RecordReader *r, int *status) {
    if (status) *status = r->status ? r->status : 2;
    return r->why;
}

void records_close(RecordReader *r) {
    if (!r) return;
    close_file(r);
    files_free(&r->f);
    free(r->input), free(r->bases), free(r->kinds);
    free(r);
}

const char *records_where(const char *input, long loc, char *buf, size_t n) {
    for (const Known *k = known; k; k = k->next) {
        if (strcmp(k->input, input)) continue;
        for (int i = 0; i < k->f.n; i++)
            if (loc > k->base[i] && loc <= k->base[i + 1]) {
                const char *f = strcmp(k->f.files[i], "-") ? k->f.files[i] : "stdin";
                long at = loc - k->base[i];
                if (k->kind[i] == K_PARQUET) snprintf(buf, n, "%s:row %ld", f, at);
                else if (k->kind[i] == K_ARRAY) snprintf(buf, n, "%s:element %ld", f, at);
                else snprintf(buf, n, "%s:%ld", f, at);
                return buf;
            }
    }
    snprintf(buf, n, "%s:%ld", input, loc);
    return buf;
}

uint64_t records_hash(const char *input, int *ok, char *err, size_t errlen) {
    Files f;
    *ok = 0;
    if (expand(input, &f, err, errlen)) return 0;
    uint64_t h = 0;
    int all = 1;
    for (int i = 0; i < f.n && all; i++) {
        if (file_check_regular(f.files[i], err, errlen)) {
            all = 0;
            break;
        }
        uint64_t one = hash64_file(f.files[i], &all);
        if (!all) snprintf(err, errlen, "%s: cannot read", f.files[i]);
        h = f.n == 1 ? one : hash64_more(h, &one, sizeof one); /* one file: its hash as before inputs could be several */
    }
    files_free(&f);
    *ok = all;
    return all ? h : 0;
}

/* where a record is, as messages say it, while its file is open */
const char *records_here(const RecordReader *r, long loc, char *buf, size_t n) {
    const char *f = strcmp(r->f.files[r->at], "-") ? r->f.files[r->at] : "stdin";
    const char *unit = r->kind == K_PARQUET ? "row " : r->kind == K_ARRAY ? "element " : "";
    snprintf(buf, n, "%s:%s%ld", f, unit, loc - r->base);
    return buf;
}

int records_read_all(const char *input, size_t size, RecordParseFn parse, void (*free_item)(void *), void *ctx,
                     int skip_invalid, void **items, int *n, long *skipped, char *err, size_t errlen) {
    *items = NULL, *n = 0, *skipped = 0;
    RecordReader *r = records_open(input, err, errlen);
    if (!r) return -1;
    const char *text;
    size_t len;
    long loc;
    char msg[1024], where[1024];
    int cap = 0, rc = 0;
    err[0] = 0;
    while ((rc = records_next(r, &text, &len, &loc)) == 1) {
        if (*n == cap) *items = xrealloc(*items, size * (size_t)(cap = cap ? 2 * cap : 64));
        char *item = (char *)*items + size * (size_t)*n;
        memset(item, 0, size);
        if (!parse(text, len, loc, item, ctx, msg, sizeof msg)) {
            (*n)++;
            continue;
        }
        free_item(item);
        records_here(r, loc, where, sizeof where);
        if (!skip_invalid) {
            snprintf(err, errlen, "%s: %s", where, msg);
            rc = -1;
            break;
        }
        fprintf(stderr, "ppa: %s: skipped: %s\n", where, msg);
        (*skipped)++;
    }
    if (rc == -1 && !err[0]) snprintf(err, errlen, "%s", r->why); /* a damaged file */
    if (rc == 0 || rc == 1) rc = 0;
    records_close(r);
    if (rc) {
        for (int i = 0; i < *n; i++) free_item((char *)*items + size * (size_t)i);
        free(*items), *items = NULL, *n = 0;
    }
    return rc;
}

int records_is_array(const char *input) {
    Files f;
    char err[512];
    if (expand(input, &f, err, sizeof err)) return 0;
    int yes = 0;
    struct stat sb;
    if (f.n == 1 && strcmp(f.files[0], "-") && !stat(f.files[0], &sb) && S_ISREG(sb.st_mode)) {
        FILE *fp = fopen(f.files[0], "rb");
        long newlines;
        yes = fp && first_byte(fp, &newlines) == '[';
        if (fp) fclose(fp);
    }
    files_free(&f);
    return yes;
}

int records_files(const char *input, char ***files, int *n, char *err, size_t errlen) {
    Files f;
    if (expand(input, &f, err, errlen)) return -1;
    *files = f.files, *n = f.n;
    return 0;
}
