/* mock_cuda.c: a CPU stand-in for libppa_cuda.so and the few CUDA runtime calls the GPU tests make, so that the
 * tests' own logic (their CPU oracles, bounds, poisoning, guard bytes, rerun checks, the table) runs on a machine
 * without a GPU: `make cuda-mock` builds build/cuda-mock/test_cuda_mock, tests/test_cuda_build.sh runs it with
 * --small; with mock_attention.c (the fused attention) beside it, the GPU engine (src/gpu) runs on it too
 * (tests/test_gpu_engine.c). "Device" memory is host memory. The kernels are plain C ports of the CUDA families'
 * algorithms (the LM head's chunks and 32-lane online log-sum-exp, RMSNorm's token blocks, the global norm's
 * blocks), their sums in orders unlike the CPU engine's (products summed from the last k down), so that the tests'
 * bounds meet real rounding differences. It checks the tests, not the GPU code: nothing here runs the .cu files. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cuda/adamw.h"
#include "cuda/common.h"
#include "cuda/convert.h"
#include "cuda/decode.h"
#include "cuda/embedding.h"
#include "cuda/global_norm.h"
#include "cuda/lmhead.h"
#include "cuda/lmhead_plan.h"
#include "cuda/sample.h"
#include "cuda/lora.h"
#include "cuda/nccl.h"
#include "cuda/matmul.h"
#include "cuda/rmsnorm.h"
#include "cuda/rope.h"
#include "cuda/swiglu.h"
#include "kernels/gemm.h"
#include "mock.h"

static char err_msg[512];
static int ready;

/* ---- the CUDA runtime calls of the harness (left out with -DPPA_MOCK_NO_CUDA_RUNTIME: the GPU engine's tests,
 * which need no CUDA header, tests/test_gpu_engine.c) ---- */
#ifndef PPA_MOCK_NO_CUDA_RUNTIME
#include <cuda_runtime_api.h>

