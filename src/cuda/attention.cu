/* attention.cu: fused causal attention on shared-prompt rows (attention.h),
 * forward and backward, bf16 on tensor cores and float32 on CUDA cores.
 *
 * The plan. The host turns each token's mask (pstart, plen, sstart, window)
 * into two key ranges, [pa, pb) (its prompt, clipped by the window) and
 * [sa, t] (its own segment, clipped), kept per token (int4) for the kernels'
 * element masks. For every block of 64 or 128 queries it merges its tokens'
 * ranges into the sorted, disjoint, non-adjacent key intervals the block
 * sees (a response block: the list's one prompt and its own response's
 * start; never the other responses, which is the saving of prompt sharing);
 * for every block of 64 keys it lists the 64-query blocks whose intervals
 * touch it (the transpose, for dk and dv). Built once per batch.
 *
 * bf16 forward (FlashAttention-2's order): a CTA of 4 warps owns a block of
 * BM = 64 MT queries of one head (MT blocks of 16 rows per warp) and walks
 * its key intervals in tiles of BN keys, K and V tiles double-buffered in
 * shared memory by cp.async (the next tile loads while this one computes).
 * Per tile and warp: S = Q K^T (mma.sync m16n8k16, bf16 in, float32 sums;
 * Q and K fragments by ldmatrix), scaled into log2 units, masked (skipped
 * when a warp vote finds the tile fully visible to all its rows, and the
 * whole tile skipped when it sees none of it), online softmax in float32
 * (running max m and sum l per row), P = exp2(S - m) rounded to bf16 as the
 * A operand of O += P V (V fragments by ldmatrix.trans). The end: O / l
 * rounded to bf16, lse = ln 2 m + ln l. Keys past an interval's end are
 * masked, so a tile never counts a key that another interval holds.
 *
 * bf16 backward, without atomics: D = rowsum(dout o out) first; then one
 * kernel per (64-query block, head) walks the key tiles as the forward does
 * and forms S, P = exp2(S - lse), dP = dO V^T, dS = P (dP - D) and dq +=
 * dS K in registers; one per (item, query head) takes an item's 64 keys
 * (attn_sched.h: a key block and a run of the 64-query blocks that see it,
 * a shared prompt's long list cut into near-equal runs) with the keys as
 * the mma's rows: S^T = K Q^T, P^T, dP^T = V dO^T, dS^T, dv += P^T dO, dk
 * += dS^T Q, written to the item's own slot of partial sums; a last pass
 * adds each key block's slots, the group's heads ascending and each head's
 * items in list order, into dk and dv. Every output element is summed in a
 * fixed order: reruns give the same bits. Grids run the heads fastest and
 * the heaviest blocks first by the plan's count of their work (query blocks
 * by the keys they see, items by their query blocks), so the longest CTAs
 * do not end a kernel alone; tiles that every row of a warp sees whole skip
 * the element mask.
 *
 * float32 (the oracle mode): a warp per query row (forward, dq) or key row
 * (dk, dv) and head, its lanes across the head's dimensions, keys in order,
 * float32 products and sums on CUDA cores (no TF32).
 *
 * Shared-memory rows are HS + 8 bf16 apart: 16-byte rows for cp.async and
 * ldmatrix, and the 8 rows of an 8x8 ldmatrix fall on 8 distinct 4-bank
 * groups (stride 4 banks mod 32), so no bank conflicts. */
#include <math.h>
#include "cuda/attention_internal.cuh"

/* ---- bf16 forward ---- */

struct FwdArgs {
    bf16_t *out;
    float *lse;
    const bf16_t *q, *k, *v;
    const int4 *mask;
    const int *toff;  /* the query blocks' intervals (of BM queries) */
    const int2 *tiv;
    const int *qord;  /* the query blocks, most keys first */
    int T, NH, NKV, group;
    float sc2; /* 1 / sqrt(HS) log2(e) */
};

template <int HS, int MT, int BN> struct FwdCfg {
    static constexpr int NW = 4, BM = 16 * MT * NW, LDS = HS + 8;
    static constexpr size_t smem = sizeof(bf16_t) * (size_t)LDS * (BM + 4 * BN) + sizeof(int4) * BM;
};

