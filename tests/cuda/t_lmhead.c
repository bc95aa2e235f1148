/* t_lmhead.c: pc_lmhead_forward / pc_lmhead_backward against kernels.c's lmhead_forward / lmhead_backward (nothing
 * kept: the CPU recomputes its logits too) on shared-prompt rows (a target's source is the token before it, the
 * prompt's last token for a response's first: K responses share that row), with K = 1 and K = 16 responses, one
 * target, vocabularies of 13, 1001, 3000 and 151,936 (the last in 19 chunks of 8192 and a tail), chunks forced
 * small (rows and vocabulary) so that every tail runs.
 *
 * Bounds, stated.
 * float32 products: ||gpu - cpu|| <= 1e-5 ||cpu|| for logp, lse, dx and dW.
 * bf16 products (same bf16 operands on both sides; u_g = 2^-22, u_c = 2^-24 as in t_matmul.c):
 *  - a logit: E_iv = (gamma_H(u_g) + gamma_H(u_c)) sum_k |x_ik w_vk|;
 *  - the log-sum-exp moves by at most max_v E_iv when the logits move (it is 1-Lipschitz in the largest change),
 *    plus each side's own rounding of its sum of exponentials, relative: GPU (458 + 2 nc) 2^-24 + (75 + 2 nc) e_g
 *    (a lane's 4 w / 128 terms and its rescalings, 5 warp merges, nc chunk merges), CPU (V/16 + 1) 2^-24 + e_c
 *    (16 lanes of V/16 terms, then double), where an exponential of l - m is off by e_g = 2^-22 + 2^-23 Lmax
 *    (CUDA's expf 2 ulps, the float32 subtraction's rounding amplified) and e_c = 2^-21 + 2^-23 Lmax (libmvec);
 *    so |d logp_i| <= E_it + max_v E_iv + that = B_i; a float32 lse adds 2^-23 |lse|;
 *  - d logits: each side forms p = bf16(exp(l - lse)) and dl = bf16(-g p): two bf16 roundings (2^-8 relative
 *    each) per side of values whose unrounded ratio is within rho_iv = E_iv + |d lse_i| + e_g + e_c, so
 *    |d dl_iv| <= D_iv = 1.05 |g_i| p_iv (rho_iv + 2^-6); at the target dl = bf16(g (-expm1(logp))):
 *    D_it = 1.05 |g_i| (p_it B_i + 2^-7 (1 - p_it));
 *  - dx = dl W and dW = dl^T x then sum those differences and round their own sums:
 *    |d dx_ik| <= sum_v D_iv |w_vk| + (gamma_{Vc+nc}(u_g) + gamma_V(u_c)) sum_v M_iv |w_vk|, M the magnitude of
 *    either side's dl (1.05 |g| p, or 1.05 |g| (1 - p) at the target, plus D); the rows then go to dx[src] in the
 *    same order on both sides: + 2 gamma_{K+1}(2^-24) (|dx0| + the rows' magnitudes);
 *    |d dW_vk| <= sum_i D_iv |x_ik| + (gamma_{2n+1}(u_g) + gamma_{2n+1}(u_c)) (sum_i M_iv |x_ik| + |dW0_vk|).
 * Kept probabilities (lmhead.h; bf16): the GPU's p = bf16(bf16(exp(l - M)) exp(M - lse)): one bf16 rounding more
 * than the CPU's, one more exponential (e_g) and a float32 product (2^-24), so D_iv = 1.05 |g_i| p_iv (rho_iv + e_g +
 * 2^-24 + 5 2^-8) off the target (the target's as above); the forward's log-probs are those without keep, bit for
 * bit; the rest of the bounds as above. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/embedding.h"
#include "cuda/lmhead.h"
#include "families.h"
#include "harness.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

typedef struct {
    int L, P, K, R, H, V, rows, vocab;
} LmCase;

typedef struct {
    double *logp, *g;
    float *lse, *x, *dx, *dW;
    void *W, *work, *keep; /* keep: NULL, or the kept probabilities (set by the kept-path check) */
    PcDtype wt;
    int *src, *tgt, *order, *seg, *key, n_seg, n, H, V;
} Lm;

