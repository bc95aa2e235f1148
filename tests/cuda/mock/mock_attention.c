/* mock_attention.c: the CPU stand-in of the module's fused attention (cuda/attention.h), beside mock_cuda.c, so
 * that the GPU engine (src/gpu) runs whole on a machine without a GPU. Plain loops, one (query, head) at a time, on
 * the inputs as stored (bf16 widened exactly): float32 scores, max and sum (keys from the last down, an order unlike
 * the CPU engine's), lse = max + log(sum); the probabilities P = exp(s - lse), rounded to bf16 before P V in bf16;
 * the output rounded once to its dtype. The backward recomputes P from lse (P and dS rounded to bf16 in bf16) and
 * writes dq, dk, dv (float32). The plan keeps each token's key ranges (the window applied as attention.h defines
 * it), checked as the module checks them; the module's argument checks (HS 64 or 128, NH a multiple of NKV,
 * 16-byte alignment) are made too, so that the engine meets the module's rules here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/attention.h"
#include "mock.h"

struct PcAttnPlan {
    int T, window;
    int *pa, *pb, *sa; /* [T]: keys [pa, pb) (the prompt) and [sa, t] (the segment) */
    long long pairs;
};

PcAttnPlan *pc_attn_plan_new(const int *pstart, const int *plen, const int *sstart, int T, int window) {
    MOCK_GUARD;
    char why[200];
    if (T < 1 || window < 0) {
        snprintf(why, sizeof why, "pc_attn_plan_new: T = %d, window = %d (T >= 1, window >= 0)", T, window);
        mock_fail(why);
        return NULL;
    }
    PcAttnPlan *p = calloc(1, sizeof *p);
    p->T = T, p->window = window;
    p->pa = malloc(sizeof(int) * 3 * (size_t)T), p->pb = p->pa + T, p->sa = p->pb + T;
    for (int t = 0; t < T; t++) {
        long ps = pstart[t], pl = plen[t], ss = sstart[t];
        if (ps < 0 || pl < 0 || ps + pl > T || ss < 0 || ss > t) {
            snprintf(why, sizeof why, "pc_attn_plan_new: token %d: pstart %ld, plen %ld, sstart %ld (0 <= pstart, "
                     "pstart + plen <= %d, 0 <= sstart <= t)", t, ps, pl, ss, T);
            mock_fail(why);
            pc_attn_plan_free(p);
            return NULL;
        }
        long pa = ps, pb = ps + pl, sa = ss;
        if (window > 0) { /* t's position in its sequence: the prompt's length, then its place in the segment */
            long qpos = pl + (t - ss);
            pa = pa > ps + qpos - window + 1 ? pa : ps + qpos - window + 1;
            pa = pa > pb ? pb : pa;
            sa = sa > t - window + 1 ? sa : t - window + 1;
        }
        p->pa[t] = (int)pa, p->pb[t] = (int)pb, p->sa[t] = (int)sa;
        long lo = pa > sa ? pa : sa, hi = pb < t + 1 ? pb : t + 1;
        p->pairs += (pb - pa) + (t + 1 - sa) - (hi > lo ? hi - lo : 0);
    }
    return p;
}

void pc_attn_plan_free(PcAttnPlan *p) {
    MOCK_GUARD;
    if (!p) return;
    free(p->pa);
    free(p);
}

int pc_attn_plan_tokens(const PcAttnPlan *p) { MOCK_GUARD; return p->T; }
long long pc_attn_plan_pairs(const PcAttnPlan *p) { MOCK_GUARD; return p->pairs; }
size_t pc_attention_work_bytes(int T, int NH) { MOCK_GUARD; return sizeof(float) * (size_t)T * (size_t)NH; }
const char *pc_attention_bf16_variant(int HS, int v) { MOCK_GUARD; return v == 0 && (HS == 64 || HS == 128) ? "mock" : NULL; }