template <int HS, int MT, int BN>
__global__ void __launch_bounds__(128) fwd_bf16(FwdArgs a) {
    typedef FwdCfg<HS, MT, BN> C;
    constexpr int LDS = C::LDS, BM = C::BM, NT = BN / 8, DT = HS / 8, CH = HS / 8, NTH = C::NW * 32;
    static_assert(BN % 16 == 0 && HS % 16 == 0, "tiles");
    PC_DYNAMIC_SMEM(smem);
    bf16_t *sQ = (bf16_t *)smem, *sK = sQ + BM * LDS, *sV = sK + 2 * BN * LDS;
    int4 *sM = (int4 *)(sV + 2 * BN * LDS); /* [BM] the rows' masks (registers are short) */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tq = lane & 3;
    /* heads fastest, the last query blocks first: a causal row's longest blocks start first, not in the tail */
    const int qt = a.qord[blockIdx.y], h = blockIdx.x, kvh = h / a.group, T = a.T; /* heads fastest, heaviest first */
    const int ldq = a.NH * HS, ldk = a.NKV * HS, q0 = qt * BM, wr = warp * 16 * MT;
    const bf16_t *qg = a.q + (size_t)h * HS, *kg = a.k + (size_t)kvh * HS, *vg = a.v + (size_t)kvh * HS;

    for (int c = tid; c < BM * CH; c += NTH) {
        int r = c / CH, cc = c % CH, t = q0 + r;
        cp_async16(sQ + r * LDS + cc * 8, qg + (size_t)(t < T ? t : 0) * ldq + cc * 8, t < T);
    }
    cp_async_commit();
    auto load_kv = [&](int buf, int ks) {
        bf16_t *dK = sK + buf * BN * LDS, *dV = sV + buf * BN * LDS;
        for (int c = tid; c < BN * CH; c += NTH) {
            int r = c / CH, cc = c % CH, j = ks + r;
            size_t o = (size_t)(j < T ? j : 0) * ldk + cc * 8;
            cp_async16(dK + r * LDS + cc * 8, kg + o, j < T);
            cp_async16(dV + r * LDS + cc * 8, vg + o, j < T);
        }
    };

    for (int r = tid; r < BM; r += NTH) /* read after the loop's first barrier */
        sM[r] = q0 + r < T ? a.mask[q0 + r] : make_int4(0, 0, q0 + r + 1, 0); /* past T: sees nothing */
    /* this thread's rows: wr + 16 mt + g + 8 hf, token q0 + that */
    float o[MT][DT][4], m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int dt = 0; dt < DT; dt++) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.0f;
        m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;
    }

    const int i1 = a.toff[qt + 1];
    int ii = a.toff[qt], ks = ii < i1 ? a.tiv[ii].x : 0;
    if (ii < i1) load_kv(0, ks);
    cp_async_commit();
    for (int it = 0; ii < i1; it++) {
        const int ke = min(ks + BN, a.tiv[ii].y); /* keys [ks, ke) of this interval; the rest of the tile masked */
        int nii = ii, nks = ks;
        next_tile(a.tiv, i1, BN, nii, nks);
        if (nii < i1) {
            load_kv((it + 1) & 1, nks);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const bf16_t *Kb = sK + (it & 1) * BN * LDS, *Vb = sV + (it & 1) * BN * LDS;
        bool any = false, full = ke - ks == BN;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int rr = wr + mt * 16 + g + 8 * hf, t = q0 + rr;
                const int4 r = sM[rr];
                any = any || attn_sees_some(r.x, r.y, r.z, t, ks, ke);
                full = full && attn_sees_all(r.x, r.y, r.z, t, ks, ke);
            }
        any = __any_sync(0xffffffffu, any);
        full = __all_sync(0xffffffffu, full);
        if (any) {
            float s[MT][NT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++) {
                uint32_t af[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) ldsm4(af[mt], a_addr<LDS>(sQ, wr + mt * 16, kk * 16, lane));
#pragma unroll
                for (int np = 0; np < NT / 2; np++) {
                    uint32_t b[4];
                    ldsm4(b, bn_addr<LDS>(Kb, np * 16, kk * 16, lane));
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        mma16816(s[mt][2 * np], af[mt], b[0], b[1]);
                        mma16816(s[mt][2 * np + 1], af[mt], b[2], b[3]);
                    }
                }
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int rr = wr + mt * 16 + g + 8 * hf, t = q0 + rr;
                    const int4 r = full ? make_int4(0, 0, 0, 0) : sM[rr];
                    float mx = -INFINITY; /* the row's largest score of the tile (masked: -inf) */
#pragma unroll
                    for (int nt = 0; nt < NT; nt++)
#pragma unroll
                        for (int e2 = 0; e2 < 2; e2++) {
                            int j = ks + nt * 8 + 2 * tq + e2;
                            if (!full && !(j < ke && sees(r, t, j))) s[mt][nt][2 * hf + e2] = -INFINITY;
                            mx = fmaxf(mx, s[mt][nt][2 * hf + e2]);
                        }
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    /* in log2 units (scaling by sc2 > 0 keeps the order, and rounds the max as any score) */
                    float mn = fmaxf(m[mt][hf], mx * a.sc2);
                    float mu = mn == -INFINITY ? 0.0f : mn; /* no key seen yet: every p is 0, nothing to rescale */
                    float al = exp2f(m[mt][hf] - mu);
                    m[mt][hf] = mn;
                    float rs = 0.0f;
#pragma unroll
                    for (int nt = 0; nt < NT; nt++)
#pragma unroll
                        for (int e2 = 0; e2 < 2; e2++) {
                            float p = exp2f(fmaf(s[mt][nt][2 * hf + e2], a.sc2, -mu));
                            s[mt][nt][2 * hf + e2] = p;
                            rs += p;
                        }
                    l[mt][hf] = l[mt][hf] * al + rs; /* this thread's share of the row; the quad adds up at the end */
#pragma unroll
                    for (int dt = 0; dt < DT; dt++) o[mt][dt][2 * hf] *= al, o[mt][dt][2 * hf + 1] *= al;
                }
#pragma unroll
            for (int kc = 0; kc < BN / 16; kc++) {
                uint32_t pf[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) acc_to_a(pf[mt], s[mt], kc);
#pragma unroll
                for (int dp = 0; dp < HS / 16; dp++) {
                    uint32_t b[4];
                    ldsm4t(b, bk_addr<LDS>(Vb, kc * 16, dp * 16, lane));
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        mma16816(o[mt][2 * dp], pf[mt], b[0], b[1]);
                        mma16816(o[mt][2 * dp + 1], pf[mt], b[2], b[3]);
                    }
                }
            }
        }
        __syncthreads(); /* the buffer is reloaded two tiles on */
        ii = nii, ks = nks;
    }
    cp_async_wait<0>();
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float L = l[mt][hf];
            L += __shfl_xor_sync(0xffffffffu, L, 1);
            L += __shfl_xor_sync(0xffffffffu, L, 2);
            const int t = q0 + wr + mt * 16 + g + 8 * hf;
            if (t >= T) continue;
            float inv = 1.0f / L;
            bf16_t *orow = a.out + (size_t)t * ldq + (size_t)h * HS + 2 * tq;
