/* test_attn_bf16.c: attention's bf16 products (attn_bf16.h) and attention in
 * bf16 (kernels.h, AttnShape.bf16). Runs on the kernel the machine selects
 * (vdpbf16ps with AVX512-BF16); run.sh runs it again with PPA_BF16=builtin
 * for the C loop.
 *
 * Tolerances. Products: each product of two bf16 is exact in float32 and
 * only the float32 sums round, so against float64 sums of the same
 * bf16-rounded operands |C - C64| <= (K + 1) 2^-24 sum |a b| (K the summed
 * length). Attention against its float32 path: q, k, v, P, dO and dS are
 * rounded to bf16 (2^-9 relative each) before their products, so the outputs
 * differ by a few 2^-9 of the terms' magnitude; the bound used is 2^-6
 * (sum over keys of |P v|, and the gradients' largest entry). */
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/attn_bf16.h"
#include "kernels/bf16.h"
#include "kernels/kernels.h"

static uint64_t rs = 0x9e3779b97f4a7c15u;
static float unif(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (float)((double)(rs >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static float *rnd(size_t n, float scale) {
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = scale * unif();
    return x;
}
static double r16(float x) { return bf16_f32(bf16_round(x)); }

/* C [M, N] (ldc) against sum_k a(i, k) b(k, j) of bf16-rounded operands (+ beta C0) */
typedef struct {
    const float *x;
    int ld, trans;
} Mat;
static double mat_el(const void *ctx, int i, int k) {
    const Mat *m = ctx;
    return r16(m->trans ? m->x[(size_t)k * m->ld + i] : m->x[(size_t)i * m->ld + k]);
}
static int check_product(const float *C, int ldc, const float *C0, int M, int N, int K, Mat A, Mat B, double alpha,
                         const char *what, int causal_pl /* only j <= pl + i; -1: all */) {
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < (causal_pl >= 0 && causal_pl + i + 1 < N ? causal_pl + i + 1 : N); j++) {
            double want = C0 ? C0[(size_t)i * ldc + j] : 0.0, mag = fabs(want), s = 0, sm = 0;
            for (int k = 0; k < K; k++) {
                double p = mat_el(&A, i, k) * mat_el(&B, k, j);
                s += p, sm += fabs(p);
            }
            want += alpha * s, mag += fabs(alpha) * sm;
            if (!(fabs(C[(size_t)i * ldc + j] - want) <= (K + 2) * 0x1p-24 * mag + 1e-30)) bad++;
        }
    CHECK(bad == 0, "%s (M %d N %d K %d): %d of %d entries outside (K+1) 2^-24 sum|ab|", what, M, N, K, bad, M * N);
    return bad;
}

/* one segment: n queries, pl prompt keys, head size HS; every product of attn_bf16.h against float64 */
static void test_segment(int n, int pl, int HS) {
    int nc = pl + n, NKV = 2, ldk = NKV * HS + 3, ldq = 3 * HS + 5; /* strided like the engine's q, k, v */
    int p0 = 1, a = p0 + pl + 2, T = a + n + 1;
    float *k = rnd((size_t)T * ldk, 1), *v = rnd((size_t)T * ldk, 1), *q = rnd((size_t)T * ldq, 1);
    float *P = rnd((size_t)n * nc, 1), *G = rnd((size_t)n * nc, 1);
    for (int i = 0; i < n; i++) /* zero past the causal mask, as the softmax and dS leave them */
        for (int j = pl + i + 1; j < nc; j++) P[(size_t)i * nc + j] = G[(size_t)i * nc + j] = 0.0f;
    float *S = malloc(sizeof(float) * (size_t)n * nc), *O = rnd((size_t)n * ldq, 1);
    float *O0 = malloc(sizeof(float) * (size_t)n * ldq);
    memcpy(O0, O, sizeof(float) * (size_t)n * ldq);
    /* the segment's keys as one matrix [nc, HS] (prompt rows, then the segment's), for the reference */
    float *Kc = malloc(sizeof(float) * (size_t)nc * HS), *Vc = malloc(sizeof(float) * (size_t)nc * HS);
    const float *kh = k + HS, *vh = v + HS; /* kv head 1 */
    for (int j = 0; j < nc; j++) {
        int t = j < pl ? p0 + j : a + j - pl;
        memcpy(Kc + (size_t)j * HS, kh + (size_t)t * ldk, sizeof(float) * (size_t)HS);
        memcpy(Vc + (size_t)j * HS, vh + (size_t)t * ldk, sizeof(float) * (size_t)HS);
    }
    const float *Q = q + (size_t)a * ldq + HS, *dO = q + (size_t)a * ldq + 2 * HS;
    AbSeg *s = ab_seg_new();
    char what[96];
    snprintf(what, sizeof what, "n %d pl %d HS %d", n, pl, HS);
    ab_seg_keys(s, kh, vh, ldk, p0, pl, a, n, HS, 1);
    for (size_t i = 0; i < (size_t)n * nc; i++) S[i] = NAN;
    ab_scores(s, S, Q, ldq, 0.125f);
    check_product(S, nc, NULL, n, nc, HS, (Mat){Q, ldq, 0}, (Mat){Kc, HS, 1}, 0.125, "scores (causal part)", pl);
    ab_out(s, O, ldq, P);
    check_product(O, ldq, NULL, n, HS, nc, (Mat){P, nc, 0}, (Mat){Vc, HS, 0}, 1, "out", -1);
    ab_dprobs(s, S, dO, ldq);
    check_product(S, nc, NULL, n, nc, HS, (Mat){dO, ldq, 0}, (Mat){Vc, HS, 1}, 1, "dprobs", -1);
    memcpy(O, O0, sizeof(float) * (size_t)n * ldq);
    ab_dq(s, O, ldq, G);
    check_product(O, ldq, O0, n, HS, nc, (Mat){G, nc, 0}, (Mat){Kc, HS, 0}, 1, "dq", -1);
    /* dk, dv: accumulated into the keys' rows, nothing else touched */
    float *dk = rnd((size_t)T * ldk, 1), *dv = rnd((size_t)T * ldk, 1);
    float *dk0 = malloc(sizeof(float) * (size_t)T * ldk), *dv0 = malloc(sizeof(float) * (size_t)T * ldk);
    memcpy(dk0, dk, sizeof(float) * (size_t)T * ldk), memcpy(dv0, dv, sizeof(float) * (size_t)T * ldk);
    ab_dkv(s, dk + HS, dv + HS, ldk, G, P, Q, dO, ldq);
    float *gk = malloc(sizeof(float) * (size_t)nc * HS), *gk0 = malloc(sizeof(float) * (size_t)nc * HS);
    float *gv = malloc(sizeof(float) * (size_t)nc * HS), *gv0 = malloc(sizeof(float) * (size_t)nc * HS);
    int other = 0;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < ldk; c++) {
            size_t i = (size_t)t * ldk + c;
            int j = t >= p0 && t < p0 + pl ? t - p0 : t >= a && t < a + n ? pl + t - a : -1;
            if (j >= 0 && c >= HS && c < 2 * HS) {
                size_t o = (size_t)j * HS + (size_t)(c - HS);
                gk[o] = dk[i], gk0[o] = dk0[i], gv[o] = dv[i], gv0[o] = dv0[i];
            } else if (dk[i] != dk0[i] || dv[i] != dv0[i]) {
                other++;
            }
        }
    CHECK(other == 0, "%s: dk, dv change only the keys' rows of the head (%d others changed)", what, other);
    check_product(gk, HS, gk0, nc, HS, n, (Mat){G, nc, 1}, (Mat){Q, ldq, 0}, 1, "dk", -1);
    check_product(gv, HS, gv0, nc, HS, n, (Mat){P, nc, 1}, (Mat){dO, ldq, 0}, 1, "dv", -1);
    ab_seg_free(s);
    void *all[] = {k, v, q, P, G, S, O, O0, Kc, Vc, dk, dv, dk0, dv0, gk, gk0, gv, gv0};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* ---- attention in bf16 against its float32 path ---- */

typedef struct {
    int T, NH, NKV, HS, n_rows;
    int *pstart, *plen, *sstart, *rows;
    float *q, *k, *v, *dout;
} Case;

/* rows of a prompt and responses (lengths in lens: prompt first, 0 ends a row, -1 ends the list) */
static Case make_case(const int *lens, int NH, int NKV, int HS) {
    Case c = {0};
    c.NH = NH, c.NKV = NKV, c.HS = HS;
    for (const int *l = lens; *l >= 0; l++) c.T += *l, c.n_rows += *l == 0;
    c.pstart = malloc(sizeof(int) * (size_t)c.T), c.plen = malloc(sizeof(int) * (size_t)c.T);
    c.sstart = malloc(sizeof(int) * (size_t)c.T), c.rows = malloc(sizeof(int) * (size_t)(c.n_rows + 1));
    int t = 0, r = 0, first = 1, p0 = 0, P = 0;
    for (const int *l = lens; *l >= 0; l++) {
        if (*l == 0) {
            first = 1;
            continue;
        }
        if (first) c.rows[r++] = t, p0 = t, P = *l;
        for (int j = 0; j < *l; j++, t++)
            c.pstart[t] = p0, c.plen[t] = first ? 0 : P, c.sstart[t] = first ? p0 : t - j;
        first = 0;
    }
    c.rows[r] = t;
    size_t nq = (size_t)c.T * NH * HS, nk = (size_t)c.T * NKV * HS;
    c.q = rnd(nq, 2), c.k = rnd(nk, 2), c.v = rnd(nk, 1), c.dout = rnd(nq, 1);
    return c;
}

static void free_case(Case *c) {
    void *all[] = {c->pstart, c->plen, c->sstart, c->rows, c->q, c->k, c->v, c->dout};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

typedef struct {
    float *out, *lse, *dq, *dk, *dv;
} Res;

static Res run(const Case *c, int bf) {
    size_t nq = (size_t)c->T * c->NH * c->HS, nk = (size_t)c->T * c->NKV * c->HS;
    Res r = {calloc(nq, 4), calloc((size_t)c->T * c->NH, 4), calloc(nq, 4), calloc(nk, 4), calloc(nk, 4)};
    AttnShape s = {c->pstart, c->plen, c->sstart, c->rows, c->n_rows, c->T, c->NH, c->NKV, c->HS, bf};
    attention_forward(r.out, r.lse, c->q, c->k, c->v, &s);
    attention_backward(r.dq, r.dk, r.dv, c->dout, r.out, r.lse, c->q, c->k, c->v, &s);
    return r;
}

static void free_res(Res *r) { free(r->out), free(r->lse), free(r->dq), free(r->dk), free(r->dv); }

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* worst |a - b| / scale */
static double worst(const float *a, const float *b, size_t n, double scale) {
    double w = 0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - b[i]) / scale);
    return w;
}

static int same(const Res *a, const Res *b, const Case *c) {
    size_t nq = (size_t)c->T * c->NH * c->HS, nk = (size_t)c->T * c->NKV * c->HS;
    return !memcmp(a->out, b->out, nq * 4) && !memcmp(a->dq, b->dq, nq * 4) && !memcmp(a->dk, b->dk, nk * 4) &&
           !memcmp(a->dv, b->dv, nk * 4) && !memcmp(a->lse, b->lse, (size_t)c->T * c->NH * 4);
}

static void test_attention(void) {
    /* two rows: a prompt of 37 and responses of 20, 1, 45; a prompt of 9 and one response of 64 */
    static const int lens[] = {37, 20, 1, 45, 0, 9, 64, 0, -1};
    Case c = make_case(lens, 4, 2, 64);
    size_t nq = (size_t)c.T * c.NH * c.HS, nk = (size_t)c.T * c.NKV * c.HS;
    Res f = run(&c, 0), b = run(&c, 1);
    double eo = worst(b.out, f.out, nq, max_abs(c.v, nk)), el = worst(b.lse, f.lse, (size_t)c.T * c.NH, 1.0);
    double eq = worst(b.dq, f.dq, nq, max_abs(f.dq, nq)), ek = worst(b.dk, f.dk, nk, max_abs(f.dk, nk));
    double ev = worst(b.dv, f.dv, nk, max_abs(f.dv, nk));
    printf("attention bf16 vs float32 (relative to each output's largest entry): out %.2e, lse %.2e, dq %.2e, "
           "dk %.2e, dv %.2e\n", eo, el, eq, ek, ev);
    CHECK(eo <= 0x1p-6 && el <= 0x1p-6 * 16 && eq <= 0x1p-6 && ek <= 0x1p-6 && ev <= 0x1p-6,
          "attention in bf16 within 2^-6 of float32 (lse: 2^-2 absolute, scores up to 16)");
    CHECK(eo > 0 && eq > 0, "the bf16 path is not the float32 one (the products round)");
    /* the same bytes run after run and at 1 and 2 threads */
    Res again = run(&c, 1);
    CHECK(same(&b, &again, &c), "attention in bf16: the same bytes run after run");
#ifdef _OPENMP
    int t = omp_get_max_threads();
    omp_set_num_threads(1);
    Res one = run(&c, 1);
    omp_set_num_threads(t > 1 ? t : 2);
    CHECK(same(&b, &one, &c), "attention in bf16: the same bytes at 1 and %d threads", t > 1 ? t : 2);
    free_res(&one);
#endif
    /* batch invariance: the second row alone gives the bytes it has in the batch */
    static const int lens2[] = {9, 64, 0, -1};
    rs = 0x1234567u;
    Case c2 = make_case(lens2, 4, 2, 64);
    size_t off = (size_t)c.rows[1], rq = (size_t)c.NH * c.HS, rk = (size_t)c.NKV * c.HS, n2 = (size_t)c2.T;
    memcpy(c2.q, c.q + off * rq, n2 * rq * 4), memcpy(c2.k, c.k + off * rk, n2 * rk * 4);
    memcpy(c2.v, c.v + off * rk, n2 * rk * 4), memcpy(c2.dout, c.dout + off * rq, n2 * rq * 4);
    Res alone = run(&c2, 1);
    CHECK(!memcmp(alone.out, b.out + off * rq, n2 * rq * 4) && !memcmp(alone.dq, b.dq + off * rq, n2 * rq * 4) &&
              !memcmp(alone.dk, b.dk + off * rk, n2 * rk * 4) && !memcmp(alone.dv, b.dv + off * rk, n2 * rk * 4),
          "attention in bf16: a row alone = the same row in a batch, byte for byte");
    free_res(&alone), free_case(&c2), free_res(&again), free_res(&f), free_res(&b), free_case(&c);
}

int main(void) {
    printf("attention bf16 kernel: %s\n", ab_native() ? "vdpbf16ps (AVX512-BF16)" : "C loop");
    static const int SEG[][3] = {{1, 0, 64}, {1, 1, 64}, {7, 0, 64}, {20, 37, 64}, {33, 64, 128}, {64, 9, 64},
                                 {5, 3, 18}, {9, 2, 7},  {40, 31, 96}};
    for (size_t i = 0; i < sizeof SEG / sizeof SEG[0]; i++) test_segment(SEG[i][0], SEG[i][1], SEG[i][2]);
    test_attention();
    return check_report("test_attn_bf16");
}
