/* t_rope.c: pc_rope_forward / pc_rope_backward against kernels.c's rope_apply (inverse 0 and 1) on the CPU's own
 * table (rope_table), in float32 and in bf16 (in place), on shared-prompt positions (a prompt, then responses
 * restarting after it), for q and k as slices of a fused qkv row (ldx > NHx HS: the other columns must stay).
 * Bounds, stated: float32 ||gpu - cpu|| <= 1e-5 ||cpu||; bf16: the CPU rotates the widened bf16 values in float32
 * and the test rounds: a rotated value a cos - b sin has two products and a sum, a few float32 roundings of
 * |a| + |b| on either side (fused or not, 3 ulps a side), taken as 2^-18 (|a| + |b|), then one bf16 ulp (2^-7 of the
 * value).
 * pc_rope_qkv_forward / _backward (q, k, v in one pass): q and k against rope_apply with the bf16 bound above, v
 * rounded exactly; the backward's float32 dq, dk (rotated back in place) within 2^-18 (|a| + |b|) of rope_apply's,
 * dv untouched; both with q, k, v as the column slices of one fused [T, (NH + 2 NKV) HS] row and as three arrays. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/rope.h"
#include "families.h"
#include "harness.h"
#include "kernels/kernels.h"

typedef struct {
    void *x;
    PcDtype xt;
    int ldx, *pos, T, NHx, HS, inv;
    float *cs;
} Rope;

static int rope_run(void *p) {
    Rope *r = p;
    return (r->inv ? pc_rope_backward : pc_rope_forward)(r->x, r->xt, r->ldx, r->pos, r->cs, r->T, r->NHx, r->HS);
}

/* rows of prompt P and K responses of R tokens each: positions 0..P-1, then P..P+R-1 for every response */
static int *shared_positions(int P, int K, int R, int *T) {
    *T = P + K * R;
    int *pos = h_malloc(sizeof(int) * *T), t = 0;
    for (int j = 0; j < P; j++) pos[t++] = j;
    for (int k = 0; k < K; k++)
        for (int j = 0; j < R; j++) pos[t++] = P + j;
    return pos;
}

