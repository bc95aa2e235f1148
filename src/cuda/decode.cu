/* decode.cu: the key/value cache's rows and one query's attention over its cache (decode.h). A decode step is
 * memory-bound (each query reads its whole cache once), so the cache is read once for all the query heads of its
 * kv head, 16 bytes a load, and a long cache is split over blocks (flash-decoding) whose partial results a second
 * kernel merges in a fixed order. */
#include "cuda/check.cuh"
#include "cuda/decode.h"

#define DEC_THREADS 128
#define DEC_GMAX 8          /* query heads a block */
#define DEC_MAX_LEN (1 << 17)

template <typename T>
__global__ void kv_store_kernel(T *cache, int max_len, int D, const float *x, int ldx, const int *slot, const int *pos,
                                int n) {
    int t = blockIdx.x;
    if (t >= n) return;
    T *row = cache + ((size_t)slot[t] * max_len + pos[t]) * D;
    for (int i = threadIdx.x; i < D; i += blockDim.x) pc_st<T>(row, i, x[(size_t)t * ldx + i]);
}

extern "C" int pc_kv_store(void *cache, PcDtype ct, int max_len, int D, const float *x, int ldx, const int *slot,
                           const int *pos, int n) {
    ARG_TRY(ct == PC_F32 || ct == PC_BF16, "element type");
    ARG_TRY(max_len >= 1 && D >= 1 && ldx >= D && n >= 0, "shape");
    if (!n) return 0;
    if (ct == PC_F32) kv_store_kernel<float><<<n, DEC_THREADS, 0, pc_cuda_stream()>>>((float *)cache, max_len, D, x, ldx, slot, pos, n);
    else kv_store_kernel<uint16_t><<<n, DEC_THREADS, 0, pc_cuda_stream()>>>((uint16_t *)cache, max_len, D, x, ldx, slot, pos, n);
    LAUNCH_TRY();
    return 0;
}

static int n_split(int bound) { return (bound + PC_DECODE_SPLIT - 1) / PC_DECODE_SPLIT; }

extern "C" size_t pc_decode_work(int n, int NH, int HS, int bound) {
    return sizeof(float) * (size_t)(n > 0 ? n : 1) * (size_t)NH * (size_t)n_split(bound > 0 ? bound : 1) * (HS + 2);
}

/* 16 bytes of a row as floats: 8 bf16 or 4 float32 */
static __device__ __forceinline__ void load16(const uint16_t *p, float *o) {
    uint4 u = *(const uint4 *)p;
    uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++)
        o[2 * i] = __uint_as_float(w[i] << 16), o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
}
static __device__ __forceinline__ void load16(const float *p, float *o) {
    float4 u = *(const float4 *)p;
    o[0] = u.x, o[1] = u.y, o[2] = u.z, o[3] = u.w;
}

