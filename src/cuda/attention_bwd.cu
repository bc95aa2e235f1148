/* attention_bwd.cu: the fused attention's backward (attention.h; the design: the top of attention.cu):
 * D = rowsum(dout o out), then dq per query block, and dk, dv per item of the plan (attn_sched.h) into partial
 * sums added in a fixed order, without atomics. */
#include "cuda/attention_internal.cuh"

/* ---- bf16 backward ---- */

struct BwdArgs {
    float *dq, *pk, *pv; /* pk, pv: the items' partial dk, dv [nitems NH][KB][HS] */
    const bf16_t *q, *k, *v, *dout;
    const float *lse, *D;
    const int4 *mask;
    const int *toff; /* 64-query blocks' intervals */
    const int2 *tiv;
    const int *qord; /* the 64-query blocks, most keys first */
    const int *klist; /* 64-key blocks' query blocks */
    const int *items; /* [nitems][3] key block, first klist index, count */
    int T, NH, NKV, group;
    float sc2, scale;
};

template <int HS, int BN> struct DqCfg {
    static constexpr int BM = 64, LDS = HS + 8;
    static constexpr size_t smem = sizeof(bf16_t) * (size_t)LDS * (2 * BM + 4 * BN);
};

/* dq for a block of 64 queries of head h: 4 warps of 16 rows */
template <int HS, int BN>
__global__ void __launch_bounds__(128) dq_bf16(BwdArgs a) {
    typedef DqCfg<HS, BN> C;
    constexpr int LDS = C::LDS, BM = C::BM, NT = BN / 8, DT = HS / 8, CH = HS / 8, NTH = 128;
    PC_DYNAMIC_SMEM(smem);
    bf16_t *sQ = (bf16_t *)smem, *sO = sQ + BM * LDS, *sK = sO + BM * LDS, *sV = sK + 2 * BN * LDS;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tq = lane & 3;
    const int qt = a.qord[blockIdx.y], h = blockIdx.x, kvh = h / a.group, T = a.T; /* as the forward's */
    const int ldq = a.NH * HS, ldk = a.NKV * HS, q0 = qt * BM, wr = warp * 16;
    const bf16_t *kg = a.k + (size_t)kvh * HS, *vg = a.v + (size_t)kvh * HS;

    for (int c = tid; c < BM * CH; c += NTH) {
        int r = c / CH, cc = c % CH, t = q0 + r;
        size_t o = (size_t)(t < T ? t : 0) * ldq + (size_t)h * HS + cc * 8;
        cp_async16(sQ + r * LDS + cc * 8, a.q + o, t < T);
        cp_async16(sO + r * LDS + cc * 8, a.dout + o, t < T);
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
    int4 rm[2];
    int rt[2];
    float rl[2], rd[2]; /* lse in log2 units, D */
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        int t = q0 + wr + g + 8 * hf;
        rt[hf] = t;
        rm[hf] = t < T ? a.mask[t] : make_int4(0, 0, t + 1, 0);
        rl[hf] = t < T ? a.lse[(size_t)t * a.NH + h] * LOG2E : 0.0f;
        rd[hf] = t < T ? a.D[(size_t)t * a.NH + h] : 0.0f;
    }
    float acc[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++) acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.0f;

    const int i1 = a.toff[qt + 1];
    int ii = a.toff[qt], ks = ii < i1 ? a.tiv[ii].x : 0;
    if (ii < i1) load_kv(0, ks);
    cp_async_commit();
    for (int it = 0; ii < i1; it++) {
        const int ke = min(ks + BN, a.tiv[ii].y);
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
        for (int hf = 0; hf < 2; hf++) {
            int4 r = rm[hf];
            int t = rt[hf];
            any = any || attn_sees_some(r.x, r.y, r.z, t, ks, ke);
            full = full && attn_sees_all(r.x, r.y, r.z, t, ks, ke);
        }
        any = __any_sync(0xffffffffu, any);
        full = __all_sync(0xffffffffu, full);
        if (any) {
            float s[NT][4], dp[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) s[nt][e] = dp[nt][e] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++) {
                uint32_t aq[4], ao[4];
                ldsm4(aq, a_addr<LDS>(sQ, wr, kk * 16, lane));
                ldsm4(ao, a_addr<LDS>(sO, wr, kk * 16, lane));
#pragma unroll
                for (int np = 0; np < NT / 2; np++) {
                    uint32_t b[4];
                    ldsm4(b, bn_addr<LDS>(Kb, np * 16, kk * 16, lane));
                    mma16816(s[2 * np], aq, b[0], b[1]);
                    mma16816(s[2 * np + 1], aq, b[2], b[3]);
                    ldsm4(b, bn_addr<LDS>(Vb, np * 16, kk * 16, lane));
                    mma16816(dp[2 * np], ao, b[0], b[1]);
                    mma16816(dp[2 * np + 1], ao, b[2], b[3]);
                }
            }
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int hf = e >> 1, j = ks + nt * 8 + 2 * tq + (e & 1);
                    bool vis = full || (j < ke && sees(rm[hf], rt[hf], j));
                    float p = vis ? exp2f(fmaf(s[nt][e], a.sc2, -rl[hf])) : 0.0f;
                    dp[nt][e] = p * (dp[nt][e] - rd[hf]); /* dS, without the scale (applied to dq at the end) */
                }
#pragma unroll
            for (int kc = 0; kc < BN / 16; kc++) {
                uint32_t af[4];
                acc_to_a(af, dp, kc);
#pragma unroll
                for (int d2 = 0; d2 < HS / 16; d2++) {
                    uint32_t b[4];
                    ldsm4t(b, bk_addr<LDS>(Kb, kc * 16, d2 * 16, lane));
                    mma16816(acc[2 * d2], af, b[0], b[1]);
                    mma16816(acc[2 * d2 + 1], af, b[2], b[3]);
                }
            }
        }
        __syncthreads();
        ii = nii, ks = nks;
    }
    cp_async_wait<0>();
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        int t = rt[hf];
        if (t >= T) continue;
        float *row = a.dq + (size_t)t * ldq + (size_t)h * HS + 2 * tq;
