/* rope.cu: RoPE forward and backward (rope.h). One thread per VEC pairs:
 * (j, j + 1) with (j + half, j + half + 1) and their two (cos, sin) as one
 * 16-byte load when the layout allows, one pair otherwise. */
#include "cuda/check.cuh"
#include "cuda/rope.h"

#define ROPE_THREADS 256

/* two consecutive elements as float32: one 8-byte (float32) or 4-byte (bf16) access */
static __device__ __forceinline__ float2 ld2(const float *p) { return *reinterpret_cast<const float2 *>(p); }
static __device__ __forceinline__ float2 ld2(const uint16_t *p) {
    uint32_t u = *reinterpret_cast<const uint32_t *>(p);
    return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
}
static __device__ __forceinline__ void st2(float *p, float a, float b) { *reinterpret_cast<float2 *>(p) = make_float2(a, b); }
static __device__ __forceinline__ void st2(uint16_t *p, float a, float b) {
    *reinterpret_cast<uint32_t *>(p) = (uint32_t)pc_bf16_round(a) | (uint32_t)pc_bf16_round(b) << 16;
}

/* grid: x over a token's (head, pair group) items, y over tokens (looping past 65535) */
template <typename T, int VEC>
__global__ void rope_kernel(T *x, int ldx, const int *pos, const float *cs, int T_, int NHx, int HS, float sgn) {
    const int half = HS / 2, per_head = half / VEC;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= NHx * per_head) return;
    int h = i / per_head, j = (i - h * per_head) * VEC;
    for (int t = blockIdx.y; t < T_; t += gridDim.y) {
        T *v = x + (long)t * ldx + (long)h * HS;
        const float *c = cs + ((long)pos[t] * half + j) * 2;
        if constexpr (VEC == 2) {
            float4 q = *reinterpret_cast<const float4 *>(c);
            float2 a = ld2(v + j), b = ld2(v + j + half);
            float s0 = q.y * sgn, s1 = q.w * sgn;
            st2(v + j, a.x * q.x - b.x * s0, a.y * q.z - b.y * s1);
            st2(v + j + half, b.x * q.x + a.x * s0, b.y * q.z + a.y * s1);
        } else {
            float co = c[0], si = c[1] * sgn, a = pc_ld<T>(v, j), b = pc_ld<T>(v, j + half);
            pc_st<T>(v, j, a * co - b * si);
            pc_st<T>(v, j + half, b * co + a * si);
        }
    }
}

static int rope(void *x, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS, float sgn) {
    ARG_TRY(T >= 0 && NHx >= 1 && HS >= 2 && HS % 2 == 0 && ldx >= NHx * HS, "T >= 0, NHx >= 1, HS even, ldx >= NHx HS");
    ARG_TRY(xt == PC_F32 || xt == PC_BF16, "element type");
    if (T == 0) return 0;
    int vec = (HS / 2) % 2 == 0 && ldx % 2 == 0 && pc_aligned(cs, 16) && pc_aligned(x, xt == PC_F32 ? 8 : 4) ? 2 : 1;
    dim3 blocks((unsigned)pc_ceil_div((long)NHx * (HS / 2 / vec), ROPE_THREADS), (unsigned)(T < 65535 ? T : 65535));
    cudaStream_t s = pc_cuda_stream();
    if (xt == PC_F32 && vec == 2) rope_kernel<float, 2><<<blocks, ROPE_THREADS, 0, s>>>((float *)x, ldx, pos, cs, T, NHx, HS, sgn);
    else if (xt == PC_F32) rope_kernel<float, 1><<<blocks, ROPE_THREADS, 0, s>>>((float *)x, ldx, pos, cs, T, NHx, HS, sgn);
    else if (vec == 2) rope_kernel<uint16_t, 2><<<blocks, ROPE_THREADS, 0, s>>>((uint16_t *)x, ldx, pos, cs, T, NHx, HS, sgn);
    else rope_kernel<uint16_t, 1><<<blocks, ROPE_THREADS, 0, s>>>((uint16_t *)x, ldx, pos, cs, T, NHx, HS, sgn);
    LAUNCH_TRY();
    return 0;
}

extern "C" int pc_rope_forward(void *x, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS) {
    return rope(x, xt, ldx, pos, cs, T, NHx, HS, 1.0f);
}

extern "C" int pc_rope_backward(void *dx, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS) {
    return rope(dx, xt, ldx, pos, cs, T, NHx, HS, -1.0f);
}
