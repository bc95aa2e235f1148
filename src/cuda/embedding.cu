/* embedding.cu: embedding gather, the scatter plan and the row scatter-add (embedding.h). */
#include <stdlib.h>

#include "cuda/check.cuh"
#include "cuda/embedding.h"

#define EMB_THREADS 256

/* x[t, c..c+VEC) = E[tokens[t], c..c+VEC); grid (T, column blocks) */
template <typename T, int VEC> __global__ void embed_kernel(float *x, const T *E, const int *tokens, int C) {
    int t = blockIdx.x, c = (blockIdx.y * blockDim.x + threadIdx.x) * VEC;
    if (c >= C) return;
    const T *e = E + (long)tokens[t] * C + c;
    float *o = x + (long)t * C + c;
    if constexpr (VEC == 4) {
        float4 v;
        if constexpr (sizeof(T) == 4) {
            v = *reinterpret_cast<const float4 *>(e);
        } else {
            uint2 h = *reinterpret_cast<const uint2 *>(e);
            v.x = __uint_as_float(h.x << 16), v.y = __uint_as_float(h.x & 0xffff0000u);
            v.z = __uint_as_float(h.y << 16), v.w = __uint_as_float(h.y & 0xffff0000u);
        }
        *reinterpret_cast<float4 *>(o) = v;
    } else {
        o[0] = pc_ld<T>(e, 0);
    }
}

extern "C" int pc_embed_forward(float *x, const void *E, PcDtype et, const int *tokens, int T, int C) {
    ARG_TRY(T >= 0 && C >= 1 && (et == PC_F32 || et == PC_BF16), "T >= 0, C >= 1, element type");
    if (T == 0) return 0;
    int vec = C % 4 == 0 && pc_aligned(x, 16) && pc_aligned(E, et == PC_F32 ? 16 : 8) ? 4 : 1;
    dim3 grid(T, pc_ceil_div(pc_ceil_div(C, vec), EMB_THREADS));
    cudaStream_t s = pc_cuda_stream();
    if (et == PC_F32 && vec == 4) embed_kernel<float, 4><<<grid, EMB_THREADS, 0, s>>>(x, (const float *)E, tokens, C);
    else if (et == PC_F32) embed_kernel<float, 1><<<grid, EMB_THREADS, 0, s>>>(x, (const float *)E, tokens, C);
    else if (vec == 4) embed_kernel<uint16_t, 4><<<grid, EMB_THREADS, 0, s>>>(x, (const uint16_t *)E, tokens, C);
    else embed_kernel<uint16_t, 1><<<grid, EMB_THREADS, 0, s>>>(x, (const uint16_t *)E, tokens, C);
    LAUNCH_TRY();
    return 0;
}

typedef struct {
    int key, pos;
} KeyPos;

static int keypos_cmp(const void *a, const void *b) {
    const KeyPos *x = (const KeyPos *)a, *y = (const KeyPos *)b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos; /* positions are distinct: a total order, so qsort is stable here */
}

extern "C" int pc_scatter_plan(int *order, int *seg, int *seg_key, const int *keys, int n) {
    if (n < 0) return -1;
    KeyPos *kp = (KeyPos *)malloc(sizeof(KeyPos) * (size_t)(n > 0 ? n : 1));
    if (!kp) return -1;
    for (int i = 0; i < n; i++) {
        if (keys[i] < 0) {
            free(kp);
            return -1;
        }
        kp[i].key = keys[i], kp[i].pos = i;
    }
    qsort(kp, (size_t)n, sizeof *kp, keypos_cmp);
    int ns = 0;
    for (int i = 0; i < n; i++) {
        if (i == 0 || kp[i].key != kp[i - 1].key) seg[ns] = i, seg_key[ns] = kp[i].key, ns++;
        order[i] = kp[i].pos;
    }
    seg[ns] = n;
    free(kp);
    return ns;
}

/* one block per (segment, column block): acc = dst row; acc += each src row of the segment in order */
template <int VEC>
__global__ void scatter_kernel(float *dst, int ldd, const float *src, int lds, const int *order, const int *seg,
                               const int *seg_key, int C) {
    int s = blockIdx.x, c = (blockIdx.y * blockDim.x + threadIdx.x) * VEC;
    if (c >= C) return;
    int p0 = seg[s], p1 = seg[s + 1];
    float *d = dst + (long)seg_key[s] * ldd + c;
    if constexpr (VEC == 4) {
        float4 acc = *reinterpret_cast<float4 *>(d);
        for (int p = p0; p < p1; p++) {
            float4 v = *reinterpret_cast<const float4 *>(src + (long)order[p] * lds + c);
            acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
        }
        *reinterpret_cast<float4 *>(d) = acc;
    } else {
        float acc = d[0];
        for (int p = p0; p < p1; p++) acc += src[(long)order[p] * lds + c];
        d[0] = acc;
    }
}

extern "C" int pc_scatter_add_rows(float *dst, int ldd, const float *src, int lds, const int *order, const int *seg,
                                   const int *seg_key, int n_seg, int C) {
    ARG_TRY(n_seg >= 0 && C >= 1 && ldd >= C && lds >= C, "n_seg >= 0, C >= 1, strides >= C");
    if (n_seg == 0) return 0;
    int vec = C % 4 == 0 && ldd % 4 == 0 && lds % 4 == 0 && pc_aligned(dst, 16) && pc_aligned(src, 16) ? 4 : 1;
    dim3 grid(n_seg, pc_ceil_div(pc_ceil_div(C, vec), EMB_THREADS));
    if (vec == 4) scatter_kernel<4><<<grid, EMB_THREADS, 0, pc_cuda_stream()>>>(dst, ldd, src, lds, order, seg, seg_key, C);
    else scatter_kernel<1><<<grid, EMB_THREADS, 0, pc_cuda_stream()>>>(dst, ldd, src, lds, order, seg, seg_key, C);
    LAUNCH_TRY();
    return 0;
}

extern "C" int pc_embed_backward(float *dE, const float *dx, const int *order, const int *seg, const int *seg_key,
                                 int n_seg, int C) {
    return pc_scatter_add_rows(dE, C, dx, C, order, seg, seg_key, n_seg, C);
}
