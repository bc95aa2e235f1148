/* t_swiglu.c: pc_swiglu_forward / pc_swiglu_backward against kernels.c's swiglu_forward / swiglu_backward, on
 * separate g and u and on the fused gate_up layout (g = buf, u = buf + I, rows 2I apart), float32 and bf16 inputs
 * and outputs, with the bf16 copies of g and u kept in the same pass.
 * Bounds, stated: float32 outputs ||gpu - cpu|| <= 1e-5 ||cpu||. bf16 outputs: the float32 values of both sides
 * differ by the exponentials (GPU expf <= 2 ulp, libmvec's <= 4) and a few roundings: s = 1/(1 + e^-g) within
 * (eps_exp + 2u) relatively, so h = g s u and du = dh g s within about 24 float32 ulps of each other (12 a side),
 * taken as 2^-17 |value| (128 ulps: libmvec's error is not documented tightly); dg = dh u s (1 + g (1 - s)) loses
 * digits where 1 + g (1 - s) cancels, so its bound is on the factors: 2^-16 |dh u s| (1 + 2|g|). Each side then rounds once: + one bf16 ulp (2^-7 |value|). The kept bf16 g and u:
 * bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/swiglu.h"
#include "families.h"
#include "harness.h"
#include "kernels/kernels.h"

typedef struct {
    void *h, *dg, *du, *g, *u;
    uint16_t *gb, *ub;
    float *dh;
    PcDtype ht, dt, gt;
    int ld_in, ld_out, rows, cols;
} Sw;

static int sw_fwd(void *p) {
    Sw *s = p;
    return pc_swiglu_forward(s->h, s->ht, s->gb, s->ub, s->g, s->u, s->gt, s->ld_in, s->rows, s->cols);
}
static int sw_bwd(void *p) {
    Sw *s = p;
    return pc_swiglu_backward(s->dg, s->du, s->dt, s->ld_out, s->dh, s->g, s->u, s->gt, s->ld_in, s->rows, s->cols);
}

static const char *dn(PcDtype t) { return t == PC_BF16 ? "bf16" : "f32"; }

/* widened device output [rows, cols] rows ld apart */
static void fetch(float *out, const void *d, PcDtype t, int ld, int rows, int cols) {
    /* up to the last row's last column: d may start inside a wider buffer (fused: d up at column cols) */
    size_t e = t == PC_BF16 ? 2 : 4, n = rows ? (size_t)(rows - 1) * ld + cols : 0;
    unsigned char *b = h_malloc(n * e);
    d_down(b, d, n * e);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            size_t at = (size_t)r * ld + c;
            if (t == PC_BF16) h_widen(&out[(size_t)r * cols + c], (uint16_t *)b + at, 1);
            else memcpy(&out[(size_t)r * cols + c], b + at * 4, 4);
        }
    free(b);
}

/* float32: against the CPU's float32 output ref; bf16: against the CPU's own bf16 output refb (widened), within
 * delta of the float32 values and then one bf16 ulp */
static Cmp check(const float *got, const float *ref, const float *refb, const double *delta, size_t n, PcDtype t) {
    if (t == PC_F32) return cmp_norm(got, ref, n, 1e-5);
    double *b = h_malloc(sizeof(double) * n);
    memcpy(b, delta, sizeof(double) * n);
    h_bound_round_bf16(b, ref, n);
    Cmp c = cmp_elem(got, refb, b, n);
    free(b);
    return c;
}

static float *widened(const uint16_t *b, size_t n) {
    float *f = h_malloc(sizeof(float) * n);
    h_widen(f, b, n);
    return f;
}