static void rope_case(int P, int K, int R, int NHx, int HS, int ld_extra, int off, PcDtype xt, int inv) {
    int T, *pos = shared_positions(P, K, R, &T), npos = P + R, half = HS / 2;
    int ldx = NHx * HS + ld_extra;
    char shape[112], name[48];
    snprintf(shape, sizeof shape, "T=%d NHx=%d HS=%d ld=%d+%d", T, NHx, HS, ldx, off);
    snprintf(name, sizeof name, "rope_%s %s", inv ? "bwd" : "fwd", xt == PC_BF16 ? "bf16" : "f32");
    double *inv_freq = h_malloc(sizeof(double) * half);
    for (int j = 0; j < half; j++) inv_freq[j] = pow(1e6, -2.0 * j / HS);
    float *cs = h_malloc(sizeof(float) * (size_t)npos * HS);
    rope_table(cs, inv_freq, npos, HS);
    size_t rowlen = (size_t)off + ldx, n = (size_t)T * rowlen, e = xt == PC_BF16 ? 2 : 4, nr = (size_t)T * NHx * HS;
    float *buf = h_malloc(sizeof(float) * n), *sub = h_malloc(sizeof(float) * nr), *ref = h_malloc(sizeof(float) * nr);
    uint16_t *bb = h_malloc(2 * n);
    h_fill(buf, n, 0.1f, 1.0f);
    if (xt == PC_BF16) {
        for (size_t i = 0; i < n; i++) bb[i] = h_bf16(buf[i]);
        h_widen(buf, bb, n);
    }
    for (int t = 0; t < T; t++) memcpy(sub + (size_t)t * NHx * HS, buf + (size_t)t * rowlen + off, sizeof(float) * NHx * HS);
    memcpy(ref, sub, sizeof(float) * nr);
    rope_apply(ref, pos, cs, T, NHx, HS, inv);
    /* the device buffer: rows of rowlen, the heads at column off; x points at column off of row 0 */
    void *dbuf = xt == PC_BF16 ? d_clone(bb, n * 2) : d_clone(buf, n * 4);
    Rope r = {(char *)dbuf + off * e, xt, (int)rowlen, d_clone(pos, sizeof(int) * T), T, NHx, HS, inv,
              d_clone(cs, sizeof(float) * npos * HS)};
    H_TRY(rope_run(&r));
    unsigned char *back = h_malloc(n * e), *back2 = h_malloc(n * e);
    d_down(back, dbuf, n * e);
    float *got = h_malloc(sizeof(float) * nr);
    int others_ok = 1;
    for (int t = 0; t < T; t++)
        for (size_t c = 0; c < rowlen; c++) {
            size_t at = (size_t)t * rowlen + c;
            int inside = c >= (size_t)off && c < (size_t)off + (size_t)NHx * HS;
            float v;
            if (xt == PC_BF16) h_widen(&v, (uint16_t *)back + at, 1);
            else memcpy(&v, back + at * 4, 4);
            if (inside) got[(size_t)t * NHx * HS + (c - off)] = v;
            else if (memcmp(&v, &buf[at], 4)) others_ok = 0;
        }
    Cmp c;
    if (xt == PC_F32) c = cmp_norm(got, ref, nr, 1e-5);
    else {
        double *b = h_malloc(sizeof(double) * nr);
        for (size_t i = 0; i < nr; i++) {
            size_t j = i % HS, pair = j < (size_t)half ? i + half : i - half;
            b[i] = 0x1p-18 * (fabs(sub[i]) + fabs(sub[pair]));
        }
        h_bound_round_bf16(b, ref, nr);
        h_round_bf16(ref, nr); /* a bf16 model keeps q and k rounded after RoPE (llama.c's attn_keep) */
        c = cmp_elem(got, ref, b, nr);
        free(b);
    }
    /* rerun from the same input */
    if (xt == PC_BF16) d_up(dbuf, bb, n * 2);
    else d_up(dbuf, buf, n * 4);
    H_TRY(rope_run(&r));
    d_down(back2, dbuf, n * e);
    H_CHECK(c.ok, "%s %s: err %.3g > bound %.3g at %ld", name, shape, c.err, c.bound, c.worst);
    H_CHECK(others_ok, "%s %s: changed columns outside its heads", name, shape);
    H_CHECK(!memcmp(back, back2, n * e), "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(dbuf), "%s %s: wrote past the buffer", name, shape);
    h_row(name, shape, &c, h_time(rope_run, &r), h_floor_bytes(2.0 * nr * e), "bytes/bw");
    d_free(dbuf), d_free(r.pos), d_free(r.cs);
    free(pos), free(inv_freq), free(cs), free(buf), free(sub), free(ref), free(bb), free(back), free(back2), free(got);
}

/* q, k, v in one pass: fused (slices of [T, QKV] rows) or three packed arrays; the forward, or the backward */
static void rope_qkv_case(int P, int K, int R, int NH, int NKV, int HS, int fused, int inv) {
    int T, *pos = shared_positions(P, K, R, &T), npos = P + R, half = HS / 2, QD = NH * HS, KD = NKV * HS;
    int QKV = QD + 2 * KD;
    char shape[112], name[48];
    snprintf(shape, sizeof shape, "T=%d NH=%d NKV=%d HS=%d %s", T, NH, NKV, HS, fused ? "fused rows" : "3 arrays");
    snprintf(name, sizeof name, "rope_qkv_%s bf16", inv ? "bwd" : "fwd");
    double *inv_freq = h_malloc(sizeof(double) * half);
    for (int j = 0; j < half; j++) inv_freq[j] = pow(1e6, -2.0 * j / HS);
    float *cs = h_malloc(sizeof(float) * (size_t)npos * HS);
    rope_table(cs, inv_freq, npos, HS);
    size_t n = (size_t)T * QKV, TQ = (size_t)T * QD, TK = (size_t)T * KD;
    float *in = h_malloc(sizeof(float) * n), *ref = h_malloc(sizeof(float) * n), *got = h_malloc(sizeof(float) * n);
    h_fill(in, n, 0.1f, 1.0f);
    /* the reference, packed q | k | v: q and k rotated (forward or inverse) */
    memcpy(ref, in, sizeof(float) * n);
    rope_apply(ref, pos, cs, T, NH, HS, inv);
    rope_apply(ref + TQ, pos, cs, T, NKV, HS, inv);
    double *b = h_malloc(sizeof(double) * n), *bf = h_malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) {
        size_t j = i % HS, pair = j < (size_t)half ? i + half : i - half;
        b[i] = i < TQ + TK ? 0x1p-18 * (fabs(in[i]) + fabs(in[pair])) : 0.0;
        bf[i] = b[i];
    }
    h_bound_round_bf16(bf, ref, n);
    float *rref = h_malloc(sizeof(float) * n);
    memcpy(rref, ref, sizeof(float) * n);
    h_round_bf16(rref, n);
    /* the device's source: packed (the backward's always), or the forward's fused rows */
    float *src = h_malloc(sizeof(float) * n);
    if (fused && !inv)
        for (int t = 0; t < T; t++) {
            memcpy(src + (size_t)t * QKV, in + (size_t)t * QD, sizeof(float) * QD);
            memcpy(src + (size_t)t * QKV + QD, in + TQ + (size_t)t * KD, sizeof(float) * KD);
            memcpy(src + (size_t)t * QKV + QD + KD, in + TQ + TK + (size_t)t * KD, sizeof(float) * KD);
        }
    else
        memcpy(src, in, sizeof(float) * n);
    float *d = d_clone(src, sizeof(float) * n);
    uint16_t *o = d_alloc(2 * n), *oh = h_malloc(2 * n), *oh2 = h_malloc(2 * n);
    int *dpos = d_clone(pos, sizeof(int) * T);
    float *dcs = d_clone(cs, sizeof(float) * npos * HS);
    d_poison(o, 2 * n);
    int rc;
    if (!inv && fused)
        rc = pc_rope_qkv_forward(o, d, QKV, d + QD, QKV, d + QD + KD, QKV, dpos, dcs, T, NH, NKV, HS);
    else if (!inv)
        rc = pc_rope_qkv_forward(o, d, QD, d + TQ, KD, d + TQ + TK, KD, dpos, dcs, T, NH, NKV, HS);
    else if (fused)
        rc = pc_rope_qkv_backward(o, QKV, o + QD, QKV, o + QD + KD, QKV, d, d + TQ, d + TQ + TK, dpos, dcs, T, NH, NKV, HS);
    else
        rc = pc_rope_qkv_backward(o, QD, o + TQ, KD, o + TQ + TK, KD, d, d + TQ, d + TQ + TK, dpos, dcs, T, NH, NKV, HS);
    H_CHECK(rc == 0, "%s %s: %s", name, shape, rc ? pc_error() : "");
    d_down(oh, o, 2 * n);
    /* the bf16 results, packed q | k | v, from the layout written */
    for (int t = 0; t < T; t++)
        for (int c = 0; c < QKV; c++) {
            size_t at = fused && inv ? (size_t)t * QKV + c
                        : c < QD      ? (size_t)t * QD + c
                        : c < QD + KD ? TQ + (size_t)t * KD + (c - QD)
                                      : TQ + TK + (size_t)t * KD + (c - QD - KD);
            size_t pk = c < QD ? (size_t)t * QD + c : c < QD + KD ? TQ + (size_t)t * KD + (c - QD) : TQ + TK + (size_t)t * KD + (c - QD - KD);
            h_widen(&got[pk], &oh[at], 1);
        }
    Cmp cr = cmp_elem(got, rref, bf, n);
    H_CHECK(cr.ok, "%s %s: bf16 err %.3g > bound %.3g at %ld", name, shape, cr.err, cr.bound, cr.worst);
    if (inv) { /* dq, dk rotated in place in float32, dv as it was */
        float *back = h_malloc(sizeof(float) * n);
        d_down(back, d, sizeof(float) * n);
        Cmp cf = cmp_elem(back, ref, b, n);
        H_CHECK(cf.ok, "%s %s: float32 err %.3g > bound %.3g at %ld", name, shape, cf.err, cf.bound, cf.worst);
        free(back);
    }
    d_up(d, src, sizeof(float) * n), d_poison(o, 2 * n);
    if (!inv)
        rc = fused ? pc_rope_qkv_forward(o, d, QKV, d + QD, QKV, d + QD + KD, QKV, dpos, dcs, T, NH, NKV, HS)
                   : pc_rope_qkv_forward(o, d, QD, d + TQ, KD, d + TQ + TK, KD, dpos, dcs, T, NH, NKV, HS);
    else
        rc = fused ? pc_rope_qkv_backward(o, QKV, o + QD, QKV, o + QD + KD, QKV, d, d + TQ, d + TQ + TK, dpos, dcs, T,
                                          NH, NKV, HS)
                   : pc_rope_qkv_backward(o, QD, o + TQ, KD, o + TQ + TK, KD, d, d + TQ, d + TQ + TK, dpos, dcs, T, NH,
                                          NKV, HS);
    d_down(oh2, o, 2 * n);
    H_CHECK(rc == 0 && !memcmp(oh, oh2, 2 * n), "%s %s: a rerun differs", name, shape);
    H_CHECK(d_guard_ok(o) && d_guard_ok(d), "%s %s: wrote past its buffers", name, shape);
    h_row(name, shape, &cr, 0, 0, "");
    d_free(d), d_free(o), d_free(dpos), d_free(dcs);
    free(pos), free(inv_freq), free(cs), free(in), free(ref), free(got), free(b), free(bf), free(rref), free(src);
    free(oh), free(oh2);
}

