/* safetensors.c: reading safetensors checkpoints (formats.md e.1), the dtype
 * table and the F16/BF16 conversions. Each file is mapped read-only and its
 * whole header validated (length, UTF-8, JSON, every entry, every dtype's size,
 * exact tiling of the data buffer) before anything is returned; shards are
 * merged by name and checked against the index. Checkpoints are user input:
 * every problem is returned as -1 plus a message, never fatal. Writing is in
 * safetensors_write.c. */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/common.h"
#include "io/file.h"
#include "io/internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian and is copied as is: ppa needs a little-endian host"
#endif

#define HEADER_MAX 100000000ull /* the format's limit on the header length */

/* ================================================================ helpers (io/internal.h) */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

char *st_path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

char *st_dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return dup_str(".");
    if (slash == path) return dup_str("/");
    size_t n = (size_t)(slash - path);
    char *d = memcpy(xmalloc(n + 1), path, n);
    d[n] = 0;
    return d;
}

size_t st_utf8_check(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0) return i;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) len = 2, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0) len = 3, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0) len = 4, cp = c & 0x07, min = 0x10000;
        else return i;
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
        i += len;
    }
    return n;
}

/* "[2, 3]" into buf, for messages. */
static void shape_str(const int64_t *shape, int ndim, char *buf, size_t len) {
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < ndim && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64, d ? ", " : "", shape[d]);
    if (used < len) snprintf(buf + used, len - used, "]");
}

/* ================================================================ dtypes */

/* Every dtype of the format with its size in bits; ppa is the StDtype it loads as, or -1. */
static const struct {
    const char *name;
    int bits;
    int ppa;
} DTYPES[] = {
    {"BOOL", 8, -1},       {"U8", 8, -1},          {"I8", 8, -1},          {"I16", 16, -1},    {"U16", 16, -1},
    {"I32", 32, -1},       {"U32", 32, -1},        {"I64", 64, -1},        {"U64", 64, -1},    {"F16", 16, ST_F16},
    {"BF16", 16, ST_BF16}, {"F32", 32, ST_F32},    {"F64", 64, -1},        {"C64", 64, -1},    {"F8_E4M3", 8, -1},
    {"F8_E5M2", 8, -1},    {"F8_E4M3FNUZ", 8, -1}, {"F8_E5M2FNUZ", 8, -1}, {"F8_E8M0", 8, -1}, {"F6_E2M3", 6, -1},
    {"F6_E3M2", 6, -1},    {"F4", 4, -1},
};

static int dtype_lookup(const char *name) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(DTYPES); i++)
        if (!strcmp(DTYPES[i].name, name)) return (int)i;
    return -1;
}

const char *st_dtype_name(StDtype dtype) {
    switch (dtype) {
    case ST_F32:
        return "F32";
    case ST_F16:
        return "F16";
    case ST_BF16:
        return "BF16";
    }
    return "?";
}

size_t st_dtype_size(StDtype dtype) { return dtype == ST_F32 ? 4 : 2; }

/* ================================================================ conversions */

static float f32_from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

float st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | man << 13); /* inf; NaN keeps its payload */
    if (exp) return f32_from_bits(sign | (exp + 112) << 23 | man << 13);   /* rebias 15 -> 127 */
    float sub = (float)man * 0x1p-24f;                                     /* subnormal or zero: exact */
    return sign ? -sub : sub;
}

float st_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

uint16_t st_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    /* rounding a NaN whose payload sits in the low half would give inf: keep the top bits, set quiet */
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16 | 0x40);
    u += 0x7fffu + (u >> 16 & 1); /* round half to even; carries into the exponent, up to inf */
    return (uint16_t)(u >> 16);
}

