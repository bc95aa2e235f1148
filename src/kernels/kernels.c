/* kernels.c: RMSNorm, RoPE, SwiGLU, shared-prompt attention and the chunked
 * LM-head log-softmax, forward and backward (kernels.h). */
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "kernels/attn_bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "kernels/matmul.h"

#define LMHEAD_LOGITS (32L << 20) /* floats of logits per LM-head chunk (128 MB) */
#define LMHEAD_DL (128L << 20)    /* bf16 d logits per LM-head backward product (256 MB) */

/* ---- vector helpers: without -ffast-math the compiler keeps a float sum in
 * order, one add at a time; 16 explicit partial sums let it use vectors ---- */

typedef float F16 __attribute__((vector_size(64)));

static inline F16 load16(const float *p) {
    F16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float hsum16(F16 v) {
    float s = 0.0f;
    for (int i = 0; i < 16; i++) s += v[i];
    return s;
}

static inline float dot(const float *a, const float *b, int n) {
    F16 acc = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) acc += load16(a + i) * load16(b + i);
    float s = hsum16(acc);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

#ifdef __AVX512F__
F16 _ZGVeN16v_expf(F16 x);
static inline F16 exp16(F16 x) { return _ZGVeN16v_expf(x); }
#elif defined(__AVX2__)
typedef float F8 __attribute__((vector_size(32)));
F8 _ZGVdN8v_expf(F8 x); /* libmvec's AVX2 expf, as _ZGVeN16v_expf is its AVX-512 one */
static inline F16 exp16(F16 x) {
    F8 h[2];
    memcpy(h, &x, sizeof x);
    h[0] = _ZGVdN8v_expf(h[0]), h[1] = _ZGVdN8v_expf(h[1]);
    memcpy(&x, h, sizeof x);
    return x;
}
#else
static inline F16 exp16(F16 x) {
    for (int i = 0; i < 16; i++) x[i] = expf(x[i]);
    return x;
}
#endif

static float max_of(const float *x, int n) {
    F16 m = (F16){0} + x[0];
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        F16 v = load16(x + i);
        for (int l = 0; l < 16; l++) m[l] = v[l] > m[l] ? v[l] : m[l];
    }
    float r = m[0];
    for (int l = 1; l < 16; l++) r = m[l] > r ? m[l] : r;
    for (; i < n; i++) r = x[i] > r ? x[i] : r;
    return r;
}

/* sum of exp(x - shift), accumulated per lane in float, then in double */
static double sum_exp(const float *x, int n, float shift) {
    F16 acc = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) acc += exp16(load16(x + i) - shift);
    double s = 0.0;
    for (int l = 0; l < 16; l++) s += acc[l];
    for (; i < n; i++) s += expf(x[i] - shift);
    return s;
}

/* x = scale * exp(x - shift), in place */
static void scaled_exp(float *x, int n, float shift, float scale) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        F16 v = scale * exp16(load16(x + i) - shift);
        memcpy(x + i, &v, sizeof v);
    }
    for (; i < n; i++) x[i] = scale * expf(x[i] - shift);
}

void rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int T, int C, float eps) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        float *yt = y + (size_t)t * C;
        double ss = 0.0;
        for (int c = 0; c < C; c++) ss += (double)xt[c] * xt[c];
        float r = (float)(1.0 / sqrt(ss / C + eps));
        rstd[t] = r;
        for (int c = 0; c < C; c++) yt[c] = xt[c] * r * w[c];
    }
}

#define NORM_BLOCK 64 /* tokens per partial sum of the weight gradient */

void rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd, int T,
                      int C) {
    int nb = (T + NORM_BLOCK - 1) / NORM_BLOCK;
    double *part = xcalloc((size_t)nb * C, sizeof(double)); /* [nb, C] dw per block of tokens */
#pragma omp parallel for schedule(static)
    for (int bk = 0; bk < nb; bk++) {
        double *pb = part + (size_t)bk * C;
        int t1 = (bk + 1) * NORM_BLOCK < T ? (bk + 1) * NORM_BLOCK : T;
        for (int t = bk * NORM_BLOCK; t < t1; t++) {
            const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
            float *dxt = dx + (size_t)t * C, r = rstd[t];
            double dot = 0.0; /* mean(dxhat * xhat) */
            for (int c = 0; c < C; c++) dot += (double)dyt[c] * w[c] * xt[c] * r;
            float m = (float)(dot / C);
            for (int c = 0; c < C; c++) {
                dxt[c] += r * (dyt[c] * w[c] - xt[c] * r * m);
                pb[c] += (double)dyt[c] * xt[c] * r;
            }
        }
    }
    /* blocks in a fixed order: deterministic for any thread count */
    for (int c = 0; dw && c < C; c++) { /* dw NULL: a frozen weight */
        double acc = 0.0;
        for (int bk = 0; bk < nb; bk++) acc += part[(size_t)bk * C + c];
        dw[c] += (float)acc;
    }
    free(part);
}

void rope_table(float *cs, const double *inv_freq, int n_pos, int HS) {
    int half = HS / 2;
    for (int p = 0; p < n_pos; p++)
        for (int j = 0; j < half; j++) {
            double a = p * inv_freq[j];
            cs[((size_t)p * half + j) * 2] = (float)cos(a);
            cs[((size_t)p * half + j) * 2 + 1] = (float)sin(a);
        }
}

void rope_apply(float *x, const int *pos, const float *cs, int T, int NHx, int HS, int inverse) {
    int half = HS / 2;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *c = cs + (size_t)pos[t] * half * 2;
        for (int h = 0; h < NHx; h++) {
            float *v = x + ((size_t)t * NHx + h) * HS;
            for (int j = 0; j < half; j++) {
                float co = c[2 * j], si = inverse ? -c[2 * j + 1] : c[2 * j + 1];
                float a = v[j], b = v[j + half];
                v[j] = a * co - b * si;
                v[j + half] = b * co + a * si;
            }
        }
    }
}

/* lanes [j, j + n) of x (float32, or bf16 when xb is given), n <= 16, the rest 0 */
static inline F16 load_lanes(const float *x, const bf16 *xb, long j, int n) {
    if (n == 16 && !xb) return load16(x + j);
    F16 v = {0};
    bf16_x16 h = {0};
    if (!xb) memcpy(&v, x + j, sizeof(float) * (size_t)n);
    else memcpy(&h, xb + j, sizeof(bf16) * (size_t)n);
    return xb ? bf16_widen16(h) : v;
}

/* y[j, j + n) = v (rounded when the output is bf16) */
static inline void store_lanes(float *y, bf16 *yb, long j, F16 v, int n) {
    if (yb) {
        bf16_x16 r = __builtin_convertvector(bf16_round16(v), bf16_x16);
        memcpy(yb + j, &r, sizeof(bf16) * (size_t)n);
    } else
        memcpy(y + j, &v, sizeof(float) * (size_t)n);
}

/* 16 lanes at a time (libmvec exp), the tail through the same vector maths: a value never depends on its index */
void swiglu_forward(float *h, bf16 *hb, bf16 *gb, bf16 *ub, Act g, Act u, long N) {
#pragma omp parallel for schedule(static)
    for (long j = 0; j < N; j += 16) {
        int n = N - j < 16 ? (int)(N - j) : 16;
        F16 gv = load_lanes(g.f, g.b, j, n), uv = load_lanes(u.f, u.b, j, n), sv = 1.0f / (1.0f + exp16(-gv));
        store_lanes(h, hb, j, gv * sv * uv, n);
        if (gb) store_lanes(NULL, gb, j, gv, n), store_lanes(NULL, ub, j, uv, n);
    }
}

void swiglu_backward(float *dg, bf16 *dgb, float *du, bf16 *dub, const float *dh, Act g, Act u, long N) {
#pragma omp parallel for schedule(static)
    for (long j = 0; j < N; j += 16) {
        int n = N - j < 16 ? (int)(N - j) : 16;
        F16 gv = load_lanes(g.f, g.b, j, n), d = load_lanes(dh, NULL, j, n), sv = 1.0f / (1.0f + exp16(-gv));
        store_lanes(du, dub, j, d * (gv * sv), n);
        store_lanes(dg, dgb, j, d * load_lanes(u.f, u.b, j, n) * sv * (1.0f + gv * (1.0f - sv)), n);
    }
}

/* ---- attention ---- */

