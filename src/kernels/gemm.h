/* gemm.h: the matrix-multiply backend. Every linear layer, forward and
 * backward, goes through gemm(); nothing else in ppa calls a BLAS directly
 * (gemm.c loads the library itself, see "Backend" below).
 *
 * Mapping of a linear layer, weights W [out, in], activations X [n, in]:
 *   forward  Y  = X W^T      gemm(0, 1, n, out, in,  1, X, in,  W, in,  0, Y,  out)
 *   backward dX += dY W      gemm(0, 0, n, in,  out, 1, dY, out, W, in, 1, dX, in)
 *            dW += dY^T X    gemm(1, 0, out, in, n,  1, dY, out, X, in, 1, dW, in)
 *
 * Backend. gemm.c dlopen()s OpenBLAS (the OpenMP build if installed, else the
 * system's libopenblas.so.0) on first use. Debian's OpenBLAS 0.3.21 picks
 * its kernels once, at load time, and on CPUs newer than it knows it may
 * guess an older family (Prescott on some recent Xeons: a fifth of the speed
 * of its AVX-512 kernels; Haswell kernels run at half). So, when
 * OPENBLAS_CORETYPE is unset and the CPU (and OS) support AVX-512, gemm.c
 * first asks the library in a throwaway child process which kernels it would
 * pick; if they predate AVX-512, it loads the library with
 * OPENBLAS_CORETYPE=SkylakeX (and removes the variable again afterwards).
 * A correct pick (e.g. Cooperlake on AMD Zen 5) is kept. A user-set
 * OPENBLAS_CORETYPE is obeyed as it is, with a warning on stderr when it
 * selects pre-AVX-512 kernels on an AVX-512 CPU. Whatever is loaded is checked
 * against float64 dot products on small shapes; a library that is missing or
 * fails that check is replaced by the built-in C kernel (slow), with a
 * warning on stderr.
 *
 * Environment: PPA_BLAS=builtin forces the built-in kernel; PPA_BLAS=<file
 * or soname> loads that library instead of the default search (any CBLAS
 * with cblas_sgemm; OpenBLAS and BLIS are named in gemm_backend()).
 * PPA_GEMM_TEST_PROBE_CORETYPE is a test hook (tests/test_gemm.c).
 *
 * Determinism: for a fixed backend, kernel family and thread count, gemm()
 * returns bit-identical results run after run (tests/test_gemm.c checks it).
 * A different kernel family or thread count may change the last bits, so a
 * bitwise resume needs the same gemm_kernel() and gemm_threads() (record
 * both in the state file). The built-in kernel is identical for any thread
 * count.
 *
 * Thread safety: gemm() may be called from several threads at once. With the
 * OpenMP build of OpenBLAS, calls made inside an OpenMP parallel region run
 * single-threaded; with the pthreads build, call gemm_set_threads(1) around
 * such regions. */
#ifndef PPA_GEMM_H
#define PPA_GEMM_H

#include <stdio.h>

/* Loads and checks the backend. Optional: gemm(), gemm_backend() and the
 * others call it on first use. It does not need to run first in main (no
 * other part of ppa loads a BLAS), but calling it early, before large
 * allocations and threads exist, keeps its probe (a fork) cheap: call it at
 * the start of the commands that multiply matrices (train, eval, bench gemm),
 * not in main() for all of them (it costs about 20 ms: loading OpenBLAS, the
 * probe and the self-check). Thread-safe, idempotent. */
void gemm_init(void);

/* C[M,N] = alpha * op(A) op(B) + beta * C, row-major float32; op = transpose
 * if the flag is set. op(A) is [M,K] (A itself [K,M] when transA), op(B) is
 * [K,N] (B itself [N,K] when transB). lda, ldb, ldc are row strides in
 * elements. beta = 0 overwrites C without reading it (NaN in C is fine);
 * beta = 1 accumulates (backward passes, gradient accumulation). */
void gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
          int ldb, float beta, float *C, int ldc);

/* C[M,N] = A[M,K] B[N,K]^T + beta C, where row i of C is computed the same
 * way whatever M is: OpenBLAS routes small products (few rows) through other
 * kernels that sum in another order, so without this a token's activations
 * would depend on how many tokens share the call, and a response's log-prob
 * on the batch it was scored in (step-0 rewards must be exactly 0, pitfall 9).
 * Small products (fewer than GEMM_ROWS_MIN rows, or small M N or M N K)
 * run on a zero-padded copy. */
#define GEMM_ROWS_MIN 64
void gemm_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* Where the loaded library's rows do not keep that promise (OpenBLAS's
 * Haswell and Zen kernels, the AVX2 CPUs' choice, sum a row's products in an
 * order that depends on its position in the call: probed once, on first use),
 * gemm_rows runs gemm_seq (gemm_seq.h) instead: in-order fma chains, the
 * promise by construction, at 70-90% of those kernels' speed. Only
 * these forward products change kernel; gemm() stays the library's.
 * gemm_rows_invariant(): 1 when gemm_rows keeps the promise (probed end to end
 * on a few shapes; a self-check). gemm_rows_kernel(): "the library's" or
 * "ppa's in-order fma kernel (avx2)". */
int gemm_rows_invariant(void);
const char *gemm_rows_kernel(void);

/* One line for --verbose and bench output, e.g. "OpenBLAS 0.3.21 (OpenMP
 * build), SkylakeX kernels (chosen by ppa; the library's own pick on this
 * CPU: Haswell), 2 threads". Valid until the next gemm_set_threads(). */
const char *gemm_backend(void);

/* The kernel family alone ("SkylakeX", "Haswell", "builtin"), for the state
 * file and resume checks. */
const char *gemm_kernel(void);

/* Threads used by one gemm() call; n <= 0 restores the default (all cores, or
 * OPENBLAS_NUM_THREADS / OMP_NUM_THREADS when set). With the OpenMP build of
 * OpenBLAS this also sets omp_set_num_threads(n) for the calling thread. */
void gemm_set_threads(int n);
int gemm_threads(void);

/* Benchmark statistics: with stats enabled, every gemm() call adds its
 * 2 M N K operations and its wall time (divided by the team size when called
 * from inside an OpenMP parallel region, so concurrent calls count once) to
 * running totals. reset(0) turns the timers off again (the default). */
void gemm_stats_reset(int enable);
void gemm_stats(double *flops, double *seconds);
/* for the other product backends (gemm_bf16.c): whether stats are on, and
 * one call's count (bf16: counted in the totals and apart) */
int gemm_stats_on(void);
void gemm_stats_add(double flops, double seconds, int bf16);
/* the bf16 products' share of gemm_stats() */
void gemm_stats_bf16(double *flops, double *seconds);

/* The benchmark behind `ppa bench gemm`: square n = 256, 768, 2048 and the
 * LLM products (2048 tokens, hidden 896, MLP 4864) in the three training
 * patterns (forward NoTrans/Trans, dX NoTrans/NoTrans beta=1, dW Trans/NoTrans
 * beta=1). Each shape is validated first (sampled entries against a float64
 * dot product), then timed: one warm-up call, the median of `repeat` calls.
 * threads <= 0 keeps the current thread count. Prints the backend line and a
 * table (or JSON Lines if json) to out. Returns 0, or 1 if a shape failed
 * validation. */
int gemm_bench(FILE *out, int threads, int repeat, int json);

#endif
