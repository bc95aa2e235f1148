/* parquet_page.c: one column chunk's pages into levels and values: the codecs (Snappy, Zstandard, gzip, through
 * Debian's libraries loaded at run time), the RLE/bit-packed hybrid, and the encodings pyarrow and arrow-rs write
 * (PLAIN, dictionary, RLE booleans, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
 * BYTE_STREAM_SPLIT). Every count and length read from the file is checked against the bytes that hold it. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "core/common.h"
#include "core/dynlib.h"
#include "io/internal.h"
#include "io/parquet_internal.h"
#include "io/thrift.h"

#define PAGE_MAX (1L << 30) /* bytes of one page, compressed or not (writers cut pages at about 1 MiB) */

enum { ENC_PLAIN = 0, ENC_PLAIN_DICT = 2, ENC_RLE = 3, ENC_BIT_PACKED = 4, ENC_DELTA = 5, ENC_DELTA_LEN = 6,
       ENC_DELTA_BYTES = 7, ENC_RLE_DICT = 8, ENC_SPLIT = 9 };

typedef struct {
    char *err;
    size_t errlen;
    const char *col; /* the column's path */
} Ctx;

static int fail(Ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Ctx *x, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(x->err, x->errlen, "column %s: %s", x->col, why);
    return -1;
}

/* ---- codecs ---- */

static struct {
    int tried[3];
    void *lib[3];
    int (*snappy_uncompress)(const char *, size_t, char *, size_t *);
    size_t (*zstd_decompress)(void *, size_t, const void *, size_t);
    unsigned (*zstd_is_error)(size_t);
    int (*inflate_init2)(z_streamp, int, const char *, int);
    int (*inflate)(z_streamp, int);
    int (*inflate_end)(z_streamp);
    int (*inflate_reset)(z_streamp);
    unsigned long (*crc32)(unsigned long, const unsigned char *, unsigned);
} Z;

static const char *SONAME[3] = {"libsnappy.so.1", "libzstd.so.1", "libz.so.1"};
static const char *PKG[3] = {"libsnappy1v5", "libzstd1", "zlib1g"};

/* 0 = snappy, 1 = zstd, 2 = zlib */
static int load(Ctx *x, int which) {
    if (!Z.tried[which]) {
        char why[512];
        Z.tried[which] = 1;
        Z.lib[which] = dynlib_open(SONAME[which], RTLD_NOW | RTLD_LOCAL, why, sizeof why);
        void *h = Z.lib[which];
        if (h && which == 0) *(void **)&Z.snappy_uncompress = dlsym(h, "snappy_uncompress");
        if (h && which == 1) *(void **)&Z.zstd_decompress = dlsym(h, "ZSTD_decompress"), *(void **)&Z.zstd_is_error = dlsym(h, "ZSTD_isError");
        if (h && which == 2) {
            *(void **)&Z.inflate_init2 = dlsym(h, "inflateInit2_"), *(void **)&Z.inflate = dlsym(h, "inflate");
            *(void **)&Z.inflate_end = dlsym(h, "inflateEnd"), *(void **)&Z.inflate_reset = dlsym(h, "inflateReset");
            *(void **)&Z.crc32 = dlsym(h, "crc32");
        }
        int ok = which == 0 ? !!Z.snappy_uncompress : which == 1 ? Z.zstd_decompress && Z.zstd_is_error
                                                                 : Z.inflate_init2 && Z.inflate && Z.inflate_end && Z.inflate_reset && Z.crc32;
        if (h && !ok) Z.lib[which] = NULL;
    }
    if (!Z.lib[which])
        return fail(x, "reading it needs %s (Debian package %s), which could not be loaded", SONAME[which], PKG[which]);
    return 0;
}

