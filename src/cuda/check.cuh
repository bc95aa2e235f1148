/* check.cuh: what the .cu files of the module share: error checks that name
 * the call, file and line (kept for pc_error), launch checks, the module's
 * grow-only scratch and the device helpers every family uses (bf16 rounding
 * bit-identical to the CPU's bf16_round, deterministic block sums). Not for C. */
#ifndef PPA_CUDA_CHECK_CUH
#define PPA_CUDA_CHECK_CUH

#include <stdint.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda/common.h"

/* records "FILE:LINE: what: why" as the module's last error; returns -1 */
extern "C" int pc_fail(const char *file, int line, const char *what, const char *why);

/* CUDA_TRY(call): returns -1 from the enclosing function when call fails */
#define CUDA_TRY(call)                                                                                                 \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return pc_fail(__FILE__, __LINE__, #call, cudaGetErrorString(e_));                      \
    } while (0)

/* CUBLAS_TRY(call): the same for cuBLASLt */
#define CUBLAS_TRY(call)                                                                                               \
    do {                                                                                                               \
        cublasStatus_t s_ = (call);                                                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS) return pc_fail(__FILE__, __LINE__, #call, cublasLtGetStatusString(s_));       \
    } while (0)

/* ARG_TRY(cond, "...") : a bad argument, reported by the caller's name */
#define ARG_TRY(cond, what)                                                                                            \
    do {                                                                                                               \
        if (!(cond)) return pc_fail(__FILE__, __LINE__, __func__, "bad arguments: " what);                             \
    } while (0)

/* after a launch: the launch's own error (bad configuration) */
#define LAUNCH_TRY() CUDA_TRY(cudaGetLastError())

static inline cudaStream_t pc_cuda_stream(void) { return (cudaStream_t)pc_stream(); }

/* The module's scratch (device memory, any content), at least `bytes`, for the families' partial sums: one buffer,
 * grown when a call needs more (after waiting for the stream, so no queued kernel still reads the old one). Valid
 * until the next pc_scratch call: a family takes it once per call and never calls another family's function while
 * it holds it. NULL with pc_error() set when out of memory. */
void *pc_scratch(size_t bytes);
/* the cuBLASLt handle and workspace (matmul.cu), made by pc_init; released by pc_shutdown */
int pc_lt_init(char *err, size_t errlen);
void pc_lt_release(void);

static inline int pc_ceil_div(long a, long b) { return (int)((a + b - 1) / b); }
static inline int pc_aligned(const void *p, unsigned bytes) { return ((uintptr_t)p & (bytes - 1)) == 0; }

/* ---- device helpers ---- */

/* nearest even; a NaN stays a quiet NaN (sign and top payload kept, 0x40 set): the CPU's bf16_round bit for bit */
static __device__ __forceinline__ uint16_t pc_bf16_round(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16 | 0x40u);
    return (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}
static __device__ __forceinline__ float pc_bf16_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

/* a value of either element type as float32 (exact), and stored back (bf16: rounded) */
template <typename T> static __device__ __forceinline__ float pc_ld(const T *p, long i);
template <> __device__ __forceinline__ float pc_ld<float>(const float *p, long i) { return p[i]; }
template <> __device__ __forceinline__ float pc_ld<uint16_t>(const uint16_t *p, long i) { return pc_bf16_f32(p[i]); }
template <typename T> static __device__ __forceinline__ void pc_st(T *p, long i, float v);
template <> __device__ __forceinline__ void pc_st<float>(float *p, long i, float v) { p[i] = v; }
template <> __device__ __forceinline__ void pc_st<uint16_t>(uint16_t *p, long i, float v) { p[i] = pc_bf16_round(v); }

/* the sum of v over the block in a fixed order (butterfly within each warp, then the warps' sums in warp order by
 * warp 0): the same bits every run. Every thread of the block must call it; all get the sum. shared: [32] */
static __device__ __forceinline__ double pc_block_sum(double v, double *shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double s = lane < nw ? shared[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) shared[0] = s;
    }
    __syncthreads();
    return shared[0];
}

#endif
