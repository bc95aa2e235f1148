/* t_matmul.c: pc_gemm (every transpose), pc_linear_forward / backward (bias fused, residual, dx = and +=, dW +=)
 * and pc_bias_backward against the CPU engine's own products (gemm.h, gemm_bf16.h, matmul.h).
 *
 * Bounds, stated:
 * - float32 products (the oracle mode, TF32 off): ||gpu - cpu||_2 <= 1e-5 ||cpu||_2 against the CPU's float32 gemm.
 * - bf16 products: both sides multiply the same bf16 operands (rounded once, by the test, as the CPU's mm_forward
 *   rounds its float32 operand), and the product of two bf16 numbers is exact in float32 (8 + 8 significant bits
 *   <= 24), so the results differ only by how each rounds its float32 sum. A sum of k terms added in any order with
 *   unit roundoff u is within gamma_k(u) = k u / (1 - k u) of the exact sum, relative to the sum of the terms'
 *   magnitudes (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., sec. 4.2). The CPU rounds to
 *   nearest: u = 2^-24. Tensor cores accumulate float32 with truncation after aligning a block's addends to the
 *   largest (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021):
 *   u = 2^-23, taken twice over as 2^-22. Per output element, with k = K + 2 (the residual and the bias):
 *       |gpu - cpu| <= (gamma_k(2^-22) + gamma_k(2^-24)) (sum_k |a_k b_k| + |C| + |bias|)
 *   which is c 2^-8 sum |a_k b_k| with c = (gamma_k(2^-22) + gamma_k(2^-24)) 2^8 ~ 1.25 k 2^-14 (0.075 at K = 896,
 *   0.37 at K = 4864). A bf16 output adds one bf16 ulp of the value (2^-7 relative).
 * - the bias gradient: sums in double on both sides, rounded once to float32: ||gpu - cpu|| <= 1e-5 ||cpu||.
 * Every output is poisoned (NaN bytes) before a run that overwrites it, every run is repeated and compared bit
 * for bit, and the 256 bytes after every output buffer must be untouched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/matmul.h"
#include "families.h"
#include "harness.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "kernels/matmul.h"

#define F32_RTOL 1e-5

static const char *dname(PcDtype t) { return t == PC_BF16 ? "bf16" : "f32"; }

/* the device copy of host float32 values in element type t (bf16: already rounded by the caller) */
static void *dev_copy(const float *f, const uint16_t *b, size_t n, PcDtype t) {
    return t == PC_BF16 ? d_clone(b, n * 2) : d_clone(f, n * 4);
}

/* host arrays: float32 values, and when bf16 their rounded bits with the float32 values replaced by the rounded ones */
typedef struct {
    float *f;
    uint16_t *b;
} Host;

static Host host_rand(size_t n, PcDtype t) {
    Host h = {h_malloc(sizeof(float) * n), NULL};
    h_fill(h.f, n, 0.1f, 1.0f);
    if (t == PC_BF16) {
        h.b = h_malloc(2 * n);
        for (size_t i = 0; i < n; i++) h.b[i] = h_bf16(h.f[i]);
        h_widen(h.f, h.b, n);
    }
    return h;
}

static void host_free(Host h) { free(h.f), free(h.b); }

static Cmp compare(const float *got, const float *want, size_t n, PcDtype ab, const float *S, const float *extra,
                   double k) {
    if (ab == PC_F32) return cmp_norm(got, want, n, F32_RTOL);
    double *b = h_sum_bound(S, extra, n, k);
    Cmp c = cmp_elem(got, want, b, n);
    free(b);
    return c;
}

/* ---- the linear layer ---- */

typedef struct {
    int T, in, out, bias, res;
} LinCase;

typedef struct {
    void *y, *x, *W, *dy;
    float *bias, *res, *dx, *dW;
    float beta_x;
    int T, in, out;
    PcDtype ab;
} Lin;

