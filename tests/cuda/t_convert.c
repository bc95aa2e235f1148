/* t_convert.c: pc_f32_to_bf16 and pc_bf16_to_f32 against the CPU's bf16_from_f32 / bf16_to_f32 (bf16.h): the
 * same bits, NaN payloads, infinities, signed zeros, subnormals and ties included (bound: bit for bit); and
 * pc_fill_uniform's range and determinism. Both the 16-byte path and the element path (a misaligned pointer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/convert.h"
#include "families.h"
#include "harness.h"
#include "kernels/bf16.h"

typedef struct {
    void *y, *x;
    size_t n;
} Conv;

static int to_bf16(void *p) {
    Conv *c = p;
    return pc_f32_to_bf16(c->y, c->x, c->n);
}
static int to_f32(void *p) {
    Conv *c = p;
    return pc_bf16_to_f32(c->y, c->x, c->n);
}

static const uint32_t special[] = {
    0x7fc00000u, 0x7fc00001u, 0xffa12345u, 0x7f800001u, 0x7fbfffffu, /* NaNs: quiet, payloads, signalling */
    0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,              /* infinities, zeros */
    0x7f7fffffu, 0xff7fffffu,                                        /* +-max: round to infinity */
    0x3f808000u, 0x3f818000u, 0x3f808001u, 0xbf817fffu,              /* ties to even, just above, just below */
    0x00008000u, 0x00018000u, 0x00000001u, 0x807fffffu, 0x00800000u, /* subnormals, the smallest normal */
};

static void conv_case(size_t n, int off) {
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu%s", n, off ? " +1 element (unaligned)" : "");
    float *x = h_malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) { /* wide exponents: |x| in [2^-40, 2^40], and the specials */
        float v;
        h_fill(&v, 1, 1.0f, 2.0f);
        x[i] = ldexpf(v, h_randint(81) - 40);
    }
    for (size_t i = 0; i < sizeof special / sizeof special[0] && i < n; i++) memcpy(&x[(i * 7919) % n], &special[i], 4);
    bf16 *ref = h_malloc(2 * n), *got = h_malloc(2 * (n + off)), *again = h_malloc(2 * n);
    float *wide = h_malloc(sizeof(float) * n), *wgot = h_malloc(sizeof(float) * (n + off));
    bf16_from_f32(ref, x, n);
    bf16_to_f32(wide, ref, n);
    float *dx = d_alloc((n + off) * 4), *dz = d_alloc((n + off) * 4);
    uint16_t *dy = d_alloc((n + off) * 2);
    d_up(dx + off, x, n * 4);
    d_poison(dy, (n + off) * 2);
    Conv c = {dy + off, dx + off, n};
    H_TRY(to_bf16(&c));
    d_down(got, dy, (n + off) * 2);
    Cmp cb = cmp_bits(got + off, ref, n * 2);
    H_CHECK(cb.ok, "f32_to_bf16 %s: differs from bf16_from_f32 at byte %ld", shape, cb.worst);
    H_CHECK(!off || got[0] == 0xFFFF, "f32_to_bf16 %s: wrote before y", shape);
    d_poison(dy, (n + off) * 2);
    H_TRY(to_bf16(&c));
    d_down(again, dy + off, n * 2);
    H_CHECK(!memcmp(again, got + off, n * 2), "f32_to_bf16 %s: a rerun differs", shape);
    H_CHECK(d_guard_ok(dy), "f32_to_bf16 %s: wrote past y", shape);
    h_row("f32_to_bf16", shape, &cb, off ? 0 : h_time(to_bf16, &c), h_floor_bytes(6.0 * n), "bytes/bw");
    d_poison(dz, (n + off) * 4);
    Conv w = {dz + off, dy + off, n};
    H_TRY(to_f32(&w));
    d_down(wgot, dz, (n + off) * 4);
    Cmp cw = cmp_bits(wgot + off, wide, n * 4);
    H_CHECK(cw.ok, "bf16_to_f32 %s: differs from bf16_to_f32 at byte %ld", shape, cw.worst);
    H_CHECK(d_guard_ok(dz), "bf16_to_f32 %s: wrote past y", shape);
    h_row("bf16_to_f32", shape, &cw, off ? 0 : h_time(to_f32, &w), h_floor_bytes(6.0 * n), "bytes/bw");
    d_free(dx), d_free(dz), d_free(dy);
    free(x), free(ref), free(got), free(again), free(wide), free(wgot);
}

static void fill_case(size_t n, PcDtype t) {
    size_t e = t == PC_BF16 ? 2 : 4;
    void *d = d_alloc(n * e);
    unsigned char *a = h_malloc(n * e), *b = h_malloc(n * e);
    uint64_t seed = h_rand();
    H_TRY(pc_fill_uniform(d, t, n, seed, -0.5f, 2.0f));
    d_down(a, d, n * e);
    H_TRY(pc_fill_uniform(d, t, n, seed, -0.5f, 2.0f));
    d_down(b, d, n * e);
    int in_range = 1, distinct = 0;
    for (size_t i = 0; i < n; i++) {
        float v;
        if (t == PC_BF16) h_widen(&v, (uint16_t *)a + i, 1);
        else memcpy(&v, a + i * 4, 4);
        if (!(v >= -0.5f && v <= 2.0f)) in_range = 0;
        if (i && memcmp(a + i * e, a, e)) distinct = 1;
    }
    H_CHECK(in_range, "fill_uniform n=%zu %s: a value outside [-0.5, 2]", n, t == PC_BF16 ? "bf16" : "f32");
    H_CHECK(n < 2 || distinct, "fill_uniform n=%zu: all values equal", n);
    H_CHECK(!memcmp(a, b, n * e), "fill_uniform n=%zu: the same seed gave other values", n);
    H_CHECK(d_guard_ok(d), "fill_uniform n=%zu: wrote past p", n);
    d_free(d), free(a), free(b);
}

void t_convert(void) {
    static const size_t ns[] = {1, 7, 8, 9, 1000, (1u << 20) + 3};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (int off = 0; off < 2; off++) conv_case(ns[i], off);
    if (!h_small) conv_case((1u << 26) + 5, 0);
    fill_case(1, PC_F32), fill_case(1001, PC_F32), fill_case(1001, PC_BF16);
}
