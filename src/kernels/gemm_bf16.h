/* gemm_bf16.h: bfloat16 matrix products with float32 accumulation, the
 * products of --precision bf16 (mixed precision: PyTorch autocast's recipe).
 * Same conventions as gemm() in gemm.h: row-major, op = transpose when the
 * flag is set, C[M,N] = op(A) op(B) + beta C with beta 0 (overwrite) or 1
 * (accumulate, in float32).
 *
 * Backend. gemm_bf16.c dlopen()s Debian's oneDNN (libdnnl.so.2, the library
 * PyTorch's bf16 products run on) on first use and runs its matmul primitive
 * with bf16 sources and a float32 destination; primitives are cached per
 * shape. It needs a CPU with AVX512-BF16 (vdpbf16ps): elsewhere oneDNN would
 * emulate bf16 more slowly than float32 runs, so bf16 is refused there with a
 * message. The built-in kernel (exact bf16 products summed in float32 in k
 * order: gemm_seq.h's fma chains, at 70-90% of OpenBLAS's float32 rate on
 * AVX2) runs when PPA_BF16=builtin is set, on any CPU; it is the tested
 * fallback and the reference of tests/test_bf16.c (and what AddressSanitizer
 * builds run: LeakSanitizer cannot scan a dlopen()ed oneDNN's threads).
 *
 * Properties (tests/test_bf16.c checks each on the loaded backend; tests/run.sh
 * runs it again under every lower instruction set oneDNN can be capped to
 * on the machine, ONEDNN_MAX_CPU_ISA, so AMX, AVX512-BF16 and the emulated
 * AVX512 kernel are each checked where the CPU has them):
 * - row invariance, by construction: row i of C in the row patterns (A not
 *   transposed: the forward's X W^T and the backward's dY W) does not depend
 *   on M, on the other rows or on the row's place, whatever implementation
 *   oneDNN picks: those products run as blocks of a fixed number of rows
 *   through one primitive per shape (gemm_bf16.c, ROW_BLOCK), so a
 *   response's log-prob does not depend on its batch (pitfall 9);
 * - determinism: bit-identical results run after run; the same for 1 and 2
 *   threads (oneDNN 2.6 splits K among threads only for AMX from 16 threads
 *   on, and for dW = dY^T X with K a power of two >= 2048 when N gives too
 *   little parallel work; a thread count is part of a checkpoint's identity);
 * - accuracy: every product of two bf16 is exact in float32; only the float32
 *   sums round, so |C - C64| <= K * 2^-24 * sum |a b| (the test's bound).
 * Thread safety: calls are serialised by a lock (the cache and oneDNN's
 * per-primitive scratchpad). */
#ifndef PPA_GEMM_BF16_H
#define PPA_GEMM_BF16_H

#include <stddef.h>

#include "kernels/bf16.h"

/* The rows of one oneDNN product in the row patterns (gemm_bf16.c): callers that choose their own row counts (the LM
 * head's chunks) take multiples of it, so that no product pads rows it could have computed. */
#define GEMM_BF16_ROW_BLOCK 256

/* 0 when bf16 products can run here; otherwise -1 and why (no AVX512-BF16,
 * no libdnnl.so.2, a failed self-check), with what to do about it. */
int gemm_bf16_ready(char *err, size_t errlen);

void gemm_bf16(int transA, int transB, int M, int N, int K, const bf16 *A, int lda, const bf16 *B, int ldb,
               float beta, float *C, int ldc);

/* "oneDNN 2.6.3, brg:avx512_core_bf16, 2 threads" or "builtin C kernel
 * (PPA_BF16=builtin), 2 threads"; the implementation is the one oneDNN chose
 * for the last product. */
const char *gemm_bf16_backend(void);
/* "oneDNN" or "builtin", for the state file and resume checks */
const char *gemm_bf16_kernel(void);

#endif