struct CUevent_st {
    double t;
};
cudaError_t cudaMemset(void *p, int v, size_t n) { MOCK_GUARD; memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { MOCK_GUARD; (void)k; memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
    MOCK_GUARD;
    (void)k, (void)st;
    memmove(d, s, n);
    return cudaSuccess;
}
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { MOCK_GUARD; *e = calloc(1, sizeof(struct CUevent_st)); return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { MOCK_GUARD; free(e); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { MOCK_GUARD; (void)s; e->t = now(); return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { MOCK_GUARD; (void)e; return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { MOCK_GUARD; *ms = (float)((b->t - a->t) * 1e3); return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { MOCK_GUARD; (void)e; return "mock"; }
#endif

/* ---- common.h ---- */
/* PPA_MOCK_NO_GPU_RANK=R: MPI rank R has no GPU (a node without one, in a job whose other ranks have theirs) */
int pc_init(int device, char *err, size_t errlen) {
    MOCK_GUARD;
    (void)device;
    const char *none = getenv("PPA_MOCK_NO_GPU_RANK"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (none && rank && !strcmp(none, rank)) {
        snprintf(err, errlen, "no CUDA device (the stand-in's PPA_MOCK_NO_GPU_RANK)");
        return -1;
    }
    ready = 1;
    return 0;
}
void pc_shutdown(void) { MOCK_GUARD; ready = 0; }
const char *pc_device_name(void) { MOCK_GUARD; return "CPU mock of libppa_cuda.so"; }
int pc_device_cc(void) { MOCK_GUARD; return 0; }
int pc_device_count(void) { MOCK_GUARD; return 1; }
/* one GPU a machine, the same for every process; PPA_MOCK_GPU_PER_RANK=1: a GPU of its own for each MPI rank, seen
 * as GPU 0 by each (one GPU visible to each process, as Slurm's CUDA_VISIBLE_DEVICES does) */
int pc_device_uuid(char *buf, size_t n) {
    MOCK_GUARD;
    const char *per = getenv("PPA_MOCK_GPU_PER_RANK"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (per && !strcmp(per, "1") && rank) snprintf(buf, n, "MOCK-GPU-of-rank-%s", rank);
    else snprintf(buf, n, "MOCK-GPU-0");
    return 0;
}
const char *pc_error(void) { MOCK_GUARD; return err_msg; }
/* a device of mock_capacity bytes (16 GiB unless a test sets it: mock.h): a larger allocation is refused with the
 * module's message (allocations are not added up: each is checked alone) */
static size_t capacity = (size_t)16 << 30;
void mock_set_capacity(size_t bytes) { capacity = bytes; }

/* PPA_MOCK_GUARD (mock.h): the allocations, mapped by pc_alloc, opened on entering the stand-in, closed on leaving */
typedef struct {
    void *p;
    size_t n;
} Region;
static Region *regions;
static int n_regions, cap_regions, guard = -1, depth;
static int guarding(void) {
    if (guard < 0) guard = getenv("PPA_MOCK_GUARD") && !strcmp(getenv("PPA_MOCK_GUARD"), "1");
    return guard;
}
static void protect_all(int prot) {
    for (int i = 0; i < n_regions; i++)
        if (mprotect(regions[i].p, regions[i].n, prot)) abort();
}
int mock_enter(void) {
    if (guarding() && depth++ == 0) protect_all(PROT_READ | PROT_WRITE);
    return 0;
}
void mock_leave(int *unused) {
    (void)unused;
    if (guarding() && --depth == 0) protect_all(PROT_NONE);
}
static void *guarded_alloc(size_t b) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (b + page - 1) / page * page;
    void *p = mmap(NULL, n ? n : page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (n_regions == cap_regions) {
        cap_regions = cap_regions ? 2 * cap_regions : 64;
        regions = realloc(regions, sizeof(Region) * (size_t)cap_regions);
        if (!regions) abort();
    }
    regions[n_regions++] = (Region){p, n ? n : page};
    return p;
}
static int guarded_free(void *p) {
    for (int i = 0; i < n_regions; i++)
        if (regions[i].p == p) {
            munmap(p, regions[i].n);
            regions[i] = regions[--n_regions];
            return 1;
        }
    return 0;
}

void *pc_alloc(size_t b) {
    MOCK_GUARD;
    void *p = b > capacity ? NULL : guarding() ? guarded_alloc(b) : malloc(b ? b : 1);
    if (!p)
        snprintf(err_msg, sizeof err_msg, "out of GPU memory: %zu bytes (%.2f GiB) asked, %zu (%.2f GiB) free of %zu "
                 "(%.2f GiB)", b, b / 1073741824.0, capacity, capacity / 1073741824.0, capacity,
                 capacity / 1073741824.0);
    return p;
}
void pc_free(void *p) {
    MOCK_GUARD;
    if (!p || !guarded_free(p)) free(p);
}
int pc_mem_info(size_t *f, size_t *t) { MOCK_GUARD; *f = *t = capacity; return 0; }
int pc_upload(void *d, const void *s, size_t n) { MOCK_GUARD; memmove(d, s, n); return 0; }
int pc_download(void *d, const void *s, size_t n) { MOCK_GUARD; memmove(d, s, n); return 0; }
int pc_memset(void *p, int b, size_t n) { MOCK_GUARD; memset(p, b, n); return 0; }
int pc_copy(void *d, const void *s, size_t n) { MOCK_GUARD; memmove(d, s, n); return 0; }
/* a graph: the captured function and its context, run again at each launch (reading device memory then, as a
 * replay does); capture runs nothing, as stream capture does not */
typedef struct {
    int (*fn)(void *);
    void *ctx;
} MockGraph;
void *pc_graph_capture(int (*fn)(void *ctx), void *ctx) {
    MOCK_GUARD;
    MockGraph *g = malloc(sizeof *g);
    if (g) g->fn = fn, g->ctx = ctx;
    return g;
}
int pc_graph_launch(void *graph) {
    MockGraph *g = graph;
    return g->fn(g->ctx);
}
void pc_graph_free(void *graph) { free(graph); }
void *pc_host_alloc(size_t n) { return malloc(n ? n : 1); }
void pc_host_free(void *p) { free(p); }
int pc_sync(void) { MOCK_GUARD; return 0; }
void *pc_stream(void) { MOCK_GUARD; return NULL; }

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- bf16 ---- */
static uint16_t rnd(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16 | 0x40);
    return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}
static float wid(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float ld(const void *p, PcDtype t, size_t i) { return t == PC_BF16 ? wid(((const uint16_t *)p)[i]) : ((const float *)p)[i]; }
static void st(void *p, PcDtype t, size_t i, float v) {
    if (t == PC_BF16) ((uint16_t *)p)[i] = rnd(v);
    else ((float *)p)[i] = v;
}

int pc_f32_to_bf16(PcBf16 *y, const float *x, size_t n) {
    MOCK_GUARD;
    for (size_t i = 0; i < n; i++) y[i] = rnd(x[i]);
    return 0;
}
int pc_bf16_to_f32(float *y, const PcBf16 *x, size_t n) {
    MOCK_GUARD;
    for (size_t i = 0; i < n; i++) y[i] = wid(x[i]);
    return 0;
}
int pc_fill_uniform(void *p, PcDtype t, size_t n, uint64_t seed, float lo, float hi) {
    MOCK_GUARD;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        st(p, t, i, lo + (hi - lo) * ((float)(z >> 40) * (1.0f / 16777216.0f)));
    }
    return 0;
}

/* ---- matmul.h: sums from the last k down ---- */
int pc_gemm(int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda, const void *B, int ldb,
            float beta, const void *Cin, void *D, int ldd, const float *bias, PcDtype ab, PcDtype c) {
    MOCK_GUARD;
    if (!ready) return fail("pc_init first");
    static long calls;
    const char *inject = getenv("PPA_MOCK_FAIL_GEMM"); /* N: the Nth product fails (a test of the callers' errors) */
    if (inject && ++calls == atol(inject)) return fail("pc_gemm: an injected failure (PPA_MOCK_FAIL_GEMM)");
    if (M < 0 || N < 0 || K < 1 || lda < (ta ? M : K) || ldb < (tb ? K : N) || ldd < N) return fail("bad arguments");
    const void *C = beta != 0.0f && Cin ? Cin : D;
    float *out = malloc(sizeof(float) * (size_t)M * N + 1);
    /* large: the CPU's float32 products on the widened operands (fast). The choice and, for x W^T, the products
     * themselves (gemm_rows) do not depend on M, so that a row's result does not depend on its batch, as the real
     * module's fixed algorithm per shape gives */
    int big = (double)N * K > 65536.0;
    if (big) {
        size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb;
        float *a = malloc(sizeof(float) * na + 1), *b = malloc(sizeof(float) * nb + 1);
        for (size_t i = 0; i < na; i++) a[i] = ld(A, ab, i);
        for (size_t i = 0; i < nb; i++) b[i] = ld(B, ab, i);
        if (!ta && tb) gemm_rows(M, N, K, a, lda, b, ldb, 0.0f, out, N);
        else gemm(ta, tb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, out, N);
        free(a), free(b);
    }
    for (int m = 0; m < M && !big; m++)
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int k = K - 1; k >= 0; k--) {
                float a = ld(A, ab, ta ? (size_t)k * lda + m : (size_t)m * lda + k);
                float b = ld(B, ab, tb ? (size_t)n * ldb + k : (size_t)k * ldb + n);
                acc += a * b;
            }
            out[(size_t)m * N + n] = acc;
        }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float v = alpha * out[(size_t)m * N + n];
            if (beta != 0.0f) v += beta * ld(C, c, (size_t)m * ldd + n);
            if (bias) v += bias[n];
            out[(size_t)m * N + n] = v;
        }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) st(D, c, (size_t)m * ldd + n, out[(size_t)m * N + n]);
    free(out);
    return 0;
}
int pc_linear_forward(void *y, PcDtype yt, const void *x, int ldx, const void *W, const float *bias, const void *res,
                      int T, int in, int out, PcDtype ab) {
    MOCK_GUARD;
    return pc_gemm(0, 1, T, out, in, 1.0f, x, ldx, W, in, res ? 1.0f : 0.0f, res, y, out, bias, ab, yt);
}
int pc_linear_backward(float *dx, float beta_x, float *dW, const void *dy, const void *x, int ldx, const void *W, int T,
                       int in, int out, PcDtype ab) {
    MOCK_GUARD;
    if (dx && pc_gemm(0, 0, T, in, out, 1.0f, dy, out, W, in, beta_x, NULL, dx, in, NULL, ab, PC_F32)) return -1;
    if (dW && pc_gemm(1, 0, out, in, T, 1.0f, dy, out, x, ldx, 1.0f, NULL, dW, in, NULL, ab, PC_F32)) return -1;
    return 0;
}
int pc_bias_backward(float *db, const float *dy, int T, int N) {
    MOCK_GUARD;
    for (int n = 0; n < N; n++) {
        double acc = 0.0;
        for (int t = T - 1; t >= 0; t--) acc += dy[(size_t)t * N + n];
        db[n] += (float)acc;
    }
    return 0;
}
const char *pc_gemm_algo(void) { MOCK_GUARD; return "mock"; }

/* ---- embedding.h ---- */
int pc_embed_forward(float *x, const void *E, PcDtype et, const int *tokens, int T, int C) {
    MOCK_GUARD;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) x[(size_t)t * C + c] = ld(E, et, (size_t)tokens[t] * C + c);
    return 0;
}
typedef struct {
    int key, pos;
} KeyPos;
static int kp_cmp(const void *a, const void *b) {
    const KeyPos *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}
int pc_scatter_plan(int *order, int *seg, int *seg_key, const int *keys, int n) {
    MOCK_GUARD;
    if (n < 0) return -1;
    KeyPos *kp = malloc(sizeof(KeyPos) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) {
        if (keys[i] < 0) {
            free(kp);
            return -1;
        }
        kp[i].key = keys[i], kp[i].pos = i;
    }
    qsort(kp, (size_t)n, sizeof *kp, kp_cmp);
    int ns = 0;
    for (int i = 0; i < n; i++) {
        if (i == 0 || kp[i].key != kp[i - 1].key) seg[ns] = i, seg_key[ns] = kp[i].key, ns++;
        order[i] = kp[i].pos;
    }
    seg[ns] = n;
    free(kp);
    return ns;
}
int pc_scatter_add_rows(float *dst, int ldd, const float *src, int lds, const int *order, const int *seg,
                        const int *seg_key, int n_seg, int C) {
    MOCK_GUARD;
    for (int s = 0; s < n_seg; s++)
        for (int c = 0; c < C; c++) {
            float acc = dst[(size_t)seg_key[s] * ldd + c];
            for (int p = seg[s]; p < seg[s + 1]; p++) acc += src[(size_t)order[p] * lds + c];
            dst[(size_t)seg_key[s] * ldd + c] = acc;
        }
    return 0;
}
int pc_embed_backward(float *dE, const float *dx, const int *order, const int *seg, const int *seg_key, int n_seg,
                      int C) {
    MOCK_GUARD;
    return pc_scatter_add_rows(dE, C, dx, C, order, seg, seg_key, n_seg, C);
}

/* ---- rmsnorm.h: token blocks of 32, partials in double ---- */
int pc_rmsnorm_forward(void *y, PcDtype yt, float *rstd, float *xsum, const float *x, const float *res, const float *w,
                       int T, int C, float eps) {
    MOCK_GUARD;
    if (C < 1 || C > 8192 || (res && !xsum)) return fail("bad arguments");
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        double ss = 0.0;
        for (int c = C - 1; c >= 0; c--) {
            float v = res ? xt[c] + res[(size_t)t * C + c] : xt[c];
            if (res) xsum[(size_t)t * C + c] = v;
            ss += (double)v * v;
        }
        float r = (float)(1.0 / sqrt(ss / C + (double)eps));
        rstd[t] = r;
        for (int c = 0; c < C; c++) {
            float v = res ? xsum[(size_t)t * C + c] : xt[c];
            st(y, yt, (size_t)t * C + c, v * r * w[c]);
        }
    }
    return 0;
}
int pc_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd, int T,
                        int C) {
    MOCK_GUARD;
    int nb = (T + 31) / 32;
    double *part = calloc((size_t)nb * C + 1, sizeof(double));
    for (int b = 0; b < nb; b++)
        for (int t = b * 32; t < T && t < (b + 1) * 32; t++) {
            const float *xt = x + (size_t)t * C, *dyt = dy + (size_t)t * C;
            float r = rstd[t];
            double dot = 0.0;
            for (int c = C - 1; c >= 0; c--) dot += (double)dyt[c] * w[c] * xt[c] * r;
            float m = (float)(dot / C);
            for (int c = 0; c < C; c++) {
                dx[(size_t)t * C + c] += r * (dyt[c] * w[c] - xt[c] * r * m);
                part[(size_t)b * C + c] += (double)dyt[c] * xt[c] * r;
            }
        }
    for (int c = 0; dw && c < C; c++) {
        double acc = 0.0;
        for (int b = 0; b < nb; b++) acc += part[(size_t)b * C + c];
        dw[c] += (float)acc;
    }
    free(part);
    return 0;
}

