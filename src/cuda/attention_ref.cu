/* attention_ref.cu: the plain reference of attention.h's kernels, for the
 * tests: no tiles, no plan, no tensor cores. The mask straight from its
 * definition (attention.h) on the raw pstart, plen, sstart arrays; float64
 * sums over the inputs as stored (bf16 widened exactly); one thread per
 * (query row, head, 32 dimensions) for the forward and dq, per (key row, kv
 * head, 32 dimensions) for dk and dv, each recomputing the scores it needs.
 * Results are rounded to float32 once. The magnitudes beside them (sums of
 * the absolute terms, for the tests' error bounds) are float32 sums: a
 * tolerance needs no more. */
#include <math.h>
#include <stdio.h>

#include <cuda_bf16.h>

#include "cuda/attention.h"
#include "cuda/attention_ptx.cuh"
#include "cuda/check.cuh"

typedef __nv_bfloat16 bf16_t;

enum { DC = 32 }; /* dimensions per thread */

__device__ __forceinline__ double wide(const float *p, size_t i) { return (double)p[i]; }
__device__ __forceinline__ double wide(const bf16_t *p, size_t i) { return (double)__bfloat162float(p[i]); }

/* key j visible to token t: the definition of attention.h */
__device__ __forceinline__ bool ref_sees(const int *pstart, const int *plen, const int *sstart, int W, int t, int j) {
    long ps = pstart[t], pl = plen[t], ss = sstart[t], qpos = pl + (t - ss);
    bool in_prompt = j >= ps && j < ps + pl && (W == 0 || qpos - (j - ps) < W);
    bool in_own = j >= ss && j <= t && (W == 0 || (long)t - j < W);
    return in_prompt || in_own;
}

struct RefArgs {
    const int *pstart, *plen, *sstart;
    int T, W, NH, NKV, HS, group;
    double scale;
};

/* the keys to try for token t: every visible key lies in [min(pstart, sstart), max(pstart + plen, t + 1)) */
__device__ __forceinline__ void key_range(const RefArgs &r, int t, int &j0, int &j1) {
    j0 = min(r.pstart[t], r.sstart[t]);
    j1 = max(r.pstart[t] + r.plen[t], t + 1);
}

template <typename TI> __device__ double dot_rows(const TI *a, const TI *b, int n) {
    double s = 0.0;
    for (int d = 0; d < n; d++) s += wide(a, d) * wide(b, d);
    return s;
}

template <typename TI> __device__ double absdot_rows(const TI *a, const TI *b, int n) {
    double s = 0.0;
    for (int d = 0; d < n; d++) s += fabs(wide(a, d) * wide(b, d));
    return s;
}

template <typename TI>
__global__ void ref_fwd(float *out, float *lse, float *mag, const TI *q, const TI *k, const TI *v, RefArgs r) {
    const int NG = r.HS / DC;
    long id = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (long)r.T * r.NH * NG) return;
    const int dg = (int)(id % NG), t = (int)(id / NG / r.NH), h = (int)(id / NG % r.NH), kvh = h / r.group;
    const size_t ldq = (size_t)r.NH * r.HS, ldk = (size_t)r.NKV * r.HS;
    const TI *qr = q + t * ldq + (size_t)h * r.HS, *kb = k + (size_t)kvh * r.HS, *vb = v + (size_t)kvh * r.HS;
    int j0, j1;
    key_range(r, t, j0, j1);
    double mx = -INFINITY;
    for (int j = j0; j < j1; j++)
        if (ref_sees(r.pstart, r.plen, r.sstart, r.W, t, j)) mx = fmax(mx, r.scale * dot_rows(qr, kb + j * ldk, r.HS));
    double l = 0.0, acc[DC];
    float mg[DC];
    for (int d = 0; d < DC; d++) acc[d] = 0.0, mg[d] = 0.0f;
    for (int j = j0; j < j1; j++) {
        if (!ref_sees(r.pstart, r.plen, r.sstart, r.W, t, j)) continue;
        double e = exp(r.scale * dot_rows(qr, kb + j * ldk, r.HS) - mx);
        l += e;
        const TI *vr = vb + j * ldk + dg * DC;
        for (int d = 0; d < DC; d++) {
            double x = wide(vr, d);
            acc[d] += e * x;
            mg[d] += (float)(e * fabs(x));
        }
    }
    size_t o = t * ldq + (size_t)h * r.HS + dg * DC;
    for (int d = 0; d < DC; d++) out[o + d] = (float)(acc[d] / l), mag[o + d] = (float)(mg[d] / l);
    if (dg == 0) lse[(size_t)t * r.NH + h] = (float)(mx + log(l));
}

