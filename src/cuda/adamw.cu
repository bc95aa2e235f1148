/* adamw.cu: the AdamW step (adamw.h). Memory-bound: p, g, m, v read, p, m,
 * v (and the bf16 copy) written once; 4 elements a thread with 16-byte
 * accesses when every buffer allows. */
#include <math.h>

#include "cuda/adamw.h"
#include "cuda/check.cuh"

#define ADAMW_THREADS 256

typedef struct {
    float b1, b2, step_size, sq_bc2, eps, shrink, scale;
} Hyper;

/* 1 when base + i lies in a decay span (binary search over the sorted spans); decay NULL: everywhere */
static __device__ __forceinline__ bool decays(const PcSpan *decay, int nd, uint64_t at) {
    if (!decay) return true;
    int lo = 0, hi = nd; /* the first span whose hi > at */
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (decay[mid].hi <= at) lo = mid + 1;
        else hi = mid;
    }
    return lo < nd && decay[lo].lo <= at;
}

/* the CPU's adamw_range body, operation for operation */
static __device__ __forceinline__ float adamw_one(float &p, float g, float &m, float &v, bool on, const Hyper &h) {
    float gg = h.scale == 1.0f ? g : g * h.scale, pp = p * (on ? h.shrink : 1.0f);
    float mm = h.b1 * m + (1.0f - h.b1) * gg;
    float vv = h.b2 * v + (1.0f - h.b2) * gg * gg;
    m = mm, v = vv;
    p = pp - h.step_size * mm / (sqrtf(vv) / h.sq_bc2 + h.eps);
    return p;
}

__global__ void adamw_kernel(float *p, uint16_t *pb, const float *g, float *m, float *v, size_t n, int vec,
                             const PcSpan *decay, int nd, uint64_t base, Hyper h) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    size_t nv = vec ? n / 4 : 0;
    for (size_t q = t; q < nv; q += stride) {
        float4 P = reinterpret_cast<float4 *>(p)[q], G = reinterpret_cast<const float4 *>(g)[q];
        float4 M = reinterpret_cast<float4 *>(m)[q], V = reinterpret_cast<float4 *>(v)[q];
        uint64_t at = base + 4 * q;
        adamw_one(P.x, G.x, M.x, V.x, decays(decay, nd, at), h);
        adamw_one(P.y, G.y, M.y, V.y, decays(decay, nd, at + 1), h);
        adamw_one(P.z, G.z, M.z, V.z, decays(decay, nd, at + 2), h);
        adamw_one(P.w, G.w, M.w, V.w, decays(decay, nd, at + 3), h);
        reinterpret_cast<float4 *>(p)[q] = P, reinterpret_cast<float4 *>(m)[q] = M, reinterpret_cast<float4 *>(v)[q] = V;
        if (pb) {
            uint2 b;
            b.x = (uint32_t)pc_bf16_round(P.x) | (uint32_t)pc_bf16_round(P.y) << 16;
            b.y = (uint32_t)pc_bf16_round(P.z) | (uint32_t)pc_bf16_round(P.w) << 16;
            reinterpret_cast<uint2 *>(pb)[q] = b;
        }
    }
    for (size_t i = 4 * nv + t; i < n; i += stride) {
        float P = p[i], M = m[i], V = v[i];
        adamw_one(P, g[i], M, V, decays(decay, nd, base + i), h);
        p[i] = P, m[i] = M, v[i] = V;
        if (pb) pb[i] = pc_bf16_round(P);
    }
}

extern "C" int pc_adamw_step(float *p, PcBf16 *pb, const float *g, float *m, float *v, size_t n, float grad_scale,
                             const PcSpan *decay, int n_decay, size_t base, const PcAdamW *hp) {
    ARG_TRY(hp && hp->step >= 1 && n_decay >= 0, "hyperparameters with step >= 1");
    if (!n) return 0;
    /* the CPU's scalars, computed the same way (double, then float) */
    double bc1 = 1.0 - pow(hp->beta1, (double)hp->step), bc2 = 1.0 - pow(hp->beta2, (double)hp->step);
    Hyper h = {(float)hp->beta1, (float)hp->beta2, (float)(hp->lr / bc1), (float)sqrt(bc2), (float)hp->eps,
               (float)(1.0 - hp->lr * hp->weight_decay), grad_scale};
    int vec = pc_aligned(p, 16) && pc_aligned(g, 16) && pc_aligned(m, 16) && pc_aligned(v, 16) && (!pb || pc_aligned(pb, 8));
    size_t items = vec ? n / 4 + 3 : n;
    size_t blocks = (items + ADAMW_THREADS - 1) / ADAMW_THREADS;
    blocks = blocks > 65536 ? 65536 : blocks;
    adamw_kernel<<<(unsigned)blocks, ADAMW_THREADS, 0, pc_cuda_stream()>>>(p, pb, g, m, v, n, vec, decay, n_decay,
                                                                           (uint64_t)base, h);
    LAUNCH_TRY();
    return 0;
}

__global__ void add_kernel(float *__restrict__ acc, const float *__restrict__ x, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc[i] += x[i];
}

int pc_add_f32_on(float *acc, const float *x, size_t n, cudaStream_t stream) {
    if (!n) return 0;
    size_t blocks = (n + ADAMW_THREADS - 1) / ADAMW_THREADS;
    blocks = blocks > 65536 ? 65536 : blocks;
    add_kernel<<<(unsigned)blocks, ADAMW_THREADS, 0, stream>>>(acc, x, n);
    LAUNCH_TRY();
    return 0;
}

extern "C" int pc_add_f32(float *acc, const float *x, size_t n) { return pc_add_f32_on(acc, x, n, pc_cuda_stream()); }