/* ---- rope.h ---- */
static int rope(void *x, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS, float sgn) {
    if (HS % 2 || ldx < NHx * HS) return fail("bad arguments");
    int half = HS / 2;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NHx; h++)
            for (int j = 0; j < half; j++) {
                size_t a0 = (size_t)t * ldx + (size_t)h * HS + j, b0 = a0 + half;
                const float *c = cs + ((size_t)pos[t] * half + j) * 2;
                float co = c[0], si = c[1] * sgn, a = ld(x, xt, a0), b = ld(x, xt, b0);
                st(x, xt, a0, a * co - b * si);
                st(x, xt, b0, b * co + a * si);
            }
    return 0;
}
int pc_rope_forward(void *x, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS) {
    MOCK_GUARD;
    return rope(x, xt, ldx, pos, cs, T, NHx, HS, 1.0f);
}
int pc_rope_backward(void *dx, PcDtype xt, int ldx, const int *pos, const float *cs, int T, int NHx, int HS) {
    MOCK_GUARD;
    return rope(dx, xt, ldx, pos, cs, T, NHx, HS, -1.0f);
}
/* rope.cu's one pass: rotated in float32 (s: the rotated copy, or the source itself in the backward), then rounded */
static int rope_qkv(const float *src[3], const int lds[3], PcBf16 *dst[3], const int ldd[3], int back,
                    const int *pos, const float *cs, int T, int NH, int NKV, int HS, float sgn) {
    if (T < 0 || NH < 1 || NKV < 1 || HS < 2 || HS % 2 || lds[0] < NH * HS || lds[1] < NKV * HS ||
        lds[2] < NKV * HS || ldd[0] < NH * HS || ldd[1] < NKV * HS || ldd[2] < NKV * HS)
        return mock_fail("pc_rope_qkv: bad shape or row strides");
    const int half = HS / 2, heads[3] = {NH, NKV, NKV};
    for (int part = 0; part < 3; part++)
        for (int t = 0; t < T; t++) {
            const float *s = src[part] + (size_t)t * lds[part];
            PcBf16 *d = dst[part] + (size_t)t * ldd[part];
            for (int h = 0; h < heads[part]; h++)
                for (int j = 0; j < half; j++) {
                    int c0 = h * HS + j, c1 = c0 + half;
                    float o0 = s[c0], o1 = s[c1];
                    if (part < 2) {
                        const float *c = cs + ((size_t)pos[t] * half + j) * 2;
                        float co = c[0], si = c[1] * sgn, x = s[c0], y = s[c1];
                        o0 = x * co - y * si, o1 = y * co + x * si;
                        if (back) ((float *)s)[c0] = o0, ((float *)s)[c1] = o1;
                    }
                    d[c0] = rnd(o0), d[c1] = rnd(o1);
                }
        }
    return 0;
}
int pc_rope_qkv_forward(PcBf16 *out, const float *q, int ldq, const float *k, int ldk, const float *v, int ldv,
                        const int *pos, const float *cs, int T, int NH, int NKV, int HS) {
    MOCK_GUARD;
    size_t TQ = (size_t)T * NH * HS, TK = (size_t)T * NKV * HS;
    const float *src[3] = {q, k, v};
    const int lds[3] = {ldq, ldk, ldv}, ldd[3] = {NH * HS, NKV * HS, NKV * HS};
    PcBf16 *dst[3] = {out, out + TQ, out + TQ + TK};
    return rope_qkv(src, lds, dst, ldd, 0, pos, cs, T, NH, NKV, HS, 1.0f);
}
int pc_rope_qkv_backward(PcBf16 *oq, int ldoq, PcBf16 *ok, int ldok, PcBf16 *ov, int ldov, float *dq, float *dk,
                         const float *dv, const int *pos, const float *cs, int T, int NH, int NKV, int HS) {
    MOCK_GUARD;
    const float *src[3] = {dq, dk, dv};
    const int lds[3] = {NH * HS, NKV * HS, NKV * HS}, ldd[3] = {ldoq, ldok, ldov};
    PcBf16 *dst[3] = {oq, ok, ov};
    return rope_qkv(src, lds, dst, ldd, 1, pos, cs, T, NH, NKV, HS, -1.0f);
}

