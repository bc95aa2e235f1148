/* lmhead.cu: the LM head's chunked log-softmax of n targets, forward and
 * backward (lmhead.h). */
#include <math.h>

#include "cuda/check.cuh"
#include "cuda/embedding.h"
#include "cuda/lmhead.h"
#include "cuda/lmhead_plan.h"
#include "cuda/matmul.h"

#define LM_WARPS 8 /* rows per block of the row kernels */

static int g_rows, g_vocab; /* test hooks; 0: automatic */

extern "C" void pc_lmhead_set_chunks(int rows, int vocab) {
    g_rows = lm_hook_rows(rows);
    g_vocab = vocab > 0 ? vocab : 0;
}

static size_t plan(LmPlan *p, char *base, int n, int H, int V, PcDtype wt) {
    return lm_plan(p, base, n, H, V, wt, g_rows, g_vocab);
}
static size_t keep_plan(LmKept *k, char *base, int n, int V, PcDtype wt) {
    return lm_keep_plan(k, base, n, V, wt, g_rows, g_vocab);
}

extern "C" size_t pc_lmhead_work(int n, int H, int V, PcDtype wt) {
    LmPlan p;
    return plan(&p, NULL, n, H, V, wt);
}

extern "C" size_t pc_lmhead_keep_bytes(int n, int V, PcDtype wt) {
    LmKept k;
    return keep_plan(&k, NULL, n, V, wt);
}

/* xs[i, :] = x[src[i], :] (bf16: rounded) for i < m; grid (m, column blocks of 256 x 4) */
template <typename T> __global__ void gather_kernel(T *xs, const float *x, const int *src, int H, int vec) {
    int i = blockIdx.x, c = (blockIdx.y * blockDim.x + threadIdx.x) * 4;
    if (c >= H) return;
    const float *r = x + (long)src[i] * H;
    T *o = xs + (long)i * H;
    if (vec) {
        float4 v = *reinterpret_cast<const float4 *>(r + c);
        if constexpr (sizeof(T) == 4) {
            *reinterpret_cast<float4 *>(o + c) = v;
        } else {
            uint2 h;
            h.x = (uint32_t)pc_bf16_round(v.x) | (uint32_t)pc_bf16_round(v.y) << 16;
            h.y = (uint32_t)pc_bf16_round(v.z) | (uint32_t)pc_bf16_round(v.w) << 16;
            *reinterpret_cast<uint2 *>(o + c) = h;
        }
    } else {
        for (int k = c; k < c + 4 && k < H; k++) pc_st<T>(o, k, r[k]);
    }
}

static int gather(const LmPlan *p, const float *x, const int *src, int m, int H, PcDtype wt) {
    int vec = H % 4 == 0 && pc_aligned(x, 16) && pc_aligned(p->xs, 16);
    dim3 grid(m, pc_ceil_div(pc_ceil_div(H, 4), 256));
    if (wt == PC_BF16) gather_kernel<uint16_t><<<grid, 256, 0, pc_cuda_stream()>>>((uint16_t *)p->xs, x, src, H, vec);
    else gather_kernel<float><<<grid, 256, 0, pc_cuda_stream()>>>((float *)p->xs, x, src, H, vec);
    LAUNCH_TRY();
    return 0;
}

/* (m, s) <- (m, s) + (m2, s2): s the sum of exp(l - m); an empty side has m = -inf, s = 0 */
static __device__ __forceinline__ void lse_merge(float &m, float &s, float m2, float s2) {
    float M = fmaxf(m, m2);
    if (M == -INFINITY) return; /* both empty */
    s = s * expf(m - M) + s2 * expf(m2 - M);
    m = M;
}

/* One warp per row of a logits chunk [m, w] (row stride ldl): the chunk's max and sum of exp, merged into the
 * row's running (mx, sum) (first: set); the target's logit when it falls in [v0, v0 + w). With q: the chunk's
 * exp(l - M) rounded to bf16 into q [m, ldq] and its max M into mc [m] (stride nch), for the backward. */