static int gunzip(Ctx *x, const uint8_t *src, size_t n, uint8_t *dst, size_t want) {
    z_stream s = {0};
    if (Z.inflate_init2(&s, 15 + 32, ZLIB_VERSION, (int)sizeof s) != Z_OK) return fail(x, "zlib could not start");
    s.next_in = (Bytef *)src, s.avail_in = (uInt)n, s.next_out = dst, s.avail_out = (uInt)want;
    int rc = Z_OK;
    for (;;) {
        rc = Z.inflate(&s, Z_FINISH);
        if (rc == Z_STREAM_END && s.avail_in && s.avail_out) { /* concatenated gzip members */
            Z.inflate_reset(&s);
            continue;
        }
        break;
    }
    size_t got = want - s.avail_out;
    int left = s.avail_in > 0;
    Z.inflate_end(&s);
    if (rc != Z_STREAM_END || left || got != want)
        return fail(x, "a gzip page that does not inflate to the %zu bytes its header says", want);
    return 0;
}

/* src [n] of a codec into dst [want]: exactly want bytes, or an error */
static int decompress(Ctx *x, int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t want) {
    if (codec == 0) {
        if (n != want) return fail(x, "an uncompressed page of %zu bytes whose header says %zu", n, want);
        memcpy(dst, src, n);
        return 0;
    }
    if (codec == 1) {
        if (load(x, 0)) return -1;
        size_t got = want;
        if (Z.snappy_uncompress((const char *)src, n, (char *)dst, &got) || got != want)
            return fail(x, "a Snappy page that does not decompress to the %zu bytes its header says", want);
        return 0;
    }
    if (codec == 6) {
        if (load(x, 1)) return -1;
        size_t got = Z.zstd_decompress(dst, want, src, n);
        if (Z.zstd_is_error(got) || got != want)
            return fail(x, "a Zstandard page that does not decompress to the %zu bytes its header says", want);
        return 0;
    }
    if (load(x, 2)) return -1;
    return gunzip(x, src, n, dst, want);
}

/* ---- the RLE / bit-packed hybrid ---- */

typedef struct {
    const uint8_t *p, *end;
} Bytes;

static int varint(Bytes *b, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64; s += 7) {
        if (b->p >= b->end) return -1;
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) return 0;
    }
    return -1;
}

/* value i of a little-endian bit-packed run of width bw (<= 64) */
static uint64_t unpack(const uint8_t *p, int bw, uint64_t i) {
    uint64_t bit = i * (uint64_t)bw, v = 0;
    for (int k = 0; k < bw; k++, bit++) v |= (uint64_t)((p[bit >> 3] >> (bit & 7)) & 1) << k;
    return v;
}

/* count values of width bw into out; the data is [b.p, b.end) */
static int hybrid(Ctx *x, Bytes b, int bw, int64_t count, uint32_t *out, const char *what) {
    int64_t got = 0;
    int bytes = (bw + 7) / 8;
    if (bw < 0 || bw > 32) return fail(x, "%s with a bit width of %d", what, bw);
    while (got < count) {
        uint64_t h;
        if (varint(&b, &h)) return fail(x, "%s end after %lld of %lld values", what, (long long)got, (long long)count);
        if (h & 1) {
            uint64_t groups = h >> 1, n = groups * 8, need = (uint64_t)(count - got) < n ? (uint64_t)(count - got) : n;
            uint64_t have = (uint64_t)(b.end - b.p);
            if (groups > (UINT64_MAX >> 4) || (need * (uint64_t)bw + 7) / 8 > have)
                return fail(x, "%s: a bit-packed run longer than its page", what);
            for (uint64_t i = 0; i < need; i++) out[got++] = (uint32_t)unpack(b.p, bw, i);
            b.p += groups * (uint64_t)bw < have ? groups * (uint64_t)bw : have;
        } else {
            uint64_t n = h >> 1;
            if (b.end - b.p < bytes) return fail(x, "%s: a run without its value", what);
            uint32_t v = 0;
            for (int k = 0; k < bytes; k++) v |= (uint32_t)b.p[k] << (8 * k);
            b.p += bytes;
            if (bw < 32 && v >> bw) return fail(x, "%s: a run value wider than %d bits", what, bw);
            for (uint64_t i = 0; i < n && got < count; i++) out[got++] = v;
        }
    }
    return 0;
}

static int bit_width(int max) {
    int w = 0;
    while (max >> w) w++;
    return w;
}

/* ---- the column's growing arrays ---- */

typedef struct {
    PqColumn *c;
    const PqNode *nd;
    size_t *budget;
    int64_t cap, vcap;
    size_t hcap;
    PqValue *dict;
    int64_t n_dict;
    int have_dict;
} Col;