#pragma unroll
            for (int dt = 0; dt < DT; dt++)
                *(uint32_t *)(orow + dt * 8) = pack_bf16(o[mt][dt][2 * hf] * inv, o[mt][dt][2 * hf + 1] * inv);
            if (tq == 0) a.lse[(size_t)t * a.NH + h] = m[mt][hf] * LN2 + logf(L);
        }
}

/* ---- float32 forward ---- */

template <int NPL>
__global__ void __launch_bounds__(128) fwd_f32(F32Args a) {
    constexpr int HS = 32 * NPL;
    const int lane = threadIdx.x & 31;
    const long row = (long)blockIdx.x * 4 + (threadIdx.x >> 5);
    if (row >= (long)a.T * a.NH) return;
    const int t = (int)(row / a.NH), h = (int)(row % a.NH), kvh = h / a.group;
    const size_t ldq = (size_t)a.NH * HS, ldk = (size_t)a.NKV * HS;
    const float *qr = a.q + t * ldq + (size_t)h * HS, *kb = a.k + (size_t)kvh * HS, *vb = a.v + (size_t)kvh * HS;
    float qv[NPL], o[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) qv[i] = qr[lane + 32 * i], o[i] = 0.0f;
    const int4 mk = a.mask[t];
    float m = -INFINITY, l = 0.0f;
    FOR_VISIBLE_KEYS(mk, t, j) {
        float s = wdot(qv, kb + j * ldk, lane) * a.scale;
        if (s > m) { /* a new maximum: rescale what is summed (exp(0) = 1 exactly otherwise) */
            float c = expf(m - s);
            l *= c;
#pragma unroll
            for (int i = 0; i < NPL; i++) o[i] *= c;
            m = s;
        }
        float p = expf(s - m);
        l += p;
        const float *vr = vb + j * ldk;
#pragma unroll
        for (int i = 0; i < NPL; i++) o[i] = fmaf(p, vr[lane + 32 * i], o[i]);
    }
    float *orow = a.out + t * ldq + (size_t)h * HS;
#pragma unroll
    for (int i = 0; i < NPL; i++) orow[lane + 32 * i] = o[i] / l;
    if (lane == 0) a.lse[row] = m + logf(l);
}