/* D = dout . out and B = sum |dout out| per (t, h), float64 */
template <typename TI> __global__ void ref_rowdots(double *D, double *B, const TI *dout, const TI *out, RefArgs r) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)r.T * r.NH) return;
    D[i] = dot_rows(dout + i * r.HS, out + i * r.HS, r.HS);
    B[i] = absdot_rows(dout + i * r.HS, out + i * r.HS, r.HS);
}

template <typename TI>
__global__ void ref_dq(float *dq, float *m1, float *m2, const TI *dout, const float *lse, const double *D,
                       const double *B, const TI *q, const TI *k, const TI *v, RefArgs r) {
    const int NG = r.HS / DC;
    long id = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (long)r.T * r.NH * NG) return;
    const int dg = (int)(id % NG), t = (int)(id / NG / r.NH), h = (int)(id / NG % r.NH), kvh = h / r.group;
    const size_t ldq = (size_t)r.NH * r.HS, ldk = (size_t)r.NKV * r.HS, row = (size_t)t * r.NH + h;
    const TI *qr = q + t * ldq + (size_t)h * r.HS, *dor = dout + t * ldq + (size_t)h * r.HS;
    const TI *kb = k + (size_t)kvh * r.HS, *vb = v + (size_t)kvh * r.HS;
    const double L = lse[row], Dt = D[row], Bt = B[row];
    double acc[DC];
    float a1[DC], a2[DC];
    for (int d = 0; d < DC; d++) acc[d] = 0.0, a1[d] = a2[d] = 0.0f;
    int j0, j1;
    key_range(r, t, j0, j1);
    for (int j = j0; j < j1; j++) {
        if (!ref_sees(r.pstart, r.plen, r.sstart, r.W, t, j)) continue;
        const TI *kr = kb + j * ldk, *vr = vb + j * ldk;
        double p = exp(r.scale * dot_rows(qr, kr, r.HS) - L);
        double ds = p * (dot_rows(dor, vr, r.HS) - Dt), w2 = p * (absdot_rows(dor, vr, r.HS) + Bt);
        for (int d = 0; d < DC; d++) {
            double x = wide(kr, dg * DC + d);
            acc[d] += r.scale * ds * x;
            a1[d] += (float)(r.scale * fabs(ds * x));
            a2[d] += (float)(r.scale * w2 * fabs(x));
        }
    }
    size_t o = t * ldq + (size_t)h * r.HS + dg * DC;
    for (int d = 0; d < DC; d++) dq[o + d] = (float)acc[d], m1[o + d] = a1[d], m2[o + d] = a2[d];
}