static int take(Ctx *x, Col *c, size_t bytes) {
    if (bytes > *c->budget) return fail(x, "its row group decodes to more than the reader's limit of 4 GiB");
    *c->budget -= bytes;
    return 0;
}

static int grow_entries(Ctx *x, Col *c, int64_t n) {
    if (take(x, c, (size_t)n * 2)) return -1;
    if (c->c->n + n > c->cap) {
        c->cap = c->c->n + n > 2 * c->cap ? c->c->n + n : 2 * c->cap;
        c->c->rep = xrealloc(c->c->rep, (size_t)c->cap), c->c->def = xrealloc(c->c->def, (size_t)c->cap);
    }
    return 0;
}

static PqValue *grow_values(Ctx *x, Col *c, PqValue **arr, int64_t *n, int64_t *cap, int64_t more) {
    if (take(x, c, (size_t)more * sizeof(PqValue))) return NULL;
    if (*n + more > *cap) {
        *cap = *n + more > 2 * *cap ? *n + more : 2 * *cap;
        *arr = xrealloc(*arr, sizeof(PqValue) * (size_t)*cap);
    }
    return *arr + *n;
}

/* a string value into the heap, checked as UTF-8 text without NUL */
static int put_string(Ctx *x, Col *c, const uint8_t *s, size_t n, PqValue *v) {
    if (st_utf8_check(s, n) != n) return fail(x, "a value that is not UTF-8 text (or holds a NUL byte)");
    if (take(x, c, n + 1)) return -1;
    PqColumn *col = c->c;
    if (col->heap_len + n + 1 > c->hcap) {
        c->hcap = col->heap_len + n + 1 > 2 * c->hcap ? col->heap_len + n + 1 : 2 * c->hcap;
        col->heap = xrealloc(col->heap, c->hcap);
    }
    memcpy(col->heap + col->heap_len, s, n);
    col->heap[col->heap_len + n] = 0;
    v->s.off = col->heap_len, v->s.len = n;
    col->heap_len += n + 1;
    return 0;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void fixed_value(int type, uint64_t u, PqValue *v) {
    if (type == PQ_INT32) v->i = (int32_t)(uint32_t)u;
    else if (type == PQ_INT64) v->i = (int64_t)u;
    else if (type == PQ_FLOAT) {
        float f;
        uint32_t w = (uint32_t)u;
        memcpy(&f, &w, 4);
        v->d = f;
    } else {
        memcpy(&v->d, &u, 8);
    }
}

static int width_of(int type) { return type == PQ_INT32 || type == PQ_FLOAT ? 4 : 8; }

/* PLAIN values: n of them from b into out */
static int plain(Ctx *x, Col *c, Bytes b, int64_t n, PqValue *out) {
    int type = c->nd->type;
    if (type == PQ_BOOLEAN) {
        if ((uint64_t)(b.end - b.p) * 8 < (uint64_t)n) return fail(x, "PLAIN booleans longer than their page");
        for (int64_t i = 0; i < n; i++) out[i].i = (b.p[i >> 3] >> (i & 7)) & 1;
        return 0;
    }
    if (type == PQ_BYTE_ARRAY) {
        for (int64_t i = 0; i < n; i++) {
            if (b.end - b.p < 4) return fail(x, "PLAIN strings longer than their page");
            uint64_t len = le(b.p, 4);
            b.p += 4;
            if (len > (uint64_t)(b.end - b.p)) return fail(x, "a PLAIN string longer than its page");
            if (put_string(x, c, b.p, (size_t)len, &out[i])) return -1;
            b.p += len;
        }
        return 0;
    }
    int w = width_of(type);
    if ((uint64_t)(b.end - b.p) / (uint64_t)w < (uint64_t)n) return fail(x, "PLAIN values longer than their page");
    for (int64_t i = 0; i < n; i++) fixed_value(type, le(b.p + i * w, w), &out[i]);
    return 0;
}

/* DELTA_BINARY_PACKED: n values into out (int64, wrapping), the end of the encoded data into *end */
static int delta_packed(Ctx *x, Bytes b, int64_t n, int64_t *out, const uint8_t **end) {
    uint64_t block, minis, total, first;
    if (varint(&b, &block) || varint(&b, &minis) || varint(&b, &total) || varint(&b, &first))
        return fail(x, "a DELTA_BINARY_PACKED header cut short");
    if (!block || block % 128 || !minis || block % minis || (block / minis) % 32 || block > (1u << 20))
        return fail(x, "a DELTA_BINARY_PACKED header with block %llu and %llu miniblocks", (unsigned long long)block,
                    (unsigned long long)minis);
    if (total != (uint64_t)n)
        return fail(x, "DELTA_BINARY_PACKED holds %llu values, its page %lld", (unsigned long long)total, (long long)n);
    uint64_t per = block / minis, prev = (first >> 1) ^ -(first & 1);
    int64_t got = 0;
    if (n > 0) out[got++] = (int64_t)prev;
    while (got < n) {
        uint64_t zz;
        if (varint(&b, &zz)) return fail(x, "a DELTA_BINARY_PACKED block cut short");
        uint64_t min_delta = (zz >> 1) ^ -(zz & 1);
        if ((uint64_t)(b.end - b.p) < minis) return fail(x, "a DELTA_BINARY_PACKED block cut short");
        const uint8_t *widths = b.p;
        b.p += minis;
        for (uint64_t m = 0; m < minis && got < n; m++) {
            int bw = widths[m];
            if (bw > 64) return fail(x, "a DELTA_BINARY_PACKED miniblock %d bits wide", bw);
            uint64_t bytes = per * (uint64_t)bw / 8;
            if ((uint64_t)(b.end - b.p) < bytes) return fail(x, "a DELTA_BINARY_PACKED miniblock cut short");
            for (uint64_t i = 0; i < per && got < n; i++) {
                prev += min_delta + unpack(b.p, bw, i);
                out[got++] = (int64_t)prev;
            }
            b.p += bytes;
        }
    }
    if (end) *end = b.p;
    return 0;
}

/* n values of one encoding from b into out */
static int values(Ctx *x, Col *c, int enc, Bytes b, int64_t n, PqValue *out) {
    int type = c->nd->type;
    if (enc == ENC_PLAIN) return plain(x, c, b, n, out);
    if (enc == ENC_PLAIN_DICT || enc == ENC_RLE_DICT) {
        if (!c->have_dict) return fail(x, "a dictionary-encoded page without a dictionary page");
        if (b.p >= b.end) return fail(x, "a dictionary-encoded page without its bit width");
        int bw = *b.p++;
        uint32_t *idx = xmalloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
        int rc = hybrid(x, b, bw, n, idx, "dictionary indices");
        for (int64_t i = 0; !rc && i < n; i++) {
            if (idx[i] >= (uint64_t)c->n_dict) rc = fail(x, "a dictionary index %u past the dictionary's %lld entries", idx[i], (long long)c->n_dict);
            else out[i] = c->dict[idx[i]];
        }
        free(idx);
        return rc;
    }
    if (enc == ENC_RLE && type == PQ_BOOLEAN) {
        if (b.end - b.p < 4) return fail(x, "RLE booleans without their length");
        uint64_t len = le(b.p, 4);
        b.p += 4;
        if (len > (uint64_t)(b.end - b.p)) return fail(x, "RLE booleans longer than their page");
        uint32_t *v = xmalloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
        int rc = hybrid(x, (Bytes){b.p, b.p + len}, 1, n, v, "RLE booleans");
        for (int64_t i = 0; !rc && i < n; i++) out[i].i = v[i];
        free(v);
        return rc;
    }
    if (enc == ENC_DELTA && (type == PQ_INT32 || type == PQ_INT64)) {
        int64_t *v = xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        int rc = delta_packed(x, b, n, v, NULL);
        for (int64_t i = 0; !rc && i < n; i++) out[i].i = type == PQ_INT32 ? (int32_t)(uint32_t)v[i] : v[i];
        free(v);
        return rc;
    }
    if ((enc == ENC_DELTA_LEN || enc == ENC_DELTA_BYTES) && type == PQ_BYTE_ARRAY) {
        int64_t *pre = enc == ENC_DELTA_BYTES ? xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1)) : NULL;
        int64_t *len = xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        int rc = pre ? delta_packed(x, b, n, pre, &b.p) : 0;
        if (!rc) rc = delta_packed(x, b, n, len, &b.p);
        char *last = NULL;
        size_t last_len = 0;
        for (int64_t i = 0; !rc && i < n; i++) {
            int64_t p = pre ? pre[i] : 0;
            if (len[i] < 0 || (uint64_t)len[i] > (uint64_t)(b.end - b.p) || p < 0 || (size_t)p > last_len) {
                rc = fail(x, "a DELTA string longer than its page or its prefix");
                break;
            }
            char *s = xmalloc((size_t)p + (size_t)len[i] + 1);
            if (p) memcpy(s, last, (size_t)p);
            memcpy(s + p, b.p, (size_t)len[i]);
            b.p += len[i];
            free(last);
            last = s, last_len = (size_t)p + (size_t)len[i];
            rc = put_string(x, c, (const uint8_t *)s, last_len, &out[i]);
        }
        free(last), free(pre), free(len);
        return rc;
    }
    if (enc == ENC_SPLIT && type != PQ_BOOLEAN && type != PQ_BYTE_ARRAY) {
        int w = width_of(type);
        if ((uint64_t)(b.end - b.p) / (uint64_t)w < (uint64_t)n) return fail(x, "BYTE_STREAM_SPLIT values longer than their page");
        for (int64_t i = 0; i < n; i++) {
            uint64_t u = 0;
            for (int k = w - 1; k >= 0; k--) u = u << 8 | b.p[(int64_t)k * n + i];
            fixed_value(type, u, &out[i]);
        }
        return 0;
    }
    static const char *names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED", "DELTA_BINARY_PACKED",
                                  "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return fail(x, "the %s encoding is not read for this column's type", enc >= 0 && enc < 10 ? names[enc] : "unknown");
}

