/* matmul.cu: matrix products through cuBLASLt, algorithms cached per shape,
 * and the bias gradient (matmul.h). */
#include <stdio.h>
#include <string.h>

#include <cuda_bf16.h>

#include "cuda/check.cuh"
#include "cuda/matmul.h"

#define LT_WORKSPACE ((size_t)32 << 20) /* Hopper's recommended cuBLASLt workspace */
#define LT_CACHE 512                    /* cached shapes; the oldest is dropped beyond */
#define LT_CANDIDATES 8                 /* heuristic results examined per shape */

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldd, ab, c, bias, alA, alB, alC, alD;
} Key;

typedef struct {
    Key key;
    int used;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (our B), B (our A), C = D */
    cublasLtMatmulAlgo_t algo;
    size_t ws;
    char name[160];
} Entry;

static struct {
    cublasLtHandle_t lt;
    void *ws;
    Entry cache[LT_CACHE];
    int n, next; /* entries filled; the next to replace when full */
    char last[160];
} L;

int pc_lt_init(char *err, size_t errlen) {
    if (L.lt) return 0;
    cublasStatus_t s = cublasLtCreate(&L.lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuBLASLt: %s", cublasLtGetStatusString(s));
        L.lt = NULL;
        return -1;
    }
    if (cudaMalloc(&L.ws, LT_WORKSPACE) != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "out of GPU memory for cuBLASLt's %zu MiB workspace", LT_WORKSPACE >> 20);
        cublasLtDestroy(L.lt);
        L.lt = NULL, L.ws = NULL;
        return -1;
    }
    return 0;
}

static void entry_free(Entry *e) {
    if (e->desc) cublasLtMatmulDescDestroy(e->desc);
    if (e->la) cublasLtMatrixLayoutDestroy(e->la);
    if (e->lb) cublasLtMatrixLayoutDestroy(e->lb);
    if (e->lc) cublasLtMatrixLayoutDestroy(e->lc);
    memset(e, 0, sizeof *e);
}

void pc_lt_release(void) {
    for (int i = 0; i < L.n; i++) entry_free(&L.cache[i]);
    if (L.ws) cudaFree(L.ws);
    if (L.lt) cublasLtDestroy(L.lt);
    memset(&L, 0, sizeof L);
}

extern "C" const char *pc_gemm_algo(void) { return L.last; }

/* the largest power of two dividing p, at most 256 (cuBLASLt's alignment preferences) */
static int align_of(const void *p) {
    uintptr_t u = (uintptr_t)p;
    int a = 256;
    while (a > 1 && (u & (uintptr_t)(a - 1))) a >>= 1;
    return a;
}

