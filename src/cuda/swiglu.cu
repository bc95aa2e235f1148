/* swiglu.cu: SwiGLU forward and backward (swiglu.h). Elementwise and
 * memory-bound: 4 consecutive elements of a row per thread with 16-byte
 * (float32) or 8-byte (bf16) accesses when the layout allows, 1 otherwise. */
#include "cuda/check.cuh"
#include "cuda/swiglu.h"

#define SWIGLU_THREADS 256

template <int VEC> struct F { float v[VEC]; };

template <int VEC> static __device__ __forceinline__ F<VEC> ldv(const float *p) {
    F<VEC> r;
    if constexpr (VEC == 4) {
        float4 q = *reinterpret_cast<const float4 *>(p);
        r.v[0] = q.x, r.v[1] = q.y, r.v[2] = q.z, r.v[3] = q.w;
    } else {
        r.v[0] = p[0];
    }
    return r;
}
template <int VEC> static __device__ __forceinline__ F<VEC> ldv(const uint16_t *p) {
    F<VEC> r;
    if constexpr (VEC == 4) {
        uint2 q = *reinterpret_cast<const uint2 *>(p);
        r.v[0] = __uint_as_float(q.x << 16), r.v[1] = __uint_as_float(q.x & 0xffff0000u);
        r.v[2] = __uint_as_float(q.y << 16), r.v[3] = __uint_as_float(q.y & 0xffff0000u);
    } else {
        r.v[0] = pc_bf16_f32(p[0]);
    }
    return r;
}
template <int VEC> static __device__ __forceinline__ void stv(float *p, const F<VEC> &a) {
    if constexpr (VEC == 4) *reinterpret_cast<float4 *>(p) = make_float4(a.v[0], a.v[1], a.v[2], a.v[3]);
    else p[0] = a.v[0];
}
template <int VEC> static __device__ __forceinline__ void stv(uint16_t *p, const F<VEC> &a) {
    if constexpr (VEC == 4) {
        uint2 q;
        q.x = (uint32_t)pc_bf16_round(a.v[0]) | (uint32_t)pc_bf16_round(a.v[1]) << 16;
        q.y = (uint32_t)pc_bf16_round(a.v[2]) | (uint32_t)pc_bf16_round(a.v[3]) << 16;
        *reinterpret_cast<uint2 *>(p) = q;
    } else {
        p[0] = pc_bf16_round(a.v[0]);
    }
}

static __device__ __forceinline__ float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

/* grid: x over a row's groups of VEC columns, y over rows (looping past 65535); no division per element */
template <typename GT, typename HT, int VEC, bool KEEP>
__global__ void swiglu_fwd_kernel(HT *h, uint16_t *gb, uint16_t *ub, const GT *g, const GT *u, int ld_in, int rows,
                                  int cols) {
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (c >= cols) return;
    for (long r = blockIdx.y; r < rows; r += gridDim.y) {
        F<VEC> gv = ldv<VEC>(g + r * ld_in + c), uv = ldv<VEC>(u + r * ld_in + c), hv;
#pragma unroll
        for (int k = 0; k < VEC; k++) hv.v[k] = gv.v[k] * sigmoid(gv.v[k]) * uv.v[k];
        stv<VEC>(h + r * cols + c, hv);
        if constexpr (KEEP) stv<VEC>(gb + r * cols + c, gv), stv<VEC>(ub + r * cols + c, uv);
    }
}

template <typename GT, typename DT, int VEC>
__global__ void swiglu_bwd_kernel(DT *dg, DT *du, int ld_out, const float *dh, const GT *g, const GT *u, int ld_in,
                                  int rows, int cols) {
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (c >= cols) return;
    for (long r = blockIdx.y; r < rows; r += gridDim.y) {
        F<VEC> gv = ldv<VEC>(g + r * ld_in + c), uv = ldv<VEC>(u + r * ld_in + c), d = ldv<VEC>(dh + r * cols + c), a, b;
#pragma unroll
        for (int k = 0; k < VEC; k++) {
            float s = sigmoid(gv.v[k]);
            b.v[k] = d.v[k] * (gv.v[k] * s);
            a.v[k] = d.v[k] * uv.v[k] * s * (1.0f + gv.v[k] * (1.0f - s));
        }
        stv<VEC>(dg + r * ld_out + c, a);
        stv<VEC>(du + r * ld_out + c, b);
    }
}

static dim3 grid(int rows, int cols, int vec) {
    return dim3((unsigned)pc_ceil_div(pc_ceil_div(cols, vec), SWIGLU_THREADS), (unsigned)(rows < 65535 ? rows : 65535));
}