#pragma unroll
        for (int dt = 0; dt < DT; dt++)
            *(float2 *)(row + dt * 8) = make_float2(acc[dt][2 * hf] * a.scale, acc[dt][2 * hf + 1] * a.scale);
    }
}

template <int HS> struct DkvCfg {
    static constexpr int BK = 64, BQ = 64, LDS = HS + 8;
    static constexpr size_t smem = sizeof(bf16_t) * (size_t)LDS * (2 * BK + 4 * BQ) + 2 * BQ * (sizeof(int4) + 2 * sizeof(float));
};

/* the partial dk, dv of one item (64 keys, a run of the query blocks that see them) for query head h: 4 warps of 16
 * keys, the run's query blocks QC queries at a time; written whole (rows past T as zeros) to slot item NH + h,
 * unscaled (dkv_sum scales dk) */
template <int HS, int QC>
__global__ void __launch_bounds__(128) dkv_bf16(BwdArgs a) {
    typedef DkvCfg<HS> C;
    constexpr int LDS = C::LDS, BK = C::BK, BQ = C::BQ, NQ = QC / 8, DT = HS / 8, CH = HS / 8, NTH = 128;
    static_assert(BQ % QC == 0 && QC % 16 == 0, "query chunks");
    PC_DYNAMIC_SMEM(smem);
    bf16_t *sK = (bf16_t *)smem, *sV = sK + BK * LDS, *sQ = sV + BK * LDS, *sO = sQ + 2 * BQ * LDS;
    int4 *sM = (int4 *)(sO + 2 * BQ * LDS); /* [2][BQ] the queries' masks */
    float *sL = (float *)(sM + 2 * BQ), *sD = sL + 2 * BQ; /* [2][BQ] lse, D */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tq = lane & 3;
    const int h = blockIdx.x, item = blockIdx.y, kvh = h / a.group, T = a.T; /* heads fastest, heaviest items first */
    const int kt = a.items[3 * item], l0 = a.items[3 * item + 1], nl = a.items[3 * item + 2];
    const int ldq = a.NH * HS, ldk = a.NKV * HS, k0 = kt * BK, wr = warp * 16;

    for (int c = tid; c < BK * CH; c += NTH) {
        int r = c / CH, cc = c % CH, j = k0 + r;
        size_t o = (size_t)(j < T ? j : 0) * ldk + (size_t)kvh * HS + cc * 8;
        cp_async16(sK + r * LDS + cc * 8, a.k + o, j < T);
        cp_async16(sV + r * LDS + cc * 8, a.v + o, j < T);
    }
    cp_async_commit();
    auto load_q = [&](int buf, int pi) {
        int t0 = a.klist[l0 + pi] * BQ;
        for (int c = tid; c < BQ * CH; c += NTH) {
            int r = c / CH, cc = c % CH, t = t0 + r;
            size_t o = (size_t)(t < T ? t : 0) * ldq + (size_t)h * HS + cc * 8;
            cp_async16(sQ + (buf * BQ + r) * LDS + cc * 8, a.q + o, t < T);
            cp_async16(sO + (buf * BQ + r) * LDS + cc * 8, a.dout + o, t < T);
        }
        if (tid < BQ) {
            int t = t0 + tid, tc = t < T ? t : 0;
            cp_async16(sM + buf * BQ + tid, a.mask + tc, t < T);
            cp_async4(sL + buf * BQ + tid, a.lse + (size_t)tc * a.NH + h, t < T);
            cp_async4(sD + buf * BQ + tid, a.D + (size_t)tc * a.NH + h, t < T);
        }
    };
    int kr[2] = {k0 + wr + g, k0 + wr + g + 8};
    float gk[DT][4], gv[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
#pragma unroll
        for (int e = 0; e < 4; e++) gk[dt][e] = gv[dt][e] = 0.0f;

    if (nl > 0) load_q(0, 0);
    cp_async_commit();
    for (int pi = 0; pi < nl; pi++) {
        if (pi + 1 < nl) {
            load_q((pi + 1) & 1, pi + 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const int buf = pi & 1, t0 = a.klist[l0 + pi] * BQ;
        const bf16_t *Qb = sQ + buf * BQ * LDS, *Ob = sO + buf * BQ * LDS;
        const int4 *Mb = sM + buf * BQ;
        const float *Lb = sL + buf * BQ, *Db = sD + buf * BQ;
#pragma unroll 1
        for (int qc = 0; qc < BQ / QC; qc++) {
            /* does any of this chunk's queries see any of the warp's 16 keys; does every one see all of them? */
            bool any = false, full = true;
            const int ka = k0 + wr, kb = ka + 15;
            for (int i = lane; i < QC; i += 32) {
                int t = t0 + qc * QC + i;
                int4 r = Mb[qc * QC + i];
                any = any || (t < T && attn_sees_some(r.x, r.y, r.z, t, ka, kb + 1));
                full = full && t < T && kb < T && attn_sees_all(r.x, r.y, r.z, t, ka, kb + 1);
            }
            if (!__any_sync(0xffffffffu, any)) continue;
            full = __all_sync(0xffffffffu, full);
            float s[NQ][4], dp[NQ][4];
#pragma unroll
            for (int nt = 0; nt < NQ; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) s[nt][e] = dp[nt][e] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++) {
                uint32_t ak[4], av[4];
                ldsm4(ak, a_addr<LDS>(sK, wr, kk * 16, lane));
                ldsm4(av, a_addr<LDS>(sV, wr, kk * 16, lane));
#pragma unroll
                for (int np = 0; np < NQ / 2; np++) {
                    uint32_t b[4];
                    ldsm4(b, bn_addr<LDS>(Qb, qc * QC + np * 16, kk * 16, lane));
                    mma16816(s[2 * np], ak, b[0], b[1]);
                    mma16816(s[2 * np + 1], ak, b[2], b[3]);
                    ldsm4(b, bn_addr<LDS>(Ob, qc * QC + np * 16, kk * 16, lane));
                    mma16816(dp[2 * np], av, b[0], b[1]);
                    mma16816(dp[2 * np + 1], av, b[2], b[3]);
                }
            }
            /* element (key kr[e / 2], query column qc QC + 8 nt + 2 tq + e % 2) */
#pragma unroll
            for (int nt = 0; nt < NQ; nt++)
#pragma unroll
                for (int e2 = 0; e2 < 2; e2++) {
                    int col = qc * QC + nt * 8 + 2 * tq + e2, t = t0 + col;
                    int4 r = Mb[col];
                    float lq = Lb[col] * LOG2E, dd = Db[col];
#pragma unroll
                    for (int hf = 0; hf < 2; hf++) {
                        int e = 2 * hf + e2;
                        bool vis = full || (t < T && sees(r, t, kr[hf]));
                        float p = vis ? exp2f(fmaf(s[nt][e], a.sc2, -lq)) : 0.0f;
                        s[nt][e] = p;
                        dp[nt][e] = p * (dp[nt][e] - dd);
                    }
                }
#pragma unroll
            for (int kc = 0; kc < QC / 16; kc++) {
                uint32_t ap[4], as[4];
                acc_to_a(ap, s, kc);
                acc_to_a(as, dp, kc);
#pragma unroll
                for (int d2 = 0; d2 < HS / 16; d2++) {
                    uint32_t b[4];
                    ldsm4t(b, bk_addr<LDS>(Ob, qc * QC + kc * 16, d2 * 16, lane));
                    mma16816(gv[2 * d2], ap, b[0], b[1]);
                    mma16816(gv[2 * d2 + 1], ap, b[2], b[3]);
                    ldsm4t(b, bk_addr<LDS>(Qb, qc * QC + kc * 16, d2 * 16, lane));
                    mma16816(gk[2 * d2], as, b[0], b[1]);
                    mma16816(gk[2 * d2 + 1], as, b[2], b[3]);
                }
            }
        }
        __syncthreads();
    }
    cp_async_wait<0>();
    const size_t slot = (size_t)item * a.NH + h;
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        size_t o = (slot * BK + wr + g + 8 * hf) * HS + 2 * tq;
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            *(float2 *)(a.pk + o + dt * 8) = make_float2(gk[dt][2 * hf], gk[dt][2 * hf + 1]);
            *(float2 *)(a.pv + o + dt * 8) = make_float2(gv[dt][2 * hf], gv[dt][2 * hf + 1]);
        }
    }
}