static cudaDataType_t cuda_type(int t) { return t == PC_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

/* describes an algorithm ("algo 66 tile 20 splitK 1 reduction none ...") */
static void algo_name(char *out, size_t n, const cublasLtMatmulAlgo_t *a, size_t ws, int fused) {
    int id = -1;
    uint32_t tile = 0, red = 0, stages = 0;
    int32_t splitk = 1;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    const char *rs = red == CUBLASLT_REDUCTION_SCHEME_NONE ? "none"
                     : red == CUBLASLT_REDUCTION_SCHEME_INPLACE ? "inplace"
                     : red == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE ? "compute-type"
                     : red == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE ? "output-type" : "other";
    snprintf(out, n, "algo %d tile %u splitK %d reduction %s stages %u workspace %zu%s", id, tile, (int)splitk, rs,
             stages, ws, fused ? " bias-epilogue" : "");
}

/* builds the descriptors of a shape and asks the heuristic: 0; 1 when no algorithm fits; -1 on an error (pc_error) */
static int entry_make(Entry *e, const Key *k) {
    e->key = *k;
    cublasOperation_t opa = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cudaDataType_t tab = cuda_type(k->ab), tc = cuda_type(k->c), scale = CUDA_R_32F;
    CUBLAS_TRY(cublasLtMatmulDescCreate(&e->desc, CUBLAS_COMPUTE_32F, scale));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    cublasLtEpilogue_t epi = k->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (k->bias) {
        int32_t bt = CUDA_R_32F;
        CUBLAS_TRY(cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    /* column-major view: D^T [N, M] = op(B)^T [N, K] op(A)^T [K, M]; B row-major is B^T column-major */
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&e->la, tab, k->tb ? k->K : k->N, k->tb ? k->N : k->K, k->ldb));
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&e->lb, tab, k->ta ? k->M : k->K, k->ta ? k->K : k->M, k->lda));
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&e->lc, tc, k->N, k->M, k->ldd));
    cublasLtMatmulPreference_t pref;
    CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wss = LT_WORKSPACE;
    uint32_t al[4] = {(uint32_t)k->alB, (uint32_t)k->alA, (uint32_t)k->alC, (uint32_t)k->alD}; /* cuBLASLt's A is our B */
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wss, sizeof wss);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof al[0]);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof al[1]);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof al[2]);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], sizeof al[3]);
    cublasLtMatmulHeuristicResult_t h[LT_CANDIDATES];
    int got = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(L.lt, e->desc, e->la, e->lb, e->lc, e->lc, pref, LT_CANDIDATES, h, &got);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED)
        return pc_fail(__FILE__, __LINE__, "cublasLtMatmulAlgoGetHeuristic", cublasLtGetStatusString(s));
    if (s != CUBLAS_STATUS_SUCCESS || got < 1) return 1;
    int pick = 0; /* the first whose split-K partial sums are not reduced in place in the output */
    for (int i = 0; i < got; i++) {
        uint32_t red = 0;
        size_t w;
        if (h[i].state != CUBLAS_STATUS_SUCCESS) continue;
        cublasLtMatmulAlgoConfigGetAttribute(&h[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
        if (red != CUBLASLT_REDUCTION_SCHEME_INPLACE) {
            pick = i;
            break;
        }
    }
    e->algo = h[pick].algo, e->ws = h[pick].workspaceSize, e->used = 1;
    algo_name(e->name, sizeof e->name, &e->algo, e->ws, k->bias);
    return 0;
}

/* the cached entry of a key: found, or made. NULL with *err 0: no algorithm fits (remembered as such); NULL with
 * *err 1: a cuBLASLt call failed (pc_error) */
static Entry *entry_get(const Key *k, int *err) {
    *err = 0;
    for (int i = 0; i < L.n; i++)
        if (!memcmp(&L.cache[i].key, k, sizeof *k)) return L.cache[i].used ? &L.cache[i] : NULL;
    Entry *e;
    if (L.n < LT_CACHE) e = &L.cache[L.n++];
    else e = &L.cache[L.next], L.next = (L.next + 1) % LT_CACHE, entry_free(e);
    memset(e, 0, sizeof *e);
    int r = entry_make(e, k);
    if (r == 0) return e;
    entry_free(e);
    e->key = *k; /* used 0: this key has no algorithm */
    if (r < 0) { /* an error is not remembered: the next call asks again */
        memset(&e->key, 0xff, sizeof e->key);
        *err = 1;
    }
    return NULL;
}

/* D[m, n] += bias[n], for the products whose epilogue could not take the bias */
__global__ void bias_add_kernel(float *D, int ldd, const float *bias, int M, int N) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)M * N) return;
    int m = (int)(i / N), n = (int)(i % N);
    D[(long)m * ldd + n] += bias[n];
}

/* The products no cuBLASLt algorithm takes (operands whose rows or pointers are not aligned as its kernels need:
 * seen on an H200 for float32 operands with a bf16 output): one thread an output element, the K products summed
 * in float32 in order (deterministic; slow, and met only on such odd shapes). */
