/* test_safetensors.c: the safetensors reader and writer (formats.md e.1).
 * Round trips in F32, BF16 and shards; BF16 rounding against an independent
 * helper and hand-computed cases; F16 widening from hand-written bytes (and all
 * 65,536 values); misaligned data; atomic writes (missing, read-only and
 * size-limited destinations, a folder in the way); one test per class of malformed file or index,
 * each checking that the message names the file, the problem and the tensor;
 * and a seeded mutation fuzzer whose every outcome must be 0 with in-bounds
 * tensors or -1 with a message. */
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "core/common.h"
#include "core/rng.h"
#include "io/safetensors.h"

#define FUZZ_ITERS 5000

/* ================================================================ small helpers */

typedef struct {
    unsigned char *s;
    size_t n, cap;
} Bytes;

/* Replaces b[pos, pos+del) by ins [len]. */
static void bytes_splice(Bytes *b, size_t pos, size_t del, const void *ins, size_t len) {
    if (b->n - del + len + 1 > b->cap) {
        b->cap = 2 * (b->n + len) + 64;
        b->s = xrealloc(b->s, b->cap);
    }
    memmove(b->s + pos + len, b->s + pos + del, b->n - pos - del);
    if (len) memcpy(b->s + pos, ins, len);
    b->n = b->n - del + len;
}

static void bytes_add(Bytes *b, const void *p, size_t len) { bytes_splice(b, b->n, 0, p, len); }

static void bytes_set(Bytes *dst, const Bytes *src) {
    dst->n = 0;
    bytes_add(dst, src->s, src->n);
}

static char *tmp_path(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int read_file(const char *path, Bytes *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    out->n = 0;
    unsigned char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) bytes_add(out, buf, k);
    fclose(f);
    return 0;
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* No PATH.tmp.* left anywhere in DIR. */
static int no_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 1;
    int clean = 1;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) clean = 0;
    closedir(d);
    return clean;
}

/* u64 LE length of HEADER, HEADER, then DATA [dlen] into out. */
static void assemble(Bytes *out, const void *header, size_t hlen, uint64_t prefix, const void *data, size_t dlen) {
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(prefix >> (8 * i));
    out->n = 0;
    bytes_add(out, len, 8);
    bytes_add(out, header, hlen);
    bytes_add(out, data, dlen);
}

/* Writes a safetensors file whose header is JSON with ' for " (readable tests). */
static void put_st(const char *path, const char *json, const void *data, size_t dlen) {
    char *h = xmalloc(strlen(json) + 1);
    for (size_t i = 0; i <= strlen(json); i++) h[i] = json[i] == '\'' ? '"' : json[i];
    Bytes b = {0};
    assemble(&b, h, strlen(h), strlen(h), data, dlen);
    CHECK(write_file(path, b.s, b.n) == 0, "cannot write %s", path);
    free(b.s);
    free(h);
}

static void put_text(const char *path, const char *json) {
    char *h = xmalloc(strlen(json) + 1);
    for (size_t i = 0; i <= strlen(json); i++) h[i] = json[i] == '\'' ? '"' : json[i];
    CHECK(write_file(path, h, strlen(h)) == 0, "cannot write %s", path);
    free(h);
}

/* st_open(open_path) must fail with a message holding FILE and the needles. */
static void expect_fail(int line, const char *open_path, const char *file, const char *a, const char *b) {
    StSet st;
    char err[2048] = "";
    int rc = st_open(&st, open_path, err, sizeof err);
    CHECK(rc == -1, "line %d: st_open(%s) returned %d, want -1", line, open_path, rc);
    if (rc == 0) st_close(&st);
    CHECK(strstr(err, file) != NULL, "line %d: message does not name %s: %s", line, file, err);
    CHECK(!a || strstr(err, a), "line %d: message lacks \"%s\": %s", line, a, err);
    CHECK(!b || strstr(err, b), "line %d: message lacks \"%s\": %s", line, b, err);
}
#define EXPECT_FAIL(path, file, a, b) expect_fail(__LINE__, path, file, a, b)

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Independent round-to-nearest-even to BF16: exact distances in double to the
 * two neighbours; the neighbour past the largest finite value is 2^128 = inf. */
static uint16_t ref_bf16(float x) {
    uint32_t u = bits_of(x), sign = u & 0x80000000u, mag = u & 0x7fffffffu;
    if (mag >= 0x7f800000u) return (uint16_t)(u >> 16); /* inf (NaN is checked separately) */
    uint32_t lo = mag & 0xffff0000u, hi = lo + 0x10000u;
    int e = (int)(lo >> 23);
    double v = fabs((double)x), vlo = (double)float_of(lo), vhi = vlo + ldexp(1.0, (e ? e : 1) - 127 - 7);
    double dlo = v - vlo, dhi = vhi - v;
    uint32_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo >> 16) & 1) ? hi : lo;
    return (uint16_t)((sign | pick) >> 16);
}

/* Independent F16 decoding. */
static double ref_f16(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h >> 15) ? -v : v;
}

/* ================================================================ conversions */

static void test_bf16_rounding(void) {
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3f800000u, 0x3f80},                        /* 1.0 */
        {0x3f808000u, 0x3f80},                        /* 1.00390625 = 1 + 2^-8: tie, even is down */
        {0x3f818000u, 0x3f82},                        /* 1.01171875: tie, even is up */
        {0x3f808001u, 0x3f81},                        /* just above the tie */
        {0xbfc00000u, 0xbfc0},                        /* -1.5 */
        {0x7f7fc99eu, 0x7f80},                        /* 3.4e38: above the largest BF16 + half an ulp, rounds to inf */
        {0xff7fc99eu, 0xff80},                        /* -3.4e38 */
        {0x7f7fffffu, 0x7f80},                        /* FLT_MAX */
        {0x7f7f7fffu, 0x7f7f},                        /* just below the overflow tie */
        {0x7f7f8000u, 0x7f80},                        /* the overflow tie: 0x7f7f is odd, so up to inf */
        {0x7f800000u, 0x7f80},                        /* inf */
        {0x80000000u, 0x8000},                        /* -0.0 */
        {0x00000000u, 0x0000}, {0x000116c2u, 0x0001}, /* 1e-40, a float32 subnormal */
        {0x00008000u, 0x0000},                        /* subnormal tie, even down */
        {0x00018000u, 0x0002},                        /* subnormal tie, even up */
        {0x00000001u, 0x0000},                        /* smallest subnormal */
        {0x007fffffu, 0x0080},                        /* largest subnormal rounds up to the smallest normal */
    };
    for (size_t i = 0; i < PPA_ARRAY_LEN(cases); i++) {
        float x = float_of(cases[i].in);
        CHECK(st_f32_to_bf16(x) == cases[i].out, "bf16(0x%08x) = 0x%04x, want 0x%04x", cases[i].in, st_f32_to_bf16(x),
              cases[i].out);
        CHECK(ref_bf16(x) == cases[i].out, "reference bf16(0x%08x) = 0x%04x, want 0x%04x", cases[i].in, ref_bf16(x),
              cases[i].out);
    }
    CHECK(bits_of(3.4e38f) == 0x7f7fc99eu, "3.4e38f bits");
    CHECK(bits_of(1e-40f) == 0x000116c2u, "1e-40f bits");
    CHECK(bits_of(1.00390625f) == 0x3f808000u, "1.00390625f bits");
    /* NaN stays NaN with its sign, also with the payload only in the low half */
    const uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu, 0xffffffffu};
    for (size_t i = 0; i < PPA_ARRAY_LEN(nans); i++) {
        float back = st_bf16_to_f32(st_f32_to_bf16(float_of(nans[i])));
        CHECK(isnan(back) && !!signbit(back) == !!(nans[i] >> 31), "NaN 0x%08x -> 0x%08x", nans[i], bits_of(back));
    }
    /* random bit patterns and random values against the reference */
    PpaRng r;
    rng_seed(&r, 7);
    int bad = 0;
    for (int i = 0; i < 300000; i++) {
        float x = i % 2 ? float_of((uint32_t)rng_u64(&r)) : (float)(rng_normal(&r) * ldexp(1, (int)(i % 200) - 100));
        if (isnan(x)) continue;
        uint16_t h = st_f32_to_bf16(x);
        if (h != ref_bf16(x) || bits_of(st_bf16_to_f32(h)) != (uint32_t)h << 16) bad++;
    }
    CHECK(bad == 0, "%d random values round differently from the reference", bad);
}

