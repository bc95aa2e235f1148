/* test_attention.c: the fused attention of the CUDA module (src/cuda/attention.h) on shared-prompt rows, forward and
 * backward, float32 and bf16, against three oracles:
 *   1. the CPU engine's attention (kernels.h attention_forward / attention_backward, bf16 or float32 products), on
 *      every small shape without a window (the CPU has none: it refuses sequences longer than the window);
 *   2. the plain CUDA reference (attention_ref.cu: float64, the mask from its definition on the raw arrays, no plan,
 *      no tiles), on every shape; it also gives the magnitudes the bounds need;
 *   3. a float64 forward here in C, with the window taken from the engine's RoPE positions (pos[t] - pos[j] < W),
 *      on the small shapes: the reference's mask and window checked by a third hand.
 * The CPU engine is held to the same bounds against the reference as the GPU, so the bounds and the reference are
 * checked on an independent implementation too.
 *
 * Inputs are random each run (the seed is printed; --seed repeats a run): q uniform in [-aq, aq] (aq 3: scores of
 * standard deviation 1; 8 on one shape: peaked softmaxes), k, v, dout uniform in [-1, 1]. Every output buffer is
 * poisoned with NaN (0xFF bytes) before each launch and has guard bytes after it; every kernel runs twice and must
 * give the same bits.
 *
 * Float32 (the oracle mode): ||gpu - ref||_2 <= 1e-5 ||ref||_2 per tensor. Where a result cancels to zero
 * the norm is floored: for dq and dk at ||M2||_2 / (16 sqrt(n)) (M2: the magnitude of the float32 rounding of
 * dP - D, below, a sum of n positive terms whose rounding errors add up like sqrt(n) random ones: n = n_k for dq,
 * N for dk; one token gives dq = dk = 0 exactly, as dP = D, and float32 leaves ~1e-7 there); for lse at
 * sqrt(T NH) Smax / 16 (Smax = aq sqrt(HS) bounds |score|: one key makes lse one score, which may be near 0).
 *
 * bf16, per element, derived from bf16 rounding (the kernels: q, k, v, out, dout stored in bf16; products of two
 * bf16 exact in float32; float32 sums; P rounded to bf16 before P V and before dV = P^T dO; dS rounded before dQ =
 * dS K and dK = dS^T Q). Constants: u = 2^-8, bf16's unit roundoff (7 stored fraction bits: a spacing of 2^-7 on
 * [1, 2), half of it at most when rounding to nearest); e = 2^-22 per float32 add on the GPU (the harness's U_GPU:
 * truncating tensor-core adds with the addends' alignment; generous for the CPU's 2^-24); against the reference,
 * which computes in float64 from the same stored inputs, so the input rounding itself is no error.
 *   eta, the relative error of a float32 probability before its rounding: the score's float32 sum of HS products
 *   (<= 2 HS e Smax, Smax = scale sum_d |q_d k_d| <= aq sqrt(HS)), its scaling into log2 units and the
 *   subtraction of the running max or of lse (a few 2^-24 of |score| + |lse|, |lse| <= Smax + ln n), exp2 (2 ulp):
 *       eta = 2 HS e Smax + 2^-19 (1 + Smax + Lmax),   Lmax = Smax + ln(n_k)
 *   out = (sum_j round(p_j) v_j) / l with p_j = exp2(s_j - m), l = sum_j p_j (float32, unrounded): each term
 *   carries u + eta, the numerator's and l's sums n_k e each, the rescalings and the division a few e, then out is
 *   rounded once (u |out|):
 *       |out - ref| <= u |ref| + (1 + u) (u + 2 eta + (2 n_k + 8) e) Mo,       Mo = sum_j P_j |v_j|
 *   dS = P (dP - D): dP and D are float32 sums of HS exact products (<= HS e (A + B), A = sum |dout v_j|, B = sum
 *   |dout out|), the subtraction and the product a rounding each (2e |dS|), P's eta, then dS's rounding (u):
 *       |dq - ref| <= (1 + u)(u + eta + (n_k + 4) e) Mq1 + (1 + u)^2 (1 + eta) 2 HS e Mq2
 *       Mq1 = scale sum_j |dS_j| |k_j|, Mq2 = scale sum_j P_j (A_j + B) |k_j|
 *   dk the same over the N = group x (most queries seeing a key) terms of a key (Mk1, Mk2 with q for k), and
 *       |dv - ref| <= (1 + u)(u + eta + (N + 4) e) Mv,                           Mv = sum P |dout|
 *   times 1.05 for the products of small terms left out (each below u 2^-6) and the float32 sums of the magnitudes.
 *   n_k: the most keys a query sees. lse has no bf16 rounding of its own: the float32 rule.
 * The GPU's bf16 error is also compared with the CPU's bf16 error on the same inputs (its out rounded to bf16 as
 * the engine stores att): ||gpu - ref||_2 <= 2 ||cpu - ref||_2 + 2^-10 ||bound||_2.
 *
 * Shapes: one token; a prompt-only row; P = 37 with K = 1 and K = 16 responses of 5..70 tokens; three lists in one
 * batch; responses of one token; tile-aligned lengths; GQA groups 1, 2 and 7 (NH 4/NKV 4, 14/2 is 7, 7/1); head
 * size 64 and 128; sliding windows smaller than the prompt (and one at least the longest sequence: the same bits as
 * none); peaked scores; a long list (K = 24 responses of 64 after a 64-token prompt), whose prompt key block the
 * backward cuts into several items (attn_sched.h: their partial sums added in a fixed order); then, timed, the Qwen2-0.5B (NH 14, NKV 2, HS 64) and Llama-3.1-8B (NH 32, NKV 8, HS 128)
 * heads on 8 lists of K = 8, P = R = 256 (T = 18,432), and in bf16 on one plain causal row of T = 2048 and 4096
 * (beside bench/attention_torch.py's PyTorch SDPA on the same shapes). FLOPs are counted from the mask: 4 HS NH pairs for
 * the forward, 10 HS NH pairs for the backward (the usual 2.5x; the kernels form S and dP twice, 14 HS NH pairs).
 *
 * Usage: test_attention [--small] [--seed N] [--reps N] [--peak TFLOPS] [--cpu-all] [--no-variants] [--shape NAME]
 *   --small        the small shapes only, no timing (for compute-sanitizer)
 *   --shape NAME   only the shapes whose name contains NAME ("causal", "llama", "window", ...)
 *   --peak TFLOPS  the bf16 rate the table divides by (default: measured, a bf16 cuBLASLt 8192^3 product)
 *   --cpu-all      the CPU oracle on the large shapes too (slow)
 *   --no-variants  only the default tiling of the bf16 forward (otherwise every tiling is checked, and timed on the
 *                  large shapes) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/attention.h"
#include "harness.h"
#include "kernels/bf16.h"
#include "kernels/kernels.h"

static int g_cpu_all, g_variants = 1;
static const char *g_only; /* --shape: only the shapes whose name holds this */