static int check(const PcAttnPlan *p, int NH, int NKV, int HS, PcDtype dt, const void *const *ptrs, int n,
                 const char *who) {
    char why[200];
    if (!p || NH < 1 || NKV < 1 || NH % NKV || (HS != 64 && HS != 128) || (dt != PC_F32 && dt != PC_BF16)) {
        snprintf(why, sizeof why, "%s: plan %s, NH %d, NKV %d, HS %d, dtype %d (NH a multiple of NKV; HS 64 or 128)",
                 who, p ? "given" : "NULL", NH, NKV, HS, (int)dt);
        return mock_fail(why);
    }
    for (int i = 0; i < n; i++)
        if ((uintptr_t)ptrs[i] % 16) {
            snprintf(why, sizeof why, "%s: pointer %d (%p) is not 16-byte aligned", who, i, ptrs[i]);
            return mock_fail(why);
        }
    return 0;
}

/* the keys of token t in descending order into keys; returns their count */
static int key_list(const PcAttnPlan *p, int t, int *keys) {
    int n = 0;
    for (int j = t; j >= p->sa[t]; j--) keys[n++] = j;
    for (int j = p->pb[t] - 1; j >= p->pa[t]; j--)
        if (j < p->sa[t] || j > t) keys[n++] = j; /* a key in both ranges counts once */
    return n;
}

static float round_to(PcDtype dt, float v) {
    float r;
    uint16_t h;
    if (dt != PC_BF16) return v;
    mock_st(&h, PC_BF16, 0, v);
    r = mock_ld(&h, PC_BF16, 0);
    return r;
}

/* scores s [n] of query (t, h) against keys, scaled; in float32 over d from the last down */
static void scores(float *s, const void *q, const void *k, PcDtype dt, int t, int h, int kv, const int *keys, int n,
                   int NH, int NKV, int HS, float scale) {
    size_t qo = ((size_t)t * NH + h) * HS;
    for (int i = 0; i < n; i++) {
        size_t ko = ((size_t)keys[i] * NKV + kv) * HS;
        float acc = 0.0f;
        for (int d = HS - 1; d >= 0; d--) acc += mock_ld(q, dt, qo + d) * mock_ld(k, dt, ko + d);
        s[i] = acc * scale;
    }
}

int pc_attention_forward(void *out, float *lse, const void *q, const void *k, const void *v, const PcAttnPlan *p,
                         int NH, int NKV, int HS, PcDtype dt) {
    MOCK_GUARD;
    const void *ptrs[5] = {out, lse, q, k, v};
    if (check(p, NH, NKV, HS, dt, ptrs, 5, "pc_attention_forward")) return -1;
    int T = p->T, group = NH / NKV, *keys = malloc(sizeof(int) * (size_t)T);
    float *s = malloc(sizeof(float) * (size_t)T), *o = malloc(sizeof(float) * (size_t)HS);
    const float scale = 1.0f / sqrtf((float)HS);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++) {
            int kv = h / group, n = key_list(p, t, keys);
            scores(s, q, k, dt, t, h, kv, keys, n, NH, NKV, HS, scale);
            float mx = -INFINITY, sum = 0.0f;
            for (int i = 0; i < n; i++) mx = s[i] > mx ? s[i] : mx;
            for (int i = 0; i < n; i++) sum += expf(s[i] - mx);
            float l = mx + logf(sum);
            lse[(size_t)t * NH + h] = l;
            for (int d = 0; d < HS; d++) o[d] = 0.0f;
            for (int i = 0; i < n; i++) {
                float P = round_to(dt, expf(s[i] - l));
                size_t vo = ((size_t)keys[i] * NKV + kv) * HS;
                for (int d = 0; d < HS; d++) o[d] += P * mock_ld(v, dt, vo + d);
            }
            for (int d = 0; d < HS; d++) mock_st(out, dt, ((size_t)t * NH + h) * HS + d, o[d]);
        }
    free(keys), free(s), free(o);
    return 0;
}