static int lm_fwd(void *p) {
    Lm *l = p;
    return pc_lmhead_forward(l->logp, l->lse, l->x, l->W, l->wt, l->src, l->tgt, l->n, l->H, l->V, l->work, l->keep);
}
static int lm_bwd(void *p) {
    Lm *l = p;
    return pc_lmhead_backward(l->dx, l->dW, l->g, l->logp, l->lse, l->x, l->W, l->wt, l->src, l->tgt, l->n, l->H,
                              l->V, l->order, l->seg, l->key, l->n_seg, l->work, l->keep);
}

/* shared-prompt rows as batch_new lays them out: src, tgt of the n targets; returns T */
static int build_rows(const LmCase *c, int **src, int **tgt, int *n) {
    int T = c->L * (c->P + c->K * c->R), t = 0, i = 0;
    *n = c->L * c->K * c->R;
    *src = h_malloc(sizeof(int) * *n), *tgt = h_malloc(sizeof(int) * *n);
    for (int l = 0; l < c->L; l++) {
        int p0 = t;
        t += c->P;
        for (int k = 0; k < c->K; k++)
            for (int j = 0; j < c->R; j++, t++, i++) {
                (*src)[i] = j ? t - 1 : p0 + c->P - 1;
                (*tgt)[i] = h_randint(c->V);
            }
    }
    return T;
}

/* the bf16 bounds of the header: logp (double), lse, dx [T, H], dW [V, H] */
typedef struct {
    double *logp, *lse, *dx, *dW;
} Bounds;