/* Attention as matrix products, one segment at a time: a row's prompt
 * (causal over itself), or one response (all of the prompt, then causal over
 * its own tokens). Scores S [n, pl + n] for the n queries of a segment and
 * head: columns [0, pl) are the prompt's keys, [pl, pl + n) the segment's. */
typedef struct {
    int a, n, p0, pl; /* segment tokens [a, a + n); prompt keys [p0, p0 + pl) */
} Segment;

static int row_segments(const AttnShape *s, int r, Segment *seg) {
    int n = 0;
    for (int t = s->rows[r]; t < s->rows[r + 1];) {
        int e = t + 1;
        while (e < s->rows[r + 1] && s->sstart[e] == s->sstart[t]) e++;
        seg[n++] = (Segment){t, e - t, s->pstart[t], s->plen[t]};
        t = e;
    }
    return n;
}

/* every row's segments, row after row: row r's are seg[first[r] .. first[r + 1]); first: [n_rows + 1] */
static Segment *all_segments(const AttnShape *s, int *first) {
    Segment *seg = xmalloc(sizeof(Segment) * (size_t)(s->T > 0 ? s->T : 1)); /* a segment has a token at least */
    first[0] = 0;
    for (int r = 0; r < s->n_rows; r++) first[r + 1] = first[r] + row_segments(s, r, seg + first[r]);
    return seg;
}

/* S = scale Q K^T over the segment's keys, masked; P = softmax rows (in S); lse: [n].
 * ab: the keys packed for bf16 products, or NULL (float32) */
static void segment_probs(float *S, float *lse_out, const float *lse_in, const float *q, const float *k, const AttnShape *s,
                          const Segment *g, int h, int kv, AbSeg *ab) {
    const int NH = s->NH, HS = s->HS, ldq = NH * HS, ldk = s->NKV * HS, nc = g->pl + g->n;
    const float scale = 1.0f / sqrtf((float)HS);
    const float *Q = q + (size_t)g->a * ldq + (size_t)h * HS;
    if (ab) {
        ab_scores(ab, S, Q, ldq, scale);
    } else {
        const float *Kp = k + (size_t)g->p0 * ldk + (size_t)kv * HS, *Ks = k + (size_t)g->a * ldk + (size_t)kv * HS;
        if (g->pl) gemm(0, 1, g->n, g->pl, HS, scale, Q, ldq, Kp, ldk, 0.0f, S, nc);
        gemm(0, 1, g->n, g->n, HS, scale, Q, ldq, Ks, ldk, 0.0f, S + g->pl, nc);
    }
    for (int i = 0; i < g->n; i++) {
        float *row = S + (size_t)i * nc;
        int valid = g->pl + i + 1; /* causal within the segment */
        for (int j = valid; j < nc; j++) row[j] = -INFINITY;
        float l;
        if (lse_out) {
            float mx = max_of(row, valid);
            l = mx + (float)log(sum_exp(row, valid, mx));
            lse_out[(size_t)(g->a + i) * NH + h] = l;
        } else {
            l = lse_in[(size_t)(g->a + i) * NH + h];
        }
        scaled_exp(row, valid, l, 1.0f);
        for (int j = valid; j < nc; j++) row[j] = 0.0f;
    }
}

/* a bf16 segment's keys and values for kv head kv, packed once for its query heads */
static AbSeg *segment_keys(AbSeg *ab, const float *k, const float *v, const AttnShape *s, const Segment *g, int kv,
                           int backward) {
    if (!ab) return NULL;
    int ldk = s->NKV * s->HS;
    ab_seg_keys(ab, k + (size_t)kv * s->HS, v + (size_t)kv * s->HS, ldk, g->p0, g->pl, g->a, g->n, s->HS, backward);
    return ab;
}

/* One (segment, kv head) per task: its keys are packed once for the kv head's query heads. Every output row
 * and lse entry is written by one task, so results do not depend on the thread count. */
void attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, const AttnShape *s) {
    const int NH = s->NH, HS = s->HS, ldq = NH * HS, ldk = s->NKV * HS, group = NH / s->NKV;
    int *first = xmalloc(sizeof(int) * (size_t)(s->n_rows + 1));
    Segment *segs = all_segments(s, first);
    const int nseg = first[s->n_rows];
#pragma omp parallel
    {
        AbSeg *abs = s->bf16 ? ab_seg_thread() : NULL;
        float *S = NULL;
        size_t cap = 0;
#pragma omp for schedule(dynamic, 1)
        for (long task = 0; task < (long)nseg * s->NKV; task++) {
            const Segment *g = &segs[task / s->NKV];
            int kv = (int)(task % s->NKV), nc = g->pl + g->n;
            size_t need = (size_t)g->n * (size_t)nc;
            if (need > cap) free(S), S = xmalloc(sizeof(float) * (cap = need));
            AbSeg *ab = segment_keys(abs, k, v, s, g, kv, 0);
            for (int h = kv * group; h < (kv + 1) * group; h++) {
                segment_probs(S, lse, NULL, q, k, s, g, h, kv, ab);
                float *O = out + (size_t)g->a * ldq + (size_t)h * HS;
                if (ab) {
                    ab_out(ab, O, ldq, S);
                    continue;
                }
                const float *Vs = v + (size_t)g->a * ldk + (size_t)kv * HS, *Vp = v + (size_t)g->p0 * ldk + (size_t)kv * HS;
                gemm(0, 0, g->n, HS, g->n, 1.0f, S + g->pl, nc, Vs, ldk, 0.0f, O, ldq);
                if (g->pl) gemm(0, 0, g->n, HS, g->pl, 1.0f, S, nc, Vp, ldk, 1.0f, O, ldq);
            }
        }
        free(S);
    }
    free(segs), free(first);
}

/* dS = P (dP - D) scale in place of dP, with D_i = dO_i . O_i */
static void dscores(float *dS, const float *P, const float *dO, const float *O, int ldq, int n, int nc, int HS,
                    float scale) {
    for (int a = 0; a < n; a++) {
        float D = dot(dO + (size_t)a * ldq, O + (size_t)a * ldq, HS);
        float *ds = dS + (size_t)a * nc;
        const float *p = P + (size_t)a * nc;
        for (int j = 0; j < nc; j++) ds[j] = p[j] * (ds[j] - D) * scale;
    }
}

/* One (row, kv head) per task, its segments and query heads in order: the
 * prompt keys' dk and dv collect from every segment of the row in a fixed
 * order, so results do not depend on the thread count. */