/* block (t, kv head g, query-head group gi) x split sp: part[t, h, sp, :] = (sum p v [HS], m, l) of the split's keys */
template <typename T>
__global__ void __launch_bounds__(DEC_THREADS)
    decode_split_kernel(float *part, const float *q, const T *kc, const T *vc, const int *slot, const int *len,
                        const int *pslot, const int *plen, int max_len, int NH, int NKV, int HS, int nsplit,
                        int ngroup) {
    constexpr int VEC = 16 / sizeof(T);
    __shared__ float qs[DEC_GMAX][128];
    __shared__ float sc[DEC_GMAX][PC_DECODE_SPLIT];
    __shared__ float red[DEC_THREADS * VEC * DEC_GMAX];
    __shared__ float ms[DEC_GMAX], ls[DEC_GMAX];
    const int tid = threadIdx.x, b = blockIdx.x, sp = blockIdx.y;
    const int t = b / (NKV * ngroup), g = b % (NKV * ngroup) / ngroup, gi = b % ngroup;
    const int L = len[t], j0 = sp * PC_DECODE_SPLIT;
    if (j0 >= L) return; /* past this sequence's length: the merge reads its own splits only */
    const int nj = min(L - j0, PC_DECODE_SPLIT), G = NH / NKV, h0 = g * G + gi * DEC_GMAX;
    const int gh = min(DEC_GMAX, G - gi * DEC_GMAX);
    const int s = slot[t], ps = pslot ? pslot[s] : s, pl = plen ? plen[s] : 0;
    const size_t KD = (size_t)NKV * HS;
    const T *K0 = kc + (size_t)g * HS, *V0 = vc + (size_t)g * HS;
    for (int i = tid; i < gh * HS; i += DEC_THREADS) { /* the queries as the cache's products see them */
        float v = q[(size_t)t * NH * HS + (size_t)(h0 + i / HS) * HS + i % HS];
        qs[i / HS][i % HS] = sizeof(T) == 2 ? pc_bf16_f32(pc_bf16_round(v)) : v;
    }
    __syncthreads();
    const float scale = rsqrtf((float)HS);
    for (int jj = tid; jj < nj; jj += DEC_THREADS) { /* scores: a key a thread, for every query head */
        const int j = j0 + jj;
        const T *kr = K0 + ((size_t)(j < pl ? ps : s) * max_len + j) * KD;
        float acc[DEC_GMAX];
#pragma unroll
        for (int u = 0; u < DEC_GMAX; u++) acc[u] = 0.0f;
        for (int d0 = 0; d0 < HS; d0 += VEC) {
            float kv[VEC];
            load16(kr + d0, kv);
#pragma unroll
            for (int u = 0; u < DEC_GMAX; u++)
                if (u < gh)
#pragma unroll
                    for (int e = 0; e < VEC; e++) acc[u] += qs[u][d0 + e] * kv[e];
        }
#pragma unroll
        for (int u = 0; u < DEC_GMAX; u++)
            if (u < gh) sc[u][jj] = acc[u] * scale;
    }
    __syncthreads();
    const int warp = tid >> 5, lane = tid & 31;
    for (int u = warp; u < gh; u += DEC_THREADS / 32) { /* a head a warp: the split's max, its weights and their sum */
        float m = -INFINITY, l = 0.0f;
        for (int jj = lane; jj < nj; jj += 32) m = fmaxf(m, sc[u][jj]);
        for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        for (int jj = lane; jj < nj; jj += 32) {
            float p = __expf(sc[u][jj] - m);
            if (sizeof(T) == 2) p = pc_bf16_f32(pc_bf16_round(p)); /* rounded as the forward's P before P V */
            sc[u][jj] = p, l += p;
        }
        for (int o = 16; o; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
        if (!lane) ms[u] = m, ls[u] = l;
    }
    __syncthreads();
    /* P V: VEC dimensions of the row a thread, the split's keys strided over KL threads, then summed in order */
    const int DG = HS / VEC, KL = DEC_THREADS / DG, dg = tid % DG, kl = tid / DG;
    float acc[DEC_GMAX][VEC];
#pragma unroll
    for (int u = 0; u < DEC_GMAX; u++)
#pragma unroll
        for (int e = 0; e < VEC; e++) acc[u][e] = 0.0f;
    for (int jj = kl; jj < nj; jj += KL) {
        const int j = j0 + jj;
        float vv[VEC];
        load16(V0 + ((size_t)(j < pl ? ps : s) * max_len + j) * KD + dg * VEC, vv);
#pragma unroll
        for (int u = 0; u < DEC_GMAX; u++)
            if (u < gh) {
                const float p = sc[u][jj];
#pragma unroll
                for (int e = 0; e < VEC; e++) acc[u][e] += p * vv[e];
            }
    }
#pragma unroll
    for (int u = 0; u < DEC_GMAX; u++)
        if (u < gh)
#pragma unroll
            for (int e = 0; e < VEC; e++) red[((size_t)kl * DEC_GMAX + u) * HS + dg * VEC + e] = acc[u][e];
    __syncthreads();
    for (int i = tid; i < gh * HS; i += DEC_THREADS) {
        const int u = i / HS, d = i % HS;
        float o = 0.0f;
        for (int k = 0; k < KL; k++) o += red[((size_t)k * DEC_GMAX + u) * HS + d];
        float *P = part + (((size_t)t * NH + h0 + u) * nsplit + sp) * (HS + 2);
        P[d] = o;
        if (d == 0) P[HS] = ms[u], P[HS + 1] = ls[u];
    }
}

/* out[t, h, :] from the splits' partial results, in split order */
template <typename T>
__global__ void decode_merge_kernel(T *out, const float *part, const int *len, int NH, int HS, int nsplit) {
    const int t = blockIdx.x / NH, h = blockIdx.x % NH, ns = (len[t] + PC_DECODE_SPLIT - 1) / PC_DECODE_SPLIT;
    const float *P = part + ((size_t)t * NH + h) * nsplit * (HS + 2);
    float M = -INFINITY, L = 0.0f;
    for (int s = 0; s < ns; s++) M = fmaxf(M, P[(size_t)s * (HS + 2) + HS]);
    for (int s = 0; s < ns; s++) L += P[(size_t)s * (HS + 2) + HS + 1] * __expf(P[(size_t)s * (HS + 2) + HS] - M);
    for (int d = threadIdx.x; d < HS; d += blockDim.x) {
        float o = 0.0f;
        for (int s = 0; s < ns; s++) o += P[(size_t)s * (HS + 2) + d] * __expf(P[(size_t)s * (HS + 2) + HS] - M);
        pc_st<T>(out, (long)t * NH * HS + (long)h * HS + d, o / L);
    }
}

extern "C" int pc_decode_attention(void *out, const float *q, const void *kc, const void *vc, PcDtype ct,
                                   const int *slot, const int *len, const int *pslot, const int *plen, int n,
                                   int max_len, int bound, int NH, int NKV, int HS, void *work) {
    ARG_TRY(ct == PC_F32 || ct == PC_BF16, "element type");
    ARG_TRY(n >= 0 && max_len >= 1 && max_len <= DEC_MAX_LEN && bound >= 1 && bound <= max_len && NKV >= 1 &&
                NH % NKV == 0 && (HS == 64 || HS == 128),
            "shape (1 <= bound <= max_len <= 131072, head size 64 or 128, NH a multiple of NKV)");
    if (!n) return 0;
    const int ns = n_split(bound), ngroup = (NH / NKV + DEC_GMAX - 1) / DEC_GMAX;
    dim3 grid((unsigned)n * (unsigned)NKV * (unsigned)ngroup, (unsigned)ns);
    float *part = (float *)work;
    if (ct == PC_F32) {
        decode_split_kernel<float><<<grid, DEC_THREADS, 0, pc_cuda_stream()>>>(
            part, q, (const float *)kc, (const float *)vc, slot, len, pslot, plen, max_len, NH, NKV, HS, ns, ngroup);
        LAUNCH_TRY();
        decode_merge_kernel<float><<<(unsigned)n * NH, 128, 0, pc_cuda_stream()>>>((float *)out, part, len, NH, HS, ns);
    } else {
        decode_split_kernel<uint16_t><<<grid, DEC_THREADS, 0, pc_cuda_stream()>>>(
            part, q, (const uint16_t *)kc, (const uint16_t *)vc, slot, len, pslot, plen, max_len, NH, NKV, HS, ns,
            ngroup);
        LAUNCH_TRY();
        decode_merge_kernel<uint16_t><<<(unsigned)n * NH, 128, 0, pc_cuda_stream()>>>((uint16_t *)out, part, len, NH,
                                                                                    HS, ns);
    }
    LAUNCH_TRY();
    return 0;
}

__global__ void ids_move_kernel(int *dst, const int *dst_at, const int *src, const int *src_at, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[dst_at ? dst_at[i] : i] = src[src_at ? src_at[i] : i];
}

extern "C" int pc_ids_move(int *dst, const int *dst_at, const int *src, const int *src_at, int n) {
    ARG_TRY(n >= 0, "n >= 0");
    if (!n) return 0;
    ids_move_kernel<<<(n + 255) / 256, 256, 0, pc_cuda_stream()>>>(dst, dst_at, src, src_at, n);
    LAUNCH_TRY();
    return 0;
}