__global__ void chunk_lse_kernel(float *mx, float *sum, float *lt, const float *logits, int ldl, const int *tgt, int m,
                                 int v0, int w, int first, uint16_t *q, long ldq, float *mc, int nch) {
    int row = blockIdx.x * LM_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= m) return;
    const float *l = logits + (long)row * ldl;
    float M = -INFINITY, S = 0.0f;
    int nq = w / 4;
    for (int q = lane; q < nq; q += 32) {
        float4 v = *reinterpret_cast<const float4 *>(l + 4 * q);
        float c = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
        if (c > M) S *= expf(M - c), M = c; /* S is 0 while M is -inf: expf(-inf) = 0 */
        S += expf(v.x - M) + expf(v.y - M) + expf(v.z - M) + expf(v.w - M);
    }
    for (int k = 4 * nq + lane; k < w; k += 32) { /* the tail */
        float v = l[k];
        if (v > M) S *= expf(M - v), M = v;
        S += expf(v - M);
    }
    for (int o = 16; o > 0; o >>= 1) { /* butterfly: every lane ends with the same (M, S) */
        float M2 = __shfl_xor_sync(0xffffffffu, M, o), S2 = __shfl_xor_sync(0xffffffffu, S, o);
        lse_merge(M, S, M2, S2);
    }
    if (q) { /* the row was just read: this pass finds it in the caches */
        uint16_t *qr = q + row * ldq;
        for (int k = lane; k < w; k += 32) qr[k] = pc_bf16_round(expf(l[k] - M));
        if (!lane) mc[(long)row * nch] = M;
    }
    if (lane) return;
    if (first) mx[row] = M, sum[row] = S;
    else {
        float a = mx[row], b = sum[row];
        lse_merge(a, b, M, S);
        mx[row] = a, sum[row] = b;
    }
    int t = tgt[row] - v0;
    if (t >= 0 && t < w) lt[row] = l[t];
}

/* lse = max + log(sum), logp = logit[tgt] - lse, in double as the CPU does */
__global__ void lse_final_kernel(double *logp, float *lse, const float *mx, const float *sum, const float *lt, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    double ls = (double)mx[i] + log((double)sum[i]);
    lse[i] = (float)ls;
    logp[i] = (double)lt[i] - ls;
}

/* d logits of a chunk in place (float32 products): dl = -g exp(l - lse), + g at the target.
 * grid: x over a row's columns, 4 a thread; y over the chunk's rows (m <= 16384 < 65536) */
__global__ void dlogits_f32_kernel(float *l, int ldl, const double *g, const float *lse, const int *tgt, int v0, int w) {
    int r = blockIdx.y, c = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (c >= w) return;
    float gi = (float)g[r], ls = lse[r], *p = l + (long)r * ldl + c;
    int t = tgt[r] - v0;
    if (c + 4 <= w) {
        float4 v = *reinterpret_cast<float4 *>(p);
        v.x = -gi * expf(v.x - ls) + (c == t ? gi : 0.0f);
        v.y = -gi * expf(v.y - ls) + (c + 1 == t ? gi : 0.0f);
        v.z = -gi * expf(v.z - ls) + (c + 2 == t ? gi : 0.0f);
        v.w = -gi * expf(v.w - ls) + (c + 3 == t ? gi : 0.0f);
        *reinterpret_cast<float4 *>(p) = v;
    } else {
        for (int k = 0; c + k < w; k++) p[k] = -gi * expf(p[k] - ls) + (c + k == t ? gi : 0.0f);
    }
}

/* the same into bf16 (bf16 products), rounded as the CPU's bf16 path: p = bf16(exp(l - lse)), dl = bf16(-g p);
 * at the target bf16(g * -expm1(logp)) (1 - p from the log-prob: a p near 1 has no digits left in bf16) */
static __device__ __forceinline__ uint16_t dl_bf16(float l, float ls, float ng, int is_t, double g, double logp) {
    if (is_t) return pc_bf16_round((float)(g * -expm1(logp)));
    return pc_bf16_round(ng * pc_bf16_f32(pc_bf16_round(expf(l - ls))));
}

