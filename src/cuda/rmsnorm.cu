/* rmsnorm.cu: RMSNorm forward and backward (rmsnorm.h).
 *
 * Each thread owns KG groups of VEC consecutive columns (group g = tid + k *
 * NORM_THREADS) and keeps them in registers, so a token's row is read once.
 * Forward: one block per token. Backward: one block per NORM_TOKENS tokens,
 * in order, the weight gradient's partial sums for those tokens kept in
 * registers (double) and written to the module scratch; a second kernel adds
 * the blocks' partials in block order. No atomics: the same bits every run. */
#include "cuda/check.cuh"
#include "cuda/rmsnorm.h"

#define NORM_THREADS 256
#define NORM_TOKENS 32 /* tokens per block of the backward (one partial of dw each) */
#define NORM_MAX_C 8192

template <int VEC> struct Vec;
template <> struct Vec<1> {
    float v[1];
    static __device__ __forceinline__ Vec load(const float *p) {
        Vec r;
        r.v[0] = *p;
        return r;
    }
    __device__ __forceinline__ void store(float *p) const { *p = v[0]; }
};
template <> struct Vec<4> {
    float v[4];
    static __device__ __forceinline__ Vec load(const float *p) {
        float4 f = *reinterpret_cast<const float4 *>(p);
        Vec r;
        r.v[0] = f.x, r.v[1] = f.y, r.v[2] = f.z, r.v[3] = f.w;
        return r;
    }
    __device__ __forceinline__ void store(float *p) const {
        *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
    }
};

template <int VEC> static __device__ __forceinline__ void store_out(float *y, const float *v) {
    Vec<VEC> o;
#pragma unroll
    for (int j = 0; j < VEC; j++) o.v[j] = v[j];
    o.store(y);
}
template <int VEC> static __device__ __forceinline__ void store_out(uint16_t *y, const float *v) {
    if constexpr (VEC == 4) {
        uint2 h;
        h.x = (uint32_t)pc_bf16_round(v[0]) | (uint32_t)pc_bf16_round(v[1]) << 16;
        h.y = (uint32_t)pc_bf16_round(v[2]) | (uint32_t)pc_bf16_round(v[3]) << 16;
        *reinterpret_cast<uint2 *>(y) = h;
    } else {
        y[0] = pc_bf16_round(v[0]);
    }
}

template <int VEC, int KG, typename YT, bool RES>
__global__ void __launch_bounds__(NORM_THREADS) rmsnorm_fwd_kernel(YT *y, float *rstd, float *xsum, const float *x,
                                                                    const float *res, const float *w, int C,
                                                                    float eps) {
    __shared__ double red[32];
    const long row = (long)blockIdx.x * C;
    const int G = C / VEC;
    float xv[KG][VEC];
    double ss = 0.0;
#pragma unroll
    for (int k = 0; k < KG; k++) {
        int g = threadIdx.x + k * NORM_THREADS;
        if (g < G) {
            Vec<VEC> a = Vec<VEC>::load(x + row + (long)g * VEC);
            if constexpr (RES) {
                Vec<VEC> b = Vec<VEC>::load(res + row + (long)g * VEC);
#pragma unroll
                for (int j = 0; j < VEC; j++) a.v[j] += b.v[j];
                a.store(xsum + row + (long)g * VEC);
            }
#pragma unroll
            for (int j = 0; j < VEC; j++) xv[k][j] = a.v[j], ss += (double)a.v[j] * a.v[j];
        }
    }
    ss = pc_block_sum(ss, red);
    float r = (float)(1.0 / sqrt(ss / C + (double)eps));
    if (threadIdx.x == 0) rstd[blockIdx.x] = r;
#pragma unroll
    for (int k = 0; k < KG; k++) {
        int g = threadIdx.x + k * NORM_THREADS;
        if (g < G) {
            Vec<VEC> wv = Vec<VEC>::load(w + (long)g * VEC);
            float o[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) o[j] = xv[k][j] * r * wv.v[j];
            store_out<VEC>(y + row + (long)g * VEC, o);
        }
    }
}