/* ---- launch ---- */

template <int HS, int MT, int BN> static int launch_fwd(FwdArgs a, const PcAttnPlan *p) {
    typedef FwdCfg<HS, MT, BN> C;
    if (smem_limit(fwd_bf16<HS, MT, BN>, C::smem)) return -1;
    a.toff = C::BM == 128 ? p->off128 : p->off64;
    a.tiv = C::BM == 128 ? p->iv128 : p->iv64;
    a.qord = C::BM == 128 ? p->qord128 : p->qord64;
    dim3 grid(a.NH, C::BM == 128 ? p->nq128 : p->nq64);
    PC_LAUNCH(grid, 128, C::smem, fwd_bf16<HS, MT, BN>)(a);
    LAUNCH_TRY();
    return 0;
}

static int g_variant[2]; /* the bf16 forward's tiling for HS 64 and 128 (pc_attention_bf16_variant) */

extern "C" int pc_attention_forward(void *out, float *lse, const void *q, const void *k, const void *v,
                                    const PcAttnPlan *p, int NH, int NKV, int HS, PcDtype dt) {
    const void *ptrs[] = {out, lse, q, k, v};
    if (check_shape(p, NH, NKV, HS, dt, "pc_attention_forward") || check_aligned(ptrs, 5, "pc_attention_forward"))
        return -1;
    const float scale = 1.0f / sqrtf((float)HS);
    if (dt == PC_F32) {
        F32Args a = {};
        a.out = (float *)out, a.lse = lse, a.q = (const float *)q, a.k = (const float *)k, a.v = (const float *)v;
        a.mask = p->mask, a.T = p->T, a.NH = NH, a.NKV = NKV, a.group = NH / NKV, a.scale = scale;
        unsigned grid = warps_grid((long)p->T * NH);
        if (HS == 64)
            PC_LAUNCH(grid, 128, 0, fwd_f32<2>)(a);
        else
            PC_LAUNCH(grid, 128, 0, fwd_f32<4>)(a);
        LAUNCH_TRY();
        return 0;
    }
    FwdArgs a = {};
    a.out = (bf16_t *)out, a.lse = lse, a.q = (const bf16_t *)q, a.k = (const bf16_t *)k, a.v = (const bf16_t *)v;
    a.mask = p->mask, a.T = p->T, a.NH = NH, a.NKV = NKV, a.group = NH / NKV, a.sc2 = scale * LOG2E;
    const int var = HS == 64 ? g_variant[0] : g_variant[1];
    if (HS == 64) return var == 1 ? launch_fwd<64, 2, 64>(a, p) : var == 2 ? launch_fwd<64, 2, 32>(a, p) : launch_fwd<64, 1, 64>(a, p);
    return var == 1 ? launch_fwd<128, 1, 64>(a, p) : var == 2 ? launch_fwd<128, 2, 16>(a, p) : launch_fwd<128, 2, 32>(a, p);
}

/* the bf16 forward's tilings by head size: queries per warp (16 MT) x keys per tile (BN), 4 warps a CTA; the first
 * is the default. On an H200 (2026-11-27, test_attention's table) MT 1 was the fastest for heads of 64 (Qwen2-0.5B's
 * 8 lists of K 8, P = R = 256: 0.168 ms against 0.229 for MT 2, BN 64 and 0.208 for MT 2, BN 32; causal T 2,048 and
 * 4,096 likewise), MT 2, BN 32 for heads of 128 on the causal rows (0.191 / 0.672 ms against 0.200 / 0.735) */
static const char *const g_variant_names[2][3] = {{"16 queries a warp x 64 keys a tile (MT 1, BN 64)",
                                                   "32 x 64 (MT 2, BN 64)", "32 x 32 (MT 2, BN 32)"},
                                                  {"32 x 32 (MT 2, BN 32)", "16 x 64 (MT 1, BN 64)",
                                                   "32 x 16 (MT 2, BN 16)"}};

extern "C" const char *pc_attention_bf16_variant(int HS, int v) {
    if ((HS != 64 && HS != 128) || v < 0 || v > 2) return NULL;
    g_variant[HS == 128] = v;
    return g_variant_names[HS == 128][v];
}