static void test_f16_values(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = st_f16_to_f32((uint16_t)h);
        double want = ref_f16((uint16_t)h);
        if (isnan(want) ? !isnan(got) || !!signbit(got) != !!(h >> 15)
                        : (double)got != want || !!signbit(got) != !!signbit(want))
            bad++;
    }
    CHECK(bad == 0, "%d of 65536 F16 values widen wrongly", bad);
    CHECK(bits_of(st_f16_to_f32(0x7e01)) == 0x7fc02000u, "F16 NaN payload kept: 0x%08x",
          bits_of(st_f16_to_f32(0x7e01)));
}

/* A file with F16 data written byte by byte. */
static void test_f16_file(const char *dir) {
    static const uint16_t h[12] = {0x0000, 0x8000, 0x3c00, 0x7bff, 0x0001, 0x03ff,
                                   0x0400, 0x7c00, 0xfc00, 0x7e00, 0xc000, 0x3555};
    const float want[12] = {0.0f,     -0.0f,    1.0f,      65504.0f, 0x1p-24f, 1023 * 0x1p-24f,
                            0x1p-14f, INFINITY, -INFINITY, NAN,      -2.0f,    0.333251953125f};
    unsigned char data[24];
    for (int i = 0; i < 12; i++)
        data[2 * i] = (unsigned char)(h[i] & 0xff), data[2 * i + 1] = (unsigned char)(h[i] >> 8);
    char *p = tmp_path(dir, "f16.safetensors");
    put_st(p, "{'h':{'dtype':'F16','shape':[3,4],'data_offsets':[0,24]}}", data, sizeof data);
    StSet st;
    char err[512] = "";
    CHECK(st_open(&st, p, err, sizeof err) == 0, "open F16 file: %s", err);
    const StTensor *t = st_find(&st, "h");
    CHECK(t && t->dtype == ST_F16 && t->ndim == 2 && t->shape[0] == 3 && t->shape[1] == 4 && t->numel == 12 &&
              t->nbytes == 24,
          "F16 tensor metadata");
    if (t) {
        float out[12];
        st_to_f32(t, out);
        for (int i = 0; i < 12; i++)
            CHECK(isnan(want[i]) ? isnan(out[i]) : bits_of(out[i]) == bits_of(want[i]), "F16 0x%04x -> %a, want %a",
                  h[i], out[i], want[i]);
    }
    st_close(&st);
    free(p);
}

/* ================================================================ hand-built mixed file, misaligned */

static const float MIX_A[3] = {1.5f, -2.25f, 1e-30f}, MIX_D[2] = {FLT_MAX, -0.0f};
static const uint16_t MIX_B = 0x4049, MIX_C[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};

/* Tensors out of offset order, rank 0, F32/F16/BF16 mixed, an empty tensor, and a
 * header length that puts the F32 data at an odd address. */
static void mixed_file(Bytes *out) {
    const char *json = "{'__metadata__':{'format':'pt','note':'hand-built'},"
                       "'d':{'dtype':'F32','shape':[2],'data_offsets':[22,30]},"
                       "'a':{'dtype':'F32','shape':[3],'data_offsets':[0,12]},"
                       "'b':{'dtype':'BF16','shape':[],'data_offsets':[12,14]},"
                       "'c':{'dtype':'F16','shape':[2,2],'data_offsets':[14,22]},"
                       "'e':{'dtype':'F32','shape':[0,3],'data_offsets':[30,30]}}";
    Bytes h = {0}, d = {0};
    for (const char *c = json; *c; c++) bytes_add(&h, *c == '\'' ? "\"" : c, 1);
    while (h.n % 4 != 1) bytes_add(&h, " ", 1);
    bytes_add(&d, MIX_A, 12);
    unsigned char b2[2] = {MIX_B & 0xff, MIX_B >> 8};
    bytes_add(&d, b2, 2);
    for (int i = 0; i < 4; i++) {
        unsigned char c2[2] = {(unsigned char)(MIX_C[i] & 0xff), (unsigned char)(MIX_C[i] >> 8)};
        bytes_add(&d, c2, 2);
    }
    bytes_add(&d, MIX_D, 8);
    assemble(out, h.s, h.n, h.n, d.s, d.n);
    free(h.s);
    free(d.s);
}

static void test_mixed_misaligned(const char *dir) {
    Bytes b = {0};
    mixed_file(&b);
    char *p = tmp_path(dir, "mixed.safetensors");
    CHECK(write_file(p, b.s, b.n) == 0, "write mixed");
    StSet st;
    char err[512] = "";
    CHECK(st_open(&st, p, err, sizeof err) == 0, "open mixed: %s", err);
    CHECK(st.n_files == 1 && st.n_tensors == 5, "mixed: %d files, %d tensors", st.n_files, st.n_tensors);
    for (int i = 1; i < st.n_tensors; i++)
        CHECK(strcmp(st.tensors[i - 1].name, st.tensors[i].name) < 0, "tensors sorted by name");
    const StTensor *a = st_find(&st, "a"), *bb = st_find(&st, "b"), *c = st_find(&st, "c"), *d = st_find(&st, "d"),
                   *e = st_find(&st, "e");
    CHECK(a && bb && c && d && e && !st_find(&st, "f") && !st_find(&st, "__metadata__"), "st_find");
    if (a && bb && c && d && e) {
        CHECK((uintptr_t)a->data % 4 != 0 && (uintptr_t)d->data % 4 != 0, "F32 data is misaligned (test premise)");
        float out[4];
        st_to_f32(a, out);
        CHECK(!memcmp(out, MIX_A, 12), "misaligned F32 a");
        st_to_f32(d, out);
        CHECK(!memcmp(out, MIX_D, 8), "misaligned F32 d (FLT_MAX, -0)");
        CHECK(bb->ndim == 0 && bb->numel == 1 && bb->nbytes == 2 && bb->dtype == ST_BF16, "rank-0 BF16");
        st_to_f32(bb, out);
        CHECK(out[0] == 3.140625f, "BF16 0x4049 = %g", out[0]);
        st_to_f32(c, out);
        CHECK(out[0] == 1 && out[1] == -2 && out[2] == 65504 && out[3] == 0x1p-24f, "F16 c");
        CHECK(e->numel == 0 && e->nbytes == 0 && e->ndim == 2 && e->shape[1] == 3, "empty tensor");
        st_to_f32(e, NULL); /* nothing to write */
    }
    st_close(&st);
    CHECK(st.n_tensors == 0 && st.tensors == NULL, "st_close zeroes the set");
    st_close(&st); /* twice is harmless */
    free(p);
    free(b.s);
}

/* ================================================================ round trips */

typedef struct {
    const char *name;
    int ndim;
    int64_t shape[3];
    int numel;
} Spec;

/* Unsorted names, rank 0 to 3, an empty tensor, odd sizes, names to escape. */
static const Spec SPECS[] = {
    {"vec", 1, {7}, 7},
    {"scalar", 0, {0}, 1},
    {"mat", 2, {3, 5}, 15},
    {"empty", 2, {0, 4}, 0},
    {"cube", 3, {2, 1, 3}, 6},
    {"q\"uote\\back\ttab", 1, {1}, 1},
    {"\xc3\xbcn\xc3\xaf", 1, {3}, 3},
};
#define N_SPECS ((int)PPA_ARRAY_LEN(SPECS))