/* tokens [blockIdx.x * NORM_TOKENS, +NORM_TOKENS) in order; part: [blocks, C] partial dw (double) or NULL */
template <int VEC, int KG>
__global__ void __launch_bounds__(NORM_THREADS) rmsnorm_bwd_kernel(float *dx, double *part, const float *dy,
                                                                    const float *x, const float *w, const float *rstd,
                                                                    int T, int C) {
    __shared__ double red[32];
    const int G = C / VEC, t0 = blockIdx.x * NORM_TOKENS, t1 = min(t0 + NORM_TOKENS, T);
    float wv[KG][VEC];
    double pw[KG][VEC];
#pragma unroll
    for (int k = 0; k < KG; k++) {
        int g = threadIdx.x + k * NORM_THREADS;
        Vec<VEC> a;
        if (g < G) a = Vec<VEC>::load(w + (long)g * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) wv[k][j] = g < G ? a.v[j] : 0.0f, pw[k][j] = 0.0;
    }
    for (int t = t0; t < t1; t++) {
        const long row = (long)t * C;
        const float r = rstd[t];
        float xv[KG][VEC], dv[KG][VEC];
        double dot = 0.0; /* sum of dy w x r: C times mean(dxhat xhat) */
#pragma unroll
        for (int k = 0; k < KG; k++) {
            int g = threadIdx.x + k * NORM_THREADS;
            if (g < G) {
                Vec<VEC> a = Vec<VEC>::load(x + row + (long)g * VEC), b = Vec<VEC>::load(dy + row + (long)g * VEC);
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    xv[k][j] = a.v[j], dv[k][j] = b.v[j];
                    dot += (double)b.v[j] * wv[k][j] * a.v[j] * r;
                }
            }
        }
        dot = pc_block_sum(dot, red);
        const float m = (float)(dot / C);
#pragma unroll
        for (int k = 0; k < KG; k++) {
            int g = threadIdx.x + k * NORM_THREADS;
            if (g < G) {
                Vec<VEC> d = Vec<VEC>::load(dx + row + (long)g * VEC);
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    d.v[j] += r * (dv[k][j] * wv[k][j] - xv[k][j] * r * m);
                    pw[k][j] += (double)dv[k][j] * xv[k][j] * r;
                }
                d.store(dx + row + (long)g * VEC);
            }
        }
    }
    if (!part) return;
#pragma unroll
    for (int k = 0; k < KG; k++) {
        int g = threadIdx.x + k * NORM_THREADS;
        if (g < G)
#pragma unroll
            for (int j = 0; j < VEC; j++) part[(long)blockIdx.x * C + (long)g * VEC + j] = pw[k][j];
    }
}

__global__ void rmsnorm_dw_kernel(float *dw, const double *part, int nb, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    double acc = 0.0;
    for (int b = 0; b < nb; b++) acc += part[(long)b * C + c]; /* blocks in a fixed order */
    dw[c] += (float)acc;
}

/* the smallest KG in {1, 2, 4, ..., 32} with KG * NORM_THREADS * VEC >= C */
static int groups_for(int C, int vec) {
    int kg = 1;
    while (kg * NORM_THREADS * vec < C) kg *= 2;
    return kg;
}

template <int VEC, typename YT, bool RES>
static void fwd_launch(int kg, YT *y, float *rstd, float *xsum, const float *x, const float *res, const float *w,
                       int T, int C, float eps) {
    cudaStream_t s = pc_cuda_stream();
#define FWD(K) rmsnorm_fwd_kernel<VEC, K, YT, RES><<<T, NORM_THREADS, 0, s>>>(y, rstd, xsum, x, res, w, C, eps)
    switch (kg) {
    case 1: FWD(1); break;
    case 2: FWD(2); break;
    case 4: FWD(4); break;
    case 8: FWD(8); break;
    case 16: if constexpr (VEC == 1) FWD(16); break;
    default: if constexpr (VEC == 1) FWD(32); break;
    }
#undef FWD
}

