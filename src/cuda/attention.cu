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
 * dS K in registers; one per (64-key block, kv head) walks the group's query
 * heads in order and, for each, the 64-query blocks listed for its keys,
 * with the keys as the mma's rows: S^T = K Q^T, P^T, dP^T = V dO^T, dS^T,
 * dv += P^T dO, dk += dS^T Q. Every output element is summed by one thread
 * in a fixed order: reruns give the same bits. Grids run the heads fastest
 * and the busiest blocks first (a causal row's last query blocks, its first
 * key blocks), so the longest CTAs do not end the kernel alone.
 *
 * float32 (the oracle mode): a warp per query row (forward, dq) or key row
 * (dk, dv) and head, its lanes across the head's dimensions, keys in order,
 * float32 products and sums on CUDA cores (no TF32).
 *
 * Shared-memory rows are HS + 8 bf16 apart: 16-byte rows for cp.async and
 * ldmatrix, and the 8 rows of an 8x8 ldmatrix fall on 8 distinct 4-bank
 * groups (stride 4 banks mod 32), so no bank conflicts. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include <cuda_bf16.h>

#include "cuda/attention.h"
#include "cuda/attention_ptx.cuh"
#include "cuda/check.cuh"

typedef __nv_bfloat16 bf16_t;

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* ---- the plan ---- */

enum { QB = 64, KB = 64 }; /* the plan's query and key blocks (the forward also uses 128-query blocks) */

struct PcAttnPlan {
    int T, window, nq64, nq128, nk64;
    long long pairs;
    int4 *mask;          /* [T] (pa, pb, sa, 0): token t sees [pa, pb) and [sa, t] */
    int *off64, *off128; /* [n + 1] offsets of each query block's intervals */
    int2 *iv64, *iv128;  /* the intervals [x, y) */
    int *koff, *klist;   /* [nk64 + 1], the 64-query blocks seeing each 64-key block */
    void *dev;           /* the one allocation holding them */
};