enum { SMALL, BIG, PLAIN };

typedef struct {
    const char *name;
    int NH, NKV, HS, window;
    double aq;
    int nrows, P[4], K[4], rmin, rmax; /* rows: prompt P[r], K[r] responses of rmin..rmax tokens */
    int kind;
    int same_window; /* also: a window of the longest sequence gives the bits of none */
} Shape;

static const Shape SHAPES[] = {
    {"one token", 14, 2, 64, 0, 3, 1, {1}, {0}, 1, 1, SMALL, 0},
    {"prompt-only row P37", 7, 1, 128, 0, 3, 1, {37}, {0}, 1, 1, SMALL, 0},
    {"P37 K1 R70", 14, 2, 64, 0, 3, 1, {37}, {1}, 70, 70, SMALL, 0},
    {"P37 K16 R5-70", 7, 1, 128, 0, 3, 1, {37}, {16}, 5, 70, SMALL, 1},
    {"P37 K16 R5-70", 14, 2, 64, 0, 3, 1, {37}, {16}, 5, 70, SMALL, 0},
    {"3 lists P37,9,100", 4, 4, 64, 0, 3, 3, {37, 9, 100}, {3, 1, 5}, 5, 70, SMALL, 0},
    {"3 lists P37,9,100", 4, 4, 128, 0, 3, 3, {37, 9, 100}, {3, 1, 5}, 5, 70, SMALL, 0},
    {"responses of 1 token", 4, 2, 64, 0, 3, 2, {1, 3}, {2, 5}, 1, 1, SMALL, 0},
    {"tile-aligned P64,128 R64", 7, 1, 64, 0, 3, 2, {64, 128}, {2, 3}, 64, 64, SMALL, 0},
    {"window 24 < P37", 14, 2, 64, 24, 3, 1, {37}, {4}, 5, 70, SMALL, 0},
    {"window 50 < P100, 2 lists", 7, 1, 128, 50, 3, 2, {100, 20}, {3, 2}, 5, 70, SMALL, 0},
    {"window 1 (itself)", 4, 2, 64, 1, 3, 1, {9}, {3}, 1, 9, SMALL, 0},
    {"peaked scores (aq 8)", 14, 2, 128, 0, 8, 1, {37}, {4}, 5, 70, SMALL, 0},
    {"plain causal T300", 14, 2, 64, 0, 3, 1, {300}, {0}, 1, 1, SMALL, 0},
    {"long list P64 K24 R64", 4, 2, 64, 0, 3, 1, {64}, {24}, 64, 64, SMALL, 0},
    {"qwen2-0.5b 8 lists K8 P=R=256", 14, 2, 64, 0, 3, 8, {256, 256, 256, 256}, {8, 8, 8, 8}, 256, 256, BIG, 0},
    {"llama-3.1-8b 8 lists K8 P=R=256", 32, 8, 128, 0, 3, 8, {256, 256, 256, 256}, {8, 8, 8, 8}, 256, 256, BIG, 0},
    {"qwen2-0.5b causal T2048", 14, 2, 64, 0, 3, 1, {2048}, {0}, 1, 1, PLAIN, 0},
    {"qwen2-0.5b causal T4096", 14, 2, 64, 0, 3, 1, {4096}, {0}, 1, 1, PLAIN, 0},
    {"llama-3.1-8b causal T2048", 32, 8, 128, 0, 3, 1, {2048}, {0}, 1, 1, PLAIN, 0},
    {"llama-3.1-8b causal T4096", 32, 8, 128, 0, 3, 1, {4096}, {0}, 1, 1, PLAIN, 0},
};

/* rows of P[r] = P[r % 4] and K[r] = K[r % 4] (8 lists reuse the 4 entries) */
static int rowP(const Shape *s, int r) { return s->P[r % 4]; }
static int rowK(const Shape *s, int r) { return s->K[r % 4]; }

/* ---- the mask, as llama.c's batch_new lays rows out ---- */

typedef struct {
    int T, nrows, *pstart, *plen, *sstart, *pos, *rows;
    long long pairs; /* visible (query, key) pairs of a head */
    int maxk, maxq;  /* the most keys a query sees, the most queries that see a key */
    int maxlen;      /* the longest sequence (prompt + response) */
} Mask;

/* key j visible to token t, from the engine's positions: the row's prompt or t's own segment up to t, and within
 * the window (pos[t] - pos[j] < W) */
static int host_sees(const Mask *m, int W, int t, int j) {
    int in = (j >= m->pstart[t] && j < m->pstart[t] + m->plen[t]) || (j >= m->sstart[t] && j <= t);
    return in && (W == 0 || m->pos[t] - m->pos[j] < W);
}

static Mask mask_build(const Shape *s) {
    Mask m = {0};
    int cap = 0;
    for (int r = 0; r < s->nrows; r++) cap += rowP(s, r) + rowK(s, r) * s->rmax;
    m.pstart = h_malloc(sizeof(int) * cap), m.plen = h_malloc(sizeof(int) * cap);
    m.sstart = h_malloc(sizeof(int) * cap), m.pos = h_malloc(sizeof(int) * cap);
    m.rows = h_malloc(sizeof(int) * (s->nrows + 1)), m.nrows = s->nrows;
    int t = 0;
    for (int r = 0; r < s->nrows; r++) {
        int p0 = t, P = rowP(s, r);
        m.rows[r] = t;
        for (int j = 0; j < P; j++, t++) m.pstart[t] = p0, m.plen[t] = 0, m.sstart[t] = p0, m.pos[t] = j;
        if (P > m.maxlen) m.maxlen = P;
        for (int k = 0; k < rowK(s, r); k++) {
            int R = s->rmin + h_randint(s->rmax - s->rmin + 1), s0 = t;
            for (int j = 0; j < R; j++, t++) m.pstart[t] = p0, m.plen[t] = P, m.sstart[t] = s0, m.pos[t] = P + j;
            if (P + R > m.maxlen) m.maxlen = P + R;
        }
    }
    m.rows[s->nrows] = m.T = t;
    int *perkey = calloc((size_t)t, sizeof(int));
    for (int q = 0; q < m.T; q++) {
        int n = 0;
        for (int j = m.pstart[q]; j <= q; j++) /* every visible key lies in [pstart, t] in these rows */
            if (host_sees(&m, s->window, q, j)) n++, perkey[j]++;
        m.pairs += n;
        if (n > m.maxk) m.maxk = n;
    }
    for (int j = 0; j < m.T; j++)
        if (perkey[j] > m.maxq) m.maxq = perkey[j];
    free(perkey);
    return m;
}

