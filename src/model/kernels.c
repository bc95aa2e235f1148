/* kernels.c: RMSNorm, RoPE, SwiGLU, shared-prompt attention and the chunked
 * LM-head log-softmax, forward and backward (kernels.h). */
#include "model/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "model/gemm.h"

#define LMHEAD_CHUNK 64 /* target rows per LM-head product: 64 x V logits at a time */

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

void rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd, int T,
                      int C) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
        float *dxt = dx + (size_t)t * C, r = rstd[t];
        double dot = 0.0; /* mean(dxhat * xhat) */
        for (int c = 0; c < C; c++) dot += (double)dyt[c] * w[c] * xt[c] * r;
        float m = (float)(dot / C);
        for (int c = 0; c < C; c++) dxt[c] += r * (dyt[c] * w[c] - xt[c] * r * m);
    }
    /* dw over tokens in a fixed order: deterministic for any thread count */
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        double acc = 0.0;
        for (int t = 0; t < T; t++) acc += (double)dy[(size_t)t * C + c] * x[(size_t)t * C + c] * rstd[t];
        dw[c] += (float)acc;
    }
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

static inline float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

void swiglu_forward(float *h, const float *g, const float *u, long N) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) h[i] = g[i] * sigmoidf_(g[i]) * u[i];
}

void swiglu_backward(float *dg, float *du, const float *dh, const float *g, const float *u, long N) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        float s = sigmoidf_(g[i]), silu = g[i] * s;
        du[i] = dh[i] * silu;
        dg[i] = dh[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
    }
}

/* ---- attention ---- */

/* The keys token t sees, as up to two ranges. */
static inline int key_ranges(const AttnShape *s, int t, int *a0, int *a1, int *b0, int *b1) {
    *a0 = s->pstart[t], *a1 = s->pstart[t] + s->plen[t], *b0 = s->sstart[t], *b1 = t + 1;
    return (*a1 - *a0) + (*b1 - *b0);
}

/* scores of query row qi against the keys of token t, scaled; returns the count */
static int scores(float *sc, const float *qi, const float *k, const AttnShape *s, int t, int g, float scale) {
    int a0, a1, b0, b1, n = 0, HS = s->HS, ldk = s->NKV * HS;
    key_ranges(s, t, &a0, &a1, &b0, &b1);
    for (int pass = 0; pass < 2; pass++)
        for (int j = pass ? b0 : a0; j < (pass ? b1 : a1); j++) {
            sc[n++] = dot(qi, k + (size_t)j * ldk + (size_t)g * HS, HS) * scale;
        }
    return n;
}

static inline int key_at(const AttnShape *s, int t, int n) { /* the n-th key of token t */
    int a0, a1, b0, b1;
    key_ranges(s, t, &a0, &a1, &b0, &b1);
    return n < a1 - a0 ? a0 + n : b0 + (n - (a1 - a0));
}

static int max_keys(const AttnShape *s) {
    int m = 1;
    for (int t = 0; t < s->T; t++) m = s->plen[t] + t + 1 - s->sstart[t] > m ? s->plen[t] + t + 1 - s->sstart[t] : m;
    return m;
}

void attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, const AttnShape *s) {
    const int NH = s->NH, HS = s->HS, ldk = s->NKV * HS, group = s->NH / s->NKV, mk = max_keys(s);
    const float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel
    {
        float *sc = xmalloc(sizeof(float) * (size_t)mk);
#pragma omp for schedule(dynamic, 8)
        for (long th = 0; th < (long)s->T * NH; th++) {
            int t = (int)(th / NH), h = (int)(th % NH), g = h / group;
            const float *qi = q + (size_t)t * NH * HS + (size_t)h * HS;
            int n = scores(sc, qi, k, s, t, g, scale);
            float mx = sc[0];
            for (int j = 1; j < n; j++) mx = sc[j] > mx ? sc[j] : mx;
            double sum = 0.0;
            for (int j = 0; j < n; j++) sum += (sc[j] = expf(sc[j] - mx));
            float *o = out + (size_t)t * NH * HS + (size_t)h * HS, inv = (float)(1.0 / sum);
            memset(o, 0, sizeof(float) * (size_t)HS);
            for (int j = 0; j < n; j++) {
                const float *vj = v + (size_t)key_at(s, t, j) * ldk + (size_t)g * HS;
                float p = sc[j] * inv;
                for (int c = 0; c < HS; c++) o[c] += p * vj[c];
            }
            lse[(size_t)t * NH + h] = mx + (float)log(sum);
        }
        free(sc);
    }
}

/* One (row, kv head) at a time, its queries in order: dk and dv of a row are
 * written by one thread in a fixed order, so results do not depend on the
 * thread count. */
