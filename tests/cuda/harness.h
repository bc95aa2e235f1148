/* harness.h: what the GPU tests share (tests/cuda/harness.c): the seed and
 * random inputs, device buffers with guard bytes after them, poisoning,
 * comparisons against the CPU oracle with stated bounds, bit-identical
 * reruns, cudaEvent timing, the measured limits (bandwidth, bf16 rate) and
 * the one results table. Plain C: the GPU code is reached through the
 * module's pc_* functions and the CUDA runtime's C API (events). */
#ifndef PPA_TEST_CUDA_HARNESS_H
#define PPA_TEST_CUDA_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "cuda/common.h"

/* ---- the run ---- */
extern int h_small;        /* --small: small shapes only, no timing (what compute-sanitizer runs) */
extern int h_reps;         /* timed runs per kernel (the median is reported) */
extern uint64_t h_seed;    /* printed at the start; --seed N repeats a run */
extern double h_bw;        /* bytes/s of a device-to-device copy (read + write), measured first; 0 if not */
extern double h_bf16_rate; /* FLOP/s of a large bf16 cuBLASLt product, measured first; 0 if not */

/* counted checks: ok or a FAIL line (file:line and the message) */
void h_check_at(const char *file, int line, int ok, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define H_CHECK(ok, ...) h_check_at(__FILE__, __LINE__, (ok), __VA_ARGS__)
/* a pc_* call that must succeed: a failed one is a failed check naming pc_error(), and the test's shape stops */
#define H_TRY(call)                                                                                                    \
    do {                                                                                                               \
        int r_ = (call);                                                                                               \
        h_check_at(__FILE__, __LINE__, r_ == 0, "%s: %s", #call, r_ == 0 ? "" : pc_error());                          \
        if (r_) return;                                                                                                \
    } while (0)
int h_passed(void);
int h_failed(void);

/* The GPU tests' opening, before their flags: stdout line-buffered (each line out before a crash, through the pipe of
 * scripts/test-cuda.sh), h_seed from the clock (--seed replaces it), the CPU oracle's bf16 products on ppa's built-in
 * kernel (exact products summed in float32 in k order: the same on every machine, and the GPU machine has no
 * oneDNN) */
void h_begin(void);
/* prints "seed N (--seed N repeats this run's WHAT)" and opens GPU 0: 0 after "device: NAME (sm_CC)", or 77 (no
 * usable GPU: the exit status scripts/test-cuda.sh reads as a skip) after "NAME: no usable GPU: why" */
int h_gpu_open(const char *name, const char *what);
/* the engine tests' closing: the stream ends without an error, tmpdir removed, pc_shutdown, "NAME: N passed, N
 * failed"; the exit status */
int h_gpu_close(const char *name, const char *tmpdir);

/* ---- random inputs: fresh each run from h_seed ---- */
uint64_t h_rand(void);
double h_unit(void);                                 /* [0, 1) */
int h_randint(int n);                                /* [0, n) */
void h_fill(float *x, size_t n, float lo, float hi); /* |x| uniform in [lo, hi] (lo > 0: never 0), random sign */
void h_fill_bf16(uint16_t *x, size_t n, float lo, float hi);
void *h_malloc(size_t bytes); /* dies when out of memory */

/* ---- device buffers: bytes + a guard after them (0xA5), checked by d_guard_ok; all die on a CUDA error ---- */
void *d_alloc(size_t bytes);
void d_free(void *p);
int d_guard_ok(const void *p);             /* the guard bytes are intact */
void d_up(void *dst, const void *src, size_t bytes);
void d_down(void *dst, const void *src, size_t bytes);
void d_poison(void *p, size_t bytes);      /* 0xFF bytes: NaN as float32 and as bf16 */
void *d_clone(const void *host, size_t bytes); /* d_alloc + d_up */

/* ---- comparisons ---- */
typedef struct {
    double err, bound; /* at the worst element (largest err / bound), or the norms' ratio */
    long worst;        /* its index, -1 for norms */
    int ok;
    int bits;          /* a bit-for-bit comparison (err 0 or 1) */
} Cmp;
/* |got[i] - want[i]| <= bound[i] for every i; a NaN or inf in got where want is finite fails */
Cmp cmp_elem(const float *got, const float *want, const double *bound, size_t n);
Cmp cmp_elem_d(const double *got, const double *want, const double *bound, size_t n);
/* ||got - want||_2 <= rtol ||want||_2, and every got finite where want is: the float32 oracle mode's rule */
Cmp cmp_norm(const float *got, const float *want, size_t n, double rtol);
Cmp cmp_norm_d(const double *got, const double *want, size_t n, double rtol);
/* bit-identical */
Cmp cmp_bits(const void *got, const void *want, size_t bytes);
/* got[] widened from bf16 */
void h_widen(float *y, const uint16_t *x, size_t n);
uint16_t h_bf16(float f); /* the CPU's bf16_round */

/* gamma_k(u) = k u / (1 - k u): the classic bound on the relative error of k roundings with unit roundoff u */
double h_gamma(double k, double u);
/* GPU float32 accumulation in tensor-core products: taken as 2^-22 (truncation is 2^-23; twice that for the
 * alignment of the addends): see the derivation in t_matmul.c */
#define U_GPU (1.0 / 4194304.0)
#define U_CPU (1.0 / 16777216.0) /* round to nearest: 2^-24 */
#define U_BF16 (1.0 / 128.0)     /* one bf16 ulp relative to the value: 2^-7 (rounding error: half of it) */

/* ---- runs ---- */
/* runs fn(ctx) once; records error into the checks; 0 ok */
typedef int (*HFn)(void *ctx);
/* median time in ms of h_reps runs of fn (cudaEvents around each, after a warm-up); 0 when h_small */
double h_time(HFn fn, void *ctx);

/* ---- the table ---- */
void h_table_header(const char *title);
/* one row: kernel, shape, the comparison (NULL: none), median ms, the floor in ms (0: none) and what it is */
void h_row(const char *kernel, const char *shape, const Cmp *c, double ms, double floor_ms, const char *floor_kind);
/* floors from bytes moved or FLOPs */
double h_floor_bytes(double bytes);
double h_floor_flops(double flops);

/* measures h_bw and h_bf16_rate (skipped when h_small) */
void h_measure_limits(void);

#endif

/* ---- bounds of products (CPU float32 gemm on absolute values) ---- */
/* S[M, N] = |op(A)| |op(B)|, row-major as gemm() (gemm.h): the sum of |a_k b_k| of every output element */
float *h_abs_product(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb);
/* bound[i] = (gamma_k(U_GPU) + gamma_k(U_CPU)) (S[i] + extra[i]) * 1.001 (extra NULL: none): two float32 sums of k
 * terms each (the GPU's and the CPU's bf16 path) of the same exact bf16 products, in any order; the 1.001 covers
 * the float32 rounding of S itself (nonnegative terms: relative error <= k 2^-24 < 1e-3 for k < 16000) */
double *h_sum_bound(const float *S, const float *extra, size_t n, double k);
/* outputs rounded to bf16 on both sides, each from its own float32 value within bound of the other's: equal, or
 * one bf16 ulp apart where the two straddle a rounding boundary: bound + 2^-7 (|ref| + bound) (x 1.01: ref may be
 * the rounded or the unrounded value) */
void h_bound_round_bf16(double *bound, const float *ref, size_t n);
/* x rounded to bf16 and widened back, in place (the CPU's bf16 path from its float32 values) */
void h_round_bf16(float *x, size_t n);
/* the worse of two comparisons (a failing one first, else the larger err / bound) */
Cmp cmp_worse(Cmp a, Cmp b);