static void mask_free(Mask *m) { free(m->pstart), free(m->plen), free(m->sstart), free(m->pos), free(m->rows); }

/* ---- buffers ---- */

typedef struct {
    size_t nq, nk, nl; /* T NH HS, T NKV HS, T NH */
    /* the inputs as stored in this mode (bf16 values widened) */
    float *q, *k, *v, *dout;
    /* the reference */
    float *out_r, *lse_r, *mo, *dq_r, *dk_r, *dv_r, *mq1, *mq2, *mk1, *mk2, *mv;
    float *out_in; /* the out the backward takes: out_r as stored */
    /* the GPU */
    float *out_g, *lse_g, *dq_g, *dk_g, *dv_g;
} Host;

typedef struct {
    void *q, *k, *v, *dout, *out, *out_in; /* the mode's elements */
    float *lse, *lse_in, *dq, *dk, *dv, *work;
    float *r_out, *r_lse, *r_mo, *r_dq, *r_dk, *r_dv, *r_mq1, *r_mq2, *r_mk1, *r_mk2, *r_mv;
    int *pstart, *plen, *sstart;
} Dev;

static size_t esize(PcDtype dt) { return dt == PC_BF16 ? 2 : 4; }

/* The host loops over the large shapes' arrays (75M elements for the Llama heads) run on every core. */

/* x[n] uniform in [-amp, amp), from the run's seed: chunks of 2^16 seeded in order, the same values whatever the
 * number of threads */
static void fill(float *x, size_t n, float amp) {
    const uint64_t base = h_rand();
    const long chunks = (long)((n + 65535) / 65536);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < chunks; c++) {
        uint64_t st = base + 0xd1b54a32d192ed03ull * (uint64_t)(c + 1);
        size_t end = (size_t)(c + 1) * 65536 < n ? (size_t)(c + 1) * 65536 : n;
        for (size_t i = (size_t)c * 65536; i < end; i++) { /* splitmix64 */
            uint64_t z = (st += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            z ^= z >> 31;
            x[i] = amp * (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
        }
    }
}

/* host floats to device elements of dt (bf16: rounded; the floats are already bf16 values there) */
static void to_dev(void *dst, const float *x, size_t n, PcDtype dt) {
    if (dt == PC_F32) {
        d_up(dst, x, sizeof(float) * n);
        return;
    }
    uint16_t *b = h_malloc(2 * n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) b[i] = bf16_round(x[i]);
    d_up(dst, b, 2 * n);
    free(b);
}

static void from_dev(float *x, const void *src, size_t n, PcDtype dt) {
    if (dt == PC_F32) {
        d_down(x, src, sizeof(float) * n);
        return;
    }
    uint16_t *b = h_malloc(2 * n);
    d_down(b, src, 2 * n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] = bf16_f32(b[i]);
    free(b);
}

/* y = x rounded to bf16 (nearest even, the CPU's bf16_round) and widened; y may be x */
static void round_bf16(float *y, const float *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] = bf16_f32(bf16_round(x[i]));
}

/* ---- comparisons ---- */

typedef struct {
    long bad;               /* elements outside their bound (NaN counts) */
    double worst;           /* the largest |err| / bound */
    long at;                /* where (the first of equal ratios) */
    double err2, ref2, tol2; /* sums of squares: errors, reference, bounds */
} Res;

/* r += the part one thread compared */
static void res_add(Res *r, const Res *p) {
    r->bad += p->bad, r->err2 += p->err2, r->ref2 += p->ref2, r->tol2 += p->tol2;
    if (p->worst > r->worst || (p->worst == r->worst && p->at >= 0 && (r->at < 0 || p->at < r->at)))
        r->worst = p->worst, r->at = p->at;
}

/* |got - ref| <= ca |A| + cb |B| per element (B may be NULL) */
static Res cmp_bound(const float *got, const float *ref, const float *A, double ca, const float *B, double cb,
                     size_t n) {
    Res r = {0, 0.0, -1, 0.0, 0.0, 0.0};
#pragma omp parallel
    {
        Res p = {0, 0.0, -1, 0.0, 0.0, 0.0};
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i++) {
            double tol = ca * fabs((double)A[i]) + (B ? cb * fabs((double)B[i]) : 0.0);
            double e = fabs((double)got[i] - (double)ref[i]);
            double ratio = tol > 0 ? e / tol : (e == 0 ? 0.0 : INFINITY);
            if (!(e <= tol)) p.bad++, ratio = isnan(ratio) ? INFINITY : ratio;
            if (ratio > p.worst) p.worst = ratio, p.at = (long)i;
            if (isfinite(e)) p.err2 += e * e;
            p.ref2 += (double)ref[i] * ref[i], p.tol2 += tol * tol;
        }
#pragma omp critical
        res_add(&r, &p);
    }
    return r;
}

/* ||got - ref||_2 and ||ref||_2; bad: elements not finite where ref is (at: the first) */
static Res cmp_norm2(const float *got, const float *ref, size_t n) {
    Res r = {0, 0.0, -1, 0.0, 0.0, 0.0};
#pragma omp parallel
    {
        Res p = {0, 0.0, -1, 0.0, 0.0, 0.0};
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i++) {
            double e = (double)got[i] - (double)ref[i];
            if (!isfinite(e)) {
                if (p.at < 0) p.at = (long)i;
                p.bad++;
                continue;
            }
            p.err2 += e * e, p.ref2 += (double)ref[i] * ref[i];
        }
#pragma omp critical
        {
            r.bad += p.bad, r.err2 += p.err2, r.ref2 += p.ref2;
            if (p.at >= 0 && (r.at < 0 || p.at < r.at)) r.at = p.at;
        }
    }
    return r;
}

static double rel(const Res *r) { return r->ref2 > 0 ? sqrt(r->err2 / r->ref2) : sqrt(r->err2); }

static double norm2(const float *x, size_t n) {
    double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s);
}

/* "[t 5, head 2, dim 7]" of element i of a [T, heads, width] array */
static const char *where(long i, int heads, int width) {
    static char b[64];
    if (i < 0) return "-";
    snprintf(b, sizeof b, "[t %ld, head %ld, dim %ld]", i / ((long)heads * width), i / width % heads, i % width);
    return b;
}

typedef struct {
    const char *shape, *mode, *who; /* who: "gpu", "cpu", or a variant */
} Ctx;