static Bounds bf16_bounds(const float *x, const float *Wf, const int *src, const int *tgt, const double *g,
                          const float *dx0, const float *dW0, int T, int n, int H, int V, int Vc, int nc, int kept) {
    Bounds b;
    float *xs = h_malloc(sizeof(float) * n * H), *Wa = h_malloc(sizeof(float) * (size_t)V * H);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < H; k++) {
            uint16_t h = h_bf16(x[(size_t)src[i] * H + k]);
            h_widen(&xs[(size_t)i * H + k], &h, 1);
        }
    float *A = h_abs_product(0, 1, n, V, H, xs, H, Wf, H); /* sum_k |x w| */
    float *l = h_malloc(sizeof(float) * (size_t)n * V);
    gemm(0, 1, n, V, H, 1.0f, xs, H, Wf, H, 0.0f, l, V);
    double gH = h_gamma(H, U_GPU) + h_gamma(H, U_CPU);
    b.logp = h_malloc(sizeof(double) * n), b.lse = h_malloc(sizeof(double) * n);
    double *dlse = h_malloc(sizeof(double) * n);
    float *D = h_malloc(sizeof(float) * (size_t)n * V), *M = h_malloc(sizeof(float) * (size_t)n * V);
    for (int i = 0; i < n; i++) {
        const float *li = l + (size_t)i * V, *Ai = A + (size_t)i * V;
        double mx = -INFINITY, s = 0.0, Lmax = 0.0, Emax = 0.0;
        for (int v = 0; v < V; v++) mx = fmax(mx, li[v]), Lmax = fmax(Lmax, fabs(li[v])), Emax = fmax(Emax, gH * Ai[v]);
        for (int v = 0; v < V; v++) s += exp(li[v] - mx);
        double lse = mx + log(s);
        double eg = 0x1p-22 + 0x1p-23 * 2 * Lmax, ec = 0x1p-21 + 0x1p-23 * 2 * Lmax;
        double sums = (458.0 + 2 * nc) * 0x1p-24 + (75.0 + 2 * nc) * eg + (V / 16.0 + 1) * 0x1p-24 + ec;
        double Bi = gH * Ai[tgt[i]] + Emax + sums;
        b.logp[i] = Bi;
        dlse[i] = Emax + sums + 0x1p-23 * fabs(lse); /* both sides' float32 lse: the backward's input */
        b.lse[i] = dlse[i];
        double gi = fabs(g[i]);
        for (int v = 0; v < V; v++) {
            double p = exp(li[v] - lse), rho = gH * Ai[v] + dlse[i] + eg + ec, d, m;
            if (v == tgt[i]) {
                d = 1.05 * gi * (p * Bi + 0x1p-7 * (1.0 - p));
                m = 1.05 * gi * (1.0 - p);
            } else {
                d = 1.05 * gi * p * (kept ? rho + eg + 0x1p-24 + 5 * 0x1p-8 : rho + 0x1p-6);
                m = 1.05 * gi * p;
            }
            D[(size_t)i * V + v] = (float)(d * 1.001), M[(size_t)i * V + v] = (float)((m + d) * 1.001);
        }
    }
    /* dx rows of the targets: D |W|, M |W| [n, H]; dW: D^T |xs|, M^T |xs| [V, H] */
    float *Wabs = h_malloc(sizeof(float) * (size_t)V * H), *xa = h_malloc(sizeof(float) * n * H);
    for (size_t i = 0; i < (size_t)V * H; i++) Wabs[i] = fabsf(Wf[i]);
    for (size_t i = 0; i < (size_t)n * H; i++) xa[i] = fabsf(xs[i]);
    float *DW = h_malloc(sizeof(float) * n * H), *MW = h_malloc(sizeof(float) * n * H);
    float *DX = h_malloc(sizeof(float) * (size_t)V * H), *MX = h_malloc(sizeof(float) * (size_t)V * H);
    gemm(0, 0, n, H, V, 1.0f, D, V, Wabs, H, 0.0f, DW, H);
    gemm(0, 0, n, H, V, 1.0f, M, V, Wabs, H, 0.0f, MW, H);
    gemm(1, 0, V, H, n, 1.0f, D, V, xa, H, 0.0f, DX, H);
    gemm(1, 0, V, H, n, 1.0f, M, V, xa, H, 0.0f, MX, H);
    double gx = h_gamma(Vc + nc, U_GPU) + h_gamma(V, U_CPU), gw = h_gamma(2.0 * n + 1, U_GPU) + h_gamma(2.0 * n + 1, U_CPU);
    b.dx = h_malloc(sizeof(double) * T * H), b.dW = h_malloc(sizeof(double) * (size_t)V * H);
    double *mag = h_malloc(sizeof(double) * T * H);
    int *cnt = h_malloc(sizeof(int) * T);
    for (int t = 0; t < T; t++) cnt[t] = 0;
    for (int i = 0; i < n; i++) cnt[src[i]]++;
    for (size_t j = 0; j < (size_t)T * H; j++) b.dx[j] = 0.0, mag[j] = fabs(dx0[j]);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < H; k++) {
            size_t at = (size_t)src[i] * H + k, r = (size_t)i * H + k;
            b.dx[at] += 1.001 * (DW[r] + gx * MW[r]);
            mag[at] += MW[r];
        }
    for (int t = 0; t < T; t++)
        for (int k = 0; k < H; k++) b.dx[(size_t)t * H + k] += 2 * h_gamma(cnt[t] + 1, U_CPU) * mag[(size_t)t * H + k];
    for (size_t j = 0; j < (size_t)V * H; j++) b.dW[j] = 1.001 * (DX[j] + gw * (MX[j] + fabs(dW0[j])));
    free(xs), free(Wa), free(A), free(l), free(dlse), free(D), free(M), free(Wabs), free(xa), free(DW), free(MW);
    free(DX), free(MX), free(mag), free(cnt);
    return b;
}