/* Values with every special case, including BF16 ties, NaN, inf, -0 and subnormals. */
static void fill_values(float *x, int n, PpaRng *r) {
    static const uint32_t special[] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x7f7fc99eu, 0x7fc00000u, 0x7f800001u,
                                       0x80000000u, 0x000116c2u, 0x00018000u, 0xff800000u, 0x7f7fffffu, 0x00000001u};
    for (int i = 0; i < n; i++)
        x[i] = rng_uniform(r) < 0.4 ? float_of(special[rng_u64(r) % PPA_ARRAY_LEN(special)])
                                    : (float)rng_normal(r) * 10.0f;
}

static int check_bf16_equal(const float *got, const float *x, int n) {
    for (int i = 0; i < n; i++) {
        if (isnan(x[i])) {
            if (!isnan(got[i]) || !!signbit(got[i]) != !!signbit(x[i])) return 0;
        } else if (bits_of(got[i]) != (uint32_t)ref_bf16(x[i]) << 16) {
            return 0;
        }
    }
    return 1;
}

static void roundtrip(const char *dir, StDtype dtype) {
    PpaRng r;
    rng_seed(&r, 11 + dtype);
    float *vals[N_SPECS];
    StWriteTensor w[N_SPECS];
    for (int i = 0; i < N_SPECS; i++) {
        vals[i] = SPECS[i].numel ? xmalloc(sizeof(float) * (size_t)SPECS[i].numel) : NULL;
        fill_values(vals[i], SPECS[i].numel, &r);
        w[i] = (StWriteTensor){SPECS[i].name, SPECS[i].ndim, SPECS[i].shape, vals[i]};
    }
    const char *dt = st_dtype_name(dtype);
    char name[64], err[512] = "";
    snprintf(name, sizeof name, "rt_%s.safetensors", dt);
    char *p = tmp_path(dir, name);
    CHECK(st_write(p, w, N_SPECS, dtype, err, sizeof err) == 0, "%s write: %s", dt, err);
    CHECK(no_temp_files(dir), "%s: no temp file after a successful write", dt);

    /* the bytes: header length a multiple of 8, metadata first, given order, space padding */
    Bytes raw = {0};
    read_file(p, &raw);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0 && raw.n >= 8; i--) hlen = hlen << 8 | raw.s[i];
    size_t esize = st_dtype_size(dtype), total = 0;
    for (int i = 0; i < N_SPECS; i++) total += esize * (size_t)SPECS[i].numel;
    CHECK(hlen % 8 == 0 && raw.n == 8 + hlen + total, "%s: header length %llu, file %zu bytes", dt,
          (unsigned long long)hlen, raw.n);
    const char *head = "{\"__metadata__\":{\"format\":\"pt\"},\"vec\":{\"dtype\":\"";
    CHECK(raw.n > 8 + strlen(head) && !memcmp(raw.s + 8, head, strlen(head)), "%s: header starts %.60s", dt, raw.s + 8);
    char want[96];
    snprintf(want, sizeof want, "\"vec\":{\"dtype\":\"%s\",\"shape\":[7],\"data_offsets\":[0,%zu]}", dt, 7 * esize);
    char *htext = xmalloc(hlen + 1);
    memcpy(htext, raw.s + 8, hlen);
    htext[hlen] = 0;
    CHECK(strstr(htext, want) != NULL, "%s: header holds %s", dt, want);
    CHECK(strstr(htext, "\"scalar\":{\"dtype\":\"") && strstr(htext, "\"shape\":[],"), "%s: rank 0 as []", dt);
    size_t end = strlen(htext);
    while (end && htext[end - 1] == ' ') end--;
    CHECK(end && htext[end - 1] == '}', "%s: header padded with spaces", dt);
    free(htext);
    free(raw.s);

    StSet st;
    CHECK(st_open(&st, p, err, sizeof err) == 0, "%s reopen: %s", dt, err);
    CHECK(st.n_tensors == N_SPECS, "%s: %d tensors", dt, st.n_tensors);
    int misaligned = 0;
    for (int i = 0; i < N_SPECS; i++) {
        const StTensor *t = st_find(&st, SPECS[i].name);
        CHECK(t != NULL, "%s: tensor %s found", dt, SPECS[i].name);
        if (!t) continue;
        int shape_ok = t->ndim == SPECS[i].ndim && t->numel == SPECS[i].numel;
        for (int d = 0; d < t->ndim && d < 3; d++) shape_ok &= t->shape[d] == SPECS[i].shape[d];
        CHECK(shape_ok && t->dtype == dtype && t->file == 0, "%s: %s shape and dtype", dt, SPECS[i].name);
        misaligned += t->numel && (uintptr_t)t->data % 4 != 0;
        float *out = xmalloc(sizeof(float) * (size_t)(t->numel + 1));
        st_to_f32(t, out);
        if (dtype == ST_F32)
            CHECK(!SPECS[i].numel || !memcmp(out, vals[i], sizeof(float) * (size_t)SPECS[i].numel), "F32 %s bit-exact",
                  SPECS[i].name);
        else CHECK(check_bf16_equal(out, vals[i], SPECS[i].numel), "BF16 %s = rounded values", SPECS[i].name);
        free(out);
    }
    if (dtype == ST_BF16) CHECK(misaligned > 0, "BF16 file has misaligned tensors (odd sizes)");
    st_close(&st);
    for (int i = 0; i < N_SPECS; i++) free(vals[i]);
    free(p);
}

/* ================================================================ shards */