__global__ void dlogits_bf16_kernel(uint16_t *dl, const float *l, int ldl, const double *g, const double *logp,
                                    const float *lse, const int *tgt, int v0, int w) {
    int r = blockIdx.y, c = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (c >= w) return;
    float ls = lse[r], ng = -(float)g[r];
    double gr = g[r], lp = logp[r];
    int t = tgt[r] - v0;
    const float *p = l + (long)r * ldl + c;
    uint16_t *o = dl + (long)r * ldl + c;
    if (c + 4 <= w) {
        float4 v = *reinterpret_cast<const float4 *>(p);
        uint2 h;
        h.x = (uint32_t)dl_bf16(v.x, ls, ng, c == t, gr, lp) | (uint32_t)dl_bf16(v.y, ls, ng, c + 1 == t, gr, lp) << 16;
        h.y = (uint32_t)dl_bf16(v.z, ls, ng, c + 2 == t, gr, lp) | (uint32_t)dl_bf16(v.w, ls, ng, c + 3 == t, gr, lp) << 16;
        *reinterpret_cast<uint2 *>(o) = h;
    } else {
        for (int k = 0; c + k < w; k++) o[k] = dl_bf16(p[k], ls, ng, c + k == t, gr, lp);
    }
}

/* the same from the forward's kept q = bf16(exp(l - M)) (in place): p = bf16(q exp(M - lse)), dl = bf16(-g p); at the
 * target as above. grid as above. */
__global__ void dlogits_kept_kernel(uint16_t *q, long ldq, const float *mc, int nch, const double *g,
                                    const double *logp, const float *lse, const int *tgt, int v0, int w) {
    int r = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= w) return;
    uint16_t *o = q + r * ldq + c;
    if (c == tgt[r] - v0) {
        *o = pc_bf16_round((float)(g[r] * -expm1(logp[r])));
        return;
    }
    float sc = expf(mc[(long)r * nch] - lse[r]);
    *o = pc_bf16_round(-(float)g[r] * pc_bf16_f32(pc_bf16_round(pc_bf16_f32(*o) * sc)));
}

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if (x) return -1;                                                                                              \
    } while (0)

static int check_args(int n, int H, int V, PcDtype wt) {
    ARG_TRY(n >= 0 && H >= 1 && V >= 1 && (wt == PC_F32 || wt == PC_BF16), "n >= 0, H >= 1, V >= 1, element type");
    return 0;
}

/* logits of rows [0, m) of the plan's xs for vocabulary [v0, v0 + w) */
static int chunk_logits(const LmPlan *p, const void *W, PcDtype wt, int m, int H, int v0, int w) {
    const char *Wc = (const char *)W + (size_t)v0 * H * (wt == PC_BF16 ? 2 : 4);
    return pc_gemm(0, 1, m, w, H, 1.0f, p->xs, H, Wc, H, 0.0f, NULL, p->logits, p->ldl, NULL, wt, PC_F32);
}

extern "C" int pc_lmhead_forward(double *logp, float *lse, const float *x, const void *W, PcDtype wt, const int *src,
                                 const int *tgt, int n, int H, int V, void *work, void *keep) {
    TRY(check_args(n, H, V, wt));
    ARG_TRY(!keep || pc_lmhead_keep_bytes(n, V, wt) > 0, "keep given where pc_lmhead_keep_bytes is 0");
    LmPlan p;
    plan(&p, (char *)work, n, H, V, wt);
    LmKept k;
    keep_plan(&k, (char *)keep, n, V, wt);
    cudaStream_t s = pc_cuda_stream();
    for (int i0 = 0; i0 < n; i0 += p.R) {
        int m = n - i0 < p.R ? n - i0 : p.R;
        TRY(gather(&p, x, src + i0, m, H, wt));
        for (int v0 = 0; v0 < V; v0 += p.Vc) {
            int w = V - v0 < p.Vc ? V - v0 : p.Vc;
            TRY(chunk_logits(&p, W, wt, m, H, v0, w));
            uint16_t *q = keep ? k.q + (size_t)i0 * k.ldq + v0 : NULL;
            float *mc = keep ? k.mc + (size_t)i0 * k.nch + v0 / p.Vc : NULL;
            chunk_lse_kernel<<<pc_ceil_div(m, LM_WARPS), 32 * LM_WARPS, 0, s>>>(p.mx, p.sum, p.lt, p.logits, p.ldl,
                                                                                 tgt + i0, m, v0, w, v0 == 0, q, k.ldq,
                                                                                 mc, k.nch);
            LAUNCH_TRY();
        }
        lse_final_kernel<<<pc_ceil_div(m, 256), 256, 0, s>>>(logp + i0, lse + i0, p.mx, p.sum, p.lt, m);
        LAUNCH_TRY();
    }
    return 0;
}

