/* mock_attention.c: the CPU stand-in of the module's fused attention (cuda/attention.h), beside mock_cuda.c, so
 * that the GPU engine (src/gpu) runs whole on a machine without a GPU. The plan is the module's own (attn_sched.c).
 * Plain loops on the inputs as stored (bf16 widened exactly): float32 scores, max and sum (keys from the last down, an
 * order unlike the CPU engine's), lse = max + log(sum); the probabilities P = exp(s - lse), rounded to bf16 before
 * P V in bf16; the output rounded once to its dtype. The backward recomputes P from lse (P and dS rounded to bf16 in
 * bf16) and writes dq, dk, dv (float32), dk and dv through the plan's work items and their partial sums in the
 * module's scratch layout and order (the module's bf16 split; its float32 oracle mode walks each key's query blocks
 * instead: the same function), so that a split that drops or repeats a query block fails the GPU engine's tests
 * here. The module's argument checks (HS 64 or 128, NH a multiple of NKV, 16-byte alignment) are made too, so that
 * the engine meets the module's rules here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/attention.h"
#include "cuda/attn_sched.h"
#include "mock.h"

struct PcAttnPlan {
    AttnSched s; /* the module's plan (attn_sched.c): its key ranges, and the backward's items executed below */
};

PcAttnPlan *pc_attn_plan_new(const int *pstart, const int *plen, const int *sstart, int T, int window) {
    MOCK_GUARD;
    char why[200], msg[240];
    PcAttnPlan *p = calloc(1, sizeof *p);
    if (!p) return mock_fail("pc_attn_plan_new: out of host memory"), NULL;
    if (attn_sched_build(&p->s, pstart, plen, sstart, T, window, why, sizeof why)) {
        snprintf(msg, sizeof msg, "pc_attn_plan_new: %s", why);
        mock_fail(msg);
        free(p);
        return NULL;
    }
    return p;
}

void pc_attn_plan_free(PcAttnPlan *p) {
    MOCK_GUARD;
    if (!p) return;
    attn_sched_free(&p->s);
    free(p);
}

int pc_attn_plan_tokens(const PcAttnPlan *p) { MOCK_GUARD; return p->s.T; }
long long pc_attn_plan_pairs(const PcAttnPlan *p) { MOCK_GUARD; return p->s.pairs; }
size_t pc_attention_work_bytes(int T, int NH, int HS) { MOCK_GUARD; return attn_work_bytes(T, NH, HS); }
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
    const int *m = p->s.mask + 4 * t; /* pa, pb, sa */
    int n = 0;
    for (int j = t; j >= m[2]; j--) keys[n++] = j;
    for (int j = m[1] - 1; j >= m[0]; j--)
        if (j < m[2] || j > t) keys[n++] = j; /* a key in both ranges counts once */
    return n;
}

