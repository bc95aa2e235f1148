/* convert.cu: float32 <-> bf16 and random fills (convert.h). Memory-bound:
 * 8 elements a thread with 16-byte loads and stores where the pointers
 * allow, element by element otherwise. */
#include "cuda/check.cuh"
#include "cuda/convert.h"

#define CONV_THREADS 256
#define CONV_MAX_BLOCKS 8192 /* grid-stride beyond */

static unsigned blocks_for(size_t items) {
    size_t b = (items + CONV_THREADS - 1) / CONV_THREADS;
    return (unsigned)(b < 1 ? 1 : b > CONV_MAX_BLOCKS ? CONV_MAX_BLOCKS : b);
}

/* groups of 8: x 2 float4 -> y one uint4; then the tail [8 * ng, n) one by one */
__global__ void f32_to_bf16_kernel(uint16_t *y, const float *x, size_t n, int vec) {
    size_t stride = (size_t)gridDim.x * blockDim.x, i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t ng = vec ? n / 8 : 0;
    for (size_t g = i0; g < ng; g += stride) {
        float4 a = reinterpret_cast<const float4 *>(x)[2 * g], b = reinterpret_cast<const float4 *>(x)[2 * g + 1];
        uint4 o;
        o.x = (uint32_t)pc_bf16_round(a.x) | (uint32_t)pc_bf16_round(a.y) << 16;
        o.y = (uint32_t)pc_bf16_round(a.z) | (uint32_t)pc_bf16_round(a.w) << 16;
        o.z = (uint32_t)pc_bf16_round(b.x) | (uint32_t)pc_bf16_round(b.y) << 16;
        o.w = (uint32_t)pc_bf16_round(b.z) | (uint32_t)pc_bf16_round(b.w) << 16;
        reinterpret_cast<uint4 *>(y)[g] = o;
    }
    for (size_t i = 8 * ng + i0; i < n; i += stride) y[i] = pc_bf16_round(x[i]);
}

__global__ void bf16_to_f32_kernel(float *y, const uint16_t *x, size_t n, int vec) {
    size_t stride = (size_t)gridDim.x * blockDim.x, i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t ng = vec ? n / 8 : 0;
    for (size_t g = i0; g < ng; g += stride) {
        uint4 v = reinterpret_cast<const uint4 *>(x)[g];
        float4 a, b;
        a.x = __uint_as_float(v.x << 16), a.y = __uint_as_float(v.x & 0xffff0000u);
        a.z = __uint_as_float(v.y << 16), a.w = __uint_as_float(v.y & 0xffff0000u);
        b.x = __uint_as_float(v.z << 16), b.y = __uint_as_float(v.z & 0xffff0000u);
        b.z = __uint_as_float(v.w << 16), b.w = __uint_as_float(v.w & 0xffff0000u);
        reinterpret_cast<float4 *>(y)[2 * g] = a, reinterpret_cast<float4 *>(y)[2 * g + 1] = b;
    }
    for (size_t i = 8 * ng + i0; i < n; i += stride) y[i] = pc_bf16_f32(x[i]);
}

extern "C" int pc_f32_to_bf16(PcBf16 *y, const float *x, size_t n) {
    if (!n) return 0;
    int vec = pc_aligned(x, 16) && pc_aligned(y, 16);
    f32_to_bf16_kernel<<<blocks_for(vec ? n / 8 + 1 : n), CONV_THREADS, 0, pc_cuda_stream()>>>(y, x, n, vec);
    LAUNCH_TRY();
    return 0;
}

extern "C" int pc_bf16_to_f32(float *y, const PcBf16 *x, size_t n) {
    if (!n) return 0;
    int vec = pc_aligned(x, 16) && pc_aligned(y, 16);
    bf16_to_f32_kernel<<<blocks_for(vec ? n / 8 + 1 : n), CONV_THREADS, 0, pc_cuda_stream()>>>(y, x, n, vec);
    LAUNCH_TRY();
    return 0;
}

/* splitmix64 of the seed and the index: 24 random bits -> [0, 1) */
static __device__ __forceinline__ float hash_unit(uint64_t seed, uint64_t i) {
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

template <typename T> __global__ void fill_kernel(T *p, size_t n, uint64_t seed, float lo, float hi) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        pc_st<T>(p, (long)i, lo + (hi - lo) * hash_unit(seed, i));
}

extern "C" int pc_fill_uniform(void *p, PcDtype t, size_t n, uint64_t seed, float lo, float hi) {
    ARG_TRY(t == PC_F32 || t == PC_BF16, "element type");
    if (!n) return 0;
    if (t == PC_F32) fill_kernel<float><<<blocks_for(n), CONV_THREADS, 0, pc_cuda_stream()>>>((float *)p, n, seed, lo, hi);
    else fill_kernel<uint16_t><<<blocks_for(n), CONV_THREADS, 0, pc_cuda_stream()>>>((uint16_t *)p, n, seed, lo, hi);
    LAUNCH_TRY();
    return 0;
}
