/* mock_decode.c: the stand-in's sampler (cuda/sample.h: sample.cu's thresholds, ties and draw, its sums in plain
 * order) and decoding (cuda/decode.h: the cache's rows, decode.cu's splits and merge at its rounding points). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/decode.h"
#include "cuda/sample.h"
#include "mock.h"

/* x rounded to bf16 and widened, as the module rounds */
static float bf16_of(float x) {
    uint16_t h;
    mock_st(&h, PC_BF16, 0, x);
    return mock_ld(&h, PC_BF16, 0);
}

/* ---- sample.h: sample.cu's thresholds, ties and draw, its sums in plain order ---- */
size_t pc_sample_work(int n, int V) { MOCK_GUARD; return sizeof(float) * (size_t)(n > 0 ? n : 1) * (size_t)(V > 0 ? V : 1); }
static float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static int sample_row(const float *l, int V, const PcSampling *s, uint64_t key, int step, float *w) {
    int bi = -1;
    float bv = -INFINITY;
    const int greedy = !(s->temperature > 0.0f);
    for (int v = 0; v < V; v++) {
        float x = greedy ? l[v] : l[v] / s->temperature;
        if (!isnan(x) && (bi < 0 || x > bv)) bv = x, bi = v;
    }
    if (greedy || !isfinite(bv)) {
        bi = -1;
        for (int v = 0; v < V; v++)
            if (!isnan(l[v]) && (bi < 0 || l[v] > l[bi])) bi = v;
        return bi >= 0 ? bi : V - 1;
    }
    for (int v = 0; v < V; v++) w[v] = isnan(l[v]) ? 0.0f : expf(l[v] / s->temperature - bv);
    float th = 0.0f;
    if (s->top_k > 0 && s->top_k < V) {
        uint32_t lo = 0, hi = 0x3f800001u;
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            int c = 0;
            for (int v = 0; v < V; v++) c += w[v] >= bits_f(mid);
            if (c >= s->top_k) lo = mid;
            else hi = mid;
        }
        th = bits_f(lo);
    }
    float S = 0.0f, tau = th, total;
    for (int v = 0; v < V; v++) S += w[v] >= th ? w[v] : 0.0f;
    total = S;
    int c = 1 << 30;
    if (s->top_p < 1.0f) {
        float need = s->top_p * S, A = 0.0f;
        uint32_t lo = f_bits(th), hi = 0x3f800001u;
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            float m = 0.0f;
            for (int v = 0; v < V; v++) m += w[v] >= bits_f(mid) && w[v] >= th ? w[v] : 0.0f;
            if (m >= need) lo = mid;
            else hi = mid;
        }
        tau = bits_f(lo);
        int nt = 0;
        for (int v = 0; v < V; v++) A += w[v] > tau ? w[v] : 0.0f, nt += w[v] == tau;
        c = tau > 0.0f ? (int)ceilf((need - A) / tau) : nt;
        c = c < 1 ? 1 : c > nt ? nt : c;
        total = A + (float)c * tau;
    }
    float target = (float)(draw_uniform(key, (uint64_t)step) * (double)total), cum = 0.0f;
    int last = -1;
    for (int v = 0, rank = 0; v < V; v++) {
        int tie = w[v] == tau, kept = w[v] > tau || (tie && rank < c);
        rank += tie;
        if (!kept || !(w[v] > 0.0f)) continue;
        cum += w[v], last = v;
        if (cum > target) return v;
    }
    return last;
}
int pc_sample(int *ids, const float *logits, int ld, const int *rows, int n, int V, const uint64_t *keys,
              const int *steps, const float *temps, PcSampling s, void *work) {
    MOCK_GUARD;
    if (n < 0 || V < 1 || ld < V || s.top_k < 0 || isnan(s.top_p) || isnan(s.temperature))
        return mock_fail("pc_sample: n >= 0, V >= 1, ld >= V, top_k >= 0, numbers");
    for (int r = 0; r < n; r++) {
        PcSampling sr = s;
        if (temps) sr.temperature = temps[r];
        ids[r] = sample_row(logits + (size_t)(rows ? rows[r] : r) * ld, V, &sr, keys[r], steps[r],
                            (float *)work + (size_t)r * V);
    }
    return 0;
}
int pc_logits_ban(float *logits, int ld, const int *rows, int n, int V, const int *banned, int n_banned) {
    MOCK_GUARD;
    if (n < 0 || V < 1 || ld < V || n_banned < 0) return mock_fail("pc_logits_ban: shape");
    for (int r = 0; r < n; r++)
        for (int b = 0; b < n_banned; b++)
            if (banned[b] >= 0 && banned[b] < V) logits[(size_t)(rows ? rows[r] : r) * ld + banned[b]] = -INFINITY;
    return 0;
}