static int lin_fwd(void *p) {
    Lin *l = p;
    return pc_linear_forward(l->y, PC_F32, l->x, l->in, l->W, l->bias, l->res, l->T, l->in, l->out, l->ab);
}
static int lin_bwd(void *p) {
    Lin *l = p;
    return pc_linear_backward(l->dx, l->beta_x, l->dW, l->dy, l->x, l->in, l->W, l->T, l->in, l->out, l->ab);
}
static int lin_dx(void *p) {
    Lin *l = p;
    return pc_linear_backward(l->dx, l->beta_x, NULL, l->dy, l->x, l->in, l->W, l->T, l->in, l->out, l->ab);
}
static int lin_dw(void *p) {
    Lin *l = p;
    return pc_linear_backward(NULL, 0.0f, l->dW, l->dy, l->x, l->in, l->W, l->T, l->in, l->out, l->ab);
}

static void linear_case(const LinCase *c, PcDtype ab) {
    const int T = c->T, in = c->in, out = c->out;
    const size_t nx = (size_t)T * in, nw = (size_t)out * in, ny = (size_t)T * out;
    char shape[96], name[64];
    snprintf(shape, sizeof shape, "T=%d in=%d out=%d%s%s", T, in, out, c->bias ? " +bias" : "", c->res ? " +res" : "");
    Host x = host_rand(nx, ab), W = host_rand(nw, ab), dy = host_rand(ny, ab);
    float *bias = h_malloc(sizeof(float) * out), *res = h_malloc(sizeof(float) * ny);
    float *dx0 = h_malloc(sizeof(float) * nx), *dW0 = h_malloc(sizeof(float) * nw);
    h_fill(bias, out, 0.1f, 1.0f), h_fill(res, ny, 0.1f, 1.0f), h_fill(dx0, nx, 0.1f, 1.0f), h_fill(dW0, nw, 0.1f, 1.0f);
    Weight Wc = {ab == PC_F32 ? W.f : NULL, W.b};
    Act xa = {ab == PC_F32 ? x.f : NULL, x.b}, dya = {ab == PC_F32 ? dy.f : NULL, dy.b};
    bf16 *tmp = h_malloc(sizeof(bf16) * mm_tmp(T, in, out));

    /* the CPU: y = x W^T + res, then + bias (llama.c's linear); dx = dy W (+ dx0); dW = dW0 + dy^T x */
    float *yref = h_malloc(sizeof(float) * ny), *dxref = h_malloc(sizeof(float) * nx);
    float *dxref0 = h_malloc(sizeof(float) * nx), *dWref = h_malloc(sizeof(float) * nw);
    memcpy(yref, res, sizeof(float) * ny);
    mm_forward(yref, c->res ? 1.0f : 0.0f, xa, in, Wc, T, in, out, tmp);
    for (int t = 0; c->bias && t < T; t++)
        for (int o = 0; o < out; o++) yref[(size_t)t * out + o] += bias[o];
    memcpy(dxref, dx0, sizeof(float) * nx), memcpy(dWref, dW0, sizeof(float) * nw);
    mm_backward(dxref, 1.0f, dWref, dya, xa, Wc, T, in, out, tmp);
    mm_backward(dxref0, 0.0f, NULL, dya, xa, Wc, T, in, out, tmp);
    /* magnitudes for the bf16 bounds */
    float *Sy = h_abs_product(0, 1, T, out, in, x.f, in, W.f, in);
    float *Sdx = h_abs_product(0, 0, T, in, out, dy.f, out, W.f, in);
    float *SdW = h_abs_product(1, 0, out, in, T, dy.f, out, x.f, in);
    float *ey = h_malloc(sizeof(float) * ny);
    for (int t = 0; t < T; t++)
        for (int o = 0; o < out; o++)
            ey[(size_t)t * out + o] = (c->res ? fabsf(res[(size_t)t * out + o]) : 0.0f) + (c->bias ? fabsf(bias[o]) : 0.0f);

    Lin L = {d_alloc(ny * 4), dev_copy(x.f, x.b, nx, ab), dev_copy(W.f, W.b, nw, ab), dev_copy(dy.f, dy.b, ny, ab),
             c->bias ? d_clone(bias, out * 4) : NULL, c->res ? d_clone(res, ny * 4) : NULL, d_alloc(nx * 4),
             d_alloc(nw * 4), 1.0f, T, in, out, ab};
    float *got = h_malloc(sizeof(float) * (nx > ny ? (nx > nw ? nx : nw) : (ny > nw ? ny : nw)));
    float *again = h_malloc(sizeof(float) * (nx > ny ? (nx > nw ? nx : nw) : (ny > nw ? ny : nw)));
    double flops = 2.0 * T * in * out;

    /* forward */
    d_poison(L.y, ny * 4);
    H_TRY(lin_fwd(&L));
    d_down(got, L.y, ny * 4);
    Cmp cy = compare(got, yref, ny, ab, Sy, ey, in + 2);
    d_poison(L.y, ny * 4);
    H_TRY(lin_fwd(&L));
    d_down(again, L.y, ny * 4);
    Cmp rb = cmp_bits(again, got, ny * 4);
    snprintf(name, sizeof name, "linear_fwd %s", dname(ab));
    H_CHECK(cy.ok, "%s %s: err %.3g > bound %.3g at %ld (%s)", name, shape, cy.err, cy.bound, cy.worst, pc_gemm_algo());
    H_CHECK(rb.ok, "%s %s: a rerun differs (byte %ld)", name, shape, rb.worst);
    H_CHECK(d_guard_ok(L.y), "%s %s: wrote past y", name, shape);
    h_row(name, shape, &cy, h_time(lin_fwd, &L), ab == PC_BF16 ? h_floor_flops(flops) : 0, "bf16 rate");

    /* backward: dx += dy W and dW += dy^T x together */
    d_up(L.dx, dx0, nx * 4), d_up(L.dW, dW0, nw * 4);
    H_TRY(lin_bwd(&L));
    d_down(got, L.dx, nx * 4);
    Cmp cdx = compare(got, dxref, nx, ab, Sdx, dx0, out + 1);
    d_down(again, L.dW, nw * 4);
    Cmp cdw = compare(again, dWref, nw, ab, SdW, dW0, T + 1);
    float *got2 = h_malloc(sizeof(float) * nw);
    d_up(L.dx, dx0, nx * 4), d_up(L.dW, dW0, nw * 4);
    H_TRY(lin_bwd(&L));
    d_down(got2, L.dW, nw * 4);
    Cmp rw = cmp_bits(got2, again, nw * 4);
    d_down(again, L.dx, nx * 4);
    Cmp rx = cmp_bits(again, got, nx * 4);
    snprintf(name, sizeof name, "linear_bwd_dx+= %s", dname(ab));
    H_CHECK(cdx.ok, "%s %s: err %.3g > bound %.3g at %ld", name, shape, cdx.err, cdx.bound, cdx.worst);
    H_CHECK(rx.ok && rw.ok, "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(L.dx) && d_guard_ok(L.dW), "%s %s: wrote past dx or dW", name, shape);
    L.beta_x = 1.0f;
    h_row(name, shape, &cdx, h_time(lin_dx, &L), ab == PC_BF16 ? h_floor_flops(flops) : 0, "bf16 rate");
    snprintf(name, sizeof name, "linear_bwd_dW+= %s", dname(ab));
    H_CHECK(cdw.ok, "%s %s: err %.3g > bound %.3g at %ld", name, shape, cdw.err, cdw.bound, cdw.worst);
    h_row(name, shape, &cdw, h_time(lin_dw, &L), ab == PC_BF16 ? h_floor_flops(flops) : 0, "bf16 rate");

    /* dx = dy W (beta 0: the poisoned dx never read), no dW */
    d_poison(L.dx, nx * 4);
    L.beta_x = 0.0f;
    H_TRY(lin_dx(&L));
    d_down(got, L.dx, nx * 4);
    Cmp c0 = compare(got, dxref0, nx, ab, Sdx, NULL, out);
    snprintf(name, sizeof name, "linear_bwd_dx= %s", dname(ab));
    H_CHECK(c0.ok, "%s %s: err %.3g > bound %.3g at %ld", name, shape, c0.err, c0.bound, c0.worst);
    h_row(name, shape, &c0, 0, 0, "");

    /* the bias gradient (float32 dy), once per case */
    if (c->bias && ab == PC_F32) {
        float *db0 = h_malloc(sizeof(float) * out), *dbref = h_malloc(sizeof(float) * out);
        h_fill(db0, out, 0.1f, 1.0f);
        for (int o = 0; o < out; o++) { /* llama.c's bias_backward: double, token order */
            double acc = 0.0;
            for (int t = 0; t < T; t++) acc += dy.f[(size_t)t * out + o];
            dbref[o] = db0[o] + (float)acc;
        }
        float *ddb = d_clone(db0, out * 4);
        H_TRY(pc_bias_backward(ddb, L.dy, T, out));
        d_down(got, ddb, out * 4);
        Cmp cb = cmp_norm(got, dbref, out, F32_RTOL);
        d_up(ddb, db0, out * 4);
        H_TRY(pc_bias_backward(ddb, L.dy, T, out));
        d_down(again, ddb, out * 4);
        Cmp rbb = cmp_bits(again, got, out * 4);
        H_CHECK(cb.ok, "bias_bwd %s: err %.3g", shape, cb.err);
        H_CHECK(rbb.ok, "bias_bwd %s: a rerun differs", shape);
        H_CHECK(d_guard_ok(ddb), "bias_bwd %s: wrote past db", shape);
        h_row("bias_bwd f32", shape, &cb, 0, 0, "");
        d_free(ddb), free(db0), free(dbref);
    }

    d_free(L.y), d_free(L.x), d_free(L.W), d_free(L.dy), d_free(L.bias), d_free(L.res), d_free(L.dx), d_free(L.dW);
    host_free(x), host_free(W), host_free(dy);
    free(bias), free(res), free(dx0), free(dW0), free(tmp), free(yref), free(dxref), free(dxref0), free(dWref);
    free(Sy), free(Sdx), free(SdW), free(ey), free(got), free(again), free(got2);
}

/* ---- pc_gemm: every transpose, padded row strides, alpha, a separate Cin, a bf16 output ---- */

static void gemm_case(int ta, int tb, int M, int N, int K, PcDtype ab, PcDtype ct) {
    /* padded row strides; bf16 rows stay 16-byte aligned (the engine's always are: its dimensions are multiples of
     * 64, its LM-head chunks rows of multiples of 8) */
    const int ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
    const int lda = ab == PC_BF16 ? (ca + 7) / 8 * 8 + 8 : ca + 3, ldb = ab == PC_BF16 ? (cb + 7) / 8 * 8 + 8 : cb + 3;
    const int ldd = ct == PC_BF16 ? (N + 7) / 8 * 8 + 8 : ab == PC_BF16 ? (N + 3) / 4 * 4 + 4 : N + 3, pad = lda - ca;
    const float alpha = 0.75f;
    const size_t na = (size_t)ra * lda, nb = (size_t)rb * ldb, nd = (size_t)M * ldd;
    char shape[96], name[64];
    snprintf(shape, sizeof shape, "%s%s M=%d N=%d K=%d ld+%d", ta ? "T" : "N", tb ? "T" : "N", M, N, K, pad);
    snprintf(name, sizeof name, "gemm %s->%s", dname(ab), dname(ct));
    Host A = host_rand(na, ab), B = host_rand(nb, ab);
    float *Cin = h_malloc(sizeof(float) * nd), *ref = h_malloc(sizeof(float) * nd);
    h_fill(Cin, nd, 0.1f, 1.0f);
    float beta = ct == PC_F32 ? 1.0f : 0.0f; /* a bf16 output: no Cin (it would be bf16 too) */
    /* the CPU: ref = alpha op(A) op(B) + beta Cin */
    if (ab == PC_F32) {
        memcpy(ref, Cin, sizeof(float) * nd);
        gemm(ta, tb, M, N, K, alpha, A.f, lda, B.f, ldb, beta, ref, ldd);
    } else {
        gemm_bf16(ta, tb, M, N, K, A.b, lda, B.b, ldb, 0.0f, ref, ldd);
        for (size_t i = 0; i < nd; i++) ref[i] = alpha * ref[i] + beta * Cin[i];
    }
    float *S = h_abs_product(ta, tb, M, N, K, A.f, lda, B.f, ldb); /* [M, N] */
    /* compare the N columns of each row; the padding columns must keep their sentinel */
    float *got = h_malloc(sizeof(float) * nd), *gref = h_malloc(sizeof(float) * M * N), *gg = h_malloc(sizeof(float) * M * N);
    float *ex = h_malloc(sizeof(float) * M * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            gref[(size_t)m * N + n] = ref[(size_t)m * ldd + n];
            ex[(size_t)m * N + n] = beta * fabsf(Cin[(size_t)m * ldd + n]);
            S[(size_t)m * N + n] *= alpha;
        }
    size_t esz = ct == PC_BF16 ? 2 : 4;
    void *dA = dev_copy(A.f, A.b, na, ab), *dB = dev_copy(B.f, B.b, nb, ab), *dC = d_clone(Cin, nd * 4);
    void *dD = d_alloc(nd * esz);
    unsigned char *sent = h_malloc(nd * esz), *back = h_malloc(nd * esz), *back2 = h_malloc(nd * esz);
    memset(sent, 0xFF, nd * esz); /* NaN everywhere: the N columns must be written, the padding must stay NaN */
    d_up(dD, sent, nd * esz);
    H_TRY(pc_gemm(ta, tb, M, N, K, alpha, dA, lda, dB, ldb, beta, beta != 0.0f ? dC : NULL, dD, ldd, NULL, ab, ct));
    d_down(back, dD, nd * esz);
    int pad_ok = 1;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            size_t at = (size_t)m * ldd + n;
            if (ct == PC_BF16) h_widen(&gg[(size_t)m * N + n], (uint16_t *)back + at, 1);
            else memcpy(&gg[(size_t)m * N + n], back + at * 4, 4);
        }
    for (int m = 0; m < M; m++)
        for (int n = N; n < ldd; n++)
            if (memcmp(back + ((size_t)m * ldd + n) * esz, sent, esz)) pad_ok = 0;
    Cmp c;
    if (ab == PC_F32 && ct == PC_F32) c = cmp_norm(gg, gref, (size_t)M * N, F32_RTOL);
    else {
        double *bd = h_sum_bound(S, ex, (size_t)M * N, K + 2);
        if (ab == PC_F32) /* float32 products: the float32 sums' gamma_k(2^-24) on both sides */
            for (size_t i = 0; i < (size_t)M * N; i++) bd[i] = 2 * h_gamma(K + 2, U_CPU) * 1.001 * (S[i] + ex[i]);
        if (ct == PC_BF16) { /* against the CPU's result rounded to bf16 */
            h_bound_round_bf16(bd, gref, (size_t)M * N);
            h_round_bf16(gref, (size_t)M * N);
        }
        c = cmp_elem(gg, gref, bd, (size_t)M * N);
        free(bd);
    }
    d_up(dD, sent, nd * esz);
    H_TRY(pc_gemm(ta, tb, M, N, K, alpha, dA, lda, dB, ldb, beta, beta != 0.0f ? dC : NULL, dD, ldd, NULL, ab, ct));
    d_down(back2, dD, nd * esz);
    H_CHECK(c.ok, "%s %s: err %.3g > bound %.3g at %ld (%s)", name, shape, c.err, c.bound, c.worst, pc_gemm_algo());
    H_CHECK(pad_ok, "%s %s: wrote into the row padding", name, shape);
    H_CHECK(!memcmp(back, back2, nd * esz), "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(dD), "%s %s: wrote past D", name, shape);
    h_row(name, shape, &c, 0, 0, "");
    d_free(dA), d_free(dB), d_free(dC), d_free(dD);
    host_free(A), host_free(B);
    free(Cin), free(ref), free(S), free(got), free(gref), free(gg), free(ex), free(sent), free(back), free(back2);
}

/* a bias whose address is not 16-byte aligned cannot go to the epilogue: the fallback adds it */
static void bias_unaligned_case(void) {
    const int T = 19, in = 64, out = 40;
    Host x = host_rand((size_t)T * in, PC_BF16), W = host_rand((size_t)out * in, PC_BF16);
    float *bias = h_malloc(sizeof(float) * (out + 1)), *ref = h_malloc(sizeof(float) * T * out);
    float *got = h_malloc(sizeof(float) * T * out);
    h_fill(bias, out + 1, 0.1f, 1.0f);
    gemm_bf16(0, 1, T, out, in, x.b, in, W.b, in, 0.0f, ref, out);
    for (int t = 0; t < T; t++)
        for (int o = 0; o < out; o++) ref[(size_t)t * out + o] += bias[1 + o];
    float *S = h_abs_product(0, 1, T, out, in, x.f, in, W.f, in), *ex = h_malloc(sizeof(float) * T * out);
    for (int t = 0; t < T; t++)
        for (int o = 0; o < out; o++) ex[(size_t)t * out + o] = fabsf(bias[1 + o]);
    void *dx = d_clone(x.b, (size_t)T * in * 2), *dW = d_clone(W.b, (size_t)out * in * 2);
    float *db = d_clone(bias, (out + 1) * 4), *dy = d_alloc((size_t)T * out * 4);
    d_poison(dy, (size_t)T * out * 4);
    H_TRY(pc_linear_forward(dy, PC_F32, dx, in, dW, db + 1, NULL, T, in, out, PC_BF16));
    d_down(got, dy, (size_t)T * out * 4);
    double *bd = h_sum_bound(S, ex, (size_t)T * out, in + 2);
    Cmp c = cmp_elem(got, ref, bd, (size_t)T * out);
    H_CHECK(c.ok, "linear_fwd unaligned bias: err %.3g > bound %.3g at %ld", c.err, c.bound, c.worst);
    H_CHECK(d_guard_ok(dy), "linear_fwd unaligned bias: wrote past y");
    h_row("linear_fwd bf16", "T=19 in=64 out=40 +bias@4B", &c, 0, 0, "");
    d_free(dx), d_free(dW), d_free(db), d_free(dy);
    host_free(x), host_free(W);
    free(bias), free(ref), free(got), free(S), free(ex), free(bd);
}

void t_matmul(void) {
    /* bf16 operands need rows 16-byte aligned (in, out multiples of 8): the odd widths run in float32 only */
    static const LinCase small[] = {{1, 64, 96, 1, 1}, {37, 200, 136, 1, 0}, {70, 128, 64, 0, 0}, {5, 24, 8, 0, 1}};
    static const LinCase odd[] = {{5, 17, 3, 1, 1}, {3, 1, 5, 0, 0}};
    static const LinCase big[] = {{2304, 896, 1152, 1, 0}, {2304, 896, 896, 0, 1}, {2304, 4864, 896, 0, 1},
                                  {300, 896, 9728, 0, 0}, {257, 4096, 1024, 1, 0}};
    for (int d = 0; d < 2; d++) {
        PcDtype ab = d ? PC_BF16 : PC_F32;
        for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) linear_case(&small[i], ab);
        for (size_t i = 0; ab == PC_F32 && i < sizeof odd / sizeof odd[0]; i++) linear_case(&odd[i], ab);
        for (size_t i = 0; !h_small && i < sizeof big / sizeof big[0]; i++) linear_case(&big[i], ab);
        for (int t = 0; t < 4; t++) gemm_case(t >> 1, t & 1, 45, 38, 67, ab, PC_F32);
        gemm_case(0, 1, 33, 48, 40, ab, PC_BF16);
    }
    bias_unaligned_case();
}