/* the bf16 rule: elementwise bound */
static Res check_bound(const Ctx *c, const char *what, const float *got, const float *ref, const float *A, double ca,
                       const float *B, double cb, size_t n, int heads, int width) {
    Res r = cmp_bound(got, ref, A, ca, B, cb, n);
    long i = r.at;
    H_CHECK(r.bad == 0, "%s %s %s %s: %ld of %zu elements outside the bound (worst %.3g x the bound at %s: got %.9g, "
            "want %.9g)", c->shape, c->mode, c->who, what, r.bad, n, r.worst, where(i, heads, width),
            i >= 0 ? got[i] : 0.0, i >= 0 ? ref[i] : 0.0);
    return r;
}

/* the float32 rule: ||got - ref|| <= 1e-5 max(||ref||, floor) */
static Res check_norm(const Ctx *c, const char *what, const float *got, const float *ref, size_t n, double floor) {
    Res r = cmp_norm2(got, ref, n);
    double e = sqrt(r.err2), nr = sqrt(r.ref2), lim = 1e-5 * fmax(nr, floor);
    H_CHECK(r.bad == 0 && e <= lim, "%s %s %s %s: ||err|| %.3g > 1e-5 max(||ref|| %.3g, floor %.3g) or %ld not finite "
            "(first at element %ld)", c->shape, c->mode, c->who, what, e, nr, floor, r.bad, r.at);
    r.tol2 = lim * lim;
    r.worst = r.bad ? INFINITY : lim > 0 ? e / lim : (e == 0 ? 0.0 : INFINITY);
    return r;
}

/* ---- runs ---- */

typedef struct {
    const Shape *s;
    const PcAttnPlan *plan;
    Dev *d;
    PcDtype dt;
} Run;

static int run_fwd(void *p) {
    Run *r = p;
    return pc_attention_forward(r->d->out, r->d->lse, r->d->q, r->d->k, r->d->v, r->plan, r->s->NH, r->s->NKV,
                                r->s->HS, r->dt);
}

static int run_bwd(void *p) {
    Run *r = p;
    Dev *d = r->d;
    return pc_attention_backward(d->dq, d->dk, d->dv, d->dout, d->out_in, d->lse_in, d->q, d->k, d->v, r->plan,
                                 r->s->NH, r->s->NKV, r->s->HS, r->dt, d->work);
}

/* poisons the outputs, runs, waits; 0 or -1 (a failed check naming pc_error()) */
static int gpu_fwd(Run *r, const Mask *m) {
    size_t nq = (size_t)m->T * r->s->NH * r->s->HS, nl = (size_t)m->T * r->s->NH;
    d_poison(r->d->out, nq * esize(r->dt)), d_poison(r->d->lse, sizeof(float) * nl);
    int rc = run_fwd(r);
    if (!rc) rc = pc_sync();
    H_CHECK(rc == 0, "pc_attention_forward: %s", rc ? pc_error() : "");
    H_CHECK(d_guard_ok(r->d->out) && d_guard_ok(r->d->lse), "forward: writes past out or lse");
    return rc;
}

static int gpu_bwd(Run *r, const Mask *m) {
    size_t nq = (size_t)m->T * r->s->NH * r->s->HS, nk = (size_t)m->T * r->s->NKV * r->s->HS;
    d_poison(r->d->dq, 4 * nq), d_poison(r->d->dk, 4 * nk), d_poison(r->d->dv, 4 * nk);
    d_poison(r->d->work, pc_attention_work_bytes(m->T, r->s->NH, r->s->HS));
    int rc = run_bwd(r);
    if (!rc) rc = pc_sync();
    H_CHECK(rc == 0, "pc_attention_backward: %s", rc ? pc_error() : "");
    H_CHECK(d_guard_ok(r->d->dq) && d_guard_ok(r->d->dk) && d_guard_ok(r->d->dv) && d_guard_ok(r->d->work),
            "backward: writes past dq, dk, dv or the work");
    return rc;
}

/* the float64 forward in C (small shapes): out, lse */
static void host_forward(const Mask *m, const Shape *s, const Host *h, double *out, double *lse) {
    int NH = s->NH, HS = s->HS, group = NH / s->NKV;
    size_t ldq = (size_t)NH * HS, ldk = (size_t)s->NKV * HS;
    double scale = 1.0 / sqrt((double)HS), *sc = malloc(sizeof(double) * (size_t)m->T);
    for (int t = 0; t < m->T; t++)
        for (int hd = 0; hd < NH; hd++) {
            const float *q = h->q + t * ldq + (size_t)hd * HS;
            double mx = -INFINITY, l = 0;
            for (int j = 0; j < m->T; j++) {
                sc[j] = -INFINITY;
                if (!host_sees(m, s->window, t, j)) continue;
                const float *k = h->k + j * ldk + (size_t)(hd / group) * HS;
                double a = 0;
                for (int d = 0; d < HS; d++) a += (double)q[d] * k[d];
                sc[j] = a * scale, mx = fmax(mx, sc[j]);
            }
            double *o = out + t * ldq + (size_t)hd * HS;
            for (int d = 0; d < HS; d++) o[d] = 0;
            for (int j = 0; j < m->T; j++) {
                if (sc[j] == -INFINITY) continue;
                double e = exp(sc[j] - mx);
                const float *v = h->v + j * ldk + (size_t)(hd / group) * HS;
                l += e;
                for (int d = 0; d < HS; d++) o[d] += e * v[d];
            }
            for (int d = 0; d < HS; d++) o[d] /= l;
            lse[(size_t)t * NH + hd] = mx + log(l);
        }
    free(sc);
}

/* the elementwise bf16 bounds' constants of a shape */
typedef struct {
    double ca_out, cb_out, c1q, c1k, c2, cv, smax;
} Bounds;

static Bounds bounds(const Shape *s, const Mask *m, int bf) {
    const double u = bf ? 0x1p-8 : 0.0, e = 0x1p-22, HS = s->HS;
    const double smax = s->aq * sqrt(HS), lmax = smax + log((double)m->maxk);
    const double eta = 2 * HS * e * smax + 0x1p-19 * (1 + smax + lmax);
    const double nk = m->maxk, N = (double)(s->NH / s->NKV) * m->maxq, f = 1.05;
    Bounds b;
    b.ca_out = f * u;
    b.cb_out = f * (1 + u) * (u + 2 * eta + (2 * nk + 8) * e);
    b.c1q = f * (1 + u) * (u + eta + (nk + 4) * e);
    b.c1k = f * (1 + u) * (u + eta + (N + 4) * e);
    b.c2 = f * (1 + u) * (1 + u) * (1 + eta) * 2 * HS * e;
    b.cv = f * (1 + u) * (u + eta + (N + 4) * e);
    b.smax = smax;
    return b;
}

/* out, lse (and with grads, dq, dk, dv) of `got` against the reference by the mode's rule; returns the errors */
typedef struct {
    Res out, lse, dq, dk, dv;
} Errs;

