/* safetensors_write.c: writing safetensors checkpoints (formats.md e.1): one
 * file, or shards plus model.safetensors.index.json. The header is built by
 * hand so that integers are always printed as integers, names are checked
 * (UTF-8, unique, not __metadata__) before anything touches the disk, and every
 * file goes through one atomic helper: temp file, fsync, rename, fsync of the
 * folder. Errors are returned with a message, never fatal. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "io/atomic.h"
#include "io/safetensors.h"
#include "io/internal.h"

/* A growing text buffer for headers and the index. */
typedef struct {
    char *s;
    size_t len, cap;
} Buf;

static void buf_add(Buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = 2 * (b->len + n + 1) + 256;
        b->s = xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void buf_puts(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void buf_printf(Buf *b, const char *fmt, ...) {
    char tmp[96];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    buf_add(b, tmp, (size_t)n); /* callers print short numbers and keywords only */
}

/* S as a JSON string: quotes, backslashes and control bytes escaped; UTF-8 as is. */
static void buf_json_string(Buf *b, const char *s) {
    buf_puts(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            buf_add(b, esc, 2);
        } else if (c < 0x20) {
            buf_printf(b, "\\u%04x", c);
        } else {
            buf_add(b, (const char *)&c, 1);
        }
    }
    buf_puts(b, "\"");
}

static int by_write_name(const void *a, const void *b) {
    return strcmp((*(const StWriteTensor *const *)a)->name, (*(const StWriteTensor *const *)b)->name);
}

/* Tensors whose data is NULL made while writing (st_write_sharded_fill); base: index of t[0] in the caller's list */
typedef struct {
    StFillFn fn;
    const void *ctx;
    int base;
} Fill;

/* Checks one tensor to write and returns its size in bytes in *nbytes. */
static int check_write_tensor(const char *path, const StWriteTensor *t, size_t elem, int can_fill, uint64_t *nbytes,
                              char *err, size_t errlen) {
    const char *name = t->name;
    if (!name || !*name) return ppa_fail(err, errlen, "%s: a tensor to write has no name", path);
    if (!strcmp(name, "__metadata__") || st_utf8_check((const unsigned char *)name, strlen(name)) < strlen(name))
        return ppa_fail(err, errlen, "%s: tensor \"%s\": the name is reserved or not valid UTF-8", path, name);
    if (t->ndim < 0 || t->ndim > ST_MAX_NDIM)
        return ppa_fail(err, errlen, "%s: tensor \"%s\": rank %d is not in 0..%d", path, name, t->ndim, ST_MAX_NDIM);
    if (t->ndim > 0 && !t->shape) return ppa_fail(err, errlen, "%s: tensor \"%s\": shape is NULL", path, name);
    int64_t numel = 1, bytes;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return ppa_fail(err, errlen, "%s: tensor \"%s\": shape[%d] = %" PRId64 " is negative", path, name, d,
                           t->shape[d]);
        if (__builtin_mul_overflow(numel, t->shape[d], &numel))
            return ppa_fail(err, errlen, "%s: tensor \"%s\": the number of elements overflows", path, name);
    }
    if (__builtin_mul_overflow(numel, (int64_t)elem, &bytes) || (double)bytes > ST_JSON_INT_MAX)
        return ppa_fail(err, errlen, "%s: tensor \"%s\": %" PRId64 " elements are too many to write", path, name, numel);
    if (numel > 0 && !t->data && !can_fill) return ppa_fail(err, errlen, "%s: tensor \"%s\": data is NULL", path, name);
    *nbytes = (uint64_t)bytes;
    return 0;
}

/* Checks the list: dtype, every tensor, unique names, total size; fills nbytes [n]. */
static int check_write_list(const char *path, const StWriteTensor *t, int n, StDtype dtype, int can_fill,
                            uint64_t *nbytes, char *err, size_t errlen) {
    if (dtype != ST_F32 && dtype != ST_BF16)
        return ppa_fail(err, errlen, "%s: cannot write dtype %s; ppa writes F32 or BF16", path, st_dtype_name(dtype));
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (check_write_tensor(path, &t[i], st_dtype_size(dtype), can_fill, &nbytes[i], err, errlen)) return -1;
        total += nbytes[i];
        if ((double)total > ST_JSON_INT_MAX)
            return ppa_fail(err, errlen, "%s: the tensors are too large to write", path);
    }
    const StWriteTensor **order = xmalloc(sizeof(*order) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) order[i] = &t[i];
    qsort(order, (size_t)n, sizeof(*order), by_write_name);
    int rc = 0;
    for (int i = 1; i < n && !rc; i++)
        if (!strcmp(order[i]->name, order[i - 1]->name))
            rc = ppa_fail(err, errlen, "%s: tensor \"%s\" is given twice", path, order[i]->name);
    free(order);
    return rc;
}