void st_to_f32(const StTensor *t, float *out) {
    const unsigned char *p = t->data;
    size_t n = (size_t)t->numel;
    if (n == 0) return;
    switch (t->dtype) {
    case ST_F32:
        memcpy(out, p, n * 4);
        return; /* memcpy: the mmap gives no alignment */
    case ST_F16:
        for (size_t i = 0; i < n; i++) out[i] = st_f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return;
    case ST_BF16:
        for (size_t i = 0; i < n; i++) out[i] = st_bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return;
    }
}

/* ================================================================ header of one file */

/* One tensor entry while its file is validated; t.name points into the cJSON tree. */
typedef struct {
    StTensor t;
    int dtype;           /* index into DTYPES */
    uint64_t begin, end; /* data_offsets, relative to the data buffer */
} Entry;

/* An exact non-negative integer that cJSON's double holds without rounding. */
static int json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= ST_JSON_INT_MAX) || d != floor(d)) return 0; /* NaN fails the first test */
    *out = (uint64_t)d;
    return 1;
}

/* Rejects a second "dtype", "shape" or "data_offsets" key (cJSON would keep the first silently). */
static int check_entry_keys(const char *path, const cJSON *item, char *err, size_t errlen) {
    static const char *const keys[] = {"dtype", "shape", "data_offsets"};
    int seen[3] = {0};
    for (const cJSON *c = item->child; c; c = c->next)
        for (int k = 0; k < 3; k++)
            if (c->string && !strcmp(c->string, keys[k]) && seen[k]++)
                return ppa_fail(err, errlen, "%s: tensor \"%s\": key \"%s\" appears twice", path, item->string, keys[k]);
    return 0;
}

static int parse_shape(const char *path, const char *name, const cJSON *shape, Entry *e, char *err, size_t errlen) {
    if (!cJSON_IsArray(shape))
        return ppa_fail(err, errlen, "%s: tensor \"%s\": \"shape\" must be an array of integers", path, name);
    int nd = cJSON_GetArraySize(shape), d = 0;
    if (nd > ST_MAX_NDIM)
        return ppa_fail(err, errlen, "%s: tensor \"%s\": rank %d is more than the %d ppa supports", path, name, nd,
                       ST_MAX_NDIM);
    int64_t numel = 1;
    for (const cJSON *v = shape->child; v; v = v->next, d++) {
        uint64_t dim;
        if (!json_uint(v, &dim))
            return ppa_fail(err, errlen, "%s: tensor \"%s\": shape[%d] is not a non-negative integer (below 2^53)", path,
                           name, d);
        e->t.shape[d] = (int64_t)dim;
        if (__builtin_mul_overflow(numel, (int64_t)dim, &numel))
            return ppa_fail(err, errlen, "%s: tensor \"%s\": the number of elements overflows 64 bits", path, name);
    }
    e->t.ndim = nd;
    e->t.numel = numel;
    return 0;
}

static int parse_offsets(const char *path, const char *name, const cJSON *offs, size_t data_len, Entry *e, char *err,
                         size_t errlen) {
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_uint(offs->child, &e->begin) ||
        !json_uint(offs->child->next, &e->end))
        return ppa_fail(err, errlen, "%s: tensor \"%s\": \"data_offsets\" must be two non-negative integers", path,
                       name);
    if (e->begin > e->end)
        return ppa_fail(err, errlen, "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] begin after end", path,
                       name, e->begin, e->end);
    if (e->end > data_len)
        return ppa_fail(err, errlen,
                       "%s: tensor \"%s\": data_offsets end %" PRIu64 " is past the end of the data buffer (%zu bytes)",
                       path, name, e->end, data_len);
    return 0;
}