/* ---- swiglu.h ---- */
int pc_swiglu_forward(void *h, PcDtype ht, PcBf16 *gb, PcBf16 *ub, const void *g, const void *u, PcDtype gt,
                      int ld_in, int rows, int cols) {
    MOCK_GUARD;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float gv = ld(g, gt, (size_t)r * ld_in + c), uv = ld(u, gt, (size_t)r * ld_in + c);
            float s = 1.0f / (1.0f + expf(-gv));
            st(h, ht, (size_t)r * cols + c, gv * s * uv);
            if (gb) gb[(size_t)r * cols + c] = rnd(gv), ub[(size_t)r * cols + c] = rnd(uv);
        }
    return 0;
}
int pc_swiglu_backward(void *dg, void *du, PcDtype dt, int ld_out, const float *dh, const void *g, const void *u,
                       PcDtype gt, int ld_in, int rows, int cols) {
    MOCK_GUARD;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float gv = ld(g, gt, (size_t)r * ld_in + c), uv = ld(u, gt, (size_t)r * ld_in + c), d = dh[(size_t)r * cols + c];
            float s = 1.0f / (1.0f + expf(-gv));
            st(du, dt, (size_t)r * ld_out + c, d * (gv * s));
            st(dg, dt, (size_t)r * ld_out + c, d * uv * s * (1.0f + gv * (1.0f - s)));
        }
    return 0;
}