int pc_attention_backward(float *dq, float *dk, float *dv, const void *dout, const void *out, const float *lse,
                          const void *q, const void *k, const void *v, const PcAttnPlan *p, int NH, int NKV, int HS,
                          PcDtype dt, void *work) {
    MOCK_GUARD;
    const void *ptrs[10] = {dq, dk, dv, dout, out, lse, q, k, v, work};
    if (check(p, NH, NKV, HS, dt, ptrs, 10, "pc_attention_backward")) return -1;
    int T = p->T, group = NH / NKV, *keys = malloc(sizeof(int) * (size_t)T);
    float *s = malloc(sizeof(float) * (size_t)T), *D = work;
    const float scale = 1.0f / sqrtf((float)HS);
    memset(dq, 0, sizeof(float) * (size_t)T * NH * HS);
    memset(dk, 0, sizeof(float) * (size_t)T * NKV * HS);
    memset(dv, 0, sizeof(float) * (size_t)T * NKV * HS);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++) {
            size_t qo = ((size_t)t * NH + h) * HS;
            float acc = 0.0f;
            for (int d = HS - 1; d >= 0; d--) acc += mock_ld(dout, dt, qo + d) * mock_ld(out, dt, qo + d);
            D[(size_t)t * NH + h] = acc;
        }
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++) {
            int kv = h / group, n = key_list(p, t, keys);
            size_t qo = ((size_t)t * NH + h) * HS;
            scores(s, q, k, dt, t, h, kv, keys, n, NH, NKV, HS, scale);
            for (int i = 0; i < n; i++) {
                size_t ko = ((size_t)keys[i] * NKV + kv) * HS;
                float P = expf(s[i] - lse[(size_t)t * NH + h]), dP = 0.0f;
                for (int d = HS - 1; d >= 0; d--) dP += mock_ld(dout, dt, qo + d) * mock_ld(v, dt, ko + d);
                float dS = round_to(dt, P * (dP - D[(size_t)t * NH + h])), Pr = round_to(dt, P);
                for (int d = 0; d < HS; d++) {
                    dq[qo + d] += scale * dS * mock_ld(k, dt, ko + d);
                    dk[ko + d] += scale * dS * mock_ld(q, dt, qo + d);
                    dv[ko + d] += Pr * mock_ld(dout, dt, qo + d);
                }
            }
        }
    free(keys), free(s);
    return 0;
}

int pc_attention_ref_forward(float *out, float *lse, float *mag_out, const void *q, const void *k, const void *v,
                             const int *pstart, const int *plen, const int *sstart, int T, int window, int NH, int NKV,
                             int HS, PcDtype dt) {
    MOCK_GUARD;
    (void)out, (void)lse, (void)mag_out, (void)q, (void)k, (void)v, (void)pstart, (void)plen, (void)sstart, (void)T;
    (void)window, (void)NH, (void)NKV, (void)HS, (void)dt;
    return mock_fail("pc_attention_ref_forward: not in the CPU stand-in (test_attention runs on a GPU only)");
}

int pc_attention_ref_backward(float *dq, float *dk, float *dv, float *mq1, float *mq2, float *mk1, float *mk2,
                              float *mv, const void *dout, const void *out, const float *lse, const void *q,
                              const void *k, const void *v, const int *pstart, const int *plen, const int *sstart,
                              int T, int window, int NH, int NKV, int HS, PcDtype dt) {
    MOCK_GUARD;
    (void)dq, (void)dk, (void)dv, (void)mq1, (void)mq2, (void)mk1, (void)mk2, (void)mv, (void)dout, (void)out;
    (void)lse, (void)q, (void)k, (void)v, (void)pstart, (void)plen, (void)sstart, (void)T, (void)window, (void)NH;
    (void)NKV, (void)HS, (void)dt;
    return mock_fail("pc_attention_ref_backward: not in the CPU stand-in (test_attention runs on a GPU only)");
}
