/* t_decode.c: pc_decode_attention (one query a sequence against its cache, split over blocks of PC_DECODE_SPLIT
 * keys and merged, cuda/decode.h) against a double-precision softmax(q k / sqrt(HS)) v over the same positions, and
 * pc_ids_move. The rows' lengths cross the split (1, 255, 256, 257, 700, 1029: one to five blocks) and some slots
 * borrow a prefix from another slot (the positions they do not own are NaN in their own slot: reading one fails).
 * Bounds, from the kernel's rounding points:
 *   float32: 2e-5 max|v| (float32 sums of <= 1029 terms, __expf's relative error, the merge's rescaling);
 *   bf16: the query rounded to bf16 on both sides; each weight p = exp(s - m) rounded to bf16 (relative 2^-9) before
 *   P V and its sum, so out = sum p(1+d) v / sum p(1+d) moves by at most 2 * 2^-9 / (1 - 2^-9) max|v| (x 1.01), plus
 *   the output's bf16 rounding, 2^-9 (|ref| + that), plus the float32 terms above.
 * Also: a rerun gives the same bits, each row alone = the same row in the batch (bits), and the guard bytes after
 * the output are intact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/decode.h"
#include "families.h"
#include "harness.h"

static float bf(float x) { /* x rounded to bf16 and widened */
    uint32_t u = (uint32_t)h_bf16(x) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void decode_case(PcDtype ct, int NH, int NKV, int HS) {
    enum { NS = 6, N = 6, MAXL = 1100 };
    static const int lens[N] = {1, 255, 256, 257, 700, 1029};
    /* row t's slot; slots 3 and 4 borrow from slot 0 (300 positions) and slot 1 (100) */
    static const int slot[N] = {0, 1, 2, 3, 4, 5}, pslot[NS] = {0, 1, 2, 0, 1, 5}, plen[NS] = {0, 0, 0, 300, 100, 0};
    const size_t KD = (size_t)NKV * HS, e = ct == PC_BF16 ? 2 : 4, cells = (size_t)NS * MAXL * KD;
    char shape[64];
    snprintf(shape, sizeof shape, "%s NH=%d NKV=%d HS=%d", ct == PC_BF16 ? "bf16" : "f32", NH, NKV, HS);
    float *k = h_malloc(sizeof(float) * cells), *v = h_malloc(sizeof(float) * cells);
    float *q = h_malloc(sizeof(float) * (size_t)N * NH * HS);
    h_fill(k, cells, 0.05f, 1.0f), h_fill(v, cells, 0.05f, 1.0f), h_fill(q, (size_t)N * NH * HS, 0.05f, 1.5f);
    for (int s = 0; s < NS; s++) /* the positions a borrowing slot does not own: never read */
        for (size_t i = 0; i < (size_t)plen[s] * KD; i++) k[(size_t)s * MAXL * KD + i] = v[(size_t)s * MAXL * KD + i] = NAN;
    if (ct == PC_BF16)
        for (size_t i = 0; i < cells; i++) k[i] = bf(k[i]), v[i] = bf(v[i]);
    void *hk = h_malloc(cells * e), *hv = h_malloc(cells * e);
    for (size_t i = 0; i < cells; i++) {
        if (ct == PC_BF16) ((uint16_t *)hk)[i] = h_bf16(k[i]), ((uint16_t *)hv)[i] = h_bf16(v[i]);
        else ((float *)hk)[i] = k[i], ((float *)hv)[i] = v[i];
    }
    /* the reference, and its bound */
    float *want = h_malloc(sizeof(float) * (size_t)N * NH * HS);
    double *bound = h_malloc(sizeof(double) * (size_t)N * NH * HS), *p = h_malloc(sizeof(double) * MAXL);
    for (int t = 0; t < N; t++)
        for (int h = 0; h < NH; h++) {
            int g = h / (NH / NKV), s = slot[t];
            double m = -INFINITY, sum = 0, vmax = 0;
            const float *qr = q + ((size_t)t * NH + h) * HS;
            for (int j = 0; j < lens[t]; j++) {
                const float *kr = k + (((size_t)(j < plen[s] ? pslot[s] : s) * MAXL + j) * KD + (size_t)g * HS);
                double a = 0;
                for (int d = 0; d < HS; d++) a += (double)(ct == PC_BF16 ? bf(qr[d]) : qr[d]) * kr[d];
                p[j] = a / sqrt((double)HS), m = fmax(m, p[j]);
            }
            for (int j = 0; j < lens[t]; j++) p[j] = exp(p[j] - m), sum += p[j];
            for (int d = 0; d < HS; d++) {
                double o = 0;
                for (int j = 0; j < lens[t]; j++) {
                    double vv = v[((size_t)(j < plen[s] ? pslot[s] : s) * MAXL + j) * KD + (size_t)g * HS + d];
                    o += p[j] * vv, vmax = fmax(vmax, fabs(vv));
                }
                size_t i = ((size_t)t * NH + h) * HS + d;
                want[i] = (float)(o / sum);
                double f32 = 2e-5 * vmax, b = f32;
                if (ct == PC_BF16) {
                    b = 2.0 * 0x1p-9 / (1.0 - 0x1p-9) * 1.01 * vmax + f32;
                    b += 0x1p-9 * (fabs(o / sum) + b);
                }
                bound[i] = b;
            }
        }
    int *dslot = d_clone(slot, sizeof slot), *dlen = d_clone(lens, sizeof lens);
    int *dps = d_clone(pslot, sizeof pslot), *dpl = d_clone(plen, sizeof plen);
    void *dk = d_clone(hk, cells * e), *dv = d_clone(hv, cells * e), *dq = d_clone(q, sizeof(float) * (size_t)N * NH * HS);
    size_t ob = (size_t)N * NH * HS * e;
    void *dout = d_alloc(ob), *work = d_alloc(pc_decode_work(N, NH, HS, MAXL));
    d_poison(dout, ob);
    H_TRY(pc_decode_attention(dout, dq, dk, dv, ct, dslot, dlen, dps, dpl, N, MAXL, MAXL, NH, NKV, HS, work));
    void *got = h_malloc(ob), *again = h_malloc(ob), *one = h_malloc(ob / N);
    float *gf = h_malloc(sizeof(float) * (size_t)N * NH * HS);
    d_down(got, dout, ob);
    if (ct == PC_BF16) h_widen(gf, got, (size_t)N * NH * HS);
    else memcpy(gf, got, ob);
    Cmp c = cmp_elem(gf, want, bound, (size_t)N * NH * HS);
    H_CHECK(c.ok, "decode attention %s: element %ld off by %.3g, bound %.3g", shape, c.worst, c.err, c.bound);
    H_CHECK(d_guard_ok(dout), "decode attention %s: wrote past its output", shape);
    H_TRY(pc_decode_attention(dout, dq, dk, dv, ct, dslot, dlen, dps, dpl, N, MAXL, MAXL, NH, NKV, HS, work));
    d_down(again, dout, ob);
    H_CHECK(!memcmp(got, again, ob), "decode attention %s: a rerun differs", shape);
    int alone_bad = 0;
    for (int t = 0; t < N; t++) { /* row t alone, its lengths' bound its own */
        float *q1 = (float *)dq + (size_t)t * NH * HS;
        H_TRY(pc_decode_attention(dout, q1, dk, dv, ct, dslot + t, dlen + t, dps, dpl, 1, MAXL, lens[t], NH, NKV, HS,
                                  work));
        d_down(one, dout, ob / N);
        alone_bad += memcmp(one, (char *)got + (size_t)t * (ob / N), ob / N) != 0;
    }
    H_CHECK(alone_bad == 0, "decode attention %s: %d rows differ alone from in the batch", shape, alone_bad);
    h_row("decode attention", shape, &c, 0, 0, "");
    d_free(dslot), d_free(dlen), d_free(dps), d_free(dpl), d_free(dk), d_free(dv), d_free(dq), d_free(dout);
    d_free(work);
    free(k), free(v), free(q), free(hk), free(hv), free(want), free(bound), free(p), free(got), free(again), free(one);
    free(gf);
}

