/* gemm.h: float32 matrix products for the engine, row-major:
 * C[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * C, op = transpose when the
 * flag is set (A stored [K,M], B stored [N,K]). With weights [out, in]:
 * forward Y = X W^T is gemm(0, 1, ...), dX += dY W is gemm(0, 0, ...,
 * beta 1), dW += dY^T X is gemm(1, 0, ..., beta 1). */
#ifndef PPA_GEMM_H
#define PPA_GEMM_H

void gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc);
const char *gemm_backend(void);

#endif