static Errs check_all(const Ctx *c, const Shape *s, const Mask *m, const Host *h, int bf, const float *out,
                      const float *lse, const float *dq, const float *dk, const float *dv) {
    Bounds b = bounds(s, m, bf);
    Errs r;
    memset(&r, 0, sizeof r);
    double lse_floor = sqrt((double)h->nl) * b.smax / 16;
    if (out) {
        r.out = bf ? check_bound(c, "out", out, h->out_r, h->out_r, b.ca_out, h->mo, b.cb_out, h->nq, s->NH, s->HS)
                   : check_norm(c, "out", out, h->out_r, h->nq, 0.0);
        r.lse = check_norm(c, "lse", lse, h->lse_r, h->nl, lse_floor);
    }
    if (dq) {
        if (bf) {
            r.dq = check_bound(c, "dq", dq, h->dq_r, h->mq1, b.c1q, h->mq2, b.c2, h->nq, s->NH, s->HS);
            r.dk = check_bound(c, "dk", dk, h->dk_r, h->mk1, b.c1k, h->mk2, b.c2, h->nk, s->NKV, s->HS);
            r.dv = check_bound(c, "dv", dv, h->dv_r, h->mv, b.cv, NULL, 0.0, h->nk, s->NKV, s->HS);
        } else {
            double nq_terms = m->maxk, nk_terms = (double)(s->NH / s->NKV) * m->maxq;
            r.dq = check_norm(c, "dq", dq, h->dq_r, h->nq, norm2(h->mq2, h->nq) / (16 * sqrt(nq_terms)));
            r.dk = check_norm(c, "dk", dk, h->dk_r, h->nk, norm2(h->mk2, h->nk) / (16 * sqrt(nk_terms)));
            r.dv = check_norm(c, "dv", dv, h->dv_r, h->nk, 0.0);
        }
    }
    return r;
}

static int same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

/* downloads raw bytes (for the rerun comparisons) */
static void *raw(const void *dev, size_t bytes) {
    void *p = h_malloc(bytes);
    d_down(p, dev, bytes);
    return p;
}

static double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; }
static double pct(double flops, double ms) { return ms > 0 && h_bf16_rate > 0 ? 100.0 * flops / (ms * 1e-3) / h_bf16_rate : 0.0; }

