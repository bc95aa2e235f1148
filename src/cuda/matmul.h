/* matmul.h: the matrix products of the CUDA engine, through cuBLASLt, and
 * the bias gradient. Row-major everywhere, as the CPU's gemm() (gemm.h):
 * op(X) is X transposed when its flag is set; weights W are [out, in],
 * activations [T, in].
 *
 * Precision: `ab` is the element of both operands. PC_F32: float32
 * arithmetic (CUBLAS_COMPUTE_32F, TF32 off), the oracle mode. PC_BF16: bf16
 * operands (the caller rounds them: pc_f32_to_bf16) with exact products
 * and float32 accumulation. The output is float32, or bf16 (the float32
 * result rounded once).
 *
 * Algorithms: the cuBLASLt heuristic runs once per shape, element types,
 * transposes, epilogue and pointer alignment; the choice is cached, so a
 * shape always runs the same algorithm with the same workspace: reruns are
 * bit-identical. Among the heuristic's candidates the first that does not
 * reduce split-K partial sums in place in the output is taken (cuBLASLt's
 * other reduction schemes add the partial sums in a separate, ordered step);
 * pc_gemm_algo() names the choice. A shape no algorithm takes (rows or pointers
 * not aligned as cuBLASLt's kernels need) runs ppa's own kernel, one thread an
 * output element summing in order: slow, exact to float32. A row of the output may still depend on
 * how many rows share the call (the algorithm is chosen per M): score a
 * response in batches of the same shape when bits must match. */
#ifndef PPA_CUDA_MATMUL_H
#define PPA_CUDA_MATMUL_H

#include "cuda/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* D[M,N] = alpha op(A) op(B) + beta Cin + bias, each row of D getting bias.
 * op(A): [M,K] (A itself [K,M] when ta); op(B): [K,N] (B itself [N,K] when tb);
 * A, B: `ab` elements with row strides lda, ldb; D and Cin: `c` elements, row stride ldd.
 * Cin: NULL means D itself (beta 1: D += ...); beta 0 never reads it (NaN there is fine).
 * bias: float32 [N] or NULL (only with a float32 D; fused into the product's epilogue when it is 16-byte aligned). */
int pc_gemm(int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda, const void *B, int ldb,
            float beta, const void *Cin, void *D, int ldd, const float *bias, PcDtype ab, PcDtype c);

/* The engine's linear layer y = x W^T (+ bias) (+ res):
 * y: [T, out] (`yt` elements); x: [T, in] rows ldx apart; W: [out, in]; x and W: `ab` elements;
 * bias: float32 [out] or NULL; res: [T, out] (`yt` elements, may be y itself: y += x W^T) or NULL. */
int pc_linear_forward(void *y, PcDtype yt, const void *x, int ldx, const void *W, const float *bias, const void *res,
                      int T, int in, int out, PcDtype ab);

/* Its backward: dx [T, in] = dy W + beta_x dx (dx NULL: skipped; beta_x 1 accumulates), and dW [out, in] += dy^T x
 * (dW NULL: a frozen weight). dy: [T, out]; x: [T, in] rows ldx apart; dy, x, W: `ab` elements; dx, dW float32. */
int pc_linear_backward(float *dx, float beta_x, float *dW, const void *dy, const void *x, int ldx, const void *W, int T,
                       int in, int out, PcDtype ab);

/* db [N] += the sum over t of dy [T, N] (float32), summed in double in a fixed order. */
int pc_bias_backward(float *db, const float *dy, int T, int N);

/* The algorithm the last pc_gemm call ran ("algo 23 tile 18 splitK 1 reduction none stages 8 ..."), for tests and
 * benchmarks. */
const char *pc_gemm_algo(void);

#ifdef __cplusplus
}
#endif

#endif