static void sw_case(int rows, int cols, int fused, PcDtype gt, PcDtype ht, int keep) {
    const int ld = fused ? 2 * cols : cols;
    const size_t n = (size_t)rows * cols, nb = (size_t)rows * ld, ge = gt == PC_BF16 ? 2 : 4, he = ht == PC_BF16 ? 2 : 4;
    char shape[112], name[64];
    snprintf(shape, sizeof shape, "%dx%d%s g,u %s%s", rows, cols, fused ? " fused gate_up" : "", dn(gt), keep ? " +keep" : "");
    /* the inputs: one [rows, ld] buffer when fused (u at column cols), else two [rows, cols] */
    float *G = h_malloc(sizeof(float) * nb), *U = h_malloc(sizeof(float) * nb);
    uint16_t *Gb = h_malloc(2 * nb), *Ub = h_malloc(2 * nb);
    h_fill(G, nb, 0.05f, 4.0f), h_fill(U, nb, 0.1f, 2.0f);
    if (fused)
        for (int r = 0; r < rows; r++) memcpy(U + (size_t)r * ld + cols, G + (size_t)r * ld + cols, sizeof(float) * cols);
    for (size_t i = 0; i < nb; i++) Gb[i] = h_bf16(G[i]), Ub[i] = h_bf16(U[i]);
    if (gt == PC_BF16) h_widen(G, Gb, nb), h_widen(U, Ub, nb);
    /* contiguous g and u for the CPU */
    float *g = h_malloc(sizeof(float) * n), *u = h_malloc(sizeof(float) * n);
    uint16_t *gbh = h_malloc(2 * n), *ubh = h_malloc(2 * n);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c, gi = (size_t)r * ld + c, ui = fused ? gi + cols : gi;
            g[i] = G[gi], u[i] = fused ? G[ui] : U[ui];
            gbh[i] = fused ? Gb[gi] : Gb[gi], ubh[i] = fused ? Gb[ui] : Ub[ui];
        }
    Act ga = {gt == PC_F32 ? g : NULL, gt == PC_BF16 ? gbh : NULL}, ua = {gt == PC_F32 ? u : NULL, gt == PC_BF16 ? ubh : NULL};
    float *href = h_malloc(sizeof(float) * n);
    uint16_t *kgref = h_malloc(2 * n), *kuref = h_malloc(2 * n), *hbref = h_malloc(2 * n);
    swiglu_forward(href, NULL, keep ? kgref : NULL, keep ? kuref : NULL, ga, ua, (long)n);
    swiglu_forward(NULL, hbref, NULL, NULL, ga, ua, (long)n); /* the CPU's bf16 h */
    float *hbw = widened(hbref, n);
    /* device: fused: u = g + cols in the same buffer */
    void *dG, *dU;
    if (fused) dG = gt == PC_BF16 ? d_clone(Gb, nb * 2) : d_clone(G, nb * 4), dU = (char *)dG + cols * ge;
    else dG = gt == PC_BF16 ? d_clone(Gb, nb * 2) : d_clone(G, nb * 4), dU = gt == PC_BF16 ? d_clone(Ub, nb * 2) : d_clone(U, nb * 4);
    Sw S = {d_alloc(n * he), NULL, NULL, dG, dU, keep ? d_alloc(n * 2) : NULL, keep ? d_alloc(n * 2) : NULL, NULL,
            ht, PC_F32, gt, ld, 0, rows, cols};
    d_poison(S.h, n * he);
    if (keep) d_poison(S.gb, n * 2), d_poison(S.ub, n * 2);
    H_TRY(sw_fwd(&S));
    float *got = h_malloc(sizeof(float) * n);
    double *delta = h_malloc(sizeof(double) * n);
    fetch(got, S.h, ht, cols, rows, cols);
    for (size_t i = 0; i < n; i++) delta[i] = 0x1p-17 * fabs(href[i]);
    Cmp ch = check(got, href, hbw, delta, n, ht);
    snprintf(name, sizeof name, "swiglu_fwd ->%s", dn(ht));
    H_CHECK(ch.ok, "%s %s: err %.3g > bound %.3g at %ld", name, shape, ch.err, ch.bound, ch.worst);
    if (keep) {
        uint16_t *kg = h_malloc(2 * n), *ku = h_malloc(2 * n);
        d_down(kg, S.gb, n * 2), d_down(ku, S.ub, n * 2);
        H_CHECK(!memcmp(kg, kgref, n * 2) && !memcmp(ku, kuref, n * 2), "%s %s: kept g, u differ from the CPU's", name, shape);
        H_CHECK(d_guard_ok(S.gb) && d_guard_ok(S.ub), "%s %s: wrote past gb or ub", name, shape);
        free(kg), free(ku);
    }
    unsigned char *b1 = h_malloc(n * 4), *b2 = h_malloc(n * 4);
    d_down(b1, S.h, n * he);
    d_poison(S.h, n * he);
    H_TRY(sw_fwd(&S));
    d_down(b2, S.h, n * he);
    H_CHECK(!memcmp(b1, b2, n * he), "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(S.h), "%s %s: wrote past h", name, shape);
    h_row(name, shape, &ch, h_time(sw_fwd, &S), h_floor_bytes((double)n * (2 * ge + he + (keep ? 4 : 0))), "bytes/bw");

    /* backward into the layout of the inputs (fused: d gate and d up side by side) */
    for (int d = 0; d < 2 && !keep; d++) {
        PcDtype dt = d ? PC_BF16 : PC_F32;
        size_t de = dt == PC_BF16 ? 2 : 4;
        float *dh = h_malloc(sizeof(float) * n), *dgref = h_malloc(sizeof(float) * n), *duref = h_malloc(sizeof(float) * n);
        h_fill(dh, n, 0.1f, 1.0f);
        swiglu_backward(dgref, NULL, duref, NULL, dh, ga, ua, (long)n);
        uint16_t *dgb = h_malloc(2 * n), *dub = h_malloc(2 * n); /* the CPU's bf16 d gate, d up */
        swiglu_backward(NULL, dgb, NULL, dub, dh, ga, ua, (long)n);
        float *dgw = widened(dgb, n), *duw = widened(dub, n);
        void *dD = d_alloc(nb * de * (fused ? 1 : 2));
        S.dg = dD, S.du = fused ? (char *)dD + cols * de : (char *)dD + nb * de, S.dt = dt, S.ld_out = ld;
        S.dh = d_clone(dh, n * 4);
        d_poison(dD, nb * de * (fused ? 1 : 2));
        H_TRY(sw_bwd(&S));
        float *gdg = h_malloc(sizeof(float) * n), *gdu = h_malloc(sizeof(float) * n);
        fetch(gdg, S.dg, dt, ld, rows, cols), fetch(gdu, S.du, dt, ld, rows, cols);
        for (size_t i = 0; i < n; i++) {
            float s = 1.0f / (1.0f + expf(-g[i]));
            delta[i] = 0x1p-16 * fabs((double)dh[i] * u[i] * s) * (1.0 + 2.0 * fabs(g[i]));
        }
        Cmp cg = check(gdg, dgref, dgw, delta, n, dt);
        for (size_t i = 0; i < n; i++) delta[i] = 0x1p-17 * fabs(duref[i]);
        Cmp cu = check(gdu, duref, duw, delta, n, dt);
        size_t all = nb * de * (fused ? 1 : 2);
        unsigned char *r1 = h_malloc(all), *r2 = h_malloc(all);
        d_down(r1, dD, all);
        d_poison(dD, all);
        H_TRY(sw_bwd(&S));
        d_down(r2, dD, all);
        snprintf(name, sizeof name, "swiglu_bwd ->%s", dn(dt));
        H_CHECK(cg.ok, "%s %s: dg err %.3g > bound %.3g at %ld", name, shape, cg.err, cg.bound, cg.worst);
        H_CHECK(cu.ok, "%s %s: du err %.3g > bound %.3g at %ld", name, shape, cu.err, cu.bound, cu.worst);
        H_CHECK(!memcmp(r1, r2, all), "%s %s: a rerun differs", name, shape);
        H_CHECK(d_guard_ok(dD), "%s %s: wrote past dg/du", name, shape);
        Cmp worst = cmp_worse(cg, cu);
        h_row(name, shape, &worst, h_time(sw_bwd, &S), h_floor_bytes((double)n * (2 * ge + 4 + 2 * de)), "bytes/bw");
        d_free(dD), d_free(S.dh);
        free(dh), free(dgref), free(duref), free(gdg), free(gdu), free(r1), free(r2), free(dgb), free(dub), free(dgw),
            free(duw);
    }
    d_free(S.h), d_free(S.gb), d_free(S.ub), d_free(dG);
    if (!fused) d_free(dU);
    free(G), free(U), free(Gb), free(Ub), free(g), free(u), free(gbh), free(ubh), free(href), free(kgref), free(kuref), free(hbref), free(hbw);
    free(got), free(delta), free(b1), free(b2);
}

void t_swiglu(void) {
    static const int small[][3] = {{1, 16, 0}, {3, 7, 0}, {5, 96, 1}, {4, 37, 1}, {33, 4864, 1}};
    static const int big[][3] = {{2304, 4864, 1}, {2304, 14336, 1}, {18432, 4864, 1}};
    for (int d = 0; d < 2; d++) {
        PcDtype gt = d ? PC_BF16 : PC_F32;
        for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
            sw_case(small[i][0], small[i][1], small[i][2], gt, PC_F32, 0);
            sw_case(small[i][0], small[i][1], small[i][2], gt, PC_BF16, 0);
        }
        for (size_t i = 0; !h_small && i < sizeof big / sizeof big[0]; i++)
            sw_case(big[i][0], big[i][1], big[i][2], gt, gt, 0);
    }
    /* a bf16 model's forward: float32 gate and up in, bf16 h and the kept bf16 g and u out */
    sw_case(5, 96, 1, PC_F32, PC_BF16, 1);
    sw_case(3, 7, 0, PC_F32, PC_BF16, 1);
    if (!h_small) sw_case(2304, 4864, 1, PC_F32, PC_BF16, 1);
}