extern "C" int pc_lmhead_backward(float *dx, float *dW, const double *g, const double *logp, const float *lse,
                                  const float *x, const void *W, PcDtype wt, const int *src, const int *tgt, int n,
                                  int H, int V, const int *order, const int *seg, const int *seg_key, int n_seg,
                                  void *work, void *keep) {
    TRY(check_args(n, H, V, wt));
    ARG_TRY(!keep || pc_lmhead_keep_bytes(n, V, wt) > 0, "keep given where pc_lmhead_keep_bytes is 0");
    LmPlan p;
    plan(&p, (char *)work, n, H, V, wt);
    LmKept k;
    keep_plan(&k, (char *)keep, n, V, wt);
    cudaStream_t s = pc_cuda_stream();
    size_t e = wt == PC_BF16 ? 2 : 4;
    for (int i0 = 0; i0 < n; i0 += p.R) {
        int m = n - i0 < p.R ? n - i0 : p.R;
        float *dxs = p.dxs + (size_t)i0 * H;
        if (dW || !keep) TRY(gather(&p, x, src + i0, m, H, wt)); /* kept: the rows only for dW */
        for (int v0 = 0; v0 < V; v0 += p.Vc) {
            int w = V - v0 < p.Vc ? V - v0 : p.Vc;
            dim3 blocks((unsigned)pc_ceil_div(pc_ceil_div(w, 4), 256), (unsigned)m);
            const void *dl;
            long ldd = p.ldl;
            if (keep) { /* no logits product: d logits from the forward's kept probabilities, in place */
                uint16_t *q = k.q + (size_t)i0 * k.ldq + v0;
                dim3 b1((unsigned)pc_ceil_div(w, 256), (unsigned)m);
                dlogits_kept_kernel<<<b1, 256, 0, s>>>(q, k.ldq, k.mc + (size_t)i0 * k.nch + v0 / p.Vc, k.nch, g + i0,
                                                       logp + i0, lse + i0, tgt + i0, v0, w);
                dl = q, ldd = k.ldq;
            } else if (wt == PC_BF16) {
                TRY(chunk_logits(&p, W, wt, m, H, v0, w));
                dlogits_bf16_kernel<<<blocks, 256, 0, s>>>(p.dlb, p.logits, p.ldl, g + i0, logp + i0, lse + i0,
                                                           tgt + i0, v0, w);
                dl = p.dlb;
            } else {
                TRY(chunk_logits(&p, W, wt, m, H, v0, w));
                dlogits_f32_kernel<<<blocks, 256, 0, s>>>(p.logits, p.ldl, g + i0, lse + i0, tgt + i0, v0, w);
                dl = p.logits;
            }
            LAUNCH_TRY();
            const char *Wc = (const char *)W + (size_t)v0 * H * e;
            /* dxs [m, H] (+)= dl [m, w] W[v0:v0+w] [w, H] */
            TRY(pc_gemm(0, 0, m, H, w, 1.0f, dl, (int)ldd, Wc, H, v0 ? 1.0f : 0.0f, NULL, dxs, H, NULL, wt, PC_F32));
            /* dW[v0:v0+w] [w, H] += dl^T [w, m] xs [m, H] */
            if (dW)
                TRY(pc_gemm(1, 0, w, H, m, 1.0f, dl, (int)ldd, p.xs, H, 1.0f, NULL, dW + (size_t)v0 * H, H, NULL, wt,
                            PC_F32));
        }
    }
    return n ? pc_scatter_add_rows(dx, H, p.dxs, H, order, seg, seg_key, n_seg, H) : 0;
}