/* The header JSON, padded with spaces so that the data starts at a multiple of 8. */
static void build_header(Buf *b, const StWriteTensor *t, int n, StDtype dtype, const uint64_t *nbytes) {
    buf_puts(b, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        buf_puts(b, ",");
        buf_json_string(b, t[i].name);
        buf_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(dtype));
        for (int d = 0; d < t[i].ndim; d++) buf_printf(b, "%s%" PRId64, d ? "," : "", t[i].shape[d]);
        buf_printf(b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, off + nbytes[i]);
        off += nbytes[i];
    }
    buf_puts(b, "}");
    while (b->len % 8) buf_puts(b, " ");
}

/* Writes the contents of one file to F; 0, or -1 with errno set. */

typedef struct {
    const Buf *header;
    const StWriteTensor *t;
    int n;
    StDtype dtype;
    const Fill *fill; /* or NULL */
} FileBody;

static int write_floats(FILE *f, const float *x, size_t n, StDtype dtype) {
    if (dtype == ST_F32) return n && fwrite(x, 4, n, f) != n ? -1 : 0;
    uint16_t buf[4096];
    for (size_t i = 0; i < n;) {
        size_t m = n - i < 4096 ? n - i : 4096;
        for (size_t k = 0; k < m; k++) buf[k] = st_f32_to_bf16(x[i + k]);
        if (fwrite(buf, 2, m, f) != m) return -1;
        i += m;
    }
    return 0;
}

static int write_file_body(FILE *f, const void *ctx) {
    const FileBody *b = ctx;
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)b->header->len >> (8 * i));
    if (fwrite(len, 1, 8, f) != 8 || fwrite(b->header->s, 1, b->header->len, f) != b->header->len) return -1;
    for (int i = 0; i < b->n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < b->t[i].ndim; d++) numel *= b->t[i].shape[d]; /* checked before */
        float *made = NULL; /* one tensor at a time */
        if (!b->t[i].data && numel > 0) b->fill->fn(b->fill->ctx, b->fill->base + i, made = xmalloc(sizeof(float) * (size_t)numel));
        int rc = write_floats(f, made ? made : b->t[i].data, (size_t)numel, b->dtype);
        free(made);
        if (rc) return -1;
    }
    return 0;
}

static int write_text_body(FILE *f, const void *ctx) {
    const Buf *b = ctx;
    return fwrite(b->s, 1, b->len, f) == b->len ? 0 : -1;
}

static int write_file(const char *path, const StWriteTensor *t, int n, StDtype dtype, const Fill *fill, char *err,
                      size_t errlen) {
    if (n < 0 || (n > 0 && !t)) return ppa_fail(err, errlen, "%s: bad tensor list (n = %d)", path, n);
    uint64_t *nbytes = xmalloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    int rc = check_write_list(path, t, n, dtype, fill != NULL, nbytes, err, errlen);
    if (!rc) {
        Buf header = {0};
        build_header(&header, t, n, dtype, nbytes);
        FileBody body = {&header, t, n, dtype, fill};
        rc = atomic_write(path, write_file_body, &body, err, errlen);
        free(header.s);
    }
    free(nbytes);
    return rc;
}

int st_write(const char *path, const StWriteTensor *t, int n, StDtype dtype, char *err, size_t errlen) {
    return write_file(path, t, n, dtype, NULL, err, errlen);
}

/* DIR exists as a folder afterwards. */
static int ensure_dir(const char *dir, char *err, size_t errlen) {
    struct stat sb;
    if (mkdir(dir, 0777) == 0) return 0;
    if (errno != EEXIST) return ppa_fail(err, errlen, "%s: cannot create folder: %s", dir, strerror(errno));
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return ppa_fail(err, errlen, "%s: exists and is not a folder", dir);
    return 0;
}

/* Removes DIR/NAME if present: a file of the other layout would shadow what was just written. */
static int remove_stale(const char *dir, const char *name, char *err, size_t errlen) {
    char *p = st_path_join(dir, name);
    int rc = 0;
    if (unlink(p) != 0 && errno != ENOENT)
        rc = ppa_fail(err, errlen, "%s: cannot remove stale file: %s", p, strerror(errno));
    free(p);
    return rc;
}