/* Size in bytes from shape and dtype, checked against data_offsets. */
static int check_size(const char *path, const char *name, Entry *e, char *err, size_t errlen) {
    int64_t bits;
    const char *dt = DTYPES[e->dtype].name;
    if (__builtin_mul_overflow(e->t.numel, (int64_t)DTYPES[e->dtype].bits, &bits))
        return ppa_fail(err, errlen, "%s: tensor \"%s\": the size in bytes of %" PRId64 " elements of %s overflows",
                       path, name, e->t.numel, dt);
    if (bits % 8)
        return ppa_fail(err, errlen, "%s: tensor \"%s\": %" PRId64 " elements of %s are not a whole number of bytes",
                       path, name, e->t.numel, dt);
    if (e->end - e->begin != (uint64_t)(bits / 8)) {
        char sh[128];
        shape_str(e->t.shape, e->t.ndim, sh, sizeof sh);
        return ppa_fail(err, errlen,
                       "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                       " bytes but shape %s of %s needs %" PRId64,
                       path, name, e->begin, e->end, e->end - e->begin, sh, dt, bits / 8);
    }
    e->t.nbytes = (size_t)(bits / 8);
    return 0;
}

static int parse_entry(const char *path, const cJSON *item, size_t data_len, Entry *e, char *err, size_t errlen) {
    const char *name = item->string;
    e->t.name = (char *)name;
    if (!cJSON_IsObject(item)) return ppa_fail(err, errlen, "%s: tensor \"%s\": entry is not an object", path, name);
    if (check_entry_keys(path, item, err, errlen)) return -1;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    const char *missing = !dtype ? "dtype" : !shape ? "shape" : !offs ? "data_offsets" : NULL;
    if (missing) return ppa_fail(err, errlen, "%s: tensor \"%s\": missing \"%s\"", path, name, missing);
    if (!cJSON_IsString(dtype))
        return ppa_fail(err, errlen, "%s: tensor \"%s\": \"dtype\" must be a string", path, name);
    e->dtype = dtype_lookup(dtype->valuestring);
    if (e->dtype < 0)
        return ppa_fail(err, errlen,
                       "%s: tensor \"%s\": unknown dtype \"%s\" (not a safetensors dtype; ppa loads F32, F16, BF16)",
                       path, name, dtype->valuestring);
    if (parse_shape(path, name, shape, e, err, errlen)) return -1;
    if (parse_offsets(path, name, offs, data_len, e, err, errlen)) return -1;
    return check_size(path, name, e, err, errlen);
}

static int check_metadata(const char *path, const cJSON *meta, char *err, size_t errlen) {
    if (!cJSON_IsObject(meta)) return ppa_fail(err, errlen, "%s: __metadata__ is not an object", path);
    for (const cJSON *c = meta->child; c; c = c->next)
        if (!cJSON_IsString(c)) return ppa_fail(err, errlen, "%s: __metadata__ \"%s\" is not a string", path, c->string);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const Entry *)a)->t.name, ((const Entry *)b)->t.name);
}