/* ---- decode.h ---- */
int pc_kv_store(void *cache, PcDtype ct, int max_len, int D, const float *x, int ldx, const int *slot, const int *pos,
                int n) {
    MOCK_GUARD;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < D; i++) mock_st(cache, ct, ((size_t)slot[t] * max_len + pos[t]) * D + i, x[(size_t)t * ldx + i]);
    return 0;
}
size_t pc_decode_work(int n, int NH, int HS, int bound) {
    MOCK_GUARD;
    int ns = ((bound > 0 ? bound : 1) + PC_DECODE_SPLIT - 1) / PC_DECODE_SPLIT;
    return sizeof(float) * (size_t)(n > 0 ? n : 1) * (size_t)NH * (size_t)ns * (size_t)(HS + 2);
}
/* decode.cu's splits of PC_DECODE_SPLIT keys and their merge, at its rounding points, sums in plain order */
int pc_decode_attention(void *out, const float *q, const void *kc, const void *vc, PcDtype ct, const int *slot,
                        const int *len, const int *pslot, const int *plen, int n, int max_len, int bound, int NH,
                        int NKV, int HS, void *work) {
    MOCK_GUARD;
    if (n < 0 || max_len < 1 || max_len > (1 << 17) || bound < 1 || bound > max_len || NKV < 1 || NH % NKV ||
        (HS != 64 && HS != 128))
        return mock_fail("pc_decode_attention: shape (1 <= bound <= max_len <= 131072, head size 64 or 128, NH a "
                         "multiple of NKV)");
    const int ns_all = (bound + PC_DECODE_SPLIT - 1) / PC_DECODE_SPLIT;
    const size_t KD = (size_t)NKV * HS;
    float *part = work, qs[128], sc[PC_DECODE_SPLIT];
    for (int t = 0; t < n; t++) {
        const int L = len[t], s = slot[t], ps = pslot ? pslot[s] : s, pl = plen ? plen[s] : 0;
        if (L < 1 || L > bound) return mock_fail("pc_decode_attention: a length outside [1, bound]");
        for (int h = 0; h < NH; h++) {
            const int g = h / (NH / NKV), ns = (L + PC_DECODE_SPLIT - 1) / PC_DECODE_SPLIT;
            for (int d = 0; d < HS; d++) {
                float v = q[(size_t)t * NH * HS + (size_t)h * HS + d];
                qs[d] = ct == PC_BF16 ? bf16_of(v) : v;
            }
            const float scale = 1.0f / sqrtf((float)HS);
            for (int sp = 0; sp < ns; sp++) {
                const int j0 = sp * PC_DECODE_SPLIT, nj = L - j0 < PC_DECODE_SPLIT ? L - j0 : PC_DECODE_SPLIT;
                float m = -INFINITY, l = 0.0f;
                for (int jj = 0; jj < nj; jj++) {
                    const int j = j0 + jj;
                    size_t row = ((size_t)(j < pl ? ps : s) * max_len + j) * KD + (size_t)g * HS;
                    float acc = 0.0f;
                    for (int d = 0; d < HS; d++) acc += qs[d] * mock_ld(kc, ct, row + d);
                    sc[jj] = acc * scale, m = fmaxf(m, sc[jj]);
                }
                for (int jj = 0; jj < nj; jj++) {
                    float p = expf(sc[jj] - m);
                    sc[jj] = ct == PC_BF16 ? bf16_of(p) : p, l += sc[jj];
                }
                float *P = part + (((size_t)t * NH + h) * ns_all + sp) * (HS + 2);
                for (int d = 0; d < HS; d++) {
                    float o = 0.0f;
                    for (int jj = 0; jj < nj; jj++) {
                        const int j = j0 + jj;
                        o += sc[jj] * mock_ld(vc, ct, ((size_t)(j < pl ? ps : s) * max_len + j) * KD + (size_t)g * HS + d);
                    }
                    P[d] = o;
                }
                P[HS] = m, P[HS + 1] = l;
            }
            const float *P = part + ((size_t)t * NH + h) * ns_all * (HS + 2);
            float M = -INFINITY, Ls = 0.0f;
            for (int sp = 0; sp < ns; sp++) M = fmaxf(M, P[(size_t)sp * (HS + 2) + HS]);
            for (int sp = 0; sp < ns; sp++)
                Ls += P[(size_t)sp * (HS + 2) + HS + 1] * expf(P[(size_t)sp * (HS + 2) + HS] - M);
            for (int d = 0; d < HS; d++) {
                float o = 0.0f;
                for (int sp = 0; sp < ns; sp++)
                    o += P[(size_t)sp * (HS + 2) + d] * expf(P[(size_t)sp * (HS + 2) + HS] - M);
                mock_st(out, ct, (size_t)t * NH * HS + (size_t)h * HS + d, o / Ls);
            }
        }
    }
    return 0;
}
int pc_ids_move(int *dst, const int *dst_at, const int *src, const int *src_at, int n) {
    MOCK_GUARD;
    if (n < 0) return mock_fail("pc_ids_move: n >= 0");
    for (int i = 0; i < n; i++) dst[dst_at ? dst_at[i] : i] = src[src_at ? src_at[i] : i];
    return 0;
}