/* merged key intervals of each block of B queries: off [n + 1], iv */
static void block_intervals(int B, const std::vector<int4> &m, int T, std::vector<int> &off, std::vector<int2> &iv) {
    std::vector<int2> tmp;
    off.assign(1, 0);
    for (int t0 = 0; t0 < T; t0 += B) {
        tmp.clear();
        for (int t = t0; t < T && t < t0 + B; t++) {
            if (m[t].x < m[t].y) tmp.push_back(make_int2(m[t].x, m[t].y));
            tmp.push_back(make_int2(m[t].z, t + 1));
        }
        std::sort(tmp.begin(), tmp.end(), [](int2 a, int2 b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
        int2 cur = tmp[0];
        for (size_t i = 1; i < tmp.size(); i++) {
            if (tmp[i].x <= cur.y) /* overlapping or adjacent: one interval */
                cur.y = std::max(cur.y, tmp[i].y);
            else
                iv.push_back(cur), cur = tmp[i];
        }
        iv.push_back(cur);
        off.push_back((int)iv.size());
    }
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* the plan's tables on the host; 0, or -1 with why */
struct PlanHost {
    std::vector<int4> m;
    long long pairs;
    std::vector<int> off64, off128, koff, klist;
    std::vector<int2> iv64, iv128;
};

static int plan_host(PlanHost &h, const int *pstart, const int *plen, const int *sstart, int T, int window, char *why,
                     size_t whylen) {
    if (T < 1 || window < 0) {
        snprintf(why, whylen, "T = %d, window = %d (T >= 1, window >= 0)", T, window);
        return -1;
    }
    h.m.assign((size_t)T, make_int4(0, 0, 0, 0));
    h.pairs = 0;
    for (int t = 0; t < T; t++) {
        long ps = pstart[t], pl = plen[t], ss = sstart[t];
        if (ps < 0 || pl < 0 || ps + pl > T || ss < 0 || ss > t) {
            snprintf(why, whylen, "token %d: pstart %ld, plen %ld, sstart %ld (0 <= pstart, pstart + plen <= %d, "
                     "0 <= sstart <= t)", t, ps, pl, ss, T);
            return -1;
        }
        long pa = ps, pb = ps + pl, sa = ss;
        if (window > 0) {
            long qpos = pl + (t - ss); /* t's position in its sequence; key j of the prompt is at j - ps */
            pa = std::max(pa, ps + qpos - window + 1);
            if (pa > pb) pa = pb;
            sa = std::max(sa, (long)t - window + 1);
        }
        h.m[t] = make_int4((int)pa, (int)pb, (int)sa, 0);
        long over = std::min(pb, (long)t + 1) - std::max(pa, sa); /* keys in both ranges count once */
        h.pairs += (pb - pa) + (t + 1 - sa) - (over > 0 ? over : 0);
    }
    block_intervals(QB, h.m, T, h.off64, h.iv64);
    block_intervals(128, h.m, T, h.off128, h.iv128);
    const int nq64 = (T + QB - 1) / QB, nk64 = (T + KB - 1) / KB;
    std::vector<int> last((size_t)nk64, -1);
    h.koff.assign((size_t)nk64 + 1, 0);
    for (int pass = 0; pass < 2; pass++) { /* counts, then the lists (query blocks in increasing order) */
        std::fill(last.begin(), last.end(), -1);
        std::vector<int> fill(h.koff.begin(), h.koff.end() - 1);
        if (pass) h.klist.assign((size_t)h.koff[nk64], 0);
        for (int qi = 0; qi < nq64; qi++)
            for (int i = h.off64[qi]; i < h.off64[qi + 1]; i++)
                for (int kt = h.iv64[i].x / KB; kt <= (h.iv64[i].y - 1) / KB; kt++) {
                    if (last[kt] == qi) continue; /* two intervals of a block in one key block */
                    last[kt] = qi;
                    if (pass)
                        h.klist[fill[kt]++] = qi;
                    else
                        h.koff[kt + 1]++;
                }
        if (!pass)
            for (int kt = 0; kt < nk64; kt++) h.koff[kt + 1] += h.koff[kt];
    }
    return 0;
}

extern "C" PcAttnPlan *pc_attn_plan_new(const int *pstart, const int *plen, const int *sstart, int T, int window) {
    char why[200];
    PlanHost ph;
    if (plan_host(ph, pstart, plen, sstart, T, window, why, sizeof why)) {
        pc_fail(__FILE__, __LINE__, "pc_attn_plan_new", why);
        return NULL;
    }
    const std::vector<int4> &m = ph.m;
    const std::vector<int> &off64 = ph.off64, &off128 = ph.off128, &koff = ph.koff, &klist = ph.klist;
    const std::vector<int2> &iv64 = ph.iv64, &iv128 = ph.iv128;
    const int nq64 = (T + QB - 1) / QB, nk64 = (T + KB - 1) / KB;
    const long long pairs = ph.pairs;
    size_t o_mask = 0, o_off64 = align16(sizeof(int4) * T), o_off128 = o_off64 + align16(sizeof(int) * off64.size());
    size_t o_iv64 = o_off128 + align16(sizeof(int) * off128.size()), o_iv128 = o_iv64 + align16(sizeof(int2) * iv64.size());
    size_t o_koff = o_iv128 + align16(sizeof(int2) * iv128.size()), o_klist = o_koff + align16(sizeof(int) * koff.size());
    size_t total = o_klist + align16(sizeof(int) * (klist.size() ? klist.size() : 1));
    std::vector<unsigned char> host(total, 0);
    memcpy(host.data() + o_mask, m.data(), sizeof(int4) * T);
    memcpy(host.data() + o_off64, off64.data(), sizeof(int) * off64.size());
    memcpy(host.data() + o_off128, off128.data(), sizeof(int) * off128.size());
    memcpy(host.data() + o_iv64, iv64.data(), sizeof(int2) * iv64.size());
    memcpy(host.data() + o_iv128, iv128.data(), sizeof(int2) * iv128.size());
    memcpy(host.data() + o_koff, koff.data(), sizeof(int) * koff.size());
    if (klist.size()) memcpy(host.data() + o_klist, klist.data(), sizeof(int) * klist.size());
    void *dev = pc_alloc(total);
    if (!dev) return NULL;
    if (pc_upload(dev, host.data(), total) || pc_sync()) {
        pc_free(dev);
        return NULL;
    }
    PcAttnPlan *p = (PcAttnPlan *)calloc(1, sizeof *p);
    if (!p) {
        pc_free(dev);
        pc_fail(__FILE__, __LINE__, "pc_attn_plan_new", "out of host memory");
        return NULL;
    }
    unsigned char *d = (unsigned char *)dev;
    p->T = T, p->window = window, p->nq64 = nq64, p->nq128 = (T + 127) / 128, p->nk64 = nk64, p->pairs = pairs;
    p->mask = (int4 *)(d + o_mask);
    p->off64 = (int *)(d + o_off64), p->off128 = (int *)(d + o_off128);
    p->iv64 = (int2 *)(d + o_iv64), p->iv128 = (int2 *)(d + o_iv128);
    p->koff = (int *)(d + o_koff), p->klist = (int *)(d + o_klist);
    p->dev = dev;
    return p;
}

extern "C" void pc_attn_plan_free(PcAttnPlan *p) {
    if (!p) return;
    pc_free(p->dev);
    free(p);
}

extern "C" int pc_attn_plan_tokens(const PcAttnPlan *p) { return p->T; }
extern "C" long long pc_attn_plan_pairs(const PcAttnPlan *p) { return p->pairs; }

/* ---- device helpers (the inline PTX: attention_ptx.cuh) ---- */

/* two floats rounded to bf16 (nearest even), lo in the low half */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* the A fragments of a [16 x 16] block of an accumulator tile c[nt][4] (columns 16 kc .. 16 kc + 15: tiles 2 kc and
 * 2 kc + 1), rounded to bf16: an accumulator's layout is an A operand's */
template <int N> __device__ __forceinline__ void acc_to_a(uint32_t a[4], const float (&c)[N][4], int kc) {
    a[0] = pack_bf16(c[2 * kc][0], c[2 * kc][1]);
    a[1] = pack_bf16(c[2 * kc][2], c[2 * kc][3]);
    a[2] = pack_bf16(c[2 * kc + 1][0], c[2 * kc + 1][1]);
    a[3] = pack_bf16(c[2 * kc + 1][2], c[2 * kc + 1][3]);
}

/* Shared tiles are rows of LDS = HS + 8 bf16. The ldmatrix addresses of lane l:
 *  A operand [16 rows x 16 cols] at (r0, c0), row-major: row r0 + l % 16, column c0 + 8 (l / 16);
 *  B operand of two n-tiles from rows that are the n index (K for S = Q K^T): [16 n x 16 k] at (n0, k0):
 *    row n0 + l % 8 + 8 (l / 16), column k0 + 8 ((l / 8) % 2); r[0], r[1]: n-tile n0; r[2], r[3]: n0 + 8;
 *  B operand of two n-tiles from rows that are the k index (V for O = P V), .trans: [16 k x 16 n] at (k0, n0):
 *    row k0 + l % 8 + 8 ((l / 8) % 2), column n0 + 8 (l / 16); r[0], r[1]: n-tile n0; r[2], r[3]: n0 + 8. */
template <int LDS> __device__ __forceinline__ const bf16_t *a_addr(const bf16_t *s, int r0, int c0, int lane) {
    return s + (r0 + (lane & 15)) * LDS + c0 + ((lane >> 4) << 3);
}
template <int LDS> __device__ __forceinline__ const bf16_t *bn_addr(const bf16_t *s, int n0, int k0, int lane) {
    return s + (n0 + (lane & 7) + ((lane >> 4) << 3)) * LDS + k0 + (((lane >> 3) & 1) << 3);
}
template <int LDS> __device__ __forceinline__ const bf16_t *bk_addr(const bf16_t *s, int k0, int n0, int lane) {
    return s + (k0 + (lane & 7) + (((lane >> 3) & 1) << 3)) * LDS + n0 + ((lane >> 4) << 3);
}

/* key j visible to token t with mask (pa, pb, sa): [pa, pb) or [sa, t] */
__device__ __forceinline__ bool sees(int4 m, int t, int j) { return (j >= m.x && j < m.y) || (j >= m.z && j <= t); }

/* an interval walk: key tiles of BN from each interval's start; (ii, ks) -> the next tile */
__device__ __forceinline__ void next_tile(const int2 *iv, int i1, int BN, int &ii, int &ks) {
    ks += BN;
    if (ks >= iv[ii].y) {
        ii++;
        ks = ii < i1 ? iv[ii].x : 0;
    }
}

/* ---- bf16 forward ---- */

struct FwdArgs {
    bf16_t *out;
    float *lse;
    const bf16_t *q, *k, *v;
    const int4 *mask;
    const int *toff;  /* the query blocks' intervals (of BM queries) */
    const int2 *tiv;
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
    const int qt = gridDim.y - 1 - blockIdx.y, h = blockIdx.x, kvh = h / a.group, T = a.T;
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
                any = any || max(ks, r.x) < min(ke, r.y) || max(ks, r.z) <= min(ke - 1, t);
                full = full && ((ks >= r.x && ke <= r.y) || (ks >= r.z && ke - 1 <= t));
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

/* ---- bf16 backward ---- */

struct BwdArgs {
    float *dq, *dk, *dv;
    const bf16_t *q, *k, *v, *dout;
    const float *lse, *D;
    const int4 *mask;
    const int *toff; /* 64-query blocks' intervals */
    const int2 *tiv;
    const int *koff, *klist; /* 64-key blocks' query blocks */
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
    const int qt = gridDim.y - 1 - blockIdx.y, h = blockIdx.x, kvh = h / a.group, T = a.T; /* as the forward's */
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
            any = any || max(ks, r.x) < min(ke, r.y) || max(ks, r.z) <= min(ke - 1, t);
            full = full && ((ks >= r.x && ke <= r.y) || (ks >= r.z && ke - 1 <= t));
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

/* dk, dv for a block of 64 keys of kv head kvh: 4 warps of 16 keys, over the group's heads and the listed 64-query
 * blocks, QC queries at a time */
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
    const int kt = blockIdx.y, kvh = blockIdx.x, T = a.T; /* kv heads fastest, the first (causally busiest) keys first */
    const int ldq = a.NH * HS, ldk = a.NKV * HS, k0 = kt * BK, wr = warp * 16;

    for (int c = tid; c < BK * CH; c += NTH) {
        int r = c / CH, cc = c % CH, j = k0 + r;
        size_t o = (size_t)(j < T ? j : 0) * ldk + (size_t)kvh * HS + cc * 8;
        cp_async16(sK + r * LDS + cc * 8, a.k + o, j < T);
        cp_async16(sV + r * LDS + cc * 8, a.v + o, j < T);
    }
    cp_async_commit();
    const int l0 = a.koff[kt], nl = a.koff[kt + 1] - l0, npairs = a.group * nl;
    auto load_q = [&](int buf, int pi) {
        int h = kvh * a.group + pi / nl, t0 = a.klist[l0 + pi % nl] * BQ;
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

    if (npairs > 0) load_q(0, 0);
    cp_async_commit();
    for (int pi = 0; pi < npairs; pi++) {
        if (pi + 1 < npairs) {
            load_q((pi + 1) & 1, pi + 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const int buf = pi & 1, t0 = a.klist[l0 + pi % nl] * BQ;
        const bf16_t *Qb = sQ + buf * BQ * LDS, *Ob = sO + buf * BQ * LDS;
        const int4 *Mb = sM + buf * BQ;
        const float *Lb = sL + buf * BQ, *Db = sD + buf * BQ;
#pragma unroll 1
        for (int qc = 0; qc < BQ / QC; qc++) {
            /* does any of this chunk's queries see any of the warp's 16 keys? */
            bool any = false;
            for (int i = lane; i < QC; i += 32) {
                int t = t0 + qc * QC + i, ka = k0 + wr, kb = ka + 15;
                int4 r = Mb[qc * QC + i];
                any = any || (t < T && (max(ka, r.x) < min(kb + 1, r.y) || max(ka, r.z) <= min(kb, t)));
            }
            if (!__any_sync(0xffffffffu, any)) continue;
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
                        bool vis = t < T && sees(r, t, kr[hf]);
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
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        int j = kr[hf];
        if (j >= T) continue;
        size_t o = (size_t)j * ldk + (size_t)kvh * HS + 2 * tq;
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            *(float2 *)(a.dk + o + dt * 8) = make_float2(gk[dt][2 * hf] * a.scale, gk[dt][2 * hf + 1] * a.scale);
            *(float2 *)(a.dv + o + dt * 8) = make_float2(gv[dt][2 * hf], gv[dt][2 * hf + 1]);
        }
    }
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

/* ---- float32: a warp per row ---- */

__device__ __forceinline__ float warp_sum(float x) { /* butterfly: every lane ends with the same bits (a + b = b + a) */
#pragma unroll
    for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

template <int NPL> __device__ __forceinline__ float wdot(const float (&x)[NPL], const float *y, int lane) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < NPL; i++) s = fmaf(x[i], y[lane + 32 * i], s);
    return warp_sum(s);
}

struct F32Args {
    float *out, *lse, *dq, *dk, *dv;
    const float *q, *k, *v, *dout, *lse_in, *D;
    const int4 *mask;
    const int *koff, *klist;
    int T, NH, NKV, group;
    float scale;
};

/* the keys token t sees: [m.x, m.y), then [m.z, t] less the first range (they never overlap in the engine's rows) */
#define FOR_VISIBLE_KEYS(m, t, j)                                                                                      \
    for (int pass_ = 0; pass_ < 2; pass_++)                                                                            \
        for (int j = pass_ ? (m).z : (m).x, e_ = pass_ ? (t) + 1 : (m).y; j < e_; j++)                                 \
            if (pass_ && j >= (m).x && j < (m).y) {                                                                    \
            } else

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

static int check_shape(const PcAttnPlan *p, int NH, int NKV, int HS, PcDtype dt, const char *who) {
    char why[160];
    if (!p || NH < 1 || NKV < 1 || NH % NKV || (HS != 64 && HS != 128) || (dt != PC_F32 && dt != PC_BF16)) {
        snprintf(why, sizeof why, "plan %s, NH %d, NKV %d, HS %d, dtype %d (NH a multiple of NKV; HS 64 or 128)",
                 p ? "given" : "NULL", NH, NKV, HS, (int)dt);
        return pc_fail(__FILE__, __LINE__, who, why);
    }
    return 0;
}

/* every pointer 16-byte aligned (cp.async and the vector loads move 16 bytes; cudaMalloc's are 256-aligned) */
static int check_aligned(const void *const *ptrs, int n, const char *who) {
    for (int i = 0; i < n; i++)
        if ((uintptr_t)ptrs[i] % 16) {
            char why[96];
            snprintf(why, sizeof why, "pointer %d (%p) is not 16-byte aligned", i, ptrs[i]);
            return pc_fail(__FILE__, __LINE__, who, why);
        }
    return 0;
}

/* raises a kernel's dynamic shared memory limit (at every launch: a microsecond of host time, and right after a
 * device reset too) */
template <typename K> static int smem_limit(K kernel, size_t bytes) {
    CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    return 0;
}

template <int HS, int MT, int BN> static int launch_fwd(FwdArgs a, const PcAttnPlan *p) {
    typedef FwdCfg<HS, MT, BN> C;
    if (smem_limit(fwd_bf16<HS, MT, BN>, C::smem)) return -1;
    a.toff = C::BM == 128 ? p->off128 : p->off64;
    a.tiv = C::BM == 128 ? p->iv128 : p->iv64;
    dim3 grid(a.NH, C::BM == 128 ? p->nq128 : p->nq64);
    PC_LAUNCH(grid, 128, C::smem, fwd_bf16<HS, MT, BN>)(a);
    LAUNCH_TRY();
    return 0;
}

template <int HS, int BN, int QC> static int launch_bwd(BwdArgs a, const PcAttnPlan *p) {
    if (smem_limit(dq_bf16<HS, BN>, DqCfg<HS, BN>::smem) || smem_limit(dkv_bf16<HS, QC>, DkvCfg<HS>::smem)) return -1;
    PC_LAUNCH(dim3(a.NH, p->nq64), 128, (DqCfg<HS, BN>::smem), dq_bf16<HS, BN>)(a);
    LAUNCH_TRY();
    PC_LAUNCH(dim3(a.NKV, p->nk64), 128, DkvCfg<HS>::smem, dkv_bf16<HS, QC>)(a);
    LAUNCH_TRY();
    return 0;
}

static int g_variant[2]; /* the bf16 forward's tiling for HS 64 and 128 (pc_attention_bf16_variant) */

static unsigned warps_grid(long rows) { return (unsigned)((rows + 3) / 4); }

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
    if (HS == 64) return var == 1 ? launch_fwd<64, 1, 64>(a, p) : var == 2 ? launch_fwd<64, 2, 32>(a, p) : launch_fwd<64, 2, 64>(a, p);
    return var == 1 ? launch_fwd<128, 1, 64>(a, p) : var == 2 ? launch_fwd<128, 2, 16>(a, p) : launch_fwd<128, 2, 32>(a, p);
}

/* the bf16 forward's tilings by head size: queries per warp (16 MT) x keys per tile (BN), 4 warps a CTA */
static const char *const g_variant_names[2][3] = {{"32 queries a warp x 64 keys a tile (MT 2, BN 64)", "16 x 64 (MT 1, BN 64)",
                                                   "32 x 32 (MT 2, BN 32)"},
                                                  {"32 x 32 (MT 2, BN 32)", "16 x 64 (MT 1, BN 64)",
                                                   "32 x 16 (MT 2, BN 16)"}};

extern "C" const char *pc_attention_bf16_variant(int HS, int v) {
    if ((HS != 64 && HS != 128) || v < 0 || v > 2) return NULL;
    g_variant[HS == 128] = v;
    return g_variant_names[HS == 128][v];
}

extern "C" size_t pc_attention_work_bytes(int T, int NH) { return sizeof(float) * (size_t)(T > 0 ? T : 1) * NH; }

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
    a.dq = dq, a.dk = dk, a.dv = dv, a.q = (const bf16_t *)q, a.k = (const bf16_t *)k, a.v = (const bf16_t *)v;
    a.dout = (const bf16_t *)dout, a.lse = lse, a.D = D, a.mask = p->mask, a.toff = p->off64, a.tiv = p->iv64;
    a.koff = p->koff, a.klist = p->klist, a.T = p->T, a.NH = NH, a.NKV = NKV, a.group = NH / NKV;
    a.sc2 = scale * LOG2E, a.scale = scale;
    return HS == 64 ? launch_bwd<64, 64, 64>(a, p) : launch_bwd<128, 64, 32>(a, p);
}