static __device__ __forceinline__ float to_f32(float v) { return v; }
static __device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> static __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename TI, typename TO>
__global__ void gemm_fallback_kernel(int ta, int tb, int M, int N, int K, float alpha, const TI *A, int lda,
                                     const TI *B, int ldb, float beta, const TO *C, TO *D, int ldd) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)M * N) return;
    int m = (int)(i / N), n = (int)(i % N);
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
        float a = to_f32(ta ? A[(long)k * lda + m] : A[(long)m * lda + k]);
        float b = to_f32(tb ? B[(long)n * ldb + k] : B[(long)k * ldb + n]);
        acc = fmaf(a, b, acc);
    }
    float v = alpha * acc;
    if (beta != 0.0f) v += beta * to_f32(C[(long)m * ldd + n]);
    D[(long)m * ldd + n] = from_f32<TO>(v);
}

static int gemm_fallback(int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda, const void *B,
                         int ldb, float beta, const void *C, void *D, int ldd, PcDtype ab, PcDtype c) {
    long n = (long)M * N;
    unsigned blocks = (unsigned)((n + 255) / 256);
    cudaStream_t st = pc_cuda_stream();
    typedef __nv_bfloat16 bf;
    if (ab == PC_F32 && c == PC_F32)
        gemm_fallback_kernel<float, float><<<blocks, 256, 0, st>>>(ta, tb, M, N, K, alpha, (const float *)A, lda,
                                                                  (const float *)B, ldb, beta, (const float *)C,
                                                                  (float *)D, ldd);
    else if (ab == PC_F32)
        gemm_fallback_kernel<float, bf><<<blocks, 256, 0, st>>>(ta, tb, M, N, K, alpha, (const float *)A, lda,
                                                               (const float *)B, ldb, beta, (const bf *)C, (bf *)D,
                                                               ldd);
    else if (c == PC_F32)
        gemm_fallback_kernel<bf, float><<<blocks, 256, 0, st>>>(ta, tb, M, N, K, alpha, (const bf *)A, lda,
                                                               (const bf *)B, ldb, beta, (const float *)C,
                                                               (float *)D, ldd);
    else
        gemm_fallback_kernel<bf, bf><<<blocks, 256, 0, st>>>(ta, tb, M, N, K, alpha, (const bf *)A, lda,
                                                            (const bf *)B, ldb, beta, (const bf *)C, (bf *)D, ldd);
    LAUNCH_TRY();
    snprintf(L.last, sizeof L.last, "ppa's fallback kernel (no cuBLASLt algorithm for this shape)");
    return 0;
}