static void run_mode(const Shape *s, const Mask *m, const PcAttnPlan *plan, Dev *d, const float *raw_in[4],
                     PcDtype dt) {
    const int bf = dt == PC_BF16, NH = s->NH, NKV = s->NKV, HS = s->HS, T = m->T;
    const char *mode = bf ? "bf16" : "f32";
    Host h;
    memset(&h, 0, sizeof h);
    h.nq = (size_t)T * NH * HS, h.nk = (size_t)T * NKV * HS, h.nl = (size_t)T * NH;
    size_t nq = h.nq, nk = h.nk, nl = h.nl, es = esize(dt);
    float **bufs[] = {&h.q, &h.dout, &h.out_r, &h.mo, &h.dq_r, &h.mq1, &h.mq2, &h.out_in, &h.out_g, &h.dq_g};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) *bufs[i] = h_malloc(sizeof(float) * nq);
    float **kbufs[] = {&h.k, &h.v, &h.dk_r, &h.dv_r, &h.mk1, &h.mk2, &h.mv, &h.dk_g, &h.dv_g};
    for (size_t i = 0; i < sizeof kbufs / sizeof kbufs[0]; i++) *kbufs[i] = h_malloc(sizeof(float) * nk);
    h.lse_r = h_malloc(sizeof(float) * nl), h.lse_g = h_malloc(sizeof(float) * nl);
    /* the inputs as this mode stores them */
    float *in[4] = {h.q, h.k, h.v, h.dout};
    size_t inn[4] = {nq, nk, nk, nq};
    for (int i = 0; i < 4; i++) {
        if (bf)
            round_bf16(in[i], raw_in[i], inn[i]);
        else
            memcpy(in[i], raw_in[i], sizeof(float) * inn[i]);
    }
    to_dev(d->q, h.q, nq, dt), to_dev(d->k, h.k, nk, dt), to_dev(d->v, h.v, nk, dt), to_dev(d->dout, h.dout, nq, dt);
    Ctx c = {s->name, mode, "gpu"};
    Run run = {s, plan, d, dt};

    /* the reference forward */
    d_poison(d->r_out, 4 * nq), d_poison(d->r_lse, 4 * nl), d_poison(d->r_mo, 4 * nq);
    int rc = pc_attention_ref_forward(d->r_out, d->r_lse, d->r_mo, d->q, d->k, d->v, d->pstart, d->plen, d->sstart, T,
                                      s->window, NH, NKV, HS, dt);
    if (!rc) rc = pc_sync();
    H_CHECK(rc == 0, "%s %s: reference forward: %s", s->name, mode, rc ? pc_error() : "");
    if (rc) goto done;
    d_down(h.out_r, d->r_out, 4 * nq), d_down(h.lse_r, d->r_lse, 4 * nl), d_down(h.mo, d->r_mo, 4 * nq);
    if (s->kind == SMALL) { /* the reference against the float64 forward here */
        double *o = h_malloc(sizeof(double) * nq), *l = h_malloc(sizeof(double) * nl), eo = 0, no = 0, el = 0, nl2 = 0;
        host_forward(m, s, &h, o, l);
        for (size_t i = 0; i < nq; i++) eo += (h.out_r[i] - o[i]) * (h.out_r[i] - o[i]), no += o[i] * o[i];
        for (size_t i = 0; i < nl; i++) el += (h.lse_r[i] - l[i]) * (h.lse_r[i] - l[i]), nl2 += l[i] * l[i] + 1.0;
        H_CHECK(eo <= 1e-12 * no && el <= 1e-12 * nl2, "%s %s: the reference forward against the float64 one here: "
                "out %.3g, lse %.3g relative", s->name, mode, sqrt(eo / no), sqrt(el / nl2));
        free(o), free(l);
    }

    /* the fused forward: checked, rerun for the bits */
    if (gpu_fwd(&run, m)) goto done;
    void *o1 = raw(d->out, es * nq), *l1 = raw(d->lse, 4 * nl);
    from_dev(h.out_g, d->out, nq, dt), d_down(h.lse_g, d->lse, 4 * nl);
    Errs eg = check_all(&c, s, m, &h, bf, h.out_g, h.lse_g, NULL, NULL, NULL);
    if (gpu_fwd(&run, m)) goto done;
    void *o2 = raw(d->out, es * nq), *l2 = raw(d->lse, 4 * nl);
    H_CHECK(same_bits(o1, o2, es * nq) && same_bits(l1, l2, 4 * nl), "%s %s: forward rerun: other bits", s->name, mode);
    free(o1), free(o2), free(l1), free(l2);
    /* the other tilings of the bf16 forward */
    for (int v = 1; bf && g_variants && pc_attention_bf16_variant(HS, v); v++) {
        char who[96];
        snprintf(who, sizeof who, "forward tiling %d (%s)", v, pc_attention_bf16_variant(HS, v));
        Ctx cv = {s->name, mode, who};
        int bad = gpu_fwd(&run, m);
        pc_attention_bf16_variant(HS, 0);
        if (bad) goto done;
        float *ov = h_malloc(sizeof(float) * nq), *lv = h_malloc(sizeof(float) * nl);
        from_dev(ov, d->out, nq, dt), d_down(lv, d->lse, 4 * nl);
        check_all(&cv, s, m, &h, bf, ov, lv, NULL, NULL, NULL);
        free(ov), free(lv);
    }

    /* the backward takes the reference's out (as stored) and lse */
    if (bf)
        round_bf16(h.out_in, h.out_r, nq);
    else
        memcpy(h.out_in, h.out_r, sizeof(float) * nq);
    to_dev(d->out_in, h.out_in, nq, dt);
    d_up(d->lse_in, h.lse_r, 4 * nl);
    float *rb[] = {d->r_dq, d->r_mq1, d->r_mq2};
    for (int i = 0; i < 3; i++) d_poison(rb[i], 4 * nq);
    float *rk[] = {d->r_dk, d->r_dv, d->r_mk1, d->r_mk2, d->r_mv};
    for (int i = 0; i < 5; i++) d_poison(rk[i], 4 * nk);
    rc = pc_attention_ref_backward(d->r_dq, d->r_dk, d->r_dv, d->r_mq1, d->r_mq2, d->r_mk1, d->r_mk2, d->r_mv, d->dout,
                                   d->out_in, d->lse_in, d->q, d->k, d->v, d->pstart, d->plen, d->sstart, T, s->window,
                                   NH, NKV, HS, dt);
    if (!rc) rc = pc_sync();
    H_CHECK(rc == 0, "%s %s: reference backward: %s", s->name, mode, rc ? pc_error() : "");
    if (rc) goto done;
    d_down(h.dq_r, d->r_dq, 4 * nq), d_down(h.mq1, d->r_mq1, 4 * nq), d_down(h.mq2, d->r_mq2, 4 * nq);
    d_down(h.dk_r, d->r_dk, 4 * nk), d_down(h.dv_r, d->r_dv, 4 * nk), d_down(h.mk1, d->r_mk1, 4 * nk);
    d_down(h.mk2, d->r_mk2, 4 * nk), d_down(h.mv, d->r_mv, 4 * nk);

    if (gpu_bwd(&run, m)) goto done;
    void *q1 = raw(d->dq, 4 * nq), *k1 = raw(d->dk, 4 * nk), *v1 = raw(d->dv, 4 * nk);
    memcpy(h.dq_g, q1, 4 * nq), memcpy(h.dk_g, k1, 4 * nk), memcpy(h.dv_g, v1, 4 * nk);
    Errs egb = check_all(&c, s, m, &h, bf, NULL, NULL, h.dq_g, h.dk_g, h.dv_g);
    eg.dq = egb.dq, eg.dk = egb.dk, eg.dv = egb.dv;
    if (bf)
        printf("  %s bf16 gpu: the largest |err| / bound: out %.3f, dq %.3f, dk %.3f, dv %.3f\n", s->name, eg.out.worst,
               eg.dq.worst, eg.dk.worst, eg.dv.worst);
    else
        printf("  %s f32 gpu: ||err|| / ||ref|| (||err|| where ref = 0): out %.3g, lse %.3g, dq %.3g, dk %.3g, dv %.3g "
               "(rule: 1e-5)\n", s->name, rel(&eg.out), rel(&eg.lse), rel(&eg.dq), rel(&eg.dk), rel(&eg.dv));
    if (gpu_bwd(&run, m)) goto done;
    void *q2 = raw(d->dq, 4 * nq), *k2 = raw(d->dk, 4 * nk), *v2 = raw(d->dv, 4 * nk);
    H_CHECK(same_bits(q1, q2, 4 * nq) && same_bits(k1, k2, 4 * nk) && same_bits(v1, v2, 4 * nk),
            "%s %s: backward rerun: other bits", s->name, mode);
    free(q1), free(q2), free(k1), free(k2), free(v1), free(v2);

    /* the CPU engine on the same inputs, held to the same bounds; in bf16 its error beside the GPU's */
    if ((s->kind == SMALL || g_cpu_all) && (s->window == 0 || s->window >= m->maxlen)) {
        float *oc = h_malloc(sizeof(float) * nq), *lc = h_malloc(sizeof(float) * nl);
        float *gq = calloc(nq, sizeof(float)), *gk = calloc(nk, sizeof(float)), *gv = calloc(nk, sizeof(float));
        AttnShape as = {m->pstart, m->plen, m->sstart, m->rows, m->nrows, T, NH, NKV, HS, bf};
        attention_forward(oc, lc, h.q, h.k, h.v, &as);
        if (bf) round_bf16(oc, oc, nq); /* as llama.c keeps att */
        attention_backward(gq, gk, gv, h.dout, h.out_in, h.lse_r, h.q, h.k, h.v, &as);
        Ctx cc = {s->name, mode, "cpu"};
        Errs ec = check_all(&cc, s, m, &h, bf, oc, lc, gq, gk, gv);
        const char *names[] = {"out", "dq", "dk", "dv"};
        Res *G[] = {&eg.out, &eg.dq, &eg.dk, &eg.dv}, *C[] = {&ec.out, &ec.dq, &ec.dk, &ec.dv};
        printf("  %s %s error ||err||/||ref||, gpu vs cpu:", s->name, mode);
        for (int i = 0; i < 4; i++) {
            double g = sqrt(G[i]->err2), cp = sqrt(C[i]->err2), nr = sqrt(C[i]->ref2) > 0 ? sqrt(C[i]->ref2) : 1.0;
            printf(" %s %.3g vs %.3g%s", names[i], g / nr, cp / nr, i < 3 ? "," : "\n");
            if (bf)
                H_CHECK(g <= 2 * cp + 0x1p-10 * sqrt(G[i]->tol2), "%s %s %s: the GPU's error %.3g is more than twice "
                        "the CPU's %.3g (+ 2^-10 of the bound's norm %.3g)", s->name, mode, names[i], g, cp,
                        sqrt(G[i]->tol2));
        }
        free(oc), free(lc), free(gq), free(gk), free(gv);
    } else if (s->kind == SMALL) {
        printf("  %s %s: no CPU oracle (window %d shorter than the longest sequence %d: the CPU engine has none)\n",
               s->name, mode, s->window, m->maxlen);
    }

    /* the table lines: the harness's (error / bound, the time against the bf16 rate's floor) and ours (TFLOP/s) */
    if (!h_small) {
        double fl_f = 4.0 * HS * NH * (double)m->pairs, fl_b = 10.0 * HS * NH * (double)m->pairs;
        double tf = h_time(run_fwd, &run), tb = h_time(run_bwd, &run);
        char kern[40];
        Cmp cf = {fmax(eg.out.worst, eg.lse.worst), 1.0, -1, eg.out.bad == 0 && eg.lse.worst <= 1, 0};
        Cmp cb = {fmax(eg.dq.worst, fmax(eg.dk.worst, eg.dv.worst)), 1.0, -1,
                  eg.dq.worst <= 1 && eg.dk.worst <= 1 && eg.dv.worst <= 1, 0};
        snprintf(kern, sizeof kern, "attention_fwd %s", mode);
        h_row(kern, s->name, &cf, tf, h_floor_flops(fl_f), "bf16 rate");
        snprintf(kern, sizeof kern, "attention_bwd %s", mode);
        h_row(kern, s->name, &cb, tb, h_floor_flops(fl_b), "bf16 rate");
        printf("TABLE attention %-34s %-4s T %6d NH %2d NKV %d HS %3d W %4d | fwd %9.4f ms %7.2f TFLOP/s %5.1f%% | "
               "bwd %9.4f ms %7.2f TFLOP/s %5.1f%%\n", s->name, mode, T, NH, NKV, HS, s->window, tf, tflops(fl_f, tf),
               pct(fl_f, tf), tb, tflops(fl_b, tb), pct(fl_b, tb));
        for (int v = 1; bf && g_variants && s->kind != SMALL && pc_attention_bf16_variant(HS, v); v++) {
            char desc[96];
            snprintf(desc, sizeof desc, "%s", pc_attention_bf16_variant(HS, v));
            double tv = h_time(run_fwd, &run);
            pc_attention_bf16_variant(HS, 0);
            printf("TABLE attention %-34s %-4s fwd tiling %d (%s): %9.4f ms %7.2f TFLOP/s %5.1f%%\n", s->name, mode, v,
                   desc, tv, tflops(fl_f, tv), pct(fl_f, tv));
        }
        fflush(stdout);
    }