/* model.safetensors.index.json with weight_map sorted by name, as transformers writes it. */
static void build_index(Buf *b, const StWriteTensor *t, int n, const int *shard, int n_shards, uint64_t total) {
    const StWriteTensor **order = xmalloc(sizeof(*order) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) order[i] = &t[i];
    qsort(order, (size_t)n, sizeof(*order), by_write_name);
    buf_printf(b, "{\n  \"metadata\": {\n    \"total_size\": %" PRIu64 "\n  },\n  \"weight_map\": {", total);
    for (int i = 0; i < n; i++) {
        buf_puts(b, i ? ",\n    " : "\n    ");
        buf_json_string(b, order[i]->name);
        buf_printf(b, ": \"model-%05d-of-%05d.safetensors\"", shard[order[i] - t] + 1, n_shards);
    }
    buf_puts(b, "\n  }\n}\n");
    free(order);
}

/* Writes the shards [first[s], first[s+1]) and then the index. */
static int write_shards(const char *dir, const StWriteTensor *t, int n, StDtype dtype, const int *first, int n_shards,
                        const uint64_t *nbytes, const Fill *fill, char *err, size_t errlen) {
    if (n_shards > 99999) return ppa_fail(err, errlen, "%s: %d shards are more than 99999", dir, n_shards);
    int *shard = xmalloc(sizeof(int) * (size_t)n), rc = 0;
    uint64_t total = 0;
    for (int s = 0; s < n_shards && !rc; s++) {
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        char *p = st_path_join(dir, name);
        Fill part = fill ? (Fill){fill->fn, fill->ctx, first[s]} : (Fill){0};
        rc = write_file(p, t + first[s], first[s + 1] - first[s], dtype, fill ? &part : NULL, err, errlen);
        free(p);
        for (int i = first[s]; i < first[s + 1]; i++) shard[i] = s, total += nbytes[i];
    }
    if (!rc) {
        Buf index = {0};
        build_index(&index, t, n, shard, n_shards, total);
        char *p = st_path_join(dir, ST_INDEX_NAME);
        rc = atomic_write(p, write_text_body, &index, err, errlen);
        free(p);
        free(index.s);
    }
    free(shard);
    return rc;
}

static int write_sharded(const char *dir, const StWriteTensor *t, int n, StDtype dtype, size_t max_shard_bytes,
                         const Fill *fill, char *err, size_t errlen) {
    if (n < 0 || (n > 0 && !t)) return ppa_fail(err, errlen, "%s: bad tensor list (n = %d)", dir, n);
    uint64_t *nbytes = xmalloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    int *first = xmalloc(sizeof(int) * (size_t)(n + 2)), n_shards = 1, rc;
    rc = check_write_list(dir, t, n, dtype, fill != NULL, nbytes, err, errlen);
    if (!rc) rc = ensure_dir(dir, err, errlen);
    if (!rc) {
        /* greedy in the given order: a tensor that does not fit starts the next shard */
        uint64_t used = 0;
        first[0] = 0;
        for (int i = 0; i < n; i++) {
            if (i > first[n_shards - 1] && used + nbytes[i] > max_shard_bytes) first[n_shards++] = i, used = 0;
            used += nbytes[i];
        }
        first[n_shards] = n;
        if (n_shards == 1) {
            char *p = st_path_join(dir, ST_SINGLE_NAME);
            rc = write_file(p, t, n, dtype, fill, err, errlen);
            free(p);
            if (!rc) rc = remove_stale(dir, ST_INDEX_NAME, err, errlen);
        } else {
            rc = write_shards(dir, t, n, dtype, first, n_shards, nbytes, fill, err, errlen);
            if (!rc) rc = remove_stale(dir, ST_SINGLE_NAME, err, errlen);
        }
    }
    free(first);
    free(nbytes);
    return rc;
}

int st_write_sharded(const char *dir, const StWriteTensor *t, int n, StDtype dtype, size_t max_shard_bytes, char *err,
                     size_t errlen) {
    return write_sharded(dir, t, n, dtype, max_shard_bytes, NULL, err, errlen);
}

int st_write_sharded_fill(const char *dir, const StWriteTensor *t, int n, StDtype dtype, size_t max_shard_bytes,
                          StFillFn fill, const void *ctx, char *err, size_t errlen) {
    Fill f = {fill, ctx, 0};
    return write_sharded(dir, t, n, dtype, max_shard_bytes, &f, err, errlen);
}