/* dk (and its magnitudes) for key j of kv head kvh, over the group's heads and every token that sees j */
template <typename TI>
__global__ void ref_dk(float *dk, float *m1, float *m2, const TI *dout, const float *lse, const double *D,
                       const double *B, const TI *q, const TI *k, const TI *v, RefArgs r) {
    const int NG = r.HS / DC;
    long id = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (long)r.T * r.NKV * NG) return;
    const int dg = (int)(id % NG), j = (int)(id / NG / r.NKV), kvh = (int)(id / NG % r.NKV);
    const size_t ldq = (size_t)r.NH * r.HS, ldk = (size_t)r.NKV * r.HS;
    const TI *kr = k + j * ldk + (size_t)kvh * r.HS, *vr = v + j * ldk + (size_t)kvh * r.HS;
    double acc[DC];
    float a1[DC], a2[DC];
    for (int d = 0; d < DC; d++) acc[d] = 0.0, a1[d] = a2[d] = 0.0f;
    for (int t = 0; t < r.T; t++) {
        if (!ref_sees(r.pstart, r.plen, r.sstart, r.W, t, j)) continue;
        for (int h = kvh * r.group; h < (kvh + 1) * r.group; h++) {
            const size_t row = (size_t)t * r.NH + h;
            const TI *qr = q + t * ldq + (size_t)h * r.HS, *dor = dout + t * ldq + (size_t)h * r.HS;
            double p = exp(r.scale * dot_rows(qr, kr, r.HS) - (double)lse[row]);
            double ds = p * (dot_rows(dor, vr, r.HS) - D[row]), w2 = p * (absdot_rows(dor, vr, r.HS) + B[row]);
            for (int d = 0; d < DC; d++) {
                double x = wide(qr, dg * DC + d);
                acc[d] += r.scale * ds * x;
                a1[d] += (float)(r.scale * fabs(ds * x));
                a2[d] += (float)(r.scale * w2 * fabs(x));
            }
        }
    }
    size_t o = j * ldk + (size_t)kvh * r.HS + dg * DC;
    for (int d = 0; d < DC; d++) dk[o + d] = (float)acc[d], m1[o + d] = a1[d], m2[o + d] = a2[d];
}

template <typename TI>
__global__ void ref_dv(float *dv, float *mv, const TI *dout, const float *lse, const TI *q, const TI *k, RefArgs r) {
    const int NG = r.HS / DC;
    long id = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (long)r.T * r.NKV * NG) return;
    const int dg = (int)(id % NG), j = (int)(id / NG / r.NKV), kvh = (int)(id / NG % r.NKV);
    const size_t ldq = (size_t)r.NH * r.HS, ldk = (size_t)r.NKV * r.HS;
    const TI *kr = k + j * ldk + (size_t)kvh * r.HS;
    double acc[DC];
    float a1[DC];
    for (int d = 0; d < DC; d++) acc[d] = 0.0, a1[d] = 0.0f;
    for (int t = 0; t < r.T; t++) {
        if (!ref_sees(r.pstart, r.plen, r.sstart, r.W, t, j)) continue;
        for (int h = kvh * r.group; h < (kvh + 1) * r.group; h++) {
            const size_t row = (size_t)t * r.NH + h;
            const TI *qr = q + t * ldq + (size_t)h * r.HS, *dor = dout + t * ldq + (size_t)h * r.HS;
            double p = exp(r.scale * dot_rows(qr, kr, r.HS) - (double)lse[row]);
            for (int d = 0; d < DC; d++) {
                double x = wide(dor, dg * DC + d);
                acc[d] += p * x;
                a1[d] += (float)(p * fabs(x));
            }
        }
    }
    size_t o = j * ldk + (size_t)kvh * r.HS + dg * DC;
    for (int d = 0; d < DC; d++) dv[o + d] = (float)acc[d], mv[o + d] = a1[d];
}

static int ref_args(RefArgs *r, const int *pstart, const int *plen, const int *sstart, int T, int W, int NH, int NKV,
                    int HS, PcDtype dt, const char *who) {
    if (T < 1 || W < 0 || NH < 1 || NKV < 1 || NH % NKV || HS < DC || HS % DC || (dt != PC_F32 && dt != PC_BF16)) {
        char why[128];
        snprintf(why, sizeof why, "T %d, window %d, NH %d, NKV %d, HS %d, dtype %d", T, W, NH, NKV, HS, (int)dt);
        return pc_fail(__FILE__, __LINE__, who, why);
    }
    *r = RefArgs{pstart, plen, sstart, T, W, NH, NKV, HS, NH / NKV, 1.0 / sqrt((double)HS)};
    return 0;
}

