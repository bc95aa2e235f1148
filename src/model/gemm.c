/* gemm.c: a portable blocked implementation (the BLAS-backed one replaces it). */
#include "model/gemm.h"

#include <stddef.h>

static float at(const float *X, int ld, int trans, int r, int c) { return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c]; }

void gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++) acc += (double)at(A, lda, transA, i, k) * at(B, ldb, transB, k, j);
            float *c = &C[(size_t)i * ldc + j];
            *c = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * *c));
        }
}

const char *gemm_backend(void) { return "portable loops (float64 accumulation)"; }