static int by_offsets(const void *a, const void *b) {
    const Entry *x = *(const Entry *const *)a, *y = *(const Entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Sorted by (begin, end), the tensors must cover [0, data_len) with no hole or overlap. */
static int check_tiling(const char *path, Entry *e, int n, size_t data_len, char *err, size_t errlen) {
    Entry **order = xmalloc(sizeof(Entry *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) order[i] = &e[i];
    qsort(order, (size_t)n, sizeof(Entry *), by_offsets);
    uint64_t pos = 0;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const Entry *x = order[i], *prev = i ? order[i - 1] : NULL;
        if (x->begin > pos && !prev)
            rc = ppa_fail(err, errlen,
                         "%s: tensor \"%s\" starts at byte %" PRIu64 " of the data; the first must start at 0", path,
                         x->t.name, x->begin);
        else if (x->begin > pos)
            rc = ppa_fail(err, errlen,
                         "%s: hole in the data: bytes [%" PRIu64 ", %" PRIu64 ") between tensors \"%s\" and \"%s\" "
                         "belong to no tensor",
                         path, pos, x->begin, prev->t.name, x->t.name);
        else if (x->begin < pos)
            rc = ppa_fail(err, errlen,
                         "%s: tensor \"%s\" [%" PRIu64 ", %" PRIu64 ") overlaps tensor \"%s\" which ends at %" PRIu64,
                         path, x->t.name, x->begin, x->end, prev->t.name, pos);
        pos = x->end;
    }
    if (!rc && pos != data_len) {
        if (n)
            rc = ppa_fail(err, errlen,
                         "%s: bytes [%" PRIu64 ", %zu) of the data after the last tensor \"%s\" belong to no tensor",
                         path, pos, data_len, order[n - 1]->t.name);
        else rc = ppa_fail(err, errlen, "%s: no tensors but %zu bytes of data", path, data_len);
    }
    free(order);
    return rc;
}

/* Validates every entry of the parsed header into e [n_children]; returns the tensor count or -1. */
static int read_entries(const char *path, const cJSON *root, size_t data_len, Entry *e, char *err, size_t errlen) {
    int n = 0, n_meta = 0;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (!strcmp(c->string, "__metadata__")) {
            if (n_meta++) return ppa_fail(err, errlen, "%s: __metadata__ appears twice", path);
            if (check_metadata(path, c, err, errlen)) return -1;
        } else if (parse_entry(path, c, data_len, &e[n++], err, errlen)) {
            return -1;
        }
    }
    qsort(e, (size_t)n, sizeof(Entry), by_name);
    for (int i = 1; i < n; i++)
        if (!strcmp(e[i].t.name, e[i - 1].t.name))
            return ppa_fail(err, errlen, "%s: tensor \"%s\" appears twice in the header", path, e[i].t.name);
    if (check_tiling(path, e, n, data_len, err, errlen)) return -1;
    /* after the structural checks, so that a broken file is reported as broken */
    for (int i = 0; i < n; i++)
        if (DTYPES[e[i].dtype].ppa < 0)
            return ppa_fail(err, errlen, "%s: tensor \"%s\": dtype %s is not supported; ppa loads F32, F16, BF16", path,
                           e[i].t.name, DTYPES[e[i].dtype].name);
    return n;
}

/* Only JSON whitespace may sit outside strings, and JSON strings hold no raw control bytes. */
static size_t control_byte(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return i;
    return n;
}

/* Parses N header bytes as one JSON object followed only by whitespace. */
static cJSON *parse_json(const char *path, const char *what, const unsigned char *bytes, size_t n, char *err,
                         size_t errlen) {
    size_t bad = st_utf8_check(bytes, n), ctrl = control_byte(bytes, n);
    if (bad < n) {
        ppa_fail(err, errlen, "%s: %s is not valid UTF-8 (byte %zu)", path, what, bad);
        return NULL;
    }
    if (ctrl < n) {
        ppa_fail(err, errlen, "%s: %s has control byte 0x%02x at byte %zu", path, what, bytes[ctrl], ctrl);
        return NULL;
    }
    /* a NUL-terminated heap copy: the parser never reads the mmap, and ASan sees every overread */
    char *text = memcpy(xmalloc(n + 1), bytes, n);
    text[n] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    while (root && end < text + n && strchr(" \t\n\r", *end)) end++; /* padding; *end is never NUL here */
    int rc = 0;
    if (!root)
        rc = ppa_fail(err, errlen, "%s: %s is not valid JSON (error near byte %td)", path, what, end ? end - text : 0);
    else if (end != text + n)
        rc = ppa_fail(err, errlen, "%s: %s has bytes after the JSON value (at byte %td)", path, what, end - text);
    else if (!cJSON_IsObject(root)) rc = ppa_fail(err, errlen, "%s: %s is not a JSON object", path, what);
    free(text);
    if (rc) {
        cJSON_Delete(root);
        root = NULL;
    }
    return root;
}

/* Validates the mapped file and returns its tensors (names owned, data in MAP, sorted by name). */
static int parse_file(const char *path, const unsigned char *map, size_t size, int file, StTensor **out, int *n_out,
                      char *err, size_t errlen) {
    *out = NULL;
    *n_out = 0;
    if (size < 8)
        return ppa_fail(err, errlen, "%s: file is %zu bytes, shorter than the 8-byte header length", path, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | map[i];
    if (hlen == 0) return ppa_fail(err, errlen, "%s: header length is 0", path);
    if (hlen > HEADER_MAX)
        return ppa_fail(err, errlen, "%s: header length %" PRIu64 " exceeds the limit of %llu bytes", path, hlen,
                       HEADER_MAX);
    if (hlen > size - 8)
        return ppa_fail(err, errlen, "%s: header length %" PRIu64 " runs past the end of the file (%zu bytes)", path,
                       hlen, size);
    if (map[8] != '{') return ppa_fail(err, errlen, "%s: header does not start with '{'", path);
    cJSON *root = parse_json(path, "header", map + 8, (size_t)hlen, err, errlen);
    if (!root) return -1;
    size_t data_len = size - 8 - (size_t)hlen;
    Entry *e = xcalloc((size_t)cJSON_GetArraySize(root) + 1, sizeof(Entry));
    int n = read_entries(path, root, data_len, e, err, errlen);
    if (n >= 0) {
        const unsigned char *data = map + 8 + hlen;
        StTensor *ts = xmalloc(sizeof(StTensor) * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++) {
            ts[i] = e[i].t;
            ts[i].name = dup_str(e[i].t.name);
            ts[i].dtype = (StDtype)DTYPES[e[i].dtype].ppa;
            ts[i].file = file;
            ts[i].data = data + e[i].begin;
        }
        *out = ts;
        *n_out = n;
    }
    free(e);
    cJSON_Delete(root);
    return n < 0 ? -1 : 0;
}

/* ================================================================ sets of files */

/* Maps PATH read-only; an empty file gives map NULL and size 0. */
static int map_file(const char *path, unsigned char **map, size_t *size, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* NONBLOCK: a FIFO must not hang the open */
    if (fd < 0) return ppa_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    int rc = 0;
    *map = NULL;
    *size = 0;
    if (fstat(fd, &sb) != 0) rc = ppa_fail(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode)) rc = ppa_fail(err, errlen, "%s: is %s, not a regular file", path, file_kind(sb.st_mode));
    else if (sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) rc = ppa_fail(err, errlen, "%s: cannot mmap: %s", path, strerror(errno));
        else *map = m, *size = (size_t)sb.st_size;
    }
    close(fd);
    return rc;
}