/* ---- lmhead.h: lmhead.cu's plan, chunks and 32-lane online log-sum-exp ---- */
static int g_rows, g_vocab;
void pc_lmhead_set_chunks(int rows, int vocab) { MOCK_GUARD; g_rows = lm_hook_rows(rows), g_vocab = vocab > 0 ? vocab : 0; }
static size_t plan(LmPlan *p, char *base, int n, int H, int V, PcDtype wt) {
    return lm_plan(p, base, n, H, V, wt, g_rows, g_vocab);
}
static size_t keep_plan(LmKept *k, char *base, int n, int V, PcDtype wt) {
    return lm_keep_plan(k, base, n, V, wt, g_rows, g_vocab);
}
size_t pc_lmhead_work(int n, int H, int V, PcDtype wt) {
    MOCK_GUARD;
    LmPlan p;
    return plan(&p, NULL, n, H, V, wt);
}
size_t pc_lmhead_keep_bytes(int n, int V, PcDtype wt) {
    MOCK_GUARD;
    LmKept k;
    return keep_plan(&k, NULL, n, V, wt);
}
static void merge(float *m, float *s, float m2, float s2) {
    float M = fmaxf(*m, m2);
    if (M == -INFINITY) return;
    *s = *s * expf(*m - M) + s2 * expf(m2 - M);
    *m = M;
}
static void chunk_lse(const LmPlan *p, const int *tgt, int m, int v0, int w, int first, uint16_t *q, size_t ldq,
                      float *mc, int nch) {
    for (int row = 0; row < m; row++) {
        const float *l = p->logits + (size_t)row * p->ldl;
        float M[32], S[32];
        int nq = w / 4;
        for (int lane = 0; lane < 32; lane++) {
            M[lane] = -INFINITY, S[lane] = 0.0f;
            for (int q = lane; q < nq; q += 32) {
                const float *v = l + 4 * q;
                float c = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
                if (c > M[lane]) S[lane] *= expf(M[lane] - c), M[lane] = c;
                S[lane] += expf(v[0] - M[lane]) + expf(v[1] - M[lane]) + expf(v[2] - M[lane]) + expf(v[3] - M[lane]);
            }
            for (int k = 4 * nq + lane; k < w; k += 32) {
                if (l[k] > M[lane]) S[lane] *= expf(M[lane] - l[k]), M[lane] = l[k];
                S[lane] += expf(l[k] - M[lane]);
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            float M2[32], S2[32];
            for (int lane = 0; lane < 32; lane++) M2[lane] = M[lane ^ o], S2[lane] = S[lane ^ o];
            for (int lane = 0; lane < 32; lane++) merge(&M[lane], &S[lane], M2[lane], S2[lane]);
        }
        if (q) {
            for (int k = 0; k < w; k++) q[(size_t)row * ldq + k] = rnd(expf(l[k] - M[0]));
            mc[(size_t)row * nch] = M[0];
        }
        if (first) p->mx[row] = M[0], p->sum[row] = S[0];
        else merge(&p->mx[row], &p->sum[row], M[0], S[0]);
        int t = tgt[row] - v0;
        if (t >= 0 && t < w) p->lt[row] = l[t];
    }
}
static void gather(const LmPlan *p, const float *x, const int *src, int m, int H, PcDtype wt) {
    for (int i = 0; i < m; i++)
        for (int k = 0; k < H; k++) st(p->xs, wt, (size_t)i * H + k, x[(size_t)src[i] * H + k]);
}
int pc_lmhead_forward(double *logp, float *lse, const float *x, const void *W, PcDtype wt, const int *src,
                      const int *tgt, int n, int H, int V, void *work, void *keep) {
    MOCK_GUARD;
    LmPlan p;
    LmKept k;
    if (keep && !keep_plan(&k, NULL, n, V, wt)) return mock_fail("pc_lmhead_forward: keep given where pc_lmhead_keep_bytes is 0");
    plan(&p, work, n, H, V, wt);
    keep_plan(&k, keep, n, V, wt);
    size_t e = wt == PC_BF16 ? 2 : 4;
    for (int i0 = 0; i0 < n; i0 += p.R) {
        int m = n - i0 < p.R ? n - i0 : p.R;
        gather(&p, x, src + i0, m, H, wt);
        for (int v0 = 0; v0 < V; v0 += p.Vc) {
            int w = V - v0 < p.Vc ? V - v0 : p.Vc;
            if (pc_gemm(0, 1, m, w, H, 1.0f, p.xs, H, (const char *)W + (size_t)v0 * H * e, H, 0.0f, NULL, p.logits,
                        p.ldl, NULL, wt, PC_F32))
                return -1;
            chunk_lse(&p, tgt + i0, m, v0, w, v0 == 0, keep ? k.q + (size_t)i0 * k.ldq + v0 : NULL, k.ldq,
                      keep ? k.mc + (size_t)i0 * k.nch + v0 / p.Vc : NULL, k.nch);
        }
        for (int i = 0; i < m; i++) {
            double ls = (double)p.mx[i] + log((double)p.sum[i]);
            lse[i0 + i] = (float)ls;
            logp[i0 + i] = (double)p.lt[i] - ls;
        }
    }
    return 0;
}
int pc_lmhead_backward(float *dx, float *dW, const double *g, const double *logp, const float *lse, const float *x,
                       const void *W, PcDtype wt, const int *src, const int *tgt, int n, int H, int V,
                       const int *order, const int *seg, const int *seg_key, int n_seg, void *work, void *keep) {
    MOCK_GUARD;
    LmPlan p;
    LmKept k;
    if (keep && !keep_plan(&k, NULL, n, V, wt)) return mock_fail("pc_lmhead_backward: keep given where pc_lmhead_keep_bytes is 0");
    plan(&p, work, n, H, V, wt);
    keep_plan(&k, keep, n, V, wt);
    size_t e = wt == PC_BF16 ? 2 : 4;
    for (int i0 = 0; i0 < n; i0 += p.R) {
        int m = n - i0 < p.R ? n - i0 : p.R;
        float *dxs = p.dxs + (size_t)i0 * H;
        if (dW || !keep) gather(&p, x, src + i0, m, H, wt); /* kept: the rows only for dW */
        for (int v0 = 0; v0 < V; v0 += p.Vc) {
            int w = V - v0 < p.Vc ? V - v0 : p.Vc;
            const char *Wc = (const char *)W + (size_t)v0 * H * e;
            const void *dl = wt == PC_BF16 ? (const void *)p.dlb : (const void *)p.logits;
            int ldd = p.ldl;
            if (keep) { /* from the kept q, in place, no logits product */
                uint16_t *q = k.q + (size_t)i0 * k.ldq + v0;
                const float *mc = k.mc + (size_t)i0 * k.nch + v0 / p.Vc;
                for (int r = 0; r < m; r++)
                    for (int v = 0; v < w; v++) {
                        uint16_t *o = q + (size_t)r * k.ldq + v;
                        if (v0 + v == tgt[i0 + r]) *o = rnd((float)(g[i0 + r] * -expm1(logp[i0 + r])));
                        else *o = rnd(-(float)g[i0 + r] * wid(rnd(wid(*o) * expf(mc[(size_t)r * k.nch] - lse[i0 + r]))));
                    }
                dl = q, ldd = (int)k.ldq;
            } else {
                if (pc_gemm(0, 1, m, w, H, 1.0f, p.xs, H, Wc, H, 0.0f, NULL, p.logits, p.ldl, NULL, wt, PC_F32)) return -1;
                for (int r = 0; r < m; r++)
                    for (int v = 0; v < w; v++) {
                        size_t at = (size_t)r * p.ldl + v;
                        float gi = (float)g[i0 + r];
                        if (wt == PC_BF16) {
                            if (v0 + v == tgt[i0 + r]) p.dlb[at] = rnd((float)(g[i0 + r] * -expm1(logp[i0 + r])));
                            else p.dlb[at] = rnd(-gi * wid(rnd(expf(p.logits[at] - lse[i0 + r]))));
                        } else {
                            float d = -gi * expf(p.logits[at] - lse[i0 + r]);
                            if (v0 + v == tgt[i0 + r]) d += gi;
                            p.logits[at] = d;
                        }
                    }
            }
            if (pc_gemm(0, 0, m, H, w, 1.0f, dl, ldd, Wc, H, v0 ? 1.0f : 0.0f, NULL, dxs, H, NULL, wt, PC_F32)) return -1;
            if (dW && pc_gemm(1, 0, w, H, m, 1.0f, dl, ldd, p.xs, H, 1.0f, NULL, dW + (size_t)v0 * H, H, NULL, wt, PC_F32))
                return -1;
        }
    }
    return n ? pc_scatter_add_rows(dx, H, p.dxs, H, order, seg, seg_key, n_seg, H) : 0;
}

/* ---- lora.h: written apart from lora.c's keep(), so that the test compares two codings of the rule ---- */
int pc_lora_dropout(float *y, float beta, const float *x, int T, int in, uint64_t key, int target, double p) {
    MOCK_GUARD;
    if (T < 0 || in < 0 || target < 0 || !(p >= 0.0 && p < 1.0) || (beta != 0.0f && beta != 1.0f))
        return fail("pc_lora_dropout: shape, probability or beta");
    float scale = (float)(1.0 / (1.0 - p));
    for (size_t i = 0, n = (size_t)T * (size_t)in; i < n; i++) {
        uint64_t z = key ^ ((uint64_t)target << 48) ^ i * 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        float v = (double)(z >> 11) * 0x1.0p-53 < p ? 0.0f : x[i] * scale;
        y[i] = beta != 0.0f ? y[i] + v : v;
    }
    return 0;
}

/* ---- adamw.h, global_norm.h ---- */
int pc_adamw_step(float *p, PcBf16 *pb, const float *g, float *m, float *v, size_t n, float grad_scale,
                  const PcSpan *decay, int n_decay, size_t base, const PcAdamW *hp) {
    MOCK_GUARD;
    double bc1 = 1.0 - pow(hp->beta1, (double)hp->step), bc2 = 1.0 - pow(hp->beta2, (double)hp->step);
    float b1 = (float)hp->beta1, b2 = (float)hp->beta2, ss = (float)(hp->lr / bc1), sq = (float)sqrt(bc2);
    float eps = (float)hp->eps, shrink = (float)(1.0 - hp->lr * hp->weight_decay);
    for (size_t i = 0; i < n; i++) {
        int on = !decay;
        for (int s = 0; decay && s < n_decay; s++)
            if (decay[s].lo <= base + i && base + i < decay[s].hi) on = 1;
        float gg = grad_scale == 1.0f ? g[i] : g[i] * grad_scale, pp = p[i] * (on ? shrink : 1.0f);
        float mm = b1 * m[i] + (1.0f - b1) * gg, vv = b2 * v[i] + (1.0f - b2) * gg * gg;
        m[i] = mm, v[i] = vv;
        p[i] = pp - ss * mm / (sqrtf(vv) / sq + eps);
        if (pb) pb[i] = rnd(p[i]);
    }
    return 0;
}
int pc_add_f32(float *acc, const float *x, size_t n) {
    MOCK_GUARD;
    for (size_t i = 0; i < n; i++) acc[i] += x[i];
    return 0;
}
int pc_grad_sumsq(double *out, const float *g, size_t n) {
    MOCK_GUARD;
    double acc = 0.0;
    for (size_t i = n; i-- > 0;) acc += (double)g[i] * g[i];
    *out = acc;
    return 0;
}
int pc_grad_norm(double *norm, const float *g, size_t n) {
    MOCK_GUARD;
    double s;
    pc_grad_sumsq(&s, g, n);
    *norm = sqrt(s);
    return 0;
}

/* ---- mock.h: for the other files of the stand-in ---- */
int mock_fail(const char *msg) { return fail("%s", msg); }
float mock_ld(const void *p, PcDtype t, size_t i) { return ld(p, t, i); }
void mock_st(void *p, PcDtype t, size_t i, float v) { st(p, t, i, v); }