/* dk, dv [T, NKV HS] from the items' partial sums: a thread per (key, kv head, 4 dimensions) adds its key block's
 * slots, the group's heads ascending and each head's items in list order (attn_sched.h), then scales dk */
__global__ void dkv_sum(float *dk, float *dv, const float *pk, const float *pv, const int *kioff, const int *kitems,
                        int T, int NH, int NKV, int HS, float scale) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x, q4 = HS / 4;
    if (i >= (long)T * NKV * q4) return;
    const int d4 = (int)(i % q4), kvh = (int)(i / q4 % NKV), j = (int)(i / q4 / NKV), kt = j / KB, r = j % KB;
    const int group = NH / NKV, i0 = kioff[kt], i1 = kioff[kt + 1];
    float4 sk = make_float4(0.0f, 0.0f, 0.0f, 0.0f), sv = sk;
    for (int h = kvh * group; h < (kvh + 1) * group; h++)
        for (int ii = i0; ii < i1; ii++) {
            size_t o = (((size_t)kitems[ii] * NH + h) * KB + r) * HS + 4 * d4;
            float4 x = *(const float4 *)(pk + o), y = *(const float4 *)(pv + o);
            sk.x += x.x, sk.y += x.y, sk.z += x.z, sk.w += x.w;
            sv.x += y.x, sv.y += y.y, sv.z += y.z, sv.w += y.w;
        }
    size_t o = ((size_t)j * NKV + kvh) * HS + 4 * d4;
    *(float4 *)(dk + o) = make_float4(sk.x * scale, sk.y * scale, sk.z * scale, sk.w * scale);
    *(float4 *)(dv + o) = sv;
}