/* ---- pages ---- */

typedef struct {
    int type, has_crc;
    int64_t usize, csize;
    uint32_t crc;
    int64_t num_values;
    int encoding, def_enc, rep_enc; /* v1 */
    int64_t def_len, rep_len;       /* v2 */
    int compressed;                 /* v2: is_compressed (default true) */
    int seen_header;
} PageHeader;

static void read_sub(ThriftCursor *tc, PageHeader *h, int v2) {
    int last = 0, id, t;
    h->seen_header = 1;
    while (thrift_field(tc, &last, &id, &t)) {
        if (id == 1 && t == TH_I32) h->num_values = thrift_i32(tc);
        else if (!v2 && id == 2 && t == TH_I32) h->encoding = thrift_i32(tc);
        else if (!v2 && id == 3 && t == TH_I32) h->def_enc = thrift_i32(tc);
        else if (!v2 && id == 4 && t == TH_I32) h->rep_enc = thrift_i32(tc);
        else if (v2 && id == 4 && t == TH_I32) h->encoding = thrift_i32(tc);
        else if (v2 && id == 5 && t == TH_I32) h->def_len = thrift_i32(tc);
        else if (v2 && id == 6 && t == TH_I32) h->rep_len = thrift_i32(tc);
        else if (v2 && id == 7 && (t == TH_TRUE || t == TH_FALSE)) h->compressed = thrift_field_bool(t);
        else thrift_skip(tc, t);
    }
}

