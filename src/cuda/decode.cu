/* decode.cu: the key/value cache's rows and one query's attention over its cache (decode.h). A decode step is
 * memory-bound (each query reads its whole cache once): one block a (query, head), the scores in shared memory,
 * then the probabilities against the values with one thread a head dimension. */
#include "cuda/check.cuh"
#include "cuda/decode.h"

#define DEC_THREADS 128
#define DEC_MAX_LEN 8192 /* scores in shared memory: 32 KiB */

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

/* a block's sum or max of v (every thread gets it); red: [DEC_THREADS / 32] shared */
__device__ __forceinline__ float block_reduce(float v, float *red, int is_max) {
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (!lane) red[warp] = v;
    __syncthreads();
    float r = red[0];
    for (int i = 1; i < DEC_THREADS / 32; i++) r = is_max ? fmaxf(r, red[i]) : r + red[i]; /* in order: deterministic */
    return r;
}

template <typename T>
__global__ void decode_attention_kernel(T *out, const float *q, const T *kc, const T *vc, const int *slot,
                                        const int *len, int max_len, int NH, int NKV, int HS) {
    __shared__ float p[DEC_MAX_LEN];
    __shared__ float qs[128];
    __shared__ float red[DEC_THREADS / 32];
    int t = blockIdx.x / NH, h = blockIdx.x % NH, g = h / (NH / NKV), n = len[t], KD = NKV * HS;
    const T *K = kc + (size_t)slot[t] * max_len * KD + (size_t)g * HS, *V = vc + (size_t)slot[t] * max_len * KD + (size_t)g * HS;
    for (int d = threadIdx.x; d < HS; d += blockDim.x) /* the query as the cache's products see it */
    {
        float v = q[(size_t)t * NH * HS + h * HS + d];
        qs[d] = sizeof(T) == 2 ? pc_bf16_f32(pc_bf16_round(v)) : v;
    }
    __syncthreads();
    float scale = rsqrtf((float)HS), m = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float s = 0.0f;
        for (int d = 0; d < HS; d++) s += qs[d] * pc_ld<T>(K, (long)j * KD + d);
        p[j] = s * scale;
        m = fmaxf(m, p[j]);
    }
    m = block_reduce(m, red, 1);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float e = __expf(p[j] - m);
        p[j] = e;
        sum += e;
    }
    sum = block_reduce(sum, red, 0);
    float inv = 1.0f / sum;
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) /* normalised, and rounded as the forward's P is for P V */
        p[j] = sizeof(T) == 2 ? pc_bf16_f32(pc_bf16_round(p[j] * inv)) : p[j] * inv;
    __syncthreads();
    for (int d = threadIdx.x; d < HS; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) acc += p[j] * pc_ld<T>(V, (long)j * KD + d);
        pc_st<T>(out, (long)t * NH * HS + h * HS + d, acc);
    }
}

extern "C" int pc_decode_attention(void *out, const float *q, const void *kc, const void *vc, PcDtype ct,
                                   const int *slot, const int *len, int n, int max_len, int NH, int NKV, int HS) {
    ARG_TRY(ct == PC_F32 || ct == PC_BF16, "element type");
    ARG_TRY(n >= 0 && max_len >= 1 && max_len <= DEC_MAX_LEN && NKV >= 1 && NH % NKV == 0 && HS >= 1 && HS <= 128,
            "shape (max_len <= 8192, head size <= 128, NH a multiple of NKV)");
    if (!n) return 0;
    unsigned blocks = (unsigned)n * (unsigned)NH;
    if (ct == PC_F32)
        decode_attention_kernel<float><<<blocks, DEC_THREADS, 0, pc_cuda_stream()>>>(
            (float *)out, q, (const float *)kc, (const float *)vc, slot, len, max_len, NH, NKV, HS);
    else
        decode_attention_kernel<uint16_t><<<blocks, DEC_THREADS, 0, pc_cuda_stream()>>>(
            (uint16_t *)out, q, (const uint16_t *)kc, (const uint16_t *)vc, slot, len, max_len, NH, NKV, HS);
    LAUNCH_TRY();
    return 0;
}
