/* t_adamw.c: pc_adamw_step against optim.c's adamw_step (the same update: torch's AdamW, decay only inside the
 * decay spans counted from base, the clip factor applied on the fly), and pc_grad_norm / pc_grad_sumsq against
 * grad_norm.
 * Bounds, stated: p, m, v: ||gpu - cpu|| <= 1e-5 ||cpu|| (float32 on both sides; the learning rate and decay are
 * large here, lr 1e-2 and weight decay 0.5, so a decay applied outside its spans or missed inside moves p by 5e-3
 * of its value and fails); the bf16 copy: bit for bit the rounding of the GPU's own new p. The norm: both sides
 * add squares of float32 values, each exact in double, in some order: |d sum| <= 2 gamma_n(2^-53) sum, so the norm
 * is within n 2^-53 (+ one rounding) relatively; reruns bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/adamw.h"
#include "cuda/global_norm.h"
#include "families.h"
#include "harness.h"
#include "optim/optim.h"

typedef struct {
    float *p, *g, *m, *v;
    uint16_t *pb;
    size_t n, base;
    float scale;
    PcSpan *decay;
    int nd;
    PcAdamW hp;
} Adam;

static int adam_run(void *q) {
    Adam *a = q;
    return pc_adamw_step(a->p, a->pb, a->g, a->m, a->v, a->n, a->scale, a->decay, a->nd, a->base, &a->hp);
}

static void adam_case(size_t n, int off, size_t base, int with_decay, int with_pb, float scale, long step) {
    char shape[112];
    snprintf(shape, sizeof shape, "n=%zu%s base=%zu%s%s scale=%g t=%ld", n, off ? "+1" : "", base,
             with_decay ? " spans" : "", with_pb ? " +bf16" : "", scale, step);
    float *p = h_malloc(sizeof(float) * n), *g = h_malloc(sizeof(float) * n), *m = h_malloc(sizeof(float) * n);
    float *v = h_malloc(sizeof(float) * n);
    h_fill(p, n, 0.1f, 1.0f), h_fill(g, n, 0.01f, 1.0f), h_fill(m, n, 0.001f, 0.1f), h_fill(v, n, 0.0001f, 0.01f);
    for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
    /* spans: sorted, disjoint, some before base and past the end, gaps between */
    Span sp[64];
    int ns = 0;
    size_t at = base > 50 ? base - 50 : 0;
    while (with_decay && ns < 60 && at < base + n + 100) {
        size_t len = 1 + (size_t)h_randint((int)(n / 8 + 3)), gap = (size_t)h_randint((int)(n / 10 + 3));
        sp[ns].lo = at, sp[ns].hi = at + len, ns++;
        at += len + gap + 1;
    }
    Spans spans = {ns, sp};
    AdamWConfig cfg = {0.9, 0.999, 1e-8, 0.5};
    double lr = 1e-2;
    AdamW a = {n, h_malloc(sizeof(float) * n), h_malloc(sizeof(float) * n), step - 1};
    memcpy(a.m, m, n * 4), memcpy(a.v, v, n * 4);
    float *pref = h_malloc(sizeof(float) * n);
    memcpy(pref, p, n * 4);
    adamw_step(&a, pref, g, scale, with_decay ? &spans : NULL, base, lr, &cfg);

    float *dp = d_alloc((n + off) * 4), *dg = d_alloc((n + off) * 4), *dm = d_alloc((n + off) * 4), *dv = d_alloc((n + off) * 4);
    uint16_t *dpb = with_pb ? d_alloc((n + off) * 2) : NULL;
    PcSpan *dsp = with_decay ? d_clone(sp, sizeof(Span) * (ns ? ns : 1)) : NULL;
    Adam A = {dp + off, dg + off, dm + off, dv + off, dpb ? dpb + off : NULL, n, base, scale, dsp, ns,
              {step, lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay}};
    float *gp = h_malloc(sizeof(float) * n), *gm = h_malloc(sizeof(float) * n), *gv = h_malloc(sizeof(float) * n);
    uint16_t *gpb = h_malloc(2 * n), *gpb2 = h_malloc(2 * n);
    float *gp2 = h_malloc(sizeof(float) * n);
    for (int r = 0; r < 2; r++) {
        d_up(A.p, p, n * 4), d_up(A.g, g, n * 4), d_up(A.m, m, n * 4), d_up(A.v, v, n * 4);
        if (dpb) d_poison(dpb, (n + off) * 2);
        H_TRY(adam_run(&A));
        d_down(r ? gp2 : gp, A.p, n * 4);
        if (dpb) d_down(r ? gpb2 : gpb, A.pb, n * 2);
        if (!r) d_down(gm, A.m, n * 4), d_down(gv, A.v, n * 4);
    }
    Cmp cp = cmp_norm(gp, pref, n, 1e-5), cm = cmp_norm(gm, a.m, n, 1e-5), cv = cmp_norm(gv, a.v, n, 1e-5);
    H_CHECK(cp.ok, "adamw %s: p err %.3g", shape, cp.err);
    H_CHECK(cm.ok, "adamw %s: m err %.3g", shape, cm.err);
    H_CHECK(cv.ok, "adamw %s: v err %.3g", shape, cv.err);
    H_CHECK(!memcmp(gp, gp2, n * 4) && (!dpb || !memcmp(gpb, gpb2, n * 2)), "adamw %s: a rerun differs", shape);
    if (dpb) {
        int same = 1;
        for (size_t i = 0; i < n; i++)
            if (gpb[i] != h_bf16(gp[i])) same = 0;
        H_CHECK(same, "adamw %s: the bf16 copy is not the rounding of the new p", shape);
        H_CHECK(d_guard_ok(dpb), "adamw %s: wrote past the bf16 copy", shape);
    }
    H_CHECK(d_guard_ok(dp) && d_guard_ok(dm) && d_guard_ok(dv), "adamw %s: wrote past p, m or v", shape);
    h_row("adamw", shape, &cp, off ? 0 : h_time(adam_run, &A), h_floor_bytes((double)n * (28 + (with_pb ? 2 : 0))),
          "bytes/bw");
    d_free(dp), d_free(dg), d_free(dm), d_free(dv), d_free(dpb), d_free(dsp);
    free(p), free(g), free(m), free(v), free(a.m), free(a.v), free(pref), free(gp), free(gm), free(gv), free(gpb),
        free(gpb2), free(gp2);
}