/* Maps and validates one file, appends its tensors (unsorted); returns its file index or -1. */
static int set_load_file(StSet *st, const char *path, char *err, size_t errlen) {
    unsigned char *map;
    size_t size;
    if (map_file(path, &map, &size, err, errlen)) return -1;
    int f = st->n_files++;
    st->paths = xrealloc(st->paths, sizeof(char *) * (size_t)st->n_files);
    st->maps = xrealloc(st->maps, sizeof(unsigned char *) * (size_t)st->n_files);
    st->map_sizes = xrealloc(st->map_sizes, sizeof(size_t) * (size_t)st->n_files);
    st->paths[f] = dup_str(path);
    st->maps[f] = map;
    st->map_sizes[f] = size;
    StTensor *ts;
    int n;
    if (parse_file(path, map, size, f, &ts, &n, err, errlen)) return -1;
    st->tensors = xrealloc(st->tensors, sizeof(StTensor) * (size_t)(st->n_tensors + n + 1));
    if (n) memcpy(st->tensors + st->n_tensors, ts, sizeof(StTensor) * (size_t)n);
    st->n_tensors += n;
    free(ts);
    return f;
}

static int by_tensor_name(const void *a, const void *b) {
    return strcmp(((const StTensor *)a)->name, ((const StTensor *)b)->name);
}

/* One weight_map entry: tensor name -> shard file (pointers into the cJSON tree). */
typedef struct {
    const char *name, *shard;
    int file; /* index of the shard in the set */
} MapEntry;