static void lm_case(const LmCase *c, PcDtype wt) {
    int *src, *tgt, n, T = build_rows(c, &src, &tgt, &n), H = c->H, V = c->V;
    char shape[112], name[48];
    snprintf(shape, sizeof shape, "n=%d (K=%d) H=%d V=%d%s", n, c->K, H, V, c->rows || c->vocab ? " chunks forced" : "");
    size_t nx = (size_t)T * H, nw = (size_t)V * H;
    float *x = h_malloc(sizeof(float) * nx), *W = h_malloc(sizeof(float) * nw);
    uint16_t *Wb = h_malloc(2 * nw);
    h_fill(x, nx, 0.1f, 1.0f), h_fill(W, nw, 0.1f, 1.0f);
    float ws = 2.0f / sqrtf((float)H); /* logits of a few units, as a trained head gives */
    for (size_t i = 0; i < nw; i++) W[i] *= ws;
    if (wt == PC_BF16) {
        for (size_t i = 0; i < nw; i++) Wb[i] = h_bf16(W[i]);
        h_widen(W, Wb, nw);
    }
    double *g = h_malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) {
        float v;
        h_fill(&v, 1, 0.1f, 1.0f);
        g[i] = v;
    }
    float *dx0 = h_malloc(sizeof(float) * nx), *dW0 = h_malloc(sizeof(float) * nw);
    h_fill(dx0, nx, 0.01f, 0.1f), h_fill(dW0, nw, 0.01f, 0.1f);

    /* the CPU */
    Weight Wc = {wt == PC_F32 ? W : NULL, wt == PC_BF16 ? Wb : NULL};
    lmhead_set_chunk_rows(0);
    float *work = h_malloc(sizeof(float) * lmhead_work(n, H, V));
    bf16 *btmp = wt == PC_BF16 ? h_malloc(sizeof(bf16) * lmhead_btmp(n, H, V)) : NULL;
    double *logp_ref = h_malloc(sizeof(double) * n);
    float *lse_ref = h_malloc(sizeof(float) * n), *dx_ref = h_malloc(sizeof(float) * nx), *dW_ref = h_malloc(sizeof(float) * nw);
    LmKeep none = {NULL, NULL};
    lmhead_forward(logp_ref, lse_ref, x, Wc, src, tgt, n, H, V, work, none, btmp);
    memcpy(dx_ref, dx0, nx * 4), memcpy(dW_ref, dW0, nw * 4);
    lmhead_backward(dx_ref, dW_ref, g, logp_ref, x, Wc, lse_ref, src, tgt, n, H, V, work, none, btmp);

    /* the GPU */
    pc_lmhead_set_chunks(c->rows, c->vocab);
    size_t wbytes = pc_lmhead_work(n, H, V, wt);
    int *order = h_malloc(sizeof(int) * n), *seg = h_malloc(sizeof(int) * (n + 1)), *key = h_malloc(sizeof(int) * n);
    int ns = pc_scatter_plan(order, seg, key, src, n);
    Lm L = {d_alloc(n * 8), d_clone(g, n * 8), d_alloc(n * 4), d_clone(x, nx * 4), d_clone(dx0, nx * 4),
            d_clone(dW0, nw * 4), wt == PC_BF16 ? d_clone(Wb, nw * 2) : d_clone(W, nw * 4), d_alloc(wbytes), NULL,
            wt, d_clone(src, n * 4), d_clone(tgt, n * 4), d_clone(order, n * 4), d_clone(seg, (ns + 1) * 4),
            d_clone(key, ns * 4), ns, n, H, V};
    d_poison(L.work, wbytes), d_poison(L.logp, n * 8), d_poison(L.lse, n * 4);
    H_TRY(lm_fwd(&L));
    double *logp = h_malloc(sizeof(double) * n), *logp2 = h_malloc(sizeof(double) * n);
    float *lse = h_malloc(sizeof(float) * n), *lse2 = h_malloc(sizeof(float) * n);
    d_down(logp, L.logp, n * 8), d_down(lse, L.lse, n * 4);
    int Vc = c->vocab ? c->vocab : (V < 8192 ? V : 8192), nc = (V + Vc - 1) / Vc; /* lmhead.h's chunks */
    Bounds B = {0};
    if (wt == PC_BF16) B = bf16_bounds(x, W, src, tgt, g, dx0, dW0, T, n, H, V, Vc, nc, 0);
    Cmp cl, cs;
    if (wt == PC_F32) {
        cl = cmp_norm_d(logp, logp_ref, n, 1e-5), cs = cmp_norm(lse, lse_ref, n, 1e-5);
    } else {
        cl = cmp_elem_d(logp, logp_ref, B.logp, n), cs = cmp_elem(lse, lse_ref, B.lse, n);
    }
    d_poison(L.work, wbytes), d_poison(L.logp, n * 8), d_poison(L.lse, n * 4);
    H_TRY(lm_fwd(&L));
    d_down(logp2, L.logp, n * 8), d_down(lse2, L.lse, n * 4);
    snprintf(name, sizeof name, "lmhead_fwd %s", wt == PC_BF16 ? "bf16" : "f32");
    H_CHECK(cl.ok, "%s %s: logp err %.3g > bound %.3g at %ld", name, shape, cl.err, cl.bound, cl.worst);
    H_CHECK(cs.ok, "%s %s: lse err %.3g > bound %.3g at %ld", name, shape, cs.err, cs.bound, cs.worst);
    H_CHECK(!memcmp(logp, logp2, n * 8) && !memcmp(lse, lse2, n * 4), "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(L.logp) && d_guard_ok(L.lse) && d_guard_ok(L.work), "%s %s: wrote past logp, lse or work", name, shape);
    double fl = 2.0 * n * (double)V * H;
    h_row(name, shape, &cl, h_time(lm_fwd, &L), wt == PC_BF16 ? h_floor_flops(fl) : 0, "bf16 rate");

    /* backward */
    d_poison(L.work, wbytes);
    H_TRY(lm_bwd(&L));
    float *gdx = h_malloc(sizeof(float) * nx), *gdW = h_malloc(sizeof(float) * nw);
    float *gdx2 = h_malloc(sizeof(float) * nx), *gdW2 = h_malloc(sizeof(float) * nw);
    d_down(gdx, L.dx, nx * 4), d_down(gdW, L.dW, nw * 4);
    Cmp cx, cw;
    if (wt == PC_F32) cx = cmp_norm(gdx, dx_ref, nx, 1e-5), cw = cmp_norm(gdW, dW_ref, nw, 1e-5);
    else cx = cmp_elem(gdx, dx_ref, B.dx, nx), cw = cmp_elem(gdW, dW_ref, B.dW, nw);
    d_up(L.dx, dx0, nx * 4), d_up(L.dW, dW0, nw * 4), d_poison(L.work, wbytes);
    H_TRY(lm_bwd(&L));
    d_down(gdx2, L.dx, nx * 4), d_down(gdW2, L.dW, nw * 4);
    snprintf(name, sizeof name, "lmhead_bwd %s", wt == PC_BF16 ? "bf16" : "f32");
    H_CHECK(cx.ok, "%s %s: dx err %.3g > bound %.3g at %ld", name, shape, cx.err, cx.bound, cx.worst);
    H_CHECK(cw.ok, "%s %s: dW err %.3g > bound %.3g at %ld", name, shape, cw.err, cw.bound, cw.worst);
    H_CHECK(!memcmp(gdx, gdx2, nx * 4) && !memcmp(gdW, gdW2, nw * 4), "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(L.dx) && d_guard_ok(L.dW) && d_guard_ok(L.work), "%s %s: wrote past dx, dW or work", name, shape);
    h_row(name, shape, &cx, h_time(lm_bwd, &L), wt == PC_BF16 ? h_floor_flops(3 * fl) : 0, "bf16 rate");
    snprintf(name, sizeof name, "lmhead_bwd dW %s", wt == PC_BF16 ? "bf16" : "f32");
    h_row(name, shape, &cw, 0, 0, "");

    /* the kept probabilities: the same log-probs, the backward without a logits product, within its bound */
    size_t kb = pc_lmhead_keep_bytes(n, V, wt);
    H_CHECK(wt == PC_F32 ? kb == 0 : kb >= (size_t)n * V * 2, "%s: pc_lmhead_keep_bytes %zu", shape, kb);
    if (kb) {
        Bounds K = bf16_bounds(x, W, src, tgt, g, dx0, dW0, T, n, H, V, Vc, nc, 1);
        L.keep = d_alloc(kb);
        d_poison(L.keep, kb), d_poison(L.work, wbytes), d_up(L.dx, dx0, nx * 4), d_up(L.dW, dW0, nw * 4);
        H_TRY(lm_fwd(&L));
        d_down(logp2, L.logp, n * 8), d_down(lse2, L.lse, n * 4);
        H_CHECK(!memcmp(logp, logp2, n * 8) && !memcmp(lse, lse2, n * 4), "lmhead_fwd kept %s: other log-probs than "
                "without keep", shape);
        H_TRY(lm_bwd(&L));
        d_down(gdx, L.dx, nx * 4), d_down(gdW, L.dW, nw * 4);
        cx = cmp_elem(gdx, dx_ref, K.dx, nx), cw = cmp_elem(gdW, dW_ref, K.dW, nw);
        d_up(L.dx, dx0, nx * 4), d_up(L.dW, dW0, nw * 4), d_poison(L.keep, kb), d_poison(L.work, wbytes);
        H_TRY(lm_fwd(&L));
        H_TRY(lm_bwd(&L));
        d_down(gdx2, L.dx, nx * 4), d_down(gdW2, L.dW, nw * 4);
        snprintf(name, sizeof name, "lmhead_bwd kept bf16");
        H_CHECK(cx.ok, "%s %s: dx err %.3g > bound %.3g at %ld", name, shape, cx.err, cx.bound, cx.worst);
        H_CHECK(cw.ok, "%s %s: dW err %.3g > bound %.3g at %ld", name, shape, cw.err, cw.bound, cw.worst);
        H_CHECK(!memcmp(gdx, gdx2, nx * 4) && !memcmp(gdW, gdW2, nw * 4), "%s %s: a rerun differs", name, shape);
        H_CHECK(d_guard_ok(L.keep) && d_guard_ok(L.work), "%s %s: wrote past keep or work", name, shape);
        h_row(name, shape, &cx, 0, 0, "");
        d_free(L.keep), L.keep = NULL;
        free(K.logp), free(K.lse), free(K.dx), free(K.dW);
    }
    pc_lmhead_set_chunks(0, 0);

    d_free(L.logp), d_free(L.g), d_free(L.lse), d_free(L.x), d_free(L.dx), d_free(L.dW), d_free(L.W), d_free(L.work);
    d_free(L.src), d_free(L.tgt), d_free(L.order), d_free(L.seg), d_free(L.key);
    free(src), free(tgt), free(x), free(W), free(Wb), free(g), free(dx0), free(dW0), free(work), free(btmp);
    free(logp_ref), free(lse_ref), free(dx_ref), free(dW_ref), free(order), free(seg), free(key);
    free(logp), free(logp2), free(lse), free(lse2), free(gdx), free(gdW), free(gdx2), free(gdW2);
    free(B.logp), free(B.lse), free(B.dx), free(B.dW);
}

void t_lmhead(void) {
    static const LmCase small[] = {
        {1, 1, 1, 1, 64, 1001, 0, 0},   /* one target */
        {1, 5, 16, 3, 128, 3000, 20, 700}, /* K = 16; 3 row chunks, 5 vocabulary chunks with a tail */
        {2, 3, 2, 2, 32, 13, 0, 4},     /* chunks of 4, 4, 4, 1 */
        {2, 3, 2, 2, 32, 13, 0, 0},
    };
    static const LmCase big[] = {
        {1, 3, 8, 5, 128, 151936, 0, 0}, /* 151,936 vocabulary: 19 chunks */
        {1, 16, 8, 64, 896, 32000, 0, 0},
        {1, 8, 8, 1, 4096, 5000, 0, 0},
    };
    for (int d = 0; d < 2; d++) {
        PcDtype wt = d ? PC_BF16 : PC_F32;
        for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) lm_case(&small[i], wt);
        for (size_t i = 0; !h_small && i < sizeof big / sizeof big[0]; i++) lm_case(&big[i], wt);
    }
}