typedef struct {
    float *g;
    size_t n;
    double *out;
} Gn;

static int gn_run(void *q) {
    Gn *a = q;
    return pc_grad_sumsq(a->out, a->g, a->n);
}

static void norm_case(size_t n, int off) {
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu%s", n, off ? "+1" : "");
    float *g = h_malloc(sizeof(float) * (n ? n : 1));
    h_fill(g, n, 0.001f, 2.0f);
    double ref = grad_norm(g, n), got = -1, got2 = -2, ss = -1;
    float *dg = d_alloc((n + off) * 4);
    if (n) d_up(dg + off, g, n * 4);
    H_TRY(pc_grad_norm(&got, dg + off, n));
    H_TRY(pc_grad_norm(&got2, dg + off, n));
    Gn G = {dg + off, n, d_alloc(8)};
    H_TRY(gn_run(&G));
    d_down(&ss, G.out, 8);
    double bound = ((double)n * 0x1p-53 + 0x1p-52) * ref;
    Cmp c = cmp_elem_d(&got, &ref, &bound, 1);
    H_CHECK(c.ok, "grad_norm %s: %.17g vs the CPU's %.17g (bound %.3g)", shape, got, ref, bound);
    H_CHECK(!memcmp(&got, &got2, 8), "grad_norm %s: a rerun differs", shape);
    H_CHECK(sqrt(ss) == got, "grad_norm %s: pc_grad_sumsq's sqrt %.17g differs from pc_grad_norm's", shape, sqrt(ss));
    h_row("grad_norm", shape, &c, off ? 0 : h_time(gn_run, &G), h_floor_bytes(4.0 * n), "bytes/bw");
    d_free(dg), d_free(G.out), free(g);
}

void t_adamw(void) {
    adam_case(1, 0, 0, 0, 1, 1.0f, 1);
    adam_case(7, 1, 3, 1, 1, 0.37f, 2);
    adam_case(1000, 0, 12345, 1, 0, 1.0f, 37);
    adam_case(1000003, 0, 0, 1, 1, 0.5f, 5);
    adam_case(1000003, 1, 77, 1, 1, 1.0f, 1000);
    if (!h_small) adam_case(50000000, 0, 0, 1, 1, 0.8f, 3);
}

void t_global_norm(void) {
    static const size_t ns[] = {0, 1, 5, 4097, 1000003};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) norm_case(ns[i], 0), norm_case(ns[i], 1);
    if (!h_small) norm_case(100000000, 0);
}