static int by_map_name(const void *a, const void *b) {
    return strcmp(((const MapEntry *)a)->name, ((const MapEntry *)b)->name);
}

static int by_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Reads a whole small file into a NUL-terminated buffer. */
static int read_whole(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen) {
    unsigned char *map;
    size_t size;
    if (map_file(path, &map, &size, err, errlen)) return -1;
    if (size > HEADER_MAX) {
        munmap(map, size);
        return ppa_fail(err, errlen, "%s: %zu bytes is too large for an index", path, size);
    }
    *buf = xmalloc(size + 1);
    if (size) memcpy(*buf, map, size);
    (*buf)[size] = 0;
    *len = size;
    if (map) munmap(map, size);
    return 0;
}

/* weight_map -> entries [n]; checks value types, file names and duplicate tensor names. */
static MapEntry *read_weight_map(const char *path, const cJSON *root, int *n_out, char *err, size_t errlen) {
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    int n = cJSON_GetArraySize(wm), i = 0, rc = 0;
    if (!wm) rc = ppa_fail(err, errlen, "%s: missing \"weight_map\"", path);
    else if (!cJSON_IsObject(wm)) rc = ppa_fail(err, errlen, "%s: \"weight_map\" is not an object", path);
    else if (n == 0) rc = ppa_fail(err, errlen, "%s: \"weight_map\" lists no tensors", path);
    if (rc) return NULL;
    MapEntry *m = xmalloc(sizeof(MapEntry) * (size_t)n);
    for (const cJSON *c = wm->child; c && !rc; c = c->next, i++) {
        const char *s = cJSON_IsString(c) ? c->valuestring : NULL;
        if (!s || !*s || strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, ".."))
            rc = ppa_fail(err, errlen, "%s: weight_map[\"%s\"] must be a file name in the same folder", path, c->string);
        m[i] = (MapEntry){c->string, s, -1};
    }
    if (!rc) qsort(m, (size_t)n, sizeof(MapEntry), by_map_name);
    for (i = 1; i < n && !rc; i++)
        if (!strcmp(m[i].name, m[i - 1].name))
            rc = ppa_fail(err, errlen, "%s: weight_map lists tensor \"%s\" twice", path, m[i].name);
    if (rc) {
        free(m);
        return NULL;
    }
    *n_out = n;
    return m;
}

/* Opens every distinct shard of the map, in name order; sets each entry's file index. */
static int load_shards(StSet *st, const char *index, const char *dir, MapEntry *m, int n, char *err, size_t errlen) {
    const char **names = xmalloc(sizeof(char *) * (size_t)n);
    int n_shards = 0, rc = 0;
    for (int i = 0; i < n; i++) names[i] = m[i].shard;
    qsort(names, (size_t)n, sizeof(char *), by_str);
    for (int i = 0; i < n; i++)
        if (!n_shards || strcmp(names[i], names[n_shards - 1])) names[n_shards++] = names[i];
    for (int s = 0; s < n_shards && !rc; s++) {
        char *p = st_path_join(dir, names[s]);
        struct stat sb;
        if (stat(p, &sb) != 0)
            rc = ppa_fail(err, errlen, "%s: cannot open shard listed in %s: %s", p, index, strerror(errno));
        else if (set_load_file(st, p, err, errlen) < 0) rc = -1;
        free(p);
    }
    for (int i = 0; i < n && !rc; i++) {
        const char **hit = bsearch(&m[i].shard, names, (size_t)n_shards, sizeof(char *), by_str);
        m[i].file = (int)(hit - names);
    }
    free(names);
    return rc;
}

