/* rope.cu: RoPE forward and backward (rope.h). One thread per VEC pairs:
 * (j, j + 1) with (j + half, j + half + 1) and their two (cos, sin) as one
 * 16-byte load when the layout allows, one pair otherwise. The q, k, v pass:
 * one thread per pair (j, j + half) of a q or k head, or two elements of v. */
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

/* ---- q, k, v in one pass ---- */

struct QkvArgs {
    const float *src[3];  /* q, k, v (forward); dq, dk, dv (backward) */
    int lds[3];
    uint16_t *dst[3];     /* the bf16 results */
    int ldd[3];
    float *back[2];       /* backward: dq, dk rotated back in place; forward: NULL */
    const int *pos;
    const float *cs;
    int T, NH, NKV, HS;
    float sgn;
};

/* grid: x over a token's (NH + 2 NKV) HS / 2 items (q pairs, k pairs, v element pairs), y over tokens */
__global__ void rope_qkv_kernel(QkvArgs a) {
    const int half = a.HS / 2, nq = a.NH * half, nk = a.NKV * half;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nq + 2 * nk) return;
    const int part = i < nq ? 0 : i < nq + nk ? 1 : 2, r = i - (part == 0 ? 0 : part == 1 ? nq : nq + nk);
    for (int t = blockIdx.y; t < a.T; t += gridDim.y) {
        const float *s = a.src[part] + (long)t * a.lds[part];
        uint16_t *d = a.dst[part] + (long)t * a.ldd[part];
        if (part == 2) {
            d[2 * r] = pc_bf16_round(s[2 * r]), d[2 * r + 1] = pc_bf16_round(s[2 * r + 1]);
            continue;
        }
        const int c0 = (r / half) * a.HS + r % half, c1 = c0 + half;
        const float *c = a.cs + ((long)a.pos[t] * half + r % half) * 2;
        float co = c[0], si = c[1] * a.sgn, x = s[c0], y = s[c1];
        float o0 = x * co - y * si, o1 = y * co + x * si;
        if (a.back[part]) {
            float *w = a.back[part] + (long)t * a.lds[part];
            w[c0] = o0, w[c1] = o1;
        }
        d[c0] = pc_bf16_round(o0), d[c1] = pc_bf16_round(o1);
    }
}

static int rope_qkv(QkvArgs a) {
    ARG_TRY(a.T >= 0 && a.NH >= 1 && a.NKV >= 1 && a.HS >= 2 && a.HS % 2 == 0, "T >= 0, NH, NKV >= 1, HS even");
    ARG_TRY(a.lds[0] >= a.NH * a.HS && a.lds[1] >= a.NKV * a.HS && a.lds[2] >= a.NKV * a.HS &&
                a.ldd[0] >= a.NH * a.HS && a.ldd[1] >= a.NKV * a.HS && a.ldd[2] >= a.NKV * a.HS,
            "row strides of at least the heads' width");
    if (a.T == 0) return 0;
    long items = (long)(a.NH + 2 * a.NKV) * (a.HS / 2);
    dim3 blocks((unsigned)pc_ceil_div(items, ROPE_THREADS), (unsigned)(a.T < 65535 ? a.T : 65535));
    rope_qkv_kernel<<<blocks, ROPE_THREADS, 0, pc_cuda_stream()>>>(a);
    LAUNCH_TRY();
    return 0;
}

extern "C" int pc_rope_qkv_forward(PcBf16 *out, const float *q, int ldq, const float *k, int ldk, const float *v,
                                   int ldv, const int *pos, const float *cs, int T, int NH, int NKV, int HS) {
    size_t TQ = (size_t)T * NH * HS, TK = (size_t)T * NKV * HS;
    QkvArgs a = {{q, k, v}, {ldq, ldk, ldv}, {out, out + TQ, out + TQ + TK}, {NH * HS, NKV * HS, NKV * HS},
                 {NULL, NULL}, pos, cs, T, NH, NKV, HS, 1.0f};
    return rope_qkv(a);
}

extern "C" int pc_rope_qkv_backward(PcBf16 *oq, int ldoq, PcBf16 *ok, int ldok, PcBf16 *ov, int ldov, float *dq,
                                    float *dk, const float *dv, const int *pos, const float *cs, int T, int NH, int NKV,
                                    int HS) {
    QkvArgs a = {{dq, dk, dv}, {NH * HS, NKV * HS, NKV * HS}, {oq, ok, ov}, {ldoq, ldok, ldov}, {dq, dk}, pos, cs,
                 T, NH, NKV, HS, -1.0f};
    return rope_qkv(a);
}
