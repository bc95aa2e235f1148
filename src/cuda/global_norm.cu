/* global_norm.cu: the gradients' L2 norm (global_norm.h). */
#include <math.h>

#include "cuda/check.cuh"
#include "cuda/global_norm.h"

#define GN_THREADS 256
#define GN_BLOCKS 1024 /* at most; the partition depends on n only */
#define GN_MIN 8192    /* elements per block at least */

/* part[b] = sum of squares of g[b * chunk, min((b + 1) * chunk, n)); chunk a multiple of 4 */
__global__ void sumsq_partial_kernel(double *part, const float *g, size_t n, size_t chunk, int vec) {
    __shared__ double red[32];
    size_t lo = (size_t)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
    double acc = 0.0;
    if (vec) {
        size_t q1 = lo / 4 + (hi - lo) / 4;
        for (size_t q = lo / 4 + threadIdx.x; q < q1; q += GN_THREADS) {
            float4 v = reinterpret_cast<const float4 *>(g)[q];
            acc += (double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z + (double)v.w * v.w;
        }
        for (size_t i = 4 * q1 + threadIdx.x; i < hi; i += GN_THREADS) acc += (double)g[i] * g[i];
    } else {
        for (size_t i = lo + threadIdx.x; i < hi; i += GN_THREADS) acc += (double)g[i] * g[i];
    }
    acc = pc_block_sum(acc, red);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

__global__ void sumsq_final_kernel(double *out, const double *part, int nb) {
    __shared__ double red[32];
    double acc = 0.0;
    for (int b = threadIdx.x; b < nb; b += GN_THREADS) acc += part[b];
    acc = pc_block_sum(acc, red);
    if (threadIdx.x == 0) *out = acc;
}

extern "C" int pc_grad_sumsq(double *sumsq_device, const float *g, size_t n) {
    size_t nb = (n + GN_MIN - 1) / GN_MIN;
    nb = nb < 1 ? 1 : nb > GN_BLOCKS ? GN_BLOCKS : nb;
    size_t chunk = (n + nb - 1) / nb;
    chunk = (chunk + 3) / 4 * 4;
    nb = n ? (n + chunk - 1) / chunk : 1;
    double *part = (double *)pc_scratch(sizeof(double) * nb);
    if (!part) return -1;
    sumsq_partial_kernel<<<(unsigned)nb, GN_THREADS, 0, pc_cuda_stream()>>>(part, g, n, chunk, pc_aligned(g, 16));
    LAUNCH_TRY();
    sumsq_final_kernel<<<1, GN_THREADS, 0, pc_cuda_stream()>>>(sumsq_device, part, (int)nb);
    LAUNCH_TRY();
    return 0;
}

extern "C" int pc_grad_norm(double *norm, const float *g, size_t n) {
    /* the result goes through the scratch's tail, past the partial sums */
    size_t nb = GN_BLOCKS + 1;
    double *part = (double *)pc_scratch(sizeof(double) * (nb + 1));
    if (!part) return -1;
    double *out = part + nb;
    if (pc_grad_sumsq(out, g, n)) return -1;
    double ss;
    if (pc_download(&ss, out, sizeof ss)) return -1;
    *norm = sqrt(ss);
    return 0;
}