void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                        const float *q, const float *k, const float *v, const AttnShape *s) {
    const int NH = s->NH, HS = s->HS, ldq = NH * HS, ldk = s->NKV * HS, group = NH / s->NKV;
    const float scale = 1.0f / sqrtf((float)HS);
    int *first = xmalloc(sizeof(int) * (size_t)(s->n_rows + 1));
    Segment *segs = all_segments(s, first);
#pragma omp parallel
    {
        AbSeg *abs = s->bf16 ? ab_seg_thread() : NULL;
        float *S = NULL, *dS = NULL;
        size_t cap = 0;
#pragma omp for schedule(dynamic, 1)
        for (long rg = 0; rg < (long)s->n_rows * s->NKV; rg++) {
            int r = (int)(rg / s->NKV), kv = (int)(rg % s->NKV);
            for (int i = first[r]; i < first[r + 1]; i++) {
                const Segment *g = &segs[i];
                int nc = g->pl + g->n;
                size_t need = (size_t)g->n * (size_t)nc;
                if (need > cap) {
                    free(S), free(dS);
                    S = xmalloc(sizeof(float) * need), dS = xmalloc(sizeof(float) * need), cap = need;
                }
                AbSeg *ab = segment_keys(abs, k, v, s, g, kv, 1);
                for (int h = kv * group; h < (kv + 1) * group; h++) {
                    segment_probs(S, NULL, lse, q, k, s, g, h, kv, ab);
                    size_t qo = (size_t)g->a * ldq + (size_t)h * HS;
                    const float *dO = dout + qo, *O = out + qo, *Q = q + qo;
                    float *dQ = dq + qo;
                    if (ab) {
                        ab_dprobs(ab, dS, dO, ldq);
                        dscores(dS, S, dO, O, ldq, g->n, nc, HS, scale);
                        ab_dq(ab, dQ, ldq, dS);
                        ab_dkv(ab, dk + (size_t)kv * HS, dv + (size_t)kv * HS, ldk, dS, S, Q, dO, ldq);
                        continue;
                    }
                    const float *Kp = k + (size_t)g->p0 * ldk + (size_t)kv * HS, *Ks = k + (size_t)g->a * ldk + (size_t)kv * HS;
                    const float *Vp = v + (size_t)g->p0 * ldk + (size_t)kv * HS, *Vs = v + (size_t)g->a * ldk + (size_t)kv * HS;
                    float *dKp = dk + (size_t)g->p0 * ldk + (size_t)kv * HS, *dKs = dk + (size_t)g->a * ldk + (size_t)kv * HS;
                    float *dVp = dv + (size_t)g->p0 * ldk + (size_t)kv * HS, *dVs = dv + (size_t)g->a * ldk + (size_t)kv * HS;
                    /* dP = dO V^T; dS = P (dP - D) scale */
                    if (g->pl) gemm(0, 1, g->n, g->pl, HS, 1.0f, dO, ldq, Vp, ldk, 0.0f, dS, nc);
                    gemm(0, 1, g->n, g->n, HS, 1.0f, dO, ldq, Vs, ldk, 0.0f, dS + g->pl, nc);
                    dscores(dS, S, dO, O, ldq, g->n, nc, HS, scale);
                    if (g->pl) gemm(0, 0, g->n, HS, g->pl, 1.0f, dS, nc, Kp, ldk, 1.0f, dQ, ldq);
                    gemm(0, 0, g->n, HS, g->n, 1.0f, dS + g->pl, nc, Ks, ldk, 1.0f, dQ, ldq);
                    if (g->pl) {
                        gemm(1, 0, g->pl, HS, g->n, 1.0f, dS, nc, Q, ldq, 1.0f, dKp, ldk);
                        gemm(1, 0, g->pl, HS, g->n, 1.0f, S, nc, dO, ldq, 1.0f, dVp, ldk);
                    }
                    gemm(1, 0, g->n, HS, g->n, 1.0f, dS + g->pl, nc, Q, ldq, 1.0f, dKs, ldk);
                    gemm(1, 0, g->n, HS, g->n, 1.0f, S + g->pl, nc, dO, ldq, 1.0f, dVs, ldk);
                }
            }
        }
        free(S), free(dS);
    }
    free(segs), free(first);
}

/* ---- LM head ---- */

static int g_chunk_rows; /* test hook: fixed rows per chunk; 0 automatic */

void lmhead_set_chunk_rows(int rows) { g_chunk_rows = rows > 0 ? rows : 0; }

int lmhead_chunk(int n, int V) {
    long c = g_chunk_rows ? g_chunk_rows : LMHEAD_LOGITS / V;
    c = c < 64 && !g_chunk_rows ? 64 : c;
    if (!g_chunk_rows && c > GEMM_BF16_ROW_BLOCK) c = c / GEMM_BF16_ROW_BLOCK * GEMM_BF16_ROW_BLOCK; /* whole row blocks */
    return (int)(n < c ? (n > 0 ? n : 1) : c);
}

size_t lmhead_work(int n, int H, int V) {
    size_t c = (size_t)lmhead_chunk(n, V), all = (size_t)(n > 0 ? n : 1);
    return c * V + 2 * all * H; /* a logits chunk; xs and dxs for all n targets */
}

/* xs [n, H] = x[src[i0 .. i0 + n)] */
static void gather_rows(float *xs, const float *x, const int *src, int i0, int n, int H) {
    for (int i = 0; i < n; i++) memcpy(xs + (size_t)i * H, x + (size_t)src[i0 + i] * H, sizeof(float) * (size_t)H);
}

/* dx[src[i]] += dxs[i] for n rows; sources repeat (a row's last prompt token): added in order */
static void add_rows(float *dx, const float *dxs, const int *src, int n, int H) {
    for (int i = 0; i < n; i++) {
        float *d = dx + (size_t)src[i] * H;
        for (int c = 0; c < H; c++) d[c] += dxs[(size_t)i * H + c];
    }
}

/* bf16 products: rows of d logits per backward product, a multiple of the logits chunk, as many as a ~256 MB bf16
 * buffer holds (the tests' fixed chunks: two). The weight gradient dW += dlogits^T x sums over these rows, so a product
 * over few rows (220 for a 151,936-token vocabulary) runs far below the bf16 peak. The same whether the softmax was
 * kept or is recomputed: both add dW up in the same pieces. */