void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                        const float *q, const float *k, const float *v, const AttnShape *s) {
    const int NH = s->NH, HS = s->HS, ldk = s->NKV * HS, group = s->NH / s->NKV, mk = max_keys(s);
    const float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel
    {
        float *sc = xmalloc(sizeof(float) * (size_t)mk);
#pragma omp for schedule(dynamic, 1)
        for (long rg = 0; rg < (long)s->n_rows * s->NKV; rg++) {
            int r = (int)(rg / s->NKV), g = (int)(rg % s->NKV);
            for (int t = s->rows[r]; t < s->rows[r + 1]; t++)
                for (int h = g * group; h < (g + 1) * group; h++) {
                    size_t qo = (size_t)t * NH * HS + (size_t)h * HS;
                    const float *qi = q + qo, *doi = dout + qo, *oi = out + qo;
                    float *dqi = dq + qo, l = lse[(size_t)t * NH + h];
                    int n = scores(sc, qi, k, s, t, g, scale);
                    float D = dot(doi, oi, HS); /* sum_j p_j dp_j = do . o */
                    for (int j = 0; j < n; j++) {
                        size_t ko = (size_t)key_at(s, t, j) * ldk + (size_t)g * HS;
                        float p = expf(sc[j] - l), dp = dot(doi, v + ko, HS);
                        float ds = p * (dp - D) * scale;
                        for (int c = 0; c < HS; c++) {
                            dv[ko + c] += p * doi[c];
                            dqi[c] += ds * k[ko + c];
                            dk[ko + c] += ds * qi[c];
                        }
                    }
                }
        }
        free(sc);
    }
}

/* ---- LM head ---- */

/* logits [n, V] = x[src] W^T for the targets [i0, i0 + n) */
static void chunk_logits(float *logits, float *xs, const float *x, const float *W, const int *src, int i0, int n, int H,
                         int V) {
    for (int i = 0; i < n; i++) memcpy(xs + (size_t)i * H, x + (size_t)src[i0 + i] * H, sizeof(float) * (size_t)H);
    gemm(0, 1, n, V, H, 1.0f, xs, H, W, H, 0.0f, logits, V);
}

void lmhead_forward(double *logp, float *lse, const float *x, const float *W, const int *src, const int *tgt, int n,
                    int H, int V) {
    float *logits = xmalloc(sizeof(float) * (size_t)LMHEAD_CHUNK * V), *xs = xmalloc(sizeof(float) * (size_t)LMHEAD_CHUNK * H);
    for (int i0 = 0; i0 < n; i0 += LMHEAD_CHUNK) {
        int m = n - i0 < LMHEAD_CHUNK ? n - i0 : LMHEAD_CHUNK;
        chunk_logits(logits, xs, x, W, src, i0, m, H, V);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < m; i++) {
            const float *l = logits + (size_t)i * V;
            float mx = max_of(l, V);
            double ls = mx + log(sum_exp(l, V, mx));
            lse[i0 + i] = (float)ls;
            logp[i0 + i] = (double)l[tgt[i0 + i]] - ls;
        }
    }
    free(logits);
    free(xs);
}

void lmhead_backward(float *dx, float *dW, const double *g, const float *x, const float *W, const float *lse,
                     const int *src, const int *tgt, int n, int H, int V) {
    float *logits = xmalloc(sizeof(float) * (size_t)LMHEAD_CHUNK * V), *xs = xmalloc(sizeof(float) * (size_t)LMHEAD_CHUNK * H);
    float *dxs = xmalloc(sizeof(float) * (size_t)LMHEAD_CHUNK * H);
    for (int i0 = 0; i0 < n; i0 += LMHEAD_CHUNK) {
        int m = n - i0 < LMHEAD_CHUNK ? n - i0 : LMHEAD_CHUNK;
        chunk_logits(logits, xs, x, W, src, i0, m, H, V);
        /* d logp / d logits = onehot(target) - softmax */
#pragma omp parallel for schedule(static)
        for (int i = 0; i < m; i++) {
            float *l = logits + (size_t)i * V, gi = (float)g[i0 + i];
            scaled_exp(l, V, lse[i0 + i], -gi);
            l[tgt[i0 + i]] += gi;
        }
        gemm(0, 0, m, H, V, 1.0f, logits, V, W, H, 0.0f, dxs, H);
        gemm(1, 0, V, H, m, 1.0f, logits, V, xs, H, 1.0f, dW, H);
        for (int i = 0; i < m; i++) { /* sources repeat (a row's last prompt token): add in order */
            float *d = dx + (size_t)src[i0 + i] * H;
            for (int c = 0; c < H; c++) d[c] += dxs[(size_t)i * H + c];
        }
    }
    free(logits);
    free(xs);
    free(dxs);
}