done:
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(*bufs[i]);
    for (size_t i = 0; i < sizeof kbufs / sizeof kbufs[0]; i++) free(*kbufs[i]);
    free(h.lse_r), free(h.lse_g);
}

/* a window at least as long as every sequence changes nothing: the same bits as none */
static void check_same_window(const Shape *s, const Mask *m, const PcAttnPlan *plan, Dev *d, const float *raw_in[4]) {
    PcAttnPlan *pw = pc_attn_plan_new(m->pstart, m->plen, m->sstart, m->T, m->maxlen);
    H_CHECK(pw != NULL, "pc_attn_plan_new (window %d): %s", m->maxlen, pw ? "" : pc_error());
    if (!pw) return;
    size_t nq = (size_t)m->T * s->NH * s->HS, nk = (size_t)m->T * s->NKV * s->HS, nl = (size_t)m->T * s->NH;
    for (int bf = 0; bf < 2; bf++) {
        PcDtype dt = bf ? PC_BF16 : PC_F32;
        size_t es = esize(dt), by[5] = {es * nq, 4 * nl, 4 * nq, 4 * nk, 4 * nk};
        float *x = h_malloc(sizeof(float) * nq);
        void *dst[4] = {d->q, d->k, d->v, d->dout};
        size_t n[4] = {nq, nk, nk, nq};
        for (int i = 0; i < 4; i++) {
            if (bf)
                round_bf16(x, raw_in[i], n[i]);
            else
                memcpy(x, raw_in[i], sizeof(float) * n[i]);
            to_dev(dst[i], x, n[i], dt);
        }
        free(x);
        void *r[2][5] = {{NULL}};
        int ok = 1;
        for (int w = 0; w < 2 && ok; w++) {
            Run run = {s, w ? pw : plan, d, dt};
            ok = gpu_fwd(&run, m) == 0;
            if (!ok) break;
            r[w][0] = raw(d->out, es * nq), r[w][1] = raw(d->lse, 4 * nl);
            if (w == 0) d_up(d->out_in, r[0][0], es * nq), d_up(d->lse_in, r[0][1], 4 * nl); /* the backward's inputs */
            ok = gpu_bwd(&run, m) == 0;
            if (!ok) break;
            r[w][2] = raw(d->dq, 4 * nq), r[w][3] = raw(d->dk, 4 * nk), r[w][4] = raw(d->dv, 4 * nk);
        }
        int same = ok;
        for (int i = 0; i < 5; i++) {
            same = same && same_bits(r[0][i], r[1][i], by[i]);
            free(r[0][i]), free(r[1][i]);
        }
        H_CHECK(same, "%s %s: a window of the longest sequence (%d) does not give the bits of none", s->name,
                bf ? "bf16" : "f32", m->maxlen);
    }
    pc_attn_plan_free(pw);
}