static void ids_case(void) {
    enum { N = 37 };
    int src[N], at[N], got[2 * N], want[2 * N];
    for (int i = 0; i < N; i++) src[i] = 1000 + i, at[i] = (i * 11 + 5) % (2 * N);
    for (int i = 0; i < 2 * N; i++) want[i] = -1;
    for (int i = 0; i < N; i++) want[at[i]] = src[i];
    int *ds = d_clone(src, sizeof src), *da = d_clone(at, sizeof at), *dd = d_clone(want, sizeof want), *dg = d_alloc(sizeof src);
    for (int i = 0; i < 2 * N; i++) got[i] = -1;
    d_up(dd, got, sizeof got);
    H_TRY(pc_ids_move(dd, da, ds, NULL, N)); /* scatter */
    d_down(got, dd, sizeof got);
    H_CHECK(!memcmp(got, want, sizeof got), "pc_ids_move: the scatter dst[at[i]] = src[i]");
    H_TRY(pc_ids_move(dg, NULL, dd, da, N)); /* gather back */
    int back[N];
    d_down(back, dg, sizeof back);
    H_CHECK(!memcmp(back, src, sizeof back), "pc_ids_move: the gather dst[i] = src[at[i]]");
    h_row("ids move", "n=37", NULL, 0, 0, "");
    d_free(ds), d_free(da), d_free(dd), d_free(dg);
}

void t_decode(void) {
    decode_case(PC_F32, 4, 2, 64);
    decode_case(PC_BF16, 14, 2, 64);  /* Qwen2-0.5B's heads: 7 query heads a kv head */
    decode_case(PC_BF16, 8, 1, 128);  /* 8 a kv head: one block's whole group */
    if (!h_small) decode_case(PC_BF16, 24, 2, 128); /* 12 a kv head: two groups */
    ids_case();
}