static int sees(const PcAttnPlan *p, int t, int j) {
    const int *m = p->s.mask + 4 * t;
    return (j >= m[0] && j < m[1]) || (j >= m[2] && j <= t);
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
    int T = p->s.T, group = NH / NKV, *keys = malloc(sizeof(int) * (size_t)T);
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

/* P and dS (unscaled) of query (t, h) and key j of kv head kv, as the module rounds them (bf16: both rounded) */
static void grad_pair(float *P, float *dS, const void *q, const void *k, const void *v, const void *dout,
                      const float *lse, const float *D, PcDtype dt, int t, int h, int kv, int j, int NH, int NKV,
                      int HS, float scale) {
    size_t qo = ((size_t)t * NH + h) * HS, ko = ((size_t)j * NKV + kv) * HS;
    float s = 0.0f, dP = 0.0f;
    for (int d = HS - 1; d >= 0; d--) {
        s += mock_ld(q, dt, qo + d) * mock_ld(k, dt, ko + d);
        dP += mock_ld(dout, dt, qo + d) * mock_ld(v, dt, ko + d);
    }
    float p = expf(s * scale - lse[(size_t)t * NH + h]);
    *dS = round_to(dt, p * (dP - D[(size_t)t * NH + h]));
    *P = round_to(dt, p);
}

/* dq a (query, head) at a time over its keys; dk and dv as the module's bf16 backward splits them: each item of the
 * plan (a key block and a run of its query blocks) and query head into its own slot of partial sums in work, then
 * each key's slots added, heads ascending, items in list order (attn_sched.h) */
int pc_attention_backward(float *dq, float *dk, float *dv, const void *dout, const void *out, const float *lse,
                          const void *q, const void *k, const void *v, const PcAttnPlan *p, int NH, int NKV, int HS,
                          PcDtype dt, void *work) {
    MOCK_GUARD;
    const void *ptrs[10] = {dq, dk, dv, dout, out, lse, q, k, v, work};
    if (check(p, NH, NKV, HS, dt, ptrs, 10, "pc_attention_backward")) return -1;
    const AttnSched *sc = &p->s;
    int T = sc->T, group = NH / NKV, *keys = malloc(sizeof(int) * (size_t)T);
    float *D = work, *pk = D + attn_work_d_floats(T, NH), *pv = pk + attn_work_partial_floats(T, NH, HS);
    const float scale = 1.0f / sqrtf((float)HS);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++) {
            size_t qo = ((size_t)t * NH + h) * HS;
            float acc = 0.0f;
            for (int d = HS - 1; d >= 0; d--) acc += mock_ld(dout, dt, qo + d) * mock_ld(out, dt, qo + d);
            D[(size_t)t * NH + h] = acc;
        }
    for (int qi = 0; qi < sc->nq64; qi++) /* the module's order; each row's sum is its own */
        for (int t = sc->qord64[qi] * ATTN_QB; t < T && t < (sc->qord64[qi] + 1) * ATTN_QB; t++)
            for (int h = 0; h < NH; h++) {
                int kv = h / group, n = key_list(p, t, keys);
                size_t qo = ((size_t)t * NH + h) * HS;
                for (int d = 0; d < HS; d++) dq[qo + d] = 0.0f;
                for (int i = 0; i < n; i++) {
                    float P, dS;
                    grad_pair(&P, &dS, q, k, v, dout, lse, D, dt, t, h, kv, keys[i], NH, NKV, HS, scale);
                    size_t ko = ((size_t)keys[i] * NKV + kv) * HS;
                    for (int d = 0; d < HS; d++) dq[qo + d] += scale * dS * mock_ld(k, dt, ko + d);
                }
            }
    for (int it = 0; it < sc->nitems; it++) {
        const int *item = sc->items + 3 * it; /* key block, first list index, count */
        for (int h = 0; h < NH; h++) {
            float *sk = pk + ((size_t)it * NH + h) * ATTN_KB * HS, *sv = pv + ((size_t)it * NH + h) * ATTN_KB * HS;
            memset(sk, 0, sizeof(float) * ATTN_KB * (size_t)HS);
            memset(sv, 0, sizeof(float) * ATTN_KB * (size_t)HS);
            for (int li = item[1]; li < item[1] + item[2]; li++)
                for (int t = sc->klist[li] * ATTN_QB; t < T && t < (sc->klist[li] + 1) * ATTN_QB; t++)
                    for (int r = 0; r < ATTN_KB; r++) {
                        int j = item[0] * ATTN_KB + r;
                        if (j >= T || !sees(p, t, j)) continue;
                        float P, dS;
                        grad_pair(&P, &dS, q, k, v, dout, lse, D, dt, t, h, h / group, j, NH, NKV, HS, scale);
                        size_t qo = ((size_t)t * NH + h) * HS;
                        for (int d = 0; d < HS; d++) {
                            sk[(size_t)r * HS + d] += dS * mock_ld(q, dt, qo + d);
                            sv[(size_t)r * HS + d] += P * mock_ld(dout, dt, qo + d);
                        }
                    }
        }
    }
    for (int j = 0; j < T; j++)
        for (int kv = 0; kv < NKV; kv++)
            for (int d = 0; d < HS; d++) {
                int kt = j / ATTN_KB, r = j % ATTN_KB;
                float a = 0.0f, b = 0.0f;
                for (int h = kv * group; h < (kv + 1) * group; h++)
                    for (int ii = sc->kioff[kt]; ii < sc->kioff[kt + 1]; ii++) {
                        size_t o = (((size_t)sc->kitems[ii] * NH + h) * ATTN_KB + r) * HS + d;
                        a += pk[o], b += pv[o];
                    }
                dk[((size_t)j * NKV + kv) * HS + d] = a * scale;
                dv[((size_t)j * NKV + kv) * HS + d] = b;
            }
    free(keys);
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