static int page_header(Ctx *x, Bytes *b, PageHeader *h) {
    ThriftCursor tc = {b->p, b->end, NULL, 0};
    int last = 0, id, t;
    *h = (PageHeader){.type = -1, .usize = -1, .csize = -1, .num_values = -1, .compressed = 1, .rep_enc = 3, .def_enc = 3};
    while (thrift_field(&tc, &last, &id, &t)) {
        if (id == 1 && t == TH_I32) h->type = thrift_i32(&tc);
        else if (id == 2 && t == TH_I32) h->usize = thrift_i32(&tc);
        else if (id == 3 && t == TH_I32) h->csize = thrift_i32(&tc);
        else if (id == 4 && t == TH_I32) h->crc = (uint32_t)thrift_i32(&tc), h->has_crc = 1;
        else if ((id == 5 || id == 7 || id == 8) && t == TH_STRUCT && id - 5 == (h->type == 0 ? 0 : h->type == 2 ? 2 : 3))
            read_sub(&tc, h, id == 8);
        else thrift_skip(&tc, t);
    }
    if (tc.err) return fail(x, "a damaged page header: %s", tc.err);
    if (h->usize < 0 || h->csize < 0 || h->usize > PAGE_MAX || h->csize > PAGE_MAX)
        return fail(x, "a page header with sizes %lld / %lld", (long long)h->usize, (long long)h->csize);
    if ((h->type == 0 || h->type == 2 || h->type == 3) && (!h->seen_header || h->num_values < 0))
        return fail(x, "a page header without its page type's details");
    b->p = tc.p;
    return 0;
}

