/* lora.cu: LoRA's dropout masks (lora.h). Memory-bound, one element a thread, grid-stride. */
#include "cuda/check.cuh"
#include "cuda/lora.h"

#define LORA_THREADS 256
#define LORA_MAX_BLOCKS 8192

/* lora.c's keep(): the same integer arithmetic, the same double comparison */
static __device__ __forceinline__ float keep(uint64_t key, int target, uint64_t at, double p, float scale) {
    uint64_t z = key ^ ((uint64_t)target << 48) ^ at * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double u = (double)(z >> 11) * 0x1.0p-53;
    return u < p ? 0.0f : scale;
}

__global__ void lora_dropout_kernel(float *y, float beta, const float *x, size_t n, uint64_t key, int target,
                                    double p, float scale) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i] * keep(key, target, (uint64_t)i, p, scale);
        y[i] = beta != 0.0f ? y[i] + v : v;
    }
}

extern "C" int pc_lora_dropout(float *y, float beta, const float *x, int T, int in, uint64_t key, int target,
                               double p) {
    ARG_TRY(T >= 0 && in >= 0 && target >= 0 && p >= 0.0 && p < 1.0, "shape or probability");
    ARG_TRY(beta == 0.0f || beta == 1.0f, "beta (0 or 1)");
    size_t n = (size_t)T * (size_t)in;
    if (!n) return 0;
    size_t b = (n + LORA_THREADS - 1) / LORA_THREADS;
    unsigned blocks = (unsigned)(b > LORA_MAX_BLOCKS ? LORA_MAX_BLOCKS : b);
    float scale = (float)(1.0 / (1.0 - p));
    lora_dropout_kernel<<<blocks, LORA_THREADS, 0, pc_cuda_stream()>>>(y, beta, x, n, key, target, p, scale);
    LAUNCH_TRY();
    return 0;
}
