/* gemm_seq.h: matrix products in which every element is one chain of fused
 * multiply-adds over k in order: s = fma(a_k, b_k, s) from s = 0, then
 * C = s (beta 0) or C + s (beta 1). fma rounds once, so the 8-lane kernel
 * and the scalar loop give the same bits, and an element does not depend on
 * M, N, the tiling, the thread count or the other rows: batch invariance and
 * determinism by construction, on any CPU.
 *
 * Two uses. The built-in bf16 kernel (gemm_bf16.h, PPA_BF16=builtin): bf16
 * products are exact in float32, so the chain is the in-order float32 sum of
 * exact products that kernel promises. And gemm_rows (gemm.h) where the
 * loaded BLAS is not row-invariant (OpenBLAS's Haswell and Zen kernels).
 *
 * Same conventions as gemm(): row-major, op = transpose when the flag is
 * set, op(A) [M, K], op(B) [K, N], beta 0 (C not read) or 1. */
#ifndef PPA_GEMM_SEQ_H
#define PPA_GEMM_SEQ_H

#include "kernels/bf16.h"

void gemm_seq_f32(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);
void gemm_seq_bf16(int transA, int transB, int M, int N, int K, const bf16 *A, int lda, const bf16 *B, int ldb,
                   float beta, float *C, int ldc);
/* "avx2" or "scalar": which loops pack and run the tiles (the same bits either way); PPA_GEMM_SEQ=scalar in the
 * environment chooses the portable loops on any CPU (tests/run.sh runs test_gemm_seq both ways) */
const char *gemm_seq_isa(void);

#endif