static void test_sharded(const char *dir) {
    /* F32 bytes with a limit of 64: 16, 32 | 40 | 100 (alone: above the limit) | 8, 0, 8 | 60 */
    static const Spec specs[] = {
        {"layers.0.a", 1, {4}, 4}, {"layers.0.b", 2, {2, 4}, 8}, {"layers.1.a", 1, {10}, 10},
        {"big", 2, {5, 5}, 25},    {"norm", 1, {2}, 2},          {"empty", 1, {0}, 0},
        {"z", 1, {2}, 2},          {"lm_head", 1, {15}, 15},
    };
    static const int want_shard[] = {1, 1, 2, 3, 4, 4, 4, 5};
    const int n = (int)PPA_ARRAY_LEN(specs);
    StWriteTensor w[8];
    float *vals[8];
    PpaRng r;
    rng_seed(&r, 5);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        vals[i] = xmalloc(sizeof(float) * (size_t)(specs[i].numel + 1));
        for (int k = 0; k < specs[i].numel; k++) vals[i][k] = (float)rng_normal(&r);
        w[i] = (StWriteTensor){specs[i].name, specs[i].ndim, specs[i].shape, vals[i]};
        total += 4 * (size_t)specs[i].numel;
    }
    char *sd = tmp_path(dir, "sharded"), err[512] = "";
    CHECK(st_write_sharded(sd, w, n, ST_F32, 64, err, sizeof err) == 0, "sharded write: %s", err);
    char name[64];
    for (int s = 1; s <= 5; s++) {
        snprintf(name, sizeof name, "model-%05d-of-00005.safetensors", s);
        char *p = tmp_path(sd, name);
        CHECK(exists(p), "shard %s exists", name);
        free(p);
    }
    char *single = tmp_path(sd, "model.safetensors"), *index = tmp_path(sd, "model.safetensors.index.json");
    CHECK(!exists(single), "no model.safetensors next to shards");
    CHECK(no_temp_files(sd), "no temp files in the shard folder");

    /* the index */
    Bytes ib = {0};
    CHECK(read_file(index, &ib) == 0, "index exists");
    bytes_add(&ib, "", 1);
    cJSON *root = cJSON_Parse((const char *)ib.s);
    const cJSON *ts =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "metadata"), "total_size");
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    CHECK(cJSON_IsNumber(ts) && ts->valuedouble == (double)total, "total_size %g, want %zu", ts ? ts->valuedouble : -1,
          total);
    CHECK(cJSON_GetArraySize(wm) == n, "weight_map has %d entries", cJSON_GetArraySize(wm));
    for (int i = 0; i < n; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(wm, specs[i].name);
        snprintf(name, sizeof name, "model-%05d-of-00005.safetensors", want_shard[i]);
        CHECK(cJSON_IsString(f) && !strcmp(f->valuestring, name), "weight_map[%s] = %s", specs[i].name, name);
    }
    const char *prev = "";
    for (const cJSON *c = wm ? wm->child : NULL; c; c = c->next) {
        CHECK(strcmp(prev, c->string) < 0, "weight_map sorted by name");
        prev = c->string;
    }
    cJSON_Delete(root);
    free(ib.s);

    /* reopen: the folder and the index file itself */
    for (int how = 0; how < 2; how++) {
        StSet st;
        CHECK(st_open(&st, how ? index : sd, err, sizeof err) == 0, "open shards: %s", err);
        CHECK(st.n_files == 5 && st.n_tensors == n, "shards: %d files, %d tensors", st.n_files, st.n_tensors);
        for (int i = 0; i < n && st.n_tensors == n; i++) {
            const StTensor *t = st_find(&st, specs[i].name);
            snprintf(name, sizeof name, "model-%05d-of-00005.safetensors", want_shard[i]);
            CHECK(t && strstr(st.paths[t->file], name), "%s is in %s", specs[i].name, name);
            if (!t) continue;
            float *out = xmalloc(sizeof(float) * (size_t)(t->numel + 1));
            st_to_f32(t, out);
            CHECK(t->numel == specs[i].numel && !memcmp(out, vals[i], 4 * (size_t)t->numel), "sharded %s values",
                  specs[i].name);
            free(out);
        }
        st_close(&st);
    }

    /* one shard: model.safetensors, the stale index removed; then shards again remove it */
    CHECK(st_write_sharded(sd, w, n, ST_BF16, 1 << 20, err, sizeof err) == 0, "single write: %s", err);
    CHECK(exists(single) && !exists(index), "one shard gives model.safetensors and no index");
    StSet st;
    CHECK(st_open(&st, sd, err, sizeof err) == 0 && st.n_files == 1 && st.n_tensors == n, "open single: %s", err);
    st_close(&st);
    CHECK(st_write_sharded(sd, w, n, ST_F32, 64, err, sizeof err) == 0, "shards again: %s", err);
    CHECK(!exists(single) && exists(index), "shards again: model.safetensors removed");
    /* a new folder is created; no tensors at all is one empty model.safetensors */
    char *nd = tmp_path(dir, "new_empty");
    CHECK(st_write_sharded(nd, NULL, 0, ST_F32, 64, err, sizeof err) == 0, "empty set: %s", err);
    CHECK(st_open(&st, nd, err, sizeof err) == 0 && st.n_tensors == 0, "open empty set: %s", err);
    st_close(&st);

    for (int i = 0; i < n; i++) free(vals[i]);
    free(nd);
    free(single);
    free(index);
    free(sd);
}

/* ================================================================ atomic writes and writer errors */

static void expect_write_fail(int line, const char *path, const StWriteTensor *w, int n, StDtype dt, const char *a,
                              const char *b) {
    char err[1024] = "";
    int rc = st_write(path, w, n, dt, err, sizeof err);
    CHECK(rc == -1, "line %d: st_write(%s) returned %d", line, path, rc);
    CHECK(strstr(err, path) && (!a || strstr(err, a)) && (!b || strstr(err, b)), "line %d: message: %s", line, err);
}
#define EXPECT_WRITE_FAIL(path, w, n, dt, a, b) expect_write_fail(__LINE__, path, w, n, dt, a, b)

/* A write into a read-only folder fails cleanly. Root ignores the mode, so the
 * write runs in a child process, which drops to uid/gid 65534 when root. */
static void test_readonly(const char *dir, const StWriteTensor *w) {
    char *ro = tmp_path(dir, "readonly"), *file = tmp_path(ro, "x.safetensors");
    int as_root = geteuid() == 0;
    mkdir(ro, 0755);
    chmod(ro, 0555);
    if (as_root) chmod(dir, 0755); /* let the unprivileged child reach the folder */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (as_root && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
        char err[1024] = "";
        int rc = st_write(file, w, 1, ST_F32, err, sizeof err);
        int ok = rc == -1 && strstr(err, file) && strstr(err, "Permission denied");
        if (!ok) fprintf(stderr, "read-only write: rc %d: %s\n", rc, err);
        _exit(ok ? 0 : 1); /* _exit: no stdio flush, no leak check of the parent's heap */
    }
    int status = -1;
    if (pid > 0) waitpid(pid, &status, 0);
    CHECK(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "write into a read-only folder fails with a message (child status %d)", status);
    CHECK(no_temp_files(ro) && !exists(file), "read-only folder left empty");
    chmod(dir, 0700);
    chmod(ro, 0755);
    free(file);
    free(ro);
}

static void test_atomic(const char *dir) {
    static const float one[4] = {1, 2, 3, 4};
    static const int64_t s4[1] = {4};
    StWriteTensor w = {"w", 1, s4, one};
    char err[1024] = "";

    /* missing folder, a file where a folder should be */
    char *missing = tmp_path(dir, "nope/x.safetensors");
    EXPECT_WRITE_FAIL(missing, &w, 1, ST_F32, "No such file", NULL);
    char *afile = tmp_path(dir, "afile"), *under = tmp_path(dir, "afile/x.safetensors");
    write_file(afile, "x", 1);
    EXPECT_WRITE_FAIL(under, &w, 1, ST_F32, "Not a directory", NULL);

    test_readonly(dir, &w);

    /* PATH is a folder: the temp file is written in full, the rename fails, the temp file goes */
    char *isdir = tmp_path(dir, "isdir.safetensors");
    mkdir(isdir, 0755);
    EXPECT_WRITE_FAIL(isdir, &w, 1, ST_F32, "rename", NULL);
    struct stat sb;
    CHECK(stat(isdir, &sb) == 0 && S_ISDIR(sb.st_mode) && no_temp_files(dir), "failed rename: no temp, folder kept");

    /* an existing file is replaced only on success: fail in mid-write through RLIMIT_FSIZE */
    char *path = tmp_path(dir, "atomic.safetensors");
    CHECK(st_write(path, &w, 1, ST_F32, err, sizeof err) == 0, "first write: %s", err);
    Bytes before = {0}, after = {0};
    read_file(path, &before);
    const int64_t big_shape[1] = {1 << 18};
    float *big = xcalloc(1 << 18, sizeof(float));
    StWriteTensor wb = {"big", 1, big_shape, big};
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 65536;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    int set = setrlimit(RLIMIT_FSIZE, &lim) == 0;
    if (set) {
        EXPECT_WRITE_FAIL(path, &wb, 1, ST_F32, "File too large", "write");
        setrlimit(RLIMIT_FSIZE, &old);
        read_file(path, &after);
        CHECK(after.n == before.n && !memcmp(after.s, before.s, before.n), "failed write left the old file intact");
        CHECK(no_temp_files(dir), "failed write left no temp file");
    } else {
        CHECK(0, "setrlimit(RLIMIT_FSIZE): %s", strerror(errno));
    }
    signal(SIGXFSZ, prev);
    /* invalid input fails before any file is touched */
    StWriteTensor dup[2] = {w, w};
    EXPECT_WRITE_FAIL(path, dup, 2, ST_F32, "tensor \"w\" is given twice", NULL);
    read_file(path, &after);
    CHECK(after.n == before.n && !memcmp(after.s, before.s, before.n), "invalid input left the old file intact");
    /* success replaces */
    CHECK(st_write(path, &wb, 1, ST_F32, err, sizeof err) == 0, "replacing write: %s", err);
    StSet st;
    CHECK(st_open(&st, path, err, sizeof err) == 0 && st.n_tensors == 1 && st_find(&st, "big"), "replaced: %s", err);
    st_close(&st);
    CHECK(no_temp_files(dir), "no temp files after the atomic tests");

    /* writer input checks */
    const int64_t neg[1] = {-2}, ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    StWriteTensor bad;
    bad = (StWriteTensor){"n", 1, neg, one};
    EXPECT_WRITE_FAIL(path, &bad, 1, ST_F32, "tensor \"n\"", "negative");
    bad = (StWriteTensor){"r", 9, ones, one};
    EXPECT_WRITE_FAIL(path, &bad, 1, ST_F32, "tensor \"r\"", "rank 9");
    bad = (StWriteTensor){"d", 1, s4, NULL};
    EXPECT_WRITE_FAIL(path, &bad, 1, ST_F32, "tensor \"d\"", "data is NULL");
    bad = (StWriteTensor){"__metadata__", 1, s4, one};
    EXPECT_WRITE_FAIL(path, &bad, 1, ST_F32, "reserved", NULL);
    bad = (StWriteTensor){"\xff", 1, s4, one};
    EXPECT_WRITE_FAIL(path, &bad, 1, ST_F32, "UTF-8", NULL);
    bad = (StWriteTensor){"", 1, s4, one};
    EXPECT_WRITE_FAIL(path, &bad, 1, ST_F32, "no name", NULL);
    EXPECT_WRITE_FAIL(path, &w, 1, ST_F16, "cannot write dtype F16", NULL);
    EXPECT_WRITE_FAIL(path, &w, -1, ST_F32, "bad tensor list", NULL);
    CHECK(st_write_sharded(afile, &w, 1, ST_F32, 64, err, sizeof err) == -1 && strstr(err, "not a folder"),
          "sharded into a file: %s", err);

    free(big);
    free(before.s);
    free(after.s);
    free(path);
    free(isdir);
    free(under);
    free(afile);
    free(missing);
}