static int lmhead_dl_rows(int n, int V) {
    long c = lmhead_chunk(n, V), d = g_chunk_rows ? 2 * c : LMHEAD_DL / V / c * c;
    d = d < c ? c : d;
    return (int)(n < d ? (n > 0 ? n : 1) : d);
}

size_t lmhead_btmp(int n, int H, int V) { return (size_t)lmhead_dl_rows(n, V) * (size_t)(V + H); }

/* y[V] = bf16(exp(l - lse)): a row of the softmax as the bf16 products take it */
static void softmax_bf16(bf16 *y, const float *l, int V, float lse) {
    int i = 0;
    for (; i + 16 <= V; i += 16) store_lanes(NULL, y, i, exp16(load16(l + i) - lse), 16);
    for (; i < V; i++) y[i] = bf16_round(expf(l[i] - lse));
}

/* a float32 softmax is kept for float32 products only (the bf16 products' paths round it as they keep it) */
static void keep_check(LmKeep keep, Weight W) {
    if (keep.f && (W.b || keep.b))
        ppa_die(70, "lmhead: a float32 softmax kept with bf16 products or with a bf16 one (internal)");
}

void lmhead_forward(double *logp, float *lse, const float *x, Weight W, const int *src, const int *tgt, int n, int H,
                    int V, float *work, LmKeep keep, bf16 *btmp) {
    keep_check(keep, W);
    int chunk = keep.f ? (n > 0 ? n : 1) : lmhead_chunk(n, V);
    float *xs = work + (size_t)lmhead_chunk(n, V) * V;
    for (int i0 = 0; i0 < n; i0 += chunk) {
        int m = n - i0 < chunk ? n - i0 : chunk;
        float *logits = keep.f ? keep.f : work;
        gather_rows(xs, x, src, i0, m, H);
        mm_forward(logits, 0.0f, act_f32(xs), H, W, m, H, V, btmp);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < m; i++) {
            float *l = logits + (size_t)i * V;
            float mx = max_of(l, V);
            double ls = mx + log(sum_exp(l, V, mx));
            lse[i0 + i] = (float)ls;
            logp[i0 + i] = (double)l[tgt[i0 + i]] - ls;
            if (keep.f) scaled_exp(l, V, (float)ls, 1.0f); /* softmax, for the backward */
            if (keep.b) softmax_bf16(keep.b + (size_t)(i0 + i) * V, l, V, (float)ls);
        }
    }
}

/* logits [m, V] -> d loss / d logits = g (onehot(target) - softmax); p: the
 * softmax already (kept by the forward), else the logits */
static void dlogits(float *l, int m, int V, const double *g, const float *lse, const int *tgt, int is_p) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++) {
        float *li = l + (size_t)i * V, gi = (float)g[i];
        if (is_p)
            for (int v = 0; v < V; v++) li[v] *= -gi;
        else
            scaled_exp(li, V, lse[i], -gi);
        li[tgt[i]] += gi;
    }
}

/* the same from a bf16 softmax p [m, V] into bf16 dl [m, V] (may be p); the target's
 * 1 - p from its log-prob (p near 1 has no digits left in bf16) */
static void dlogits_bf16(bf16 *dl, const bf16 *p, int m, int V, const double *g, const double *logp, const int *tgt) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++) {
        const bf16 *pi = p + (size_t)i * V;
        bf16 *di = dl + (size_t)i * V;
        float gi = (float)g[i];
        for (int v = 0; v < V; v++) di[v] = bf16_round(-gi * bf16_f32(pi[v]));
        di[tgt[i]] = bf16_round((float)(g[i] * -expm1(logp[i])));
    }
}

/* p [m, V] = the bf16 softmax of m rows recomputed as the forward computes it (its logits product, its lse,
 * softmax_bf16): the same bytes a kept one has, so checkpointing changes nothing. p also serves the product as its
 * [m, H] scratch; work: [m, V] floats. */
