/* attention_internal.cuh: what the files of the fused attention share (attention.cu: the forward,
 * attention_bwd.cu: the backward, attention_plan.cu: the plan): the plan's layout, the device helpers and the
 * launch checks. The design is described at the top of attention.cu. Not for C. */
#ifndef PPA_CUDA_ATTENTION_INTERNAL_CUH
#define PPA_CUDA_ATTENTION_INTERNAL_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>

#include "cuda/attention.h"
#include "cuda/attention_ptx.cuh"
#include "cuda/attn_sched.h"
#include "cuda/check.cuh"

typedef __nv_bfloat16 bf16_t;

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* ---- the plan (attn_sched.h: what each table holds) ---- */

enum { QB = ATTN_QB, KB = ATTN_KB }; /* the plan's query and key blocks (the forward also uses 128-query blocks) */

struct PcAttnPlan {
    int T, window, nq64, nq128, nk64, nitems;
    long long pairs;
    int4 *mask;          /* [T] (pa, pb, sa, 0): token t sees [pa, pb) and [sa, t] */
    int *off64, *off128; /* [n + 1] offsets of each query block's intervals */
    int2 *iv64, *iv128;  /* the intervals [x, y) */
    int *qord64, *qord128; /* the query blocks, most keys first */
    int *koff, *klist;   /* [nk64 + 1], the 64-query blocks seeing each 64-key block */
    int *items;          /* [nitems][3] the dk/dv items: key block, first klist index, count; most work first */
    int *kioff, *kitems; /* [nk64 + 1], each key block's items in list order */
    void *dev;           /* the one allocation holding them */
};

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

/* ---- launch checks ---- */

static inline int check_shape(const PcAttnPlan *p, int NH, int NKV, int HS, PcDtype dt, const char *who) {
    char why[160];
    if (!p || NH < 1 || NKV < 1 || NH % NKV || (HS != 64 && HS != 128) || (dt != PC_F32 && dt != PC_BF16)) {
        snprintf(why, sizeof why, "plan %s, NH %d, NKV %d, HS %d, dtype %d (NH a multiple of NKV; HS 64 or 128)",
                 p ? "given" : "NULL", NH, NKV, HS, (int)dt);
        return pc_fail(__FILE__, __LINE__, who, why);
    }
    return 0;
}

/* every pointer 16-byte aligned (cp.async and the vector loads move 16 bytes; cudaMalloc's are 256-aligned) */
static inline int check_aligned(const void *const *ptrs, int n, const char *who) {
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
template <typename K> static inline int smem_limit(K kernel, size_t bytes) {
    CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    return 0;
}

static inline unsigned warps_grid(long rows) { return (unsigned)((rows + 3) / 4); }

#endif
