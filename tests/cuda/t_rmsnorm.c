/* t_rmsnorm.c: pc_rmsnorm_forward (float32 or bf16 output, the residual add fused or not) and pc_rmsnorm_backward
 * (dx +=, dw += or a frozen weight) against kernels.c's rmsnorm_forward / rmsnorm_backward.
 * Bounds, stated: float32 outputs ||gpu - cpu|| <= 1e-5 ||cpu|| (y, rstd, dx, dw); the fused residual sum x + res
 * bit for bit (one float32 addition on both sides); a bf16 y: the float32 y of both sides agree to a few float32
 * ulps (the sums of squares are double on both sides, so rstd differs by at most one float32 ulp, y by 3), taken
 * as 2^-18 |y|, then each side rounds once: + one bf16 ulp (2^-7 |y|). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/rmsnorm.h"
#include "families.h"
#include "harness.h"
#include "kernels/kernels.h"

#define EPS 1e-6f

typedef struct {
    void *y;
    PcDtype yt;
    float *rstd, *xsum, *x, *res, *w, *dx, *dw, *dy;
    int T, C;
} Norm;

static int norm_fwd(void *p) {
    Norm *n = p;
    return pc_rmsnorm_forward(n->y, n->yt, n->rstd, n->xsum, n->x, n->res, n->w, n->T, n->C, EPS);
}
static int norm_bwd(void *p) {
    Norm *n = p;
    return pc_rmsnorm_backward(n->dx, n->dw, n->dy, n->xsum ? n->xsum : n->x, n->w, n->rstd, n->T, n->C);
}

static void norm_case(int T, int C, PcDtype yt, int with_res, int with_dw) {
    char shape[96], name[64];
    snprintf(shape, sizeof shape, "T=%d C=%d%s%s", T, C, with_res ? " +res" : "", with_dw ? "" : " dw frozen");
    size_t n = (size_t)T * C, ye = yt == PC_BF16 ? 2 : 4;
    float *x = h_malloc(sizeof(float) * n), *res = h_malloc(sizeof(float) * n), *w = h_malloc(sizeof(float) * C);
    float *xs = h_malloc(sizeof(float) * n), *yref = h_malloc(sizeof(float) * n), *rref = h_malloc(sizeof(float) * T);
    h_fill(x, n, 0.1f, 2.0f), h_fill(res, n, 0.1f, 2.0f), h_fill(w, C, 0.5f, 1.5f);
    for (size_t i = 0; i < n; i++) xs[i] = with_res ? x[i] + res[i] : x[i];
    rmsnorm_forward(yref, rref, xs, w, T, C, EPS);
    Norm N = {d_alloc(n * ye), yt, d_alloc(T * 4), with_res ? d_alloc(n * 4) : NULL, d_clone(x, n * 4),
              with_res ? d_clone(res, n * 4) : NULL, d_clone(w, C * 4), NULL, NULL, NULL, T, C};
    d_poison(N.y, n * ye), d_poison(N.rstd, T * 4);
    if (N.xsum) d_poison(N.xsum, n * 4);
    H_TRY(norm_fwd(&N));
    unsigned char *got = h_malloc(n * 4), *again = h_malloc(n * 4);
    float *gy = h_malloc(sizeof(float) * n), *gr = h_malloc(sizeof(float) * T);
    d_down(got, N.y, n * ye);
    if (yt == PC_BF16) h_widen(gy, (uint16_t *)got, n);
    else memcpy(gy, got, n * 4);
    d_down(gr, N.rstd, T * 4);
    Cmp cy;
    if (yt == PC_F32) cy = cmp_norm(gy, yref, n, 1e-5);
    else { /* against the CPU's bf16 model: its float32 y rounded (llama.c's norm) */
        double *b = h_malloc(sizeof(double) * n);
        float *yb = h_malloc(sizeof(float) * n);
        memcpy(yb, yref, n * 4);
        h_round_bf16(yb, n);
        for (size_t i = 0; i < n; i++) b[i] = 0x1p-18 * fabs(yref[i]);
        h_bound_round_bf16(b, yref, n);
        cy = cmp_elem(gy, yb, b, n);
        free(b), free(yb);
    }
    Cmp cr = cmp_norm(gr, rref, T, 1e-5);
    snprintf(name, sizeof name, "rmsnorm_fwd ->%s", yt == PC_BF16 ? "bf16" : "f32");
    H_CHECK(cy.ok, "%s %s: y err %.3g > bound %.3g at %ld", name, shape, cy.err, cy.bound, cy.worst);
    H_CHECK(cr.ok, "%s %s: rstd err %.3g", name, shape, cr.err);
    if (N.xsum) {
        float *gs = h_malloc(sizeof(float) * n);
        d_down(gs, N.xsum, n * 4);
        H_CHECK(!memcmp(gs, xs, n * 4), "%s %s: xsum is not x + res bit for bit", name, shape);
        H_CHECK(d_guard_ok(N.xsum), "%s %s: wrote past xsum", name, shape);
        free(gs);
    }
    d_poison(N.y, n * ye), d_poison(N.rstd, T * 4);
    H_TRY(norm_fwd(&N));
    d_down(again, N.y, n * ye);
    H_CHECK(!memcmp(again, got, n * ye), "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(N.y) && d_guard_ok(N.rstd), "%s %s: wrote past y or rstd", name, shape);
    h_row(name, shape, &cy, h_time(norm_fwd, &N), h_floor_bytes((double)n * (4 + ye + (with_res ? 8 : 0)) + T * 4.0),
          "bytes/bw");

    /* backward, once per shape (float32 in and out): dx += , dw += */
    if (yt == PC_F32) {
        float *dy = h_malloc(sizeof(float) * n), *dx0 = h_malloc(sizeof(float) * n), *dw0 = h_malloc(sizeof(float) * C);
        float *dxref = h_malloc(sizeof(float) * n), *dwref = h_malloc(sizeof(float) * C);
        h_fill(dy, n, 0.1f, 1.0f), h_fill(dx0, n, 0.1f, 1.0f), h_fill(dw0, C, 0.1f, 1.0f);
        memcpy(dxref, dx0, n * 4), memcpy(dwref, dw0, C * 4);
        rmsnorm_backward(dxref, with_dw ? dwref : NULL, dy, xs, w, rref, T, C);
        /* the backward reads the forward's rstd (the GPU's own) */
        N.dy = d_clone(dy, n * 4), N.dx = d_clone(dx0, n * 4), N.dw = with_dw ? d_clone(dw0, C * 4) : NULL;
        H_TRY(norm_bwd(&N));
        float *gdx = h_malloc(sizeof(float) * n), *gdw = h_malloc(sizeof(float) * C);
        d_down(gdx, N.dx, n * 4);
        if (N.dw) d_down(gdw, N.dw, C * 4);
        Cmp cdx = cmp_norm(gdx, dxref, n, 1e-5), cdw = with_dw ? cmp_norm(gdw, dwref, C, 1e-5) : cdx;
        d_up(N.dx, dx0, n * 4);
        if (N.dw) d_up(N.dw, dw0, C * 4);
        H_TRY(norm_bwd(&N));
        d_down(again, N.dx, n * 4);
        int same = !memcmp(again, gdx, n * 4);
        if (N.dw) d_down(again, N.dw, C * 4), same = same && !memcmp(again, gdw, C * 4);
        H_CHECK(cdx.ok, "rmsnorm_bwd %s: dx err %.3g", shape, cdx.err);
        H_CHECK(cdw.ok, "rmsnorm_bwd %s: dw err %.3g", shape, cdw.err);
        H_CHECK(same, "rmsnorm_bwd %s: a rerun differs", shape);
        H_CHECK(d_guard_ok(N.dx) && (!N.dw || d_guard_ok(N.dw)), "rmsnorm_bwd %s: wrote past dx or dw", shape);
        h_row("rmsnorm_bwd dx", shape, &cdx, h_time(norm_bwd, &N), h_floor_bytes(16.0 * n), "bytes/bw");
        if (with_dw) h_row("rmsnorm_bwd dw", shape, &cdw, 0, 0, "");
        d_free(N.dy), d_free(N.dx), d_free(N.dw);
        free(dy), free(dx0), free(dw0), free(dxref), free(dwref), free(gdx), free(gdw);
    }
    d_free(N.y), d_free(N.rstd), d_free(N.xsum), d_free(N.x), d_free(N.res), d_free(N.w);
    free(x), free(res), free(w), free(xs), free(yref), free(rref), free(got), free(again), free(gy), free(gr);
}

void t_rmsnorm(void) {
    static const int small[][2] = {{1, 64}, {7, 17}, {33, 896}, {5, 4100}, {3, 8192}, {2, 8191}};
    static const int big[][2] = {{2304, 896}, {18432, 896}, {2304, 4096}};
    for (int d = 0; d < 2; d++) {
        PcDtype yt = d ? PC_BF16 : PC_F32;
        for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
            norm_case(small[i][0], small[i][1], yt, (int)(i & 1), i != 2);
        for (size_t i = 0; !h_small && i < sizeof big / sizeof big[0]; i++)
            norm_case(big[i][0], big[i][1], yt, (int)(i & 1), 1);
    }
}