static int lt_run(Entry *e, float alpha, const void *A, const void *B, float beta, const void *C, void *D,
                  const float *bias) {
    if (bias) CUBLAS_TRY(cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    CUBLAS_TRY(cublasLtMatmul(L.lt, e->desc, &alpha, B, e->la, A, e->lb, &beta, C, e->lc, D, e->lc, &e->algo, L.ws,
                              LT_WORKSPACE, pc_cuda_stream()));
    snprintf(L.last, sizeof L.last, "%s", e->name);
    return 0;
}

extern "C" int pc_gemm(int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda, const void *B,
                       int ldb, float beta, const void *Cin, void *D, int ldd, const float *bias, PcDtype ab,
                       PcDtype c) {
    ARG_TRY(L.lt, "pc_init first");
    ARG_TRY(M >= 0 && N >= 0 && K >= 1, "M, N >= 0 and K >= 1");
    ARG_TRY((ab == PC_F32 || ab == PC_BF16) && (c == PC_F32 || c == PC_BF16), "element types");
    ARG_TRY(lda >= (ta ? M : K) && ldb >= (tb ? K : N) && ldd >= N && lda >= 1 && ldb >= 1 && ldd >= 1,
            "row strides shorter than the rows");
    ARG_TRY(!bias || c == PC_F32, "a bias needs a float32 output");
    if (M == 0 || N == 0) return 0;
    ARG_TRY(A && B && D, "NULL matrix");
    const void *C = beta != 0.0f && Cin ? Cin : D;
    Key k = {ta != 0, tb != 0, M, N, K, lda, ldb, ldd, (int)ab, (int)c, 0, align_of(A), align_of(B), align_of(C),
             align_of(D)};
    int err;
    Entry *e = NULL;
    if (bias && pc_aligned(bias, 16)) { /* fused into the epilogue when some algorithm takes it */
        k.bias = 1;
        e = entry_get(&k, &err);
        if (err) return -1;
        if (e) return lt_run(e, alpha, A, B, beta, C, D, bias);
        k.bias = 0;
    }
    e = entry_get(&k, &err);
    if (err) return -1;
    if (e ? lt_run(e, alpha, A, B, beta, C, D, NULL)
          : gemm_fallback(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, D, ldd, ab, c))
        return -1;
    if (bias) {
        long n = (long)M * N;
        bias_add_kernel<<<(unsigned)((n + 255) / 256), 256, 0, pc_cuda_stream()>>>((float *)D, ldd, bias, M, N);
        LAUNCH_TRY();
    }
    return 0;
}

extern "C" int pc_linear_forward(void *y, PcDtype yt, const void *x, int ldx, const void *W, const float *bias,
                                 const void *res, int T, int in, int out, PcDtype ab) {
    /* y = x W^T: op(A) = x [T, in], op(B) = W^T with W [out, in] */
    return pc_gemm(0, 1, T, out, in, 1.0f, x, ldx, W, in, res ? 1.0f : 0.0f, res, y, out, bias, ab, yt);
}

extern "C" int pc_linear_backward(float *dx, float beta_x, float *dW, const void *dy, const void *x, int ldx,
                                  const void *W, int T, int in, int out, PcDtype ab) {
    if (dx && pc_gemm(0, 0, T, in, out, 1.0f, dy, out, W, in, beta_x, NULL, dx, in, NULL, ab, PC_F32)) return -1;
    /* dW [out, in] += dy^T [out, T] x [T, in] */
    if (dW && pc_gemm(1, 0, out, in, T, 1.0f, dy, out, x, ldx, 1.0f, NULL, dW, in, NULL, ab, PC_F32)) return -1;
    return 0;
}

/* ---- the bias gradient: column sums in double over fixed blocks of rows, then the blocks in order ---- */

#define BIAS_ROWS 256 /* rows per partial sum */

/* part[by, n] = sum of dy[r, n] over rows r of block by; a 32 x 8 block: 32 columns, 8 rows at a time */
__global__ void bias_partial_kernel(double *part, const float *dy, int T, int N) {
    __shared__ double s[8][33];
    int n = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * BIAS_ROWS, r1 = min(r0 + BIAS_ROWS, T);
    double acc = 0.0;
    if (n < N)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) acc += dy[(long)r * N + n];
    s[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && n < N) {
        double t = 0.0;
        for (int j = 0; j < 8; j++) t += s[j][threadIdx.x];
        part[(long)blockIdx.y * N + n] = t;
    }
}

__global__ void bias_final_kernel(float *db, const double *part, int nb, int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    double t = 0.0;
    for (int b = 0; b < nb; b++) t += part[(long)b * N + n];
    db[n] += (float)t;
}

extern "C" int pc_bias_backward(float *db, const float *dy, int T, int N) {
    ARG_TRY(T >= 0 && N >= 0, "T, N >= 0");
    if (T == 0 || N == 0) return 0;
    int nb = pc_ceil_div(T, BIAS_ROWS);
    double *part = (double *)pc_scratch(sizeof(double) * (size_t)nb * N);
    if (!part) return -1;
    bias_partial_kernel<<<dim3(pc_ceil_div(N, 32), nb), dim3(32, 8), 0, pc_cuda_stream()>>>(part, dy, T, N);
    LAUNCH_TRY();
    bias_final_kernel<<<pc_ceil_div(N, 256), 256, 0, pc_cuda_stream()>>>(db, part, nb, N);
    LAUNCH_TRY();
    return 0;
}