/* Every tensor in exactly one shard, the one the map names, and every shard tensor in the map. */
static int check_against_map(const StSet *st, const char *index, const MapEntry *m, int n, char *err, size_t errlen) {
    for (int i = 1; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i].name, st->tensors[i - 1].name))
            return ppa_fail(err, errlen, "tensor \"%s\" is in two shards: %s and %s", st->tensors[i].name,
                           st->paths[st->tensors[i - 1].file], st->paths[st->tensors[i].file]);
    for (int i = 0; i < n; i++) {
        const StTensor *t = st_find(st, m[i].name);
        if (!t)
            return ppa_fail(err, errlen, "%s: tensor \"%s\" listed in %s is not in this shard", st->paths[m[i].file],
                           m[i].name, index);
        if (t->file != m[i].file)
            return ppa_fail(err, errlen, "%s: tensor \"%s\" listed in %s is not in this shard (it is in %s)",
                           st->paths[m[i].file], m[i].name, index, st->paths[t->file]);
    }
    for (int i = 0; i < st->n_tensors; i++) {
        MapEntry key = {st->tensors[i].name, NULL, 0};
        if (!bsearch(&key, m, (size_t)n, sizeof(MapEntry), by_map_name))
            return ppa_fail(err, errlen, "%s: tensor \"%s\" is not listed in the weight_map of %s",
                           st->paths[st->tensors[i].file], st->tensors[i].name, index);
    }
    return 0;
}

static int open_index(StSet *st, const char *index, char *err, size_t errlen) {
    unsigned char *buf = NULL;
    size_t len = 0;
    if (read_whole(index, &buf, &len, err, errlen)) return -1;
    cJSON *root = parse_json(index, "index", buf, len, err, errlen);
    free(buf);
    if (!root) return -1;
    int n = 0, rc = -1;
    MapEntry *m = read_weight_map(index, root, &n, err, errlen);
    if (m) {
        char *dir = st_dir_of(index);
        if (!load_shards(st, index, dir, m, n, err, errlen)) {
            qsort(st->tensors, (size_t)st->n_tensors, sizeof(StTensor), by_tensor_name);
            rc = check_against_map(st, index, m, n, err, errlen);
        }
        free(dir);
        free(m);
    }
    cJSON_Delete(root);
    return rc;
}

static int open_single(StSet *st, const char *path, char *err, size_t errlen) {
    if (set_load_file(st, path, err, errlen) < 0) return -1;
    qsort(st->tensors, (size_t)st->n_tensors, sizeof(StTensor), by_tensor_name); /* names already unique */
    return 0;
}

static int open_dir(StSet *st, const char *dir, char *err, size_t errlen) {
    char *single = st_path_join(dir, ST_SINGLE_NAME), *index = st_path_join(dir, ST_INDEX_NAME);
    struct stat sb;
    int rc;
    if (stat(single, &sb) == 0 || errno != ENOENT) rc = open_single(st, single, err, errlen);
    else if (stat(index, &sb) == 0 || errno != ENOENT) rc = open_index(st, index, err, errlen);
    else rc = ppa_fail(err, errlen, "%s: holds neither %s nor %s", dir, ST_SINGLE_NAME, ST_INDEX_NAME);
    free(single);
    free(index);
    return rc;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

int st_open(StSet *st, const char *path, char *err, size_t errlen) {
    *st = (StSet){0};
    struct stat sb;
    if (stat(path, &sb) != 0) return ppa_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    int rc;
    if (S_ISDIR(sb.st_mode)) rc = open_dir(st, path, err, errlen);
    else if (ends_with(path, ".index.json")) rc = open_index(st, path, err, errlen);
    else rc = open_single(st, path, err, errlen);
    if (rc) st_close(st);
    return rc;
}

const StTensor *st_find(const StSet *st, const char *name) {
    int lo = 0, hi = st->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(st->tensors[mid].name, name);
        if (!c) return &st->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

void st_close(StSet *st) {
    for (int i = 0; i < st->n_files; i++) {
        if (st->maps[i]) munmap(st->maps[i], st->map_sizes[i]);
        free(st->paths[i]);
    }
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    free(st->paths);
    free(st->maps);
    free(st->map_sizes);
    free(st->tensors);
    *st = (StSet){0};
}
