/* sample.cu: the next token on the device (sample.h). One block of SB threads a row: the max, the weights into
 * work, the top-k threshold and the nucleus's edge by binary search on the weights' bits (a weight in [0, 1] orders
 * as its bits), every sum over the threads' strided elements then the warps in order (fixed: reruns give the same
 * bits), then the draw over contiguous segments of ids, their masses scanned in order. */
#include <limits.h>
#include <math.h>

#include "cuda/check.cuh"
#include "cuda/sample.h"

#define SB 256 /* threads a row */
#define ONE_BITS 0x3f800000u

/* sums of the block: each warp's by a butterfly, then the warps' in order (every thread gets the result) */
template <typename T> static __device__ T block_sum(T v, T *sh) {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    T s = 0;
    for (int w = 0; w < SB / 32; w++) s += sh[w];
    return s;
}

/* min (max: 1) of the block */
static __device__ int block_reduce(int v, int *sh, int max) {
    for (int o = 16; o; o >>= 1) {
        int u = __shfl_xor_sync(0xffffffffu, v, o);
        v = max ? (u > v ? u : v) : (u < v ? u : v);
    }
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    int r = sh[0];
    for (int w = 1; w < SB / 32; w++) r = max ? (sh[w] > r ? sh[w] : r) : (sh[w] < r ? sh[w] : r);
    return r;
}

/* x [SB] into its exclusive prefix sums, in order (one thread) */
template <typename T> static __device__ void exclusive_scan(T *x) {
    T p = 0;
    for (int t = 0; t < SB; t++) {
        T y = x[t];
        x[t] = p, p += y;
    }
}

/* the best (value, id) of the block: larger value, then lower id; id -1 for none */
static __device__ void block_best(float &val, int &id, float *shv, int *shi) {
    for (int o = 16; o; o >>= 1) {
        float v2 = __shfl_xor_sync(0xffffffffu, val, o);
        int i2 = __shfl_xor_sync(0xffffffffu, id, o);
        if (i2 >= 0 && (id < 0 || v2 > val || (v2 == val && i2 < id))) val = v2, id = i2;
    }
    __syncthreads();
    if ((threadIdx.x & 31) == 0) shv[threadIdx.x >> 5] = val, shi[threadIdx.x >> 5] = id;
    __syncthreads();
    val = -INFINITY, id = -1;
    for (int w = 0; w < SB / 32; w++)
        if (shi[w] >= 0 && (id < 0 || shv[w] > val || (shv[w] == val && shi[w] < id))) val = shv[w], id = shi[w];
}