static void softmax_recomputed_bf16(bf16 *p, const float *xs, Weight W, const float *lse, int m, int H, int V,
                                    float *work) {
    mm_forward(work, 0.0f, act_f32(xs), H, W, m, H, V, p);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m; i++) softmax_bf16(p + (size_t)i * V, work + (size_t)i * V, V, lse[i]);
}

/* The bf16 products' backward, in pieces of lmhead_dl_rows(n, V) targets: d logits from the kept softmax (in place)
 * or from the softmax recomputed chunk by chunk into btmp; then dx and dW for the piece. btmp: [lmhead_btmp] */
static void lmhead_backward_bf16(float *dx, float *dW, const double *g, const double *logp, const float *x, Weight W,
                                 const float *lse, const int *src, const int *tgt, int n, int H, int V, float *work,
                                 bf16 *keep, bf16 *btmp) {
    int D = lmhead_dl_rows(n, V), c = lmhead_chunk(n, V);
    float *xs = work + (size_t)c * V, *dxs = xs + (size_t)(n > 0 ? n : 1) * H;
    bf16 *scratch = keep ? btmp : btmp + (size_t)D * V; /* the products' [D, H] */
    for (int i0 = 0; i0 < n; i0 += D) {
        int m = n - i0 < D ? n - i0 : D;
        gather_rows(xs, x, src, i0, m, H);
        bf16 *p = keep ? keep + (size_t)i0 * V : btmp;
        for (int j0 = 0; !keep && j0 < m; j0 += c) {
            int mc = m - j0 < c ? m - j0 : c;
            softmax_recomputed_bf16(p + (size_t)j0 * V, xs + (size_t)j0 * H, W, lse + i0 + j0, mc, H, V, work);
        }
        dlogits_bf16(p, p, m, V, g + i0, logp + i0, tgt + i0);
        mm_backward(dxs, 0.0f, dW, (Act){NULL, p}, act_f32(xs), W, m, H, V, scratch);
        add_rows(dx, dxs, src + i0, m, H);
    }
}

void lmhead_backward_weights(float *dW, const float *x, Weight W, const int *src, int n, int H, int V, float *work,
                             LmKeep keep, bf16 *btmp) {
    keep_check(keep, W);
    if (!keep.f && !keep.b) ppa_die(70, "lmhead_backward_weights: no kept d logits (internal)");
    int piece = keep.b ? lmhead_dl_rows(n, V) : (n > 0 ? n : 1); /* the backward's pieces */
    float *xs = work + (size_t)lmhead_chunk(n, V) * V;
    for (int i0 = 0; i0 < n; i0 += piece) {
        int m = n - i0 < piece ? n - i0 : piece;
        gather_rows(xs, x, src, i0, m, H);
        Act dl = keep.b ? (Act){NULL, keep.b + (size_t)i0 * V} : act_f32(keep.f + (size_t)i0 * V);
        mm_backward(NULL, 0.0f, dW, dl, act_f32(xs), W, m, H, V, btmp);
    }
}

void lmhead_backward(float *dx, float *dW, const double *g, const double *logp, const float *x, Weight W,
                     const float *lse, const int *src, const int *tgt, int n, int H, int V, float *work, LmKeep keep,
                     bf16 *btmp) {
    keep_check(keep, W);
    if (W.b) {
        lmhead_backward_bf16(dx, dW, g, logp, x, W, lse, src, tgt, n, H, V, work, keep.b, btmp);
        return;
    }
    int chunk = keep.f ? (n > 0 ? n : 1) : lmhead_chunk(n, V);
    float *xs = work + (size_t)lmhead_chunk(n, V) * V, *dxs = xs + (size_t)(n > 0 ? n : 1) * H;
    for (int i0 = 0; i0 < n; i0 += chunk) {
        int m = n - i0 < chunk ? n - i0 : chunk;
        gather_rows(xs, x, src, i0, m, H);
        float *logits = keep.f ? keep.f + (size_t)i0 * V : work;
        if (!keep.f) mm_forward(logits, 0.0f, act_f32(xs), H, W, m, H, V, btmp); /* recomputed, as in the forward */
        dlogits(logits, m, V, g + i0, lse + i0, tgt + i0, keep.f != NULL);
        mm_backward(dxs, 0.0f, dW, act_f32(logits), act_f32(xs), W, m, H, V, btmp);
        add_rows(dx, dxs, src + i0, m, H);
    }
}