/* ================================================================ malformed files */

typedef struct {
    const char *file;   /* written into the temp folder */
    const char *header; /* ' for " */
    size_t dlen;        /* zero bytes of data */
    const char *a, *b;  /* both must be in the message */
} Bad;

static const Bad BAD[] = {
    {"bad_json", "{'a':", 0, "header is not valid JSON", NULL},
    {"trailing_json", "{} x", 0, "bytes after the JSON value", NULL},
    {"not_brace", "[1]", 0, "does not start with '{'", NULL},
    {"space_first", " {}", 0, "does not start with '{'", NULL},
    {"utf8", "{'\xff':1}", 0, "not valid UTF-8", NULL},
    {"overlong_utf8", "{'\xc0\xaf':1}", 0, "not valid UTF-8", NULL},
    {"control", "{'a\x01':1}", 0, "control byte 0x01", NULL},
    {"entry_not_object", "{'w':3}", 0, "tensor \"w\"", "entry is not an object"},
    {"no_dtype", "{'w':{'shape':[1],'data_offsets':[0,4]}}", 4, "tensor \"w\"", "missing \"dtype\""},
    {"no_shape", "{'w':{'dtype':'F32','data_offsets':[0,4]}}", 4, "tensor \"w\"", "missing \"shape\""},
    {"no_offsets", "{'w':{'dtype':'F32','shape':[1]}}", 4, "tensor \"w\"", "missing \"data_offsets\""},
    {"dtype_type", "{'w':{'dtype':5,'shape':[1],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "\"dtype\" must be a string"},
    {"shape_type", "{'w':{'dtype':'F32','shape':'1','data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "\"shape\" must be an array"},
    {"offsets_type", "{'w':{'dtype':'F32','shape':[1],'data_offsets':{}}}", 4, "tensor \"w\"",
     "two non-negative integers"},
    {"dup_key", "{'w':{'dtype':'F32','shape':[1],'dtype':'F16','data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "key \"dtype\" appears twice"},
    {"neg_dim", "{'w':{'dtype':'F32','shape':[-1],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "shape[0] is not a non-negative integer"},
    {"frac_dim", "{'w':{'dtype':'F32','shape':[2,1.5],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "shape[1] is not a non-negative integer"},
    {"string_dim", "{'w':{'dtype':'F32','shape':['2'],'data_offsets':[0,8]}}", 8, "tensor \"w\"",
     "shape[0] is not a non-negative integer"},
    {"huge_dim", "{'w':{'dtype':'F32','shape':[1e300],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "shape[0] is not a non-negative integer"},
    {"rank9", "{'w':{'dtype':'F32','shape':[1,1,1,1,1,1,1,1,1],'data_offsets':[0,4]}}", 4, "tensor \"w\"", "rank 9"},
    {"numel_overflow", "{'w':{'dtype':'F32','shape':[4294967296,4294967296,4],'data_offsets':[0,4]}}", 4,
     "tensor \"w\"", "number of elements overflows"},
    {"bytes_overflow", "{'w':{'dtype':'F32','shape':[2147483648,1073741824],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "size in bytes"},
    {"unknown_dtype", "{'w':{'dtype':'Q7','shape':[1],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "unknown dtype \"Q7\""},
    {"lowercase_dtype", "{'w':{'dtype':'f32','shape':[1],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "unknown dtype \"f32\""},
    {"unsupported_dtype", "{'w':{'dtype':'I64','shape':[1],'data_offsets':[0,8]}}", 8, "tensor \"w\"",
     "dtype I64 is not supported; ppa loads F32, F16, BF16"},
    {"offsets_one", "{'w':{'dtype':'F32','shape':[1],'data_offsets':[0]}}", 4, "tensor \"w\"",
     "two non-negative integers"},
    {"offsets_three", "{'w':{'dtype':'F32','shape':[1],'data_offsets':[0,4,4]}}", 4, "tensor \"w\"",
     "two non-negative integers"},
    {"offsets_negative", "{'w':{'dtype':'F32','shape':[0],'data_offsets':[-4,-4]}}", 0, "tensor \"w\"",
     "two non-negative integers"},
    {"offsets_frac", "{'w':{'dtype':'F32','shape':[1],'data_offsets':[0.5,4]}}", 4, "tensor \"w\"",
     "two non-negative integers"},
    {"offsets_reversed", "{'w':{'dtype':'F32','shape':[1],'data_offsets':[8,4]}}", 8, "tensor \"w\"",
     "begin after end"},
    {"size_mismatch", "{'w':{'dtype':'F32','shape':[2],'data_offsets':[0,4]}}", 4, "tensor \"w\"",
     "hold 4 bytes but shape [2] of F32 needs 8"},
    {"past_buffer", "{'w':{'dtype':'F32','shape':[2],'data_offsets':[0,8]}}", 4, "tensor \"w\"",
     "past the end of the data buffer (4 bytes)"},
    {"hole",
     "{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},'b':{'dtype':'F32','shape':[1],'data_offsets':[8,12]}}", 12,
     "hole in the data: bytes [4, 8)", "\"a\" and \"b\""},
    {"overlap",
     "{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8]},'b':{'dtype':'F32','shape':[2],'data_offsets':[4,12]}}", 12,
     "tensor \"b\" [4, 12) overlaps tensor \"a\"", NULL},
    {"same_offsets",
     "{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},'b':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}}", 4,
     "overlaps", NULL},
    {"first_not_zero", "{'a':{'dtype':'F32','shape':[1],'data_offsets':[4,8]}}", 8, "tensor \"a\" starts at byte 4",
     NULL},
    {"trailing_data", "{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}}", 8,
     "bytes [4, 8) of the data after the last tensor \"a\"", NULL},
    {"data_without_tensors", "{'__metadata__':{}}", 4, "no tensors but 4 bytes of data", NULL},
    {"duplicate_name",
     "{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},'a':{'dtype':'F32','shape':[1],'data_offsets':[4,8]}}", 8,
     "tensor \"a\" appears twice", NULL},
    {"metadata_not_object", "{'__metadata__':3}", 0, "__metadata__ is not an object", NULL},
    {"metadata_value", "{'__metadata__':{'format':1}}", 0, "__metadata__ \"format\" is not a string", NULL},
    {"metadata_twice", "{'__metadata__':{},'__metadata__':{}}", 0, "__metadata__ appears twice", NULL},
    {"f4_odd", "{'w':{'dtype':'F4','shape':[3],'data_offsets':[0,2]}}", 2, "tensor \"w\"",
     "3 elements of F4 are not a whole number of bytes"},
};

static void test_malformed(const char *dir) {
    char name[96];
    unsigned char zeros[16] = {0};
    for (size_t i = 0; i < PPA_ARRAY_LEN(BAD); i++) {
        snprintf(name, sizeof name, "%s.safetensors", BAD[i].file);
        char *p = tmp_path(dir, name);
        put_st(p, BAD[i].header, zeros, BAD[i].dlen);
        expect_fail(__LINE__, p, p, BAD[i].a, BAD[i].b); /* the message names the file */
        free(p);
    }
    /* the length prefix and the file size */
    char *p = tmp_path(dir, "prefix.safetensors");
    Bytes b = {0};
    write_file(p, "\x02\0\0\0\0", 5);
    EXPECT_FAIL(p, p, "5 bytes, shorter than the 8-byte header length", NULL);
    write_file(p, "", 0);
    EXPECT_FAIL(p, p, "0 bytes, shorter than", NULL);
    assemble(&b, "{}", 2, 0, NULL, 0);
    write_file(p, b.s, b.n);
    EXPECT_FAIL(p, p, "header length is 0", NULL);
    assemble(&b, "{}", 2, 100000001, NULL, 0);
    write_file(p, b.s, b.n);
    EXPECT_FAIL(p, p, "header length 100000001 exceeds the limit", NULL);
    assemble(&b, "{}", 2, UINT64_MAX, NULL, 0);
    write_file(p, b.s, b.n);
    EXPECT_FAIL(p, p, "exceeds the limit", NULL);
    assemble(&b, "{}      ", 8, 100, NULL, 0);
    write_file(p, b.s, b.n);
    EXPECT_FAIL(p, p, "header length 100 runs past the end of the file (16 bytes)", NULL);
    assemble(&b, "{\"a\":1}\0", 8, 8, NULL, 0);
    write_file(p, b.s, b.n);
    EXPECT_FAIL(p, p, "not valid UTF-8", NULL); /* a NUL byte */
    /* valid edge cases: empty set, whitespace padding */
    assemble(&b, "{}", 2, 2, NULL, 0);
    write_file(p, b.s, b.n);
    StSet st;
    char err[512] = "";
    CHECK(st_open(&st, p, err, sizeof err) == 0 && st.n_tensors == 0, "{} is a valid empty file: %s", err);
    st_close(&st);
    assemble(&b, "{ \"__metadata__\" : { } }\n\t \r", 28, 28, NULL, 0);
    write_file(p, b.s, b.n);
    CHECK(st_open(&st, p, err, sizeof err) == 0, "JSON whitespace is allowed: %s", err);
    st_close(&st);
    /* not a file at all */
    char *none = tmp_path(dir, "absent.safetensors");
    EXPECT_FAIL(none, none, "cannot open", "No such file");
    char *empty_dir = tmp_path(dir, "empty_dir");
    mkdir(empty_dir, 0755);
    EXPECT_FAIL(empty_dir, empty_dir, "holds neither model.safetensors nor model.safetensors.index.json", NULL);
    char *fifo = tmp_path(dir, "fifo.safetensors");
    CHECK(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
    EXPECT_FAIL(fifo, fifo, "not a regular file", NULL); /* and does not hang */
    free(fifo);
    free(empty_dir);
    free(none);
    free(b.s);
    free(p);
}

/* Every dtype of the format: the size rule applies to all, only F32/F16/BF16 load. */
static void test_dtypes(const char *dir) {
    static const struct {
        const char *name;
        int bits;
    } all[] = {{"BOOL", 8},    {"U8", 8},      {"I8", 8},      {"I16", 16},    {"U16", 16},        {"I32", 32},
               {"U32", 32},    {"I64", 64},    {"U64", 64},    {"F16", 16},    {"BF16", 16},       {"F32", 32},
               {"F64", 64},    {"C64", 64},    {"F8_E4M3", 8}, {"F8_E5M2", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8},
               {"F8_E8M0", 8}, {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"F4", 4}};
    char *p = tmp_path(dir, "dtype.safetensors"), json[256], want[128], err[512];
    unsigned char zeros[64] = {0};
    for (size_t i = 0; i < PPA_ARRAY_LEN(all); i++) {
        int nbytes = 8 * all[i].bits / 8; /* shape [8] */
        snprintf(json, sizeof json, "{'t':{'dtype':'%s','shape':[8],'data_offsets':[0,%d]}}", all[i].name, nbytes);
        put_st(p, json, zeros, (size_t)nbytes);
        int ppa = !strcmp(all[i].name, "F32") || !strcmp(all[i].name, "F16") || !strcmp(all[i].name, "BF16");
        if (ppa) {
            StSet st;
            CHECK(st_open(&st, p, err, sizeof err) == 0 && !strcmp(st_dtype_name(st.tensors[0].dtype), all[i].name),
                  "%s loads: %s", all[i].name, err);
            st_close(&st);
        } else {
            snprintf(want, sizeof want, "dtype %s is not supported; ppa loads F32, F16, BF16", all[i].name);
            expect_fail(__LINE__, p, p, "tensor \"t\"", want);
        }
        /* one byte short is a size error, not an unsupported-dtype error */
        snprintf(json, sizeof json, "{'t':{'dtype':'%s','shape':[8],'data_offsets':[0,%d]}}", all[i].name, nbytes - 1);
        put_st(p, json, zeros, (size_t)nbytes - 1);
        snprintf(want, sizeof want, "shape [8] of %s needs %d", all[i].name, nbytes);
        expect_fail(__LINE__, p, p, "tensor \"t\"", want);
    }
    free(p);
}

/* ================================================================ sharded index errors */

static void test_index_errors(const char *dir) {
    static const float v[2] = {1, 2};
    static const int64_t s2[1] = {2};
    char *d = tmp_path(dir, "idx"), err[512];
    mkdir(d, 0755);
    char *A = tmp_path(d, "A.safetensors"), *B = tmp_path(d, "B.safetensors"), *C = tmp_path(d, "C.safetensors");
    char *bad = tmp_path(d, "bad.safetensors");
    char *index = tmp_path(d, "model.safetensors.index.json");
    StWriteTensor ab[2] = {{"a", 1, s2, v}, {"b", 1, s2, v}}, bc[2] = {{"b", 1, s2, v}, {"c", 1, s2, v}};
    CHECK(st_write(A, ab, 2, ST_F32, err, sizeof err) == 0, "shard A: %s", err);
    CHECK(st_write(B, bc, 2, ST_F32, err, sizeof err) == 0, "shard B: %s", err);
    StWriteTensor dd = {"d", 1, s2, v};
    CHECK(st_write(C, &dd, 1, ST_F32, err, sizeof err) == 0, "shard C: %s", err);
    write_file(bad, "\x10\0\0\0", 4);

    put_text(index, "{'metadata':{},'weight_map':{'a':'A.safetensors','b':'A.safetensors'}");
    EXPECT_FAIL(d, index, "index is not valid JSON", NULL);
    put_text(index, "[]");
    EXPECT_FAIL(d, index, "index is not a JSON object", NULL);
    put_text(index, "{'metadata':{'total_size':16}}");
    EXPECT_FAIL(d, index, "missing \"weight_map\"", NULL);
    put_text(index, "{'weight_map':[]}");
    EXPECT_FAIL(d, index, "\"weight_map\" is not an object", NULL);
    put_text(index, "{'weight_map':{}}");
    EXPECT_FAIL(d, index, "lists no tensors", NULL);
    put_text(index, "{'weight_map':{'a':1}}");
    EXPECT_FAIL(d, index, "weight_map[\"a\"] must be a file name", NULL);
    put_text(index, "{'weight_map':{'a':'../A.safetensors'}}");
    EXPECT_FAIL(d, index, "weight_map[\"a\"] must be a file name", NULL);
    put_text(index, "{'weight_map':{'a':'A.safetensors','b':'A.safetensors','a':'A.safetensors'}}");
    EXPECT_FAIL(d, index, "weight_map lists tensor \"a\" twice", NULL);
    put_text(index, "{'weight_map':{'a':'A.safetensors','b':'A.safetensors','c':'gone.safetensors'}}");
    EXPECT_FAIL(d, "gone.safetensors", "cannot open shard listed in", "No such file");
    put_text(index, "{'weight_map':{'a':'A.safetensors','b':'A.safetensors','x':'bad.safetensors'}}");
    EXPECT_FAIL(d, bad, "shorter than the 8-byte header length", NULL);
    put_text(index, "{'weight_map':{'a':'A.safetensors','b':'A.safetensors','c':'A.safetensors'}}");
    EXPECT_FAIL(d, A, "tensor \"c\" listed in", "is not in this shard");
    put_text(index, "{'weight_map':{'a':'A.safetensors'}}");
    EXPECT_FAIL(d, A, "tensor \"b\" is not listed in the weight_map", index);
    put_text(index, "{'weight_map':{'a':'A.safetensors','b':'A.safetensors','c':'B.safetensors'}}");
    EXPECT_FAIL(d, "tensor \"b\" is in two shards", A, B);
    put_text(index, "{'weight_map':{'a':'C.safetensors','b':'A.safetensors','d':'C.safetensors'}}");
    EXPECT_FAIL(d, C, "tensor \"a\" listed in", "is not in this shard (it is in");
    /* and the valid case, through the folder and the index path */
    StWriteTensor c1 = {"c", 1, s2, v};
    CHECK(st_write(B, &c1, 1, ST_F32, err, sizeof err) == 0, "shard B: %s", err);
    put_text(index, "{'metadata':{'total_size':24},'weight_map':{'a':'A.safetensors','b':'A.safetensors',"
                    "'c':'B.safetensors'}}");
    StSet st;
    CHECK(st_open(&st, d, err, sizeof err) == 0 && st.n_tensors == 3 && st.n_files == 2, "valid index: %s", err);
    st_close(&st);

    free(index);
    free(bad);
    free(C);
    free(B);
    free(A);
    free(d);
}

/* ================================================================ fuzzing */

static size_t rnd(PpaRng *r, size_t n) { return n ? (size_t)(rng_u64(r) % n) : 0; }

/* Positions of every occurrence of NEEDLE in h; returns a random one or SIZE_MAX. */
static size_t pick_occurrence(const Bytes *h, const char *needle, PpaRng *r) {
    size_t pos[256], k = 0, len = strlen(needle);
    for (size_t i = 0; i + len <= h->n && k < 256; i++)
        if (!memcmp(h->s + i, needle, len)) pos[k++] = i;
    return k ? pos[rnd(r, k)] : SIZE_MAX;
}

/* Spans [start, end) of the top-level "key": value members of a header. */
static int members(const Bytes *h, size_t *start, size_t *end, int max) {
    int depth = 0, in_str = 0, open = 0, k = 0, want_key = 0;
    for (size_t i = 0; i < h->n && k < max; i++) {
        unsigned char c = h->s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (c == '"') {
            if (depth == 1 && want_key) start[k] = i, open = 1, want_key = 0;
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth == 1) want_key = 1;
        } else if (c == '}' || c == ']') {
            if (depth == 1 && open) end[k++] = i, open = 0;
            depth--;
        } else if (c == ',' && depth == 1) {
            if (open) end[k++] = i, open = 0;
            want_key = 1;
        }
    }
    return k;
}

/* End of the JSON string starting at the quote at S (one past its closing quote). */
static size_t string_end(const Bytes *h, size_t s) {
    for (size_t i = s + 1; i < h->n; i++) {
        if (h->s[i] == '\\') i++;
        else if (h->s[i] == '"') return i + 1;
    }
    return h->n;
}

/* Replaces the text after NEEDLE up to the next STOP byte with WITH. */
static void replace_after(Bytes *h, const char *needle, char stop, const char *with, PpaRng *r) {
    size_t p = pick_occurrence(h, needle, r);
    if (p == SIZE_MAX) return;
    size_t s = p + strlen(needle), e = s;
    while (e < h->n && h->s[e] != (unsigned char)stop) e++;
    bytes_splice(h, s, e - s, with, strlen(with));
}

static void mutate_header(Bytes *h, PpaRng *r) {
    static const char *const nums[] = {"-1", "1.5", "1e999", "9007199254740993", "18446744073709551616", "0",
                                       "00", "-0",  "1e2",   "4294967296",       "2147483648",           ""};
    static const char *const dtypes[] = {"F32", "F16", "BF16", "I64", "F4", "F6_E2M3", "BOOL", "C64", "Q7", "", "f32"};
    static const char *const shapes[] = {"",
                                         "0",
                                         "1",
                                         "3,2",
                                         "-1",
                                         "1.5",
                                         "1,1,1,1,1,1,1,1,1",
                                         "4294967296,4294967296,4",
                                         "\"2\"",
                                         "[1]",
                                         "2,0,4611686018427387904"};
    static const char alphabet[] = "{}[]\":,0123456789-.eE \\";
    size_t n = h->n, st[64], en[64];
    switch (rnd(r, 12)) {
    case 0: /* flip a byte */
        if (n) h->s[rnd(r, n)] ^= (unsigned char)(1 + rnd(r, 255));
        break;
    case 1: /* a JSON-ish byte somewhere */
        if (n) h->s[rnd(r, n)] = (unsigned char)alphabet[rnd(r, sizeof alphabet - 1)];
        break;
    case 2: { /* splice random digits into a number */
        size_t pos[512], k = 0;
        for (size_t i = 0; i < n && k < 512; i++)
            if (h->s[i] >= '0' && h->s[i] <= '9') pos[k++] = i;
        if (!k) break;
        char digits[24];
        size_t m = 1 + rnd(r, 20);
        for (size_t i = 0; i < m; i++) digits[i] = (char)('0' + rnd(r, 10));
        bytes_splice(h, pos[rnd(r, k)], 0, digits, m);
        break;
    }
    case 3: { /* replace a whole number */
        size_t pos[512], k = 0;
        for (size_t i = 0; i < n && k < 512; i++)
            if (h->s[i] >= '0' && h->s[i] <= '9') pos[k++] = i;
        if (!k) break;
        size_t s = pos[rnd(r, k)], e = s;
        while (s > 0 && strchr("0123456789-.eE+", h->s[s - 1])) s--;
        while (e < n && strchr("0123456789-.eE+", h->s[e])) e++;
        const char *w = nums[rnd(r, PPA_ARRAY_LEN(nums))];
        bytes_splice(h, s, e - s, w, strlen(w));
        break;
    }
    case 4: { /* swap the data_offsets of two tensors */
        const char *key = "\"data_offsets\":[";
        size_t p1 = pick_occurrence(h, key, r), p2 = pick_occurrence(h, key, r);
        if (p1 == SIZE_MAX || p1 == p2) break;
        if (p1 > p2) {
            size_t t = p1;
            p1 = p2, p2 = t;
        }
        size_t c1 = p1 + strlen(key), c2 = p2 + strlen(key), e1 = c1, e2 = c2;
        while (e1 < n && h->s[e1] != ']') e1++;
        while (e2 < n && h->s[e2] != ']') e2++;
        if (e1 >= c2 || e2 >= n) break;
        Bytes out = {0};
        bytes_add(&out, h->s, c1);
        bytes_add(&out, h->s + c2, e2 - c2);
        bytes_add(&out, h->s + e1, c2 - e1);
        bytes_add(&out, h->s + c1, e1 - c1);
        bytes_add(&out, h->s + e2, n - e2);
        bytes_set(h, &out);
        free(out.s);
        break;
    }
    case 5: { /* duplicate a member: a duplicate key */
        int k = members(h, st, en, 64);
        if (!k) break;
        int m = (int)rnd(r, (size_t)k);
        Bytes copy = {0};
        bytes_add(&copy, ",", 1);
        bytes_add(&copy, h->s + st[m], en[m] - st[m]);
        bytes_splice(h, en[m], 0, copy.s, copy.n);
        free(copy.s);
        break;
    }
    case 6: { /* delete a member: holes and missing tensors */
        int k = members(h, st, en, 64);
        if (!k) break;
        int m = (int)rnd(r, (size_t)k);
        size_t s = st[m], e = en[m];
        if (e < n && h->s[e] == ',') e++;
        else if (s > 0 && h->s[s - 1] == ',') s--;
        bytes_splice(h, s, e - s, NULL, 0);
        break;
    }
    case 7: { /* give one member the key of another: a duplicate name */
        int k = members(h, st, en, 64);
        if (k < 2) break;
        int a = (int)rnd(r, (size_t)k), b = (int)rnd(r, (size_t)k);
        if (a == b) break;
        size_t ae = string_end(h, st[a]), be = string_end(h, st[b]);
        Bytes key = {0};
        bytes_add(&key, h->s + st[a], ae - st[a]);
        bytes_splice(h, st[b], be - st[b], key.s, key.n);
        free(key.s);
        break;
    }
    case 8:
        replace_after(h, "\"dtype\":\"", '"', dtypes[rnd(r, PPA_ARRAY_LEN(dtypes))], r);
        break;
    case 9:
        replace_after(h, "\"shape\":[", ']', shapes[rnd(r, PPA_ARRAY_LEN(shapes))], r);
        break;
    case 10: /* cut the header short */
        if (n) h->n = rnd(r, n);
        break;
    default: { /* insert an odd byte: control, invalid UTF-8, padding, a NUL */
        static const unsigned char odd[] = {0x00, 0x01, 0x1f, ' ', '\n', 0x80, 0xc0, 0xff, 0xed, '{', '"'};
        bytes_splice(h, rnd(r, n + 1), 0, &odd[rnd(r, sizeof odd)], 1);
        break;
    }
    }
}

/* Byte-level damage on the assembled file: prefix, data, truncation, growth. */
static void mutate_file(Bytes *f, size_t hlen, PpaRng *r) {
    switch (rnd(r, 4)) {
    case 0:
        if (f->n >= 8) f->s[rnd(r, 8)] ^= (unsigned char)(1 << rnd(r, 8));
        break;
    case 1:
        if (f->n > 8 + hlen) f->s[8 + hlen + rnd(r, f->n - 8 - hlen)] ^= (unsigned char)(1 + rnd(r, 255));
        break;
    case 2:
        f->n = rnd(r, f->n + 1);
        break;
    default: {
        unsigned char extra[5] = {1, 2, 3, 4, 5};
        bytes_add(f, extra, 1 + rnd(r, 5));
        break;
    }
    }
}

/* After a successful open every tensor lies inside its mapping and widens in bounds. */
static int set_in_bounds(const StSet *st) {
    for (int i = 0; i < st->n_tensors; i++) {
        const StTensor *t = &st->tensors[i];
        if (t->file < 0 || t->file >= st->n_files) return 0;
        const unsigned char *lo = st->maps[t->file], *hi = lo + st->map_sizes[t->file];
        if (t->numel < 0 || t->nbytes != (size_t)t->numel * st_dtype_size(t->dtype)) return 0;
        if (t->nbytes && (t->data < lo || t->data + t->nbytes > hi)) return 0;
        if (i && strcmp(st->tensors[i - 1].name, t->name) >= 0) return 0;
        float *out = xmalloc(sizeof(float) * (size_t)(t->numel + 1)); /* exact size: ASan sees any overrun */
        st_to_f32(t, out);
        free(out);
    }
    return 1;
}

static void base_file(const char *dir, const StWriteTensor *w, int n, StDtype dt, Bytes *out) {
    char *p = tmp_path(dir, "base.safetensors"), err[512];
    CHECK(st_write(p, w, n, dt, err, sizeof err) == 0, "fuzz base: %s", err);
    read_file(p, out);
    free(p);
}

static void test_fuzz(const char *dir) {
    static const float v[6] = {1, -2, 3.5f, 0, -0.0f, 1e-40f};
    static const int64_t s23[2] = {2, 3}, s3[1] = {3}, s0[1] = {0};
    const StWriteTensor w[4] = {{"model.embed", 2, s23, v}, {"b", 0, NULL, v}, {"odd", 1, s3, v}, {"e", 1, s0, NULL}};
    Bytes base[3] = {{0}};
    base_file(dir, w, 4, ST_F32, &base[0]);
    base_file(dir, w, 4, ST_BF16, &base[1]);
    mixed_file(&base[2]);

    PpaRng r;
    rng_seed(&r, 20240601);
    char *p = tmp_path(dir, "fuzz.safetensors"), err[1024];
    Bytes h = {0}, d = {0}, f = {0};
    int opened = 0, rejected = 0, bad_rc = 0, bad_msg = 0, out_of_bounds = 0, first_bad = -1;
    for (int it = 0; it < FUZZ_ITERS; it++) {
        const Bytes *b = &base[rnd(&r, 3)];
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b->s[i];
        h.n = d.n = 0;
        bytes_add(&h, b->s + 8, hlen);
        bytes_add(&d, b->s + 8 + hlen, b->n - 8 - hlen);
        int n_mut = 1 + (int)rnd(&r, 3);
        for (int m = 0; m < n_mut; m++) mutate_header(&h, &r);
        /* usually keep the prefix consistent, so that the deeper checks are reached */
        assemble(&f, h.s, h.n, rnd(&r, 10) ? h.n : hlen, d.s, d.n);
        if (rnd(&r, 4) == 0) mutate_file(&f, h.n, &r);
        if (write_file(p, f.s, f.n)) {
            CHECK(0, "fuzz: cannot write %s", p);
            break;
        }
        StSet st;
        err[0] = 0;
        int rc = st_open(&st, p, err, sizeof err);
        if (rc == 0) {
            opened++;
            if (!set_in_bounds(&st)) out_of_bounds++, first_bad = first_bad < 0 ? it : first_bad;
            st_close(&st);
        } else if (rc == -1) {
            rejected++;
            if (!err[0] || !strstr(err, p)) bad_msg++, first_bad = first_bad < 0 ? it : first_bad;
        } else {
            bad_rc++;
        }
    }
    CHECK(opened + rejected == FUZZ_ITERS && bad_rc == 0, "fuzz: %d returns other than 0 / -1", bad_rc);
    CHECK(bad_msg == 0, "fuzz: %d rejections without a message naming the file (first at iteration %d)", bad_msg,
          first_bad);
    CHECK(out_of_bounds == 0, "fuzz: %d opened sets out of bounds (first at iteration %d)", out_of_bounds, first_bad);
    CHECK(opened > 0 && rejected > 0, "fuzz reaches both outcomes");
    printf("test_safetensors: fuzz: %d mutated files, %d opened, %d rejected\n", FUZZ_ITERS, opened, rejected);
    for (int i = 0; i < 3; i++) free(base[i].s);
    free(h.s);
    free(d.s);
    free(f.s);
    free(p);
}

/* ================================================================ main */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ppa_st_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "test_safetensors: mkdtemp(%s): %s\n", dir, strerror(errno));
        CHECK(0, "temp folder");
        return check_report("test_safetensors");
    }
    test_bf16_rounding();
    test_f16_values();
    test_f16_file(dir);
    test_mixed_misaligned(dir);
    roundtrip(dir, ST_F32);
    roundtrip(dir, ST_BF16);
    test_sharded(dir);
    test_atomic(dir);
    test_malformed(dir);
    test_dtypes(dir);
    test_index_errors(dir);
    test_fuzz(dir);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_report("test_safetensors");
}