/* the levels and values of one data page (v1 or v2) whose payload is [p, p + csize) */
static int data_page(Ctx *x, Col *c, int codec, const PageHeader *h, const uint8_t *p) {
    const PqNode *nd = c->nd;
    int64_t n = h->num_values;
    uint8_t *buf = NULL;
    Bytes lev[2] = {{0}}, val;
    if (h->type == 0) { /* v1: everything compressed together; levels prefixed by their byte length */
        buf = xmalloc((size_t)h->usize + 1);
        if (decompress(x, codec, p, (size_t)h->csize, buf, (size_t)h->usize)) return free(buf), -1;
        Bytes b = {buf, buf + h->usize};
        for (int k = 0; k < 2; k++) { /* repetition first, then definition */
            int max = k == 0 ? nd->rep : nd->def, enc = k == 0 ? h->rep_enc : h->def_enc;
            if (!max) continue;
            if (enc != ENC_RLE) return free(buf), fail(x, "levels in the %s encoding (only RLE is read)", enc == ENC_BIT_PACKED ? "BIT_PACKED" : "unknown");
            if (b.end - b.p < 4 || le(b.p, 4) > (uint64_t)(b.end - b.p - 4)) return free(buf), fail(x, "levels longer than their page");
            uint64_t len = le(b.p, 4);
            lev[k] = (Bytes){b.p + 4, b.p + 4 + len};
            b.p += 4 + len;
        }
        val = b;
    } else { /* v2: levels uncompressed and unprefixed, then the values, compressed unless said otherwise */
        if (h->rep_len < 0 || h->def_len < 0 || h->rep_len + h->def_len > h->csize || h->rep_len + h->def_len > h->usize)
            return fail(x, "a v2 page whose levels are longer than the page");
        lev[0] = (Bytes){p, p + h->rep_len}, lev[1] = (Bytes){p + h->rep_len, p + h->rep_len + h->def_len};
        int64_t off = h->rep_len + h->def_len, want = h->usize - off;
        buf = xmalloc((size_t)want + 1);
        if (decompress(x, h->compressed ? codec : 0, p + off, (size_t)(h->csize - off), buf, (size_t)want)) return free(buf), -1;
        val = (Bytes){buf, buf + want};
    }
    int rc = grow_entries(x, c, n);
    uint32_t *tmp = rc ? NULL : xmalloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    PqColumn *col = c->c;
    for (int k = 0; !rc && n && k < 2; k++) {
        uint8_t *dst = (k == 0 ? col->rep : col->def) + col->n;
        int max = k == 0 ? nd->rep : nd->def;
        if (!max) {
            memset(dst, 0, (size_t)n);
            continue;
        }
        rc = hybrid(x, lev[k], bit_width(max), n, tmp, k == 0 ? "repetition levels" : "definition levels");
        for (int64_t i = 0; !rc && i < n; i++) {
            if (tmp[i] > (uint32_t)max) rc = fail(x, "a %s level %u above the column's %d", k ? "definition" : "repetition", tmp[i], max);
            dst[i] = (uint8_t)tmp[i];
        }
    }
    free(tmp);
    int64_t present = 0;
    for (int64_t i = 0; !rc && i < n; i++) present += col->def[col->n + i] == nd->def;
    if (!rc && nd->rep && n && col->n == 0 && col->rep[0] != 0) rc = fail(x, "its first value does not start a row");
    PqValue *out = NULL;
    if (!rc && present && !(out = grow_values(x, c, &col->val, &col->n_val, &c->vcap, present))) rc = -1;
    if (!rc && present) rc = values(x, c, h->encoding, val, present, out);
    if (!rc) col->n += n, col->n_val += present;
    free(buf);
    return rc;
}