template <int VEC, typename YT>
static void fwd_res(int kg, YT *y, float *rstd, float *xsum, const float *x, const float *res, const float *w, int T,
                    int C, float eps) {
    if (res) fwd_launch<VEC, YT, true>(kg, y, rstd, xsum, x, res, w, T, C, eps);
    else fwd_launch<VEC, YT, false>(kg, y, rstd, xsum, x, res, w, T, C, eps);
}

extern "C" int pc_rmsnorm_forward(void *y, PcDtype yt, float *rstd, float *xsum, const float *x, const float *res,
                                  const float *w, int T, int C, float eps) {
    ARG_TRY(T >= 0 && C >= 1 && C <= NORM_MAX_C, "T >= 0, 1 <= C <= 8192");
    ARG_TRY(yt == PC_F32 || yt == PC_BF16, "element type");
    ARG_TRY(!res || xsum, "a residual needs xsum");
    if (T == 0) return 0;
    int vec = C % 4 == 0 && pc_aligned(x, 16) && pc_aligned(w, 16) && pc_aligned(y, yt == PC_F32 ? 16 : 8) &&
                      (!res || (pc_aligned(res, 16) && pc_aligned(xsum, 16)))
                  ? 4 : 1;
    int kg = groups_for(C, vec);
    if (yt == PC_F32) {
        if (vec == 4) fwd_res<4, float>(kg, (float *)y, rstd, xsum, x, res, w, T, C, eps);
        else fwd_res<1, float>(kg, (float *)y, rstd, xsum, x, res, w, T, C, eps);
    } else {
        if (vec == 4) fwd_res<4, uint16_t>(kg, (uint16_t *)y, rstd, xsum, x, res, w, T, C, eps);
        else fwd_res<1, uint16_t>(kg, (uint16_t *)y, rstd, xsum, x, res, w, T, C, eps);
    }
    LAUNCH_TRY();
    return 0;
}

template <int VEC>
static void bwd_launch(int kg, int nb, float *dx, double *part, const float *dy, const float *x, const float *w,
                       const float *rstd, int T, int C) {
    cudaStream_t s = pc_cuda_stream();
#define BWD(K) rmsnorm_bwd_kernel<VEC, K><<<nb, NORM_THREADS, 0, s>>>(dx, part, dy, x, w, rstd, T, C)
    switch (kg) {
    case 1: BWD(1); break;
    case 2: BWD(2); break;
    case 4: BWD(4); break;
    case 8: BWD(8); break;
    case 16: if constexpr (VEC == 1) BWD(16); break;
    default: if constexpr (VEC == 1) BWD(32); break;
    }
#undef BWD
}

extern "C" int pc_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                                   const float *rstd, int T, int C) {
    ARG_TRY(T >= 0 && C >= 1 && C <= NORM_MAX_C, "T >= 0, 1 <= C <= 8192");
    if (T == 0) return 0;
    int nb = pc_ceil_div(T, NORM_TOKENS);
    double *part = NULL;
    if (dw && !(part = (double *)pc_scratch(sizeof(double) * (size_t)nb * C))) return -1;
    int vec = C % 4 == 0 && pc_aligned(dx, 16) && pc_aligned(dy, 16) && pc_aligned(x, 16) && pc_aligned(w, 16) ? 4 : 1;
    int kg = groups_for(C, vec);
    if (vec == 4) bwd_launch<4>(kg, nb, dx, part, dy, x, w, rstd, T, C);
    else bwd_launch<1>(kg, nb, dx, part, dy, x, w, rstd, T, C);
    LAUNCH_TRY();
    if (dw) {
        rmsnorm_dw_kernel<<<pc_ceil_div(C, 256), 256, 0, pc_cuda_stream()>>>(dw, part, nb, C);
        LAUNCH_TRY();
    }
    return 0;
}
