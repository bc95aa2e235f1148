/* gemm_bench.c: gemm_bench(), the body of `ppa bench gemm`: validate each
 * shape against float64 dot products, then time it (median of repeats). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "core/timer.h"
#include "kernels/gemm.h"

typedef struct {
    const char *name;
    int transA, transB, M, N, K;
    float beta;
} BenchShape;

/* Qwen2-0.5B-sized: 2048 tokens, hidden 896, MLP 4864 */
static const BenchShape SHAPES[] = {
    {"square n=256", 0, 0, 256, 256, 256, 0.0f},
    {"square n=768", 0, 0, 768, 768, 768, 0.0f},
    {"square n=2048", 0, 0, 2048, 2048, 2048, 0.0f},
    {"fwd  Y=XW^T 896->896", 0, 1, 2048, 896, 896, 0.0f},
    {"fwd  Y=XW^T 896->4864", 0, 1, 2048, 4864, 896, 0.0f},
    {"fwd  Y=XW^T 4864->896", 0, 1, 2048, 896, 4864, 0.0f},
    {"dX  +=dY W  896->4864", 0, 0, 2048, 896, 4864, 1.0f},
    {"dW  +=dY^T X 896->4864", 1, 0, 4864, 896, 2048, 1.0f},
    {"dX  +=dY W  4864->896", 0, 0, 2048, 4864, 896, 1.0f},
    {"dW  +=dY^T X 4864->896", 1, 0, 896, 4864, 2048, 1.0f},
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int gemm_bench(FILE *out, int threads, int repeat, int json) {
    if (threads > 0) gemm_set_threads(threads);
    if (repeat < 1) repeat = 1;
    if (json)
        fprintf(out, "{\"backend\": \"%s\", \"kernel\": \"%s\", \"threads\": %d}\n", gemm_backend(), gemm_kernel(),
                gemm_threads());
    else
        fprintf(out, "gemm backend: %s\n%-24s %5s %5s %5s %3s %4s %9s %9s %9s\n", gemm_backend(), "product", "M",
                "N", "K", "op", "beta", "ms", "GFLOP/s", "max err");
    PpaRng rng;
    rng_seed(&rng, 42);
    double *ms = xmalloc(sizeof(double) * (size_t)repeat);
    int failed = 0;
    for (size_t s = 0; s < PPA_ARRAY_LEN(SHAPES); s++) {
        const BenchShape *b = &SHAPES[s];
        int M = b->M, N = b->N, K = b->K;
        int lda = b->transA ? M : K, ldb = b->transB ? K : N, ldc = N;
        size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        float *A = xmalloc(sizeof(float) * na), *B = xmalloc(sizeof(float) * nb);
        float *C = xmalloc(sizeof(float) * nc), *C0 = xmalloc(sizeof(float) * nc);
        for (size_t i = 0; i < na; i++) A[i] = (float)(rng_uniform(&rng) - 0.5);
        for (size_t i = 0; i < nb; i++) B[i] = (float)(rng_uniform(&rng) - 0.5);
        for (size_t i = 0; i < nc; i++) C0[i] = (float)(rng_uniform(&rng) - 0.5);

        /* validate: 256 sampled entries, |err| <= 1e-5 sum|a b| + 1e-6 */
        memcpy(C, C0, sizeof(float) * nc);
        gemm(b->transA, b->transB, M, N, K, 1.0f, A, lda, B, ldb, b->beta, C, ldc);
        double max_err = 0.0;
        int bad = 0;
        for (int t = 0; t < 256; t++) {
            int i = (int)(rng_u64(&rng) % (uint64_t)M), j = (int)(rng_u64(&rng) % (uint64_t)N);
            double want = b->beta * (double)C0[(size_t)i * ldc + j], mag = fabs(want);
            for (int k = 0; k < K; k++) {
                double p = (double)(b->transA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                           (double)(b->transB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                want += p;
                mag += fabs(p);
            }
            double err = fabs(C[(size_t)i * ldc + j] - want) / (mag + 1e-30);
            if (err > max_err) max_err = err;
            if (!(fabs(C[(size_t)i * ldc + j] - want) <= 1e-6 + 1e-5 * mag)) bad = 1;
        }
        failed |= bad;

        /* time: one warm-up, then the median of `repeat` (beta = 1 keeps accumulating into C: same cost) */
        gemm(b->transA, b->transB, M, N, K, 1.0f, A, lda, B, ldb, b->beta, C, ldc);
        for (int r = 0; r < repeat; r++) {
            double t0 = timer_now();
            gemm(b->transA, b->transB, M, N, K, 1.0f, A, lda, B, ldb, b->beta, C, ldc);
            ms[r] = 1e3 * (timer_now() - t0);
        }
        qsort(ms, (size_t)repeat, sizeof(double), cmp_double);
        double med = repeat % 2 ? ms[repeat / 2] : 0.5 * (ms[repeat / 2 - 1] + ms[repeat / 2]);
        double gflops = 2.0 * M * N * K / (med * 1e-3) / 1e9;
        char op[3] = {b->transA ? 'T' : 'N', b->transB ? 'T' : 'N', 0};
        if (json)
            fprintf(out,
                    "{\"product\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"op\": \"%s\", \"beta\": %g, "
                    "\"ms\": %.4f, \"gflops\": %.1f, \"max_rel_err\": %.3g, \"valid\": %s}\n",
                    b->name, M, N, K, op, b->beta, med, gflops, max_err, bad ? "false" : "true");
        else
            fprintf(out, "%-24s %5d %5d %5d %3s %4g %9.3f %9.1f %9.2g%s\n", b->name, M, N, K, op, b->beta, med,
                    gflops, max_err, bad ? "  INVALID" : "");
        fflush(out);
        free(A);
        free(B);
        free(C);
        free(C0);
    }
    free(ms);
    return failed;
}