static int dict_page(Ctx *x, Col *c, int codec, const PageHeader *h, const uint8_t *p) {
    if (c->have_dict || c->c->n) return fail(x, "a second dictionary page, or one after data pages");
    if (h->encoding != ENC_PLAIN && h->encoding != ENC_PLAIN_DICT) return fail(x, "a dictionary page not in PLAIN encoding");
    uint8_t *buf = xmalloc((size_t)h->usize + 1);
    int rc = decompress(x, codec, p, (size_t)h->csize, buf, (size_t)h->usize);
    int64_t dcap = 0;
    PqValue *out = NULL;
    if (!rc && h->num_values && !(out = grow_values(x, c, &c->dict, &c->n_dict, &dcap, h->num_values))) rc = -1;
    if (!rc && h->num_values) rc = values(x, c, ENC_PLAIN, (Bytes){buf, buf + h->usize}, h->num_values, out);
    if (!rc) c->n_dict = h->num_values, c->have_dict = 1;
    free(buf);
    return rc;
}

int pq_column_read(int fd, const PqMeta *m, int g, int leaf, PqColumn *col, size_t *budget, char *err,
                   size_t errlen) {
    const PqChunk *ch = &m->groups[g].chunks[leaf];
    const PqNode *nd = &m->nodes[m->leaves[leaf]];
    Ctx x = {err, errlen, nd->path};
    *col = (PqColumn){0};
    if ((size_t)ch->size > *budget) return fail(&x, "its row group decodes to more than the reader's limit of 4 GiB");
    uint8_t *buf = xmalloc((size_t)ch->size);
    ssize_t got = pread(fd, buf, (size_t)ch->size, ch->start);
    if (got != ch->size) {
        free(buf);
        return fail(&x, "read error at byte %lld: %s", (long long)ch->start, got < 0 ? strerror(errno) : "the file is shorter than its footer says");
    }
    Col c = {col, nd, budget, 0, 0, 0, NULL, 0, 0};
    Bytes b = {buf, buf + ch->size};
    int64_t seen = 0;
    int rc = 0;
    while (!rc && seen < ch->num_values) {
        PageHeader h;
        if (b.p >= b.end) {
            rc = fail(&x, "row group %d: its pages end after %lld of the chunk's %lld values", g + 1, (long long)seen, (long long)ch->num_values);
            break;
        }
        if ((rc = page_header(&x, &b, &h))) break;
        if (h.csize > b.end - b.p) {
            rc = fail(&x, "row group %d: a page of %lld bytes where %lld are left in its chunk", g + 1, (long long)h.csize, (long long)(b.end - b.p));
            break;
        }
        if (h.has_crc) { /* CRC-32 of the page's bytes as stored */
            if ((rc = load(&x, 2))) break;
            if ((uint32_t)Z.crc32(Z.crc32(0, NULL, 0), b.p, (unsigned)h.csize) != h.crc) {
                rc = fail(&x, "row group %d: a page whose CRC-32 does not match its bytes", g + 1);
                break;
            }
        }
        if (h.type == 2) rc = dict_page(&x, &c, ch->codec, &h, b.p);
        else if (h.type == 0 || h.type == 3) {
            if (h.num_values > ch->num_values - seen)
                rc = fail(&x, "row group %d: pages hold more values than the chunk's %lld", g + 1, (long long)ch->num_values);
            else rc = data_page(&x, &c, ch->codec, &h, b.p), seen += h.num_values;
        } /* index pages and unknown page types are skipped, as the format allows */
        b.p += h.csize;
    }
    free(buf);
    free(c.dict);
    if (rc) pq_column_free(col);
    return rc;
}

void pq_column_free(PqColumn *col) {
    free(col->rep), free(col->def), free(col->val), free(col->heap);
    *col = (PqColumn){0};
}