void t_rope(void) {
    for (int inv = 0; inv < 2; inv++)
        for (int fused = 0; fused < 2; fused++) {
            rope_qkv_case(3, 2, 4, 4, 2, 64, fused, inv);  /* GQA groups of 2 */
            rope_qkv_case(1, 0, 0, 2, 2, 10, fused, inv);  /* one token, HS/2 odd */
            if (!h_small) rope_qkv_case(256, 8, 256, 14, 2, 64, fused, inv); /* Qwen2-0.5B, one list */
        }
    for (int d = 0; d < 2; d++)
        for (int inv = 0; inv < 2; inv++) {
            PcDtype xt = d ? PC_BF16 : PC_F32;
            rope_case(1, 0, 0, 2, 64, 0, 0, xt, inv);          /* one token */
            rope_case(2, 1, 3, 3, 10, 0, 0, xt, inv);          /* HS/2 odd: one pair a thread */
            rope_case(7, 3, 5, 14, 64, 4 * 64, 0, xt, inv);    /* q of a fused qkv row (14 + 2 x 2 heads) */
            rope_case(7, 16, 2, 2, 64, 0, 14 * 64, xt, inv);   /* k: 16 responses */
            rope_case(3, 1, 4, 4, 128, 1, 0, xt, inv);         /* odd row stride: pairs one at a time */
            if (!h_small) {
                rope_case(256, 8, 256, 14, 64, 4 * 64, 0, xt, inv); /* Qwen2-0.5B q, one list */
                rope_case(256, 8, 256, 32, 128, 16 * 128, 0, xt, inv); /* Llama-3.1-8B q */
            }
        }
}