static unsigned blocks(long n) { return (unsigned)((n + 127) / 128); }

extern "C" int pc_attention_ref_forward(float *out, float *lse, float *mag_out, const void *q, const void *k,
                                        const void *v, const int *pstart, const int *plen, const int *sstart, int T,
                                        int window, int NH, int NKV, int HS, PcDtype dt) {
    RefArgs r;
    if (ref_args(&r, pstart, plen, sstart, T, window, NH, NKV, HS, dt, "pc_attention_ref_forward")) return -1;
    unsigned n = blocks((long)T * NH * (HS / DC));
    if (dt == PC_F32)
        PC_LAUNCH(n, 128, 0, ref_fwd<float>)(out, lse, mag_out, (const float *)q, (const float *)k, (const float *)v, r);
    else
        PC_LAUNCH(n, 128, 0, ref_fwd<bf16_t>)(out, lse, mag_out, (const bf16_t *)q, (const bf16_t *)k, (const bf16_t *)v,
                                           r);
    LAUNCH_TRY();
    return 0;
}

template <typename TI>
static int ref_backward(float *dq, float *dk, float *dv, float *mq1, float *mq2, float *mk1, float *mk2, float *mv,
                        const TI *dout, const TI *out, const float *lse, const TI *q, const TI *k, const TI *v,
                        const RefArgs &r) {
    double *DB = NULL;
    size_t rows = (size_t)r.T * r.NH;
    CUDA_TRY(cudaMalloc((void **)&DB, 2 * sizeof(double) * rows));
    cudaStream_t st = pc_cuda_stream();
    int rc = 0;
    PC_LAUNCH(blocks((long)rows), 128, 0, ref_rowdots<TI>)(DB, DB + rows, dout, out, r);
    rc = cudaGetLastError() != cudaSuccess;
    if (!rc) PC_LAUNCH(blocks((long)rows * (r.HS / DC)), 128, 0, ref_dq<TI>)(dq, mq1, mq2, dout, lse, DB, DB + rows, q, k, v, r);
    rc = rc || cudaGetLastError() != cudaSuccess;
    long kn = (long)r.T * r.NKV * (r.HS / DC);
    if (!rc) PC_LAUNCH(blocks(kn), 128, 0, ref_dk<TI>)(dk, mk1, mk2, dout, lse, DB, DB + rows, q, k, v, r);
    rc = rc || cudaGetLastError() != cudaSuccess;
    if (!rc) PC_LAUNCH(blocks(kn), 128, 0, ref_dv<TI>)(dv, mv, dout, lse, q, k, r);
    rc = rc || cudaGetLastError() != cudaSuccess;
    cudaError_t e = cudaStreamSynchronize(st); /* before DB goes */
    cudaFree(DB);
    if (rc) return pc_fail(__FILE__, __LINE__, "ref_backward", "a launch failed");
    CUDA_TRY(e);
    return 0;
}

extern "C" int pc_attention_ref_backward(float *dq, float *dk, float *dv, float *mq1, float *mq2, float *mk1,
                                         float *mk2, float *mv, const void *dout, const void *out, const float *lse,
                                         const void *q, const void *k, const void *v, const int *pstart,
                                         const int *plen, const int *sstart, int T, int window, int NH, int NKV,
                                         int HS, PcDtype dt) {
    RefArgs r;
    if (ref_args(&r, pstart, plen, sstart, T, window, NH, NKV, HS, dt, "pc_attention_ref_backward")) return -1;
    if (dt == PC_F32)
        return ref_backward<float>(dq, dk, dv, mq1, mq2, mk1, mk2, mv, (const float *)dout, (const float *)out, lse,
                                   (const float *)q, (const float *)k, (const float *)v, r);
    return ref_backward<bf16_t>(dq, dk, dv, mq1, mq2, mk1, mk2, mv, (const bf16_t *)dout, (const bf16_t *)out, lse,
                                (const bf16_t *)q, (const bf16_t *)k, (const bf16_t *)v, r);
}