__global__ void __launch_bounds__(SB) sample_kernel(int *ids, const float *logits, int ld, const int *rows, int V,
                                                    const uint64_t *keys, const int *steps, const float *temps,
                                                    PcSampling s, float *work) {
    __shared__ float shf[SB / 32], segm[SB];
    __shared__ int shi[SB / 32], segt[SB];
    const int r = blockIdx.x, tid = threadIdx.x;
    const float *l = logits + (size_t)(rows ? rows[r] : r) * ld;
    if (temps) s.temperature = temps[r];
    float *w = work + (size_t)r * V;
    /* the greedy id (sample_greedy: the lowest id of the largest number; none: V - 1), and the scaled max */
    const int greedy = !(s.temperature > 0.0f);
    float bv = -INFINITY;
    int bi = -1;
    for (int v = tid; v < V; v += SB) {
        float x = greedy ? l[v] : l[v] / s.temperature;
        if (!isnan(x) && (bi < 0 || x > bv)) bv = x, bi = v;
    }
    block_best(bv, bi, shf, shi);
    if (greedy || !isfinite(bv)) { /* no finite largest weight to scale by: greedy, as sample_token */
        if (!greedy) { /* the greedy id of the raw logits */
            bv = -INFINITY, bi = -1;
            for (int v = tid; v < V; v += SB)
                if (!isnan(l[v]) && (bi < 0 || l[v] > bv)) bv = l[v], bi = v;
            block_best(bv, bi, shf, shi);
        }
        if (tid == 0) ids[r] = bi >= 0 ? bi : V - 1;
        return;
    }
    const float M = bv;
    for (int v = tid; v < V; v += SB) w[v] = isnan(l[v]) ? 0.0f : expf(l[v] / s.temperature - M);
    __syncthreads();
    /* top-k: the largest threshold th with at least k weights >= th (its ties all stay) */
    float th = 0.0f;
    if (s.top_k > 0 && s.top_k < V) {
        unsigned lo = 0, hi = ONE_BITS + 1; /* count(>= lo) >= k; count(>= hi) < k */
        while (hi - lo > 1) {
            unsigned mid = lo + (hi - lo) / 2;
            float t = __uint_as_float(mid);
            int c = 0;
            for (int v = tid; v < V; v += SB) c += w[v] >= t;
            if (block_sum(c, shi) >= s.top_k) lo = mid;
            else hi = mid;
        }
        th = __uint_as_float(lo);
    }
    float S = 0.0f;
    for (int v = tid; v < V; v += SB) S += w[v] >= th ? w[v] : 0.0f;
    S = block_sum(S, shf);
    /* top-p: the edge tau, the largest weight whose kept mass at or above it reaches need; above it all stay, of
     * its ties the lowest ids that reach need (c of them) */
    float tau = th, total = S;
    int c = 1 << 30;
    if (s.top_p < 1.0f) {
        const float need = s.top_p * S;
        unsigned lo = __float_as_uint(th), hi = ONE_BITS + 1; /* mass(>= lo) >= need; mass(>= hi) < need */
        while (hi - lo > 1) {
            unsigned mid = lo + (hi - lo) / 2;
            float t = __uint_as_float(mid), m = 0.0f;
            for (int v = tid; v < V; v += SB) m += w[v] >= t && w[v] >= th ? w[v] : 0.0f;
            if (block_sum(m, shf) >= need) lo = mid;
            else hi = mid;
        }
        tau = __uint_as_float(lo);
        float A = 0.0f;
        int nt = 0;
        for (int v = tid; v < V; v += SB) A += w[v] > tau ? w[v] : 0.0f, nt += w[v] == tau;
        A = block_sum(A, shf), nt = block_sum(nt, shi);
        c = tau > 0.0f ? (int)ceilf((need - A) / tau) : nt;
        c = c < 1 ? 1 : c > nt ? nt : c;
        total = A + (float)c * tau;
    }
    /* the draw: the first id, in id order, whose kept cumulative weight passes u total; the ids in contiguous
     * segments, one a thread: the ties' ranks, then the kept masses, each scanned in order */
    const float target = (float)(draw_uniform(keys[r], (uint64_t)steps[r]) * (double)total);
    const int seg = (V + SB - 1) / SB, a = tid * seg < V ? tid * seg : V, b = a + seg < V ? a + seg : V;
    int ties = 0;
    for (int v = a; v < b; v++) ties += w[v] == tau;
    segt[tid] = ties;
    __syncthreads();
    if (tid == 0) exclusive_scan(segt);
    __syncthreads();
    float m = 0.0f;
    for (int v = a, rank = segt[tid]; v < b; v++) {
        int tie = w[v] == tau;
        m += w[v] > tau || (tie && rank < c) ? w[v] : 0.0f;
        rank += tie;
    }
    segm[tid] = m;
    __syncthreads();
    if (tid == 0) exclusive_scan(segm);
    __syncthreads();
    float cum = segm[tid];
    int pick = INT_MAX, last = -1;
    for (int v = a, rank = segt[tid]; v < b; v++) {
        int tie = w[v] == tau, kept = w[v] > tau || (tie && rank < c);
        rank += tie;
        if (!kept || !(w[v] > 0.0f)) continue;
        cum += w[v], last = v;
        if (cum > target) {
            pick = v;
            break;
        }
    }
    pick = block_reduce(pick, shi, 0), last = block_reduce(last, shi, 1);
    if (tid == 0) ids[r] = pick < INT_MAX ? pick : last; /* none: the target rounded past the total */
}

extern "C" size_t pc_sample_work(int n, int V) {
    return sizeof(float) * (size_t)(n > 0 ? n : 1) * (size_t)(V > 0 ? V : 1);
}

extern "C" int pc_sample(int *ids, const float *logits, int ld, const int *rows, int n, int V, const uint64_t *keys,
                         const int *steps, const float *temps, PcSampling s, void *work) {
    ARG_TRY(n >= 0 && V >= 1 && ld >= V && s.top_k >= 0 && !isnan(s.top_p) && !isnan(s.temperature),
            "n >= 0, V >= 1, ld >= V, top_k >= 0, numbers");
    if (n == 0) return 0;
    sample_kernel<<<n, SB, 0, pc_cuda_stream()>>>(ids, logits, ld, rows, V, keys, steps, temps, s, (float *)work);
    LAUNCH_TRY();
    return 0;
}

__global__ void ban_kernel(float *logits, int ld, const int *rows, int V, const int *banned, int n_banned) {
    float *l = logits + (size_t)(rows ? rows[blockIdx.x] : blockIdx.x) * ld;
    for (int b = threadIdx.x; b < n_banned; b += blockDim.x)
        if (banned[b] >= 0 && banned[b] < V) l[banned[b]] = -INFINITY;
}

extern "C" int pc_logits_ban(float *logits, int ld, const int *rows, int n, int V, const int *banned, int n_banned) {
    ARG_TRY(n >= 0 && V >= 1 && ld >= V && n_banned >= 0, "n >= 0, V >= 1, ld >= V, n_banned >= 0");
    if (n == 0 || n_banned == 0) return 0;
    ban_kernel<<<n, 128, 0, pc_cuda_stream()>>>(logits, ld, rows, V, banned, n_banned);
    LAUNCH_TRY();
    return 0;
}