/* D[t, h] = dout . out over the head's HS dimensions, float32 sums in order (products of bf16 are exact) */
__device__ __forceinline__ float dot8(uint4 x, uint4 y, float s) {
    const __nv_bfloat162 *a = (const __nv_bfloat162 *)&x, *b = (const __nv_bfloat162 *)&y;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 fa = __bfloat1622float2(a[i]), fb = __bfloat1622float2(b[i]);
        s = fmaf(fa.x, fb.x, s);
        s = fmaf(fa.y, fb.y, s);
    }
    return s;
}

__global__ void rowdot_bf16(float *D, const bf16_t *dout, const bf16_t *out, long rows, int HS) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const uint4 *a = (const uint4 *)(dout + i * HS), *b = (const uint4 *)(out + i * HS);
    float s = 0.0f;
    for (int c = 0; c < HS / 8; c++) s = dot8(a[c], b[c], s);
    D[i] = s;
}

__global__ void rowdot_f32(float *D, const float *dout, const float *out, long rows, int HS) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const float4 *a = (const float4 *)(dout + i * HS), *b = (const float4 *)(out + i * HS);
    float s = 0.0f;
    for (int c = 0; c < HS / 4; c++) {
        float4 x = a[c], y = b[c];
        s = fmaf(x.x, y.x, s), s = fmaf(x.y, y.y, s), s = fmaf(x.z, y.z, s), s = fmaf(x.w, y.w, s);
    }
    D[i] = s;
}