static void run_shape(const Shape *s) {
    Mask m = mask_build(s);
    int T = m.T, NH = s->NH, NKV = s->NKV, HS = s->HS;
    printf("shape %s: T %d, %d list(s), NH %d NKV %d HS %d, window %d, q in [-%g, %g]; %lld pairs a head, at most %d "
           "keys a query and %d queries a key\n", s->name, T, s->nrows, NH, NKV, HS, s->window, s->aq, s->aq, m.pairs,
           m.maxk, m.maxq);
    fflush(stdout);
    PcAttnPlan *plan = pc_attn_plan_new(m.pstart, m.plen, m.sstart, T, s->window);
    H_CHECK(plan != NULL, "%s: pc_attn_plan_new: %s", s->name, plan ? "" : pc_error());
    if (!plan) {
        mask_free(&m);
        return;
    }
    H_CHECK(pc_attn_plan_pairs(plan) == m.pairs && pc_attn_plan_tokens(plan) == T,
            "%s: the plan counts %lld pairs (T %d), the mask %lld (T %d)", s->name, pc_attn_plan_pairs(plan),
            pc_attn_plan_tokens(plan), m.pairs, T);
    size_t nq = (size_t)T * NH * HS, nk = (size_t)T * NKV * HS, nl = (size_t)T * NH;
    float *rq = h_malloc(4 * nq), *rk = h_malloc(4 * nk), *rv = h_malloc(4 * nk), *rd = h_malloc(4 * nq);
    fill(rq, nq, (float)s->aq), fill(rk, nk, 1.0f), fill(rv, nk, 1.0f), fill(rd, nq, 1.0f);
    const float *raw_in[4] = {rq, rk, rv, rd};
    Dev d;
    d.q = d_alloc(4 * nq), d.k = d_alloc(4 * nk), d.v = d_alloc(4 * nk), d.dout = d_alloc(4 * nq);
    d.out = d_alloc(4 * nq), d.out_in = d_alloc(4 * nq);
    d.lse = d_alloc(4 * nl), d.lse_in = d_alloc(4 * nl), d.dq = d_alloc(4 * nq), d.dk = d_alloc(4 * nk);
    d.dv = d_alloc(4 * nk), d.work = d_alloc(pc_attention_work_bytes(T, NH, HS));
    d.r_out = d_alloc(4 * nq), d.r_lse = d_alloc(4 * nl), d.r_mo = d_alloc(4 * nq), d.r_dq = d_alloc(4 * nq);
    d.r_mq1 = d_alloc(4 * nq), d.r_mq2 = d_alloc(4 * nq), d.r_dk = d_alloc(4 * nk), d.r_dv = d_alloc(4 * nk);
    d.r_mk1 = d_alloc(4 * nk), d.r_mk2 = d_alloc(4 * nk), d.r_mv = d_alloc(4 * nk);
    d.pstart = d_clone(m.pstart, sizeof(int) * T), d.plen = d_clone(m.plen, sizeof(int) * T);
    d.sstart = d_clone(m.sstart, sizeof(int) * T);
    if (s->kind != PLAIN) run_mode(s, &m, plan, &d, raw_in, PC_F32); /* the plain rows: bf16, beside PyTorch's */
    run_mode(s, &m, plan, &d, raw_in, PC_BF16);
    if (s->same_window) check_same_window(s, &m, plan, &d, raw_in);
    void *all[] = {d.q, d.k, d.v, d.dout, d.out, d.out_in, d.lse, d.lse_in, d.dq, d.dk, d.dv, d.work, d.r_out,
                   d.r_lse, d.r_mo, d.r_dq, d.r_mq1, d.r_mq2, d.r_dk, d.r_dv, d.r_mk1, d.r_mk2, d.r_mv, d.pstart,
                   d.plen, d.sstart};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) d_free(all[i]);
    free(rq), free(rk), free(rv), free(rd);
    pc_attn_plan_free(plan);
    mask_free(&m);
}

/* refusals: bad masks and shapes say why and change nothing */
static void check_refusals(void) {
    int ps[3] = {0, 0, 0}, pl[3] = {0, 0, 0}, ss[3] = {0, 0, 3}; /* token 2's segment starts after it */
    PcAttnPlan *p = pc_attn_plan_new(ps, pl, ss, 3, 0);
    H_CHECK(p == NULL && strstr(pc_error(), "sstart"), "a segment starting after its token: plan %p, error \"%s\"",
            (void *)p, pc_error());
    pc_attn_plan_free(p);
    ss[2] = 0, pl[1] = 4; /* token 1's prompt [0, 4) runs past T = 3 */
    p = pc_attn_plan_new(ps, pl, ss, 3, 0);
    H_CHECK(p == NULL, "a prompt past T accepted");
    pc_attn_plan_free(p);
    pl[1] = 0;
    p = pc_attn_plan_new(ps, pl, ss, 3, -1);
    H_CHECK(p == NULL, "a negative window accepted");
    pc_attn_plan_free(p);
    p = pc_attn_plan_new(ps, pl, ss, 3, 0);
    H_CHECK(p != NULL, "a good mask refused: %s", pc_error());
    if (!p) return;
    void *x = d_alloc(3 * 14 * 128 * 4);
    float *l = d_alloc(3 * 14 * 4);
    H_CHECK(pc_attention_forward(x, l, x, x, x, p, 14, 2, 96, PC_BF16) == -1 && strstr(pc_error(), "HS"),
            "head size 96 accepted: \"%s\"", pc_error());
    H_CHECK(pc_attention_forward(x, l, x, x, x, p, 14, 3, 64, PC_F32) == -1, "NH 14 over NKV 3 accepted");
    H_CHECK(pc_attention_forward(x, l, (char *)x + 4, x, x, p, 14, 2, 64, PC_BF16) == -1 &&
            strstr(pc_error(), "aligned"), "a misaligned q accepted: \"%s\"", pc_error());
    H_CHECK(pc_attention_backward(l, l, l, x, x, l, x, x, x, NULL, 14, 2, 64, PC_F32, l) == -1, "a NULL plan accepted");
    H_CHECK(pc_attention_bf16_variant(64, 3) == NULL && pc_attention_bf16_variant(80, 0) == NULL,
            "a tiling that does not exist accepted");
    d_free(x), d_free(l);
    pc_attn_plan_free(p);
}

int main(int argc, char **argv) {
    h_begin();
    double peak = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            h_small = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            h_seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            h_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc)
            peak = atof(argv[++i]);
        else if (!strcmp(argv[i], "--cpu-all"))
            g_cpu_all = 1;
        else if (!strcmp(argv[i], "--no-variants"))
            g_variants = 0;
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc)
            g_only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--small] [--seed N] [--reps N] [--peak TFLOPS] [--cpu-all] [--no-variants] "
                    "[--shape NAME]\n", argv[0]);
            return 2;
        }
    }
    if (h_reps < 1) h_reps = 1;
    printf("test_attention: seed %llu (--seed %llu repeats this run)%s\n", (unsigned long long)h_seed,
           (unsigned long long)h_seed, h_small ? ", small shapes only" : "");
    char err[256];
    if (pc_init(0, err, sizeof err)) {
        printf("test_attention: SKIP: %s\n", err);
        printf("test_attention: 0 passed, 0 failed\n");
        return 77;
    }
    printf("test_attention: %s (sm_%d)\n", pc_device_name(), pc_device_cc());
    if (peak > 0) {
        h_bf16_rate = peak * 1e12;
        printf("limits: bf16 rate %.0f TFLOP/s (--peak)\n", peak);
    } else {
        h_measure_limits();
    }
    if (!h_small)
        h_table_header("attention (error: the largest |err| / bound of the outputs, 1 at the bound; floor: FLOPs at "
                       "the bf16 rate)");
    fflush(stdout);
    check_refusals();
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        if ((SHAPES[i].kind == SMALL || !h_small) && (!g_only || strstr(SHAPES[i].name, g_only)))
            run_shape(&SHAPES[i]);
    printf("test_attention: %d passed, %d failed\n", h_passed(), h_failed());
    return h_failed() ? 1 : 0;
}