template <typename GT, typename HT>
static void fwd(HT *h, uint16_t *gb, uint16_t *ub, const GT *g, const GT *u, int ld_in, int rows, int cols, int vec) {
    cudaStream_t s = pc_cuda_stream();
    dim3 gr = grid(rows, cols, vec);
    if (vec == 4 && gb) swiglu_fwd_kernel<GT, HT, 4, true><<<gr, SWIGLU_THREADS, 0, s>>>(h, gb, ub, g, u, ld_in, rows, cols);
    else if (vec == 4) swiglu_fwd_kernel<GT, HT, 4, false><<<gr, SWIGLU_THREADS, 0, s>>>(h, gb, ub, g, u, ld_in, rows, cols);
    else if (gb) swiglu_fwd_kernel<GT, HT, 1, true><<<gr, SWIGLU_THREADS, 0, s>>>(h, gb, ub, g, u, ld_in, rows, cols);
    else swiglu_fwd_kernel<GT, HT, 1, false><<<gr, SWIGLU_THREADS, 0, s>>>(h, gb, ub, g, u, ld_in, rows, cols);
}

/* 16-byte alignment for float32 groups of 4, 8 for bf16 */
static int al(const void *p, int t) { return pc_aligned(p, t == PC_F32 ? 16 : 8); }

extern "C" int pc_swiglu_forward(void *h, PcDtype ht, PcBf16 *gb, PcBf16 *ub, const void *g, const void *u, PcDtype gt,
                                 int ld_in, int rows, int cols) {
    ARG_TRY(rows >= 0 && cols >= 1 && ld_in >= cols, "rows >= 0, cols >= 1, ld_in >= cols");
    ARG_TRY((ht == PC_F32 || ht == PC_BF16) && (gt == PC_F32 || gt == PC_BF16), "element types");
    ARG_TRY(!gb == !ub, "gb and ub: both or neither");
    if (rows == 0) return 0;
    int vec = cols % 4 == 0 && ld_in % 4 == 0 && al(g, gt) && al(u, gt) && al(h, ht) && (!gb || (al(gb, 1) && al(ub, 1)))
                  ? 4 : 1;
    if (gt == PC_F32 && ht == PC_F32) fwd<float, float>((float *)h, gb, ub, (const float *)g, (const float *)u, ld_in, rows, cols, vec);
    else if (gt == PC_F32) fwd<float, uint16_t>((uint16_t *)h, gb, ub, (const float *)g, (const float *)u, ld_in, rows, cols, vec);
    else if (ht == PC_F32) fwd<uint16_t, float>((float *)h, gb, ub, (const uint16_t *)g, (const uint16_t *)u, ld_in, rows, cols, vec);
    else fwd<uint16_t, uint16_t>((uint16_t *)h, gb, ub, (const uint16_t *)g, (const uint16_t *)u, ld_in, rows, cols, vec);
    LAUNCH_TRY();
    return 0;
}

template <typename GT, typename DT>
static void bwd(DT *dg, DT *du, int ld_out, const float *dh, const GT *g, const GT *u, int ld_in, int rows, int cols,
                int vec) {
    cudaStream_t s = pc_cuda_stream();
    dim3 gr = grid(rows, cols, vec);
    if (vec == 4) swiglu_bwd_kernel<GT, DT, 4><<<gr, SWIGLU_THREADS, 0, s>>>(dg, du, ld_out, dh, g, u, ld_in, rows, cols);
    else swiglu_bwd_kernel<GT, DT, 1><<<gr, SWIGLU_THREADS, 0, s>>>(dg, du, ld_out, dh, g, u, ld_in, rows, cols);
}

extern "C" int pc_swiglu_backward(void *dg, void *du, PcDtype dt, int ld_out, const float *dh, const void *g,
                                  const void *u, PcDtype gt, int ld_in, int rows, int cols) {
    ARG_TRY(rows >= 0 && cols >= 1 && ld_in >= cols && ld_out >= cols, "rows >= 0, cols >= 1, strides >= cols");
    ARG_TRY((dt == PC_F32 || dt == PC_BF16) && (gt == PC_F32 || gt == PC_BF16), "element types");
    if (rows == 0) return 0;
    int vec = cols % 4 == 0 && ld_in % 4 == 0 && ld_out % 4 == 0 && al(g, gt) && al(u, gt) && al(dg, dt) && al(du, dt) &&
                      pc_aligned(dh, 16)
                  ? 4 : 1;
    if (gt == PC_F32 && dt == PC_F32) bwd<float, float>((float *)dg, (float *)du, ld_out, dh, (const float *)g, (const float *)u, ld_in, rows, cols, vec);
    else if (gt == PC_F32) bwd<float, uint16_t>((uint16_t *)dg, (uint16_t *)du, ld_out, dh, (const float *)g, (const float *)u, ld_in, rows, cols, vec);
    else if (dt == PC_F32) bwd<uint16_t, float>((float *)dg, (float *)du, ld_out, dh, (const uint16_t *)g, (const uint16_t *)u, ld_in, rows, cols, vec);
    else bwd<uint16_t, uint16_t>((uint16_t *)dg, (uint16_t *)du, ld_out, dh, (const uint16_t *)g, (const uint16_t *)u, ld_in, rows, cols, vec);
    LAUNCH_TRY();
    return 0;
}