/* ---- float32 backward ---- */

template <int NPL>
__global__ void __launch_bounds__(128) dq_f32(F32Args a) {
    constexpr int HS = 32 * NPL;
    const int lane = threadIdx.x & 31;
    const long row = (long)blockIdx.x * 4 + (threadIdx.x >> 5);
    if (row >= (long)a.T * a.NH) return;
    const int t = (int)(row / a.NH), h = (int)(row % a.NH), kvh = h / a.group;
    const size_t ldq = (size_t)a.NH * HS, ldk = (size_t)a.NKV * HS;
    const float *qr = a.q + t * ldq + (size_t)h * HS, *orow = a.dout + t * ldq + (size_t)h * HS;
    const float *kb = a.k + (size_t)kvh * HS, *vb = a.v + (size_t)kvh * HS;
    float qv[NPL], ov[NPL], acc[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) qv[i] = qr[lane + 32 * i], ov[i] = orow[lane + 32 * i], acc[i] = 0.0f;
    const int4 mk = a.mask[t];
    const float L = a.lse_in[row], Dv = a.D[row];
    FOR_VISIBLE_KEYS(mk, t, j) {
        const float *kr = kb + j * ldk;
        float p = expf(wdot(qv, kr, lane) * a.scale - L);
        float ds = p * (wdot(ov, vb + j * ldk, lane) - Dv) * a.scale;
#pragma unroll
        for (int i = 0; i < NPL; i++) acc[i] = fmaf(ds, kr[lane + 32 * i], acc[i]);
    }
    float *d = a.dq + t * ldq + (size_t)h * HS;
#pragma unroll
    for (int i = 0; i < NPL; i++) d[lane + 32 * i] = acc[i];
}

template <int NPL>
__global__ void __launch_bounds__(128) dkv_f32(F32Args a) {
    constexpr int HS = 32 * NPL;
    const int lane = threadIdx.x & 31;
    const long row = (long)blockIdx.x * 4 + (threadIdx.x >> 5);
    if (row >= (long)a.T * a.NKV) return;
    const int j = (int)(row / a.NKV), kvh = (int)(row % a.NKV);
    const size_t ldq = (size_t)a.NH * HS, ldk = (size_t)a.NKV * HS;
    const float *kr = a.k + j * ldk + (size_t)kvh * HS, *vr = a.v + j * ldk + (size_t)kvh * HS;
    float kv[NPL], vv[NPL], gk[NPL], gv[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) kv[i] = kr[lane + 32 * i], vv[i] = vr[lane + 32 * i], gk[i] = gv[i] = 0.0f;
    const int kt = j / KB, l0 = a.koff[kt], l1 = a.koff[kt + 1];
    for (int h = kvh * a.group; h < (kvh + 1) * a.group; h++)
        for (int li = l0; li < l1; li++) {
            const int ta = a.klist[li] * QB, tb = min(ta + QB, a.T);
            for (int t = ta; t < tb; t++) {
                if (!sees(a.mask[t], t, j)) continue;
                const size_t r = (size_t)t * a.NH + h;
                const float *qr = a.q + t * ldq + (size_t)h * HS, *orow = a.dout + t * ldq + (size_t)h * HS;
                float p = expf(wdot(kv, qr, lane) * a.scale - a.lse_in[r]);
                float ds = p * (wdot(vv, orow, lane) - a.D[r]) * a.scale;
#pragma unroll
                for (int i = 0; i < NPL; i++) {
                    gk[i] = fmaf(ds, qr[lane + 32 * i], gk[i]);
                    gv[i] = fmaf(p, orow[lane + 32 * i], gv[i]);
                }
            }
        }
    float *dk = a.dk + j * ldk + (size_t)kvh * HS, *dv = a.dv + j * ldk + (size_t)kvh * HS;
#pragma unroll
    for (int i = 0; i < NPL; i++) dk[lane + 32 * i] = gk[i], dv[lane + 32 * i] = gv[i];
}

/* ---- launches ---- */

template <int HS, int BN, int QC> static int launch_bwd(BwdArgs a, const PcAttnPlan *p) {
    if (smem_limit(dq_bf16<HS, BN>, DqCfg<HS, BN>::smem) || smem_limit(dkv_bf16<HS, QC>, DkvCfg<HS>::smem)) return -1;
    PC_LAUNCH(dim3(a.NH, p->nq64), 128, (DqCfg<HS, BN>::smem), dq_bf16<HS, BN>)(a);
    LAUNCH_TRY();
    PC_LAUNCH(dim3(a.NH, p->nitems), 128, DkvCfg<HS>::smem, dkv_bf16<HS, QC>)(a);
    LAUNCH_TRY();
    return 0;
}

extern "C" size_t pc_attention_work_bytes(int T, int NH, int HS) { return attn_work_bytes(T, NH, HS); }

extern "C" int pc_attention_backward(float *dq, float *dk, float *dv, const void *dout, const void *out,
                                     const float *lse, const void *q, const void *k, const void *v,
                                     const PcAttnPlan *p, int NH, int NKV, int HS, PcDtype dt, void *work) {
    const void *ptrs[] = {dq, dk, dv, dout, out, lse, q, k, v, work};
    if (check_shape(p, NH, NKV, HS, dt, "pc_attention_backward") || check_aligned(ptrs, 10, "pc_attention_backward"))
        return -1;
    const float scale = 1.0f / sqrtf((float)HS);
    float *D = (float *)work;
    const long rows = (long)p->T * NH;
    const unsigned rgrid = (unsigned)((rows + 255) / 256);
    if (dt == PC_F32) {
        PC_LAUNCH(rgrid, 256, 0, rowdot_f32)(D, (const float *)dout, (const float *)out, rows, HS);
        LAUNCH_TRY();
        F32Args a = {};
        a.dq = dq, a.dk = dk, a.dv = dv, a.q = (const float *)q, a.k = (const float *)k, a.v = (const float *)v;
        a.dout = (const float *)dout, a.lse_in = lse, a.D = D, a.mask = p->mask, a.koff = p->koff, a.klist = p->klist;
        a.T = p->T, a.NH = NH, a.NKV = NKV, a.group = NH / NKV, a.scale = scale;
        unsigned gq = warps_grid(rows), gk = warps_grid((long)p->T * NKV);
        if (HS == 64) {
            PC_LAUNCH(gq, 128, 0, dq_f32<2>)(a);
            LAUNCH_TRY();
            PC_LAUNCH(gk, 128, 0, dkv_f32<2>)(a);
        } else {
            PC_LAUNCH(gq, 128, 0, dq_f32<4>)(a);
            LAUNCH_TRY();
            PC_LAUNCH(gk, 128, 0, dkv_f32<4>)(a);
        }
        LAUNCH_TRY();
        return 0;
    }
    PC_LAUNCH(rgrid, 256, 0, rowdot_bf16)(D, (const bf16_t *)dout, (const bf16_t *)out, rows, HS);
    LAUNCH_TRY();
    BwdArgs a = {};
    a.dq = dq, a.q = (const bf16_t *)q, a.k = (const bf16_t *)k, a.v = (const bf16_t *)v;
    a.pk = D + attn_work_d_floats(p->T, NH), a.pv = a.pk + attn_work_partial_floats(p->T, NH, HS);
    a.dout = (const bf16_t *)dout, a.lse = lse, a.D = D, a.mask = p->mask, a.toff = p->off64, a.tiv = p->iv64;
    a.qord = p->qord64, a.klist = p->klist, a.items = p->items, a.T = p->T, a.NH = NH, a.NKV = NKV;
    a.group = NH / NKV, a.sc2 = scale * LOG2E, a.scale = scale;
    if (HS == 64 ? launch_bwd<64, 64, 64>(a, p) : launch_bwd<128, 64, 32>(a, p)) return -1;
    const long n = (long)p->T * NKV * (HS / 4);
    PC_LAUNCH((unsigned)((n + 255) / 256), 256, 0, dkv_sum)(dk, dv, a.pk, a.pv, p->kioff, p->kitems, p->T, NH, NKV, HS,
                                                           scale);
    LAUNCH_TRY();
    return 0;
}
