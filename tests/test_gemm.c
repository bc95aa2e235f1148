/* test_gemm.c: gemm() against a float64 triple loop for every transposition,
 * beta 0 and 1, odd sizes and padded strides; bitwise repeatability at a
 * fixed thread count; and the backend policy (kernel choice, user override,
 * built-in fallback), the last ones in child processes because the backend
 * is chosen once per process.
 *
 * Tolerance: |got - want| <= 1e-5 * (sum_k |alpha a_ik b_kj| + |beta c_ij|)
 * + 1e-7, want in float64. Rounding in float32 stays near
 * sqrt(K) * 6e-8 of that sum (K <= 4864 here); one dropped or doubled term
 * is about 1/K of it, far above the tolerance for K <= 257. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "check.h"
#include "core/rng.h"
#include "kernels/gemm.h"

#define MAX1(x) ((x) > 1 ? (x) : 1)
#define RTOL 1e-5
#define ATOL 1e-7

static float urand(PpaRng *r) { return (float)(2.0 * rng_uniform(r) - 1.0); }

/* op(X)[r, c] of a row-major matrix with stride ld */
static double op_at(const float *X, int trans, int ld, int r, int c) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* Runs one product and checks every entry of C (or `samples` random ones if
 * samples > 0) against float64, plus the padding columns of C untouched.
 * Returns the largest error relative to the tolerance (<= 1 passes). */
static double run_case(int ta, int tb, int M, int N, int K, float alpha, float beta, int pad, int samples,
                       uint64_t seed) {
    PpaRng rng;
    rng_seed(&rng, seed);
    /* CBLAS wants ld >= max(1, columns) even when a dimension is 0 */
    int lda = MAX1(ta ? M : K) + pad, ldb = MAX1(tb ? K : N) + pad, ldc = MAX1(N) + pad;
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = malloc(sizeof(float) * (na + 1)), *B = malloc(sizeof(float) * (nb + 1));
    float *C = malloc(sizeof(float) * (nc + 1)), *C0 = malloc(sizeof(float) * (nc + 1));
    for (size_t i = 0; i < na; i++) A[i] = urand(&rng);
    for (size_t i = 0; i < nb; i++) B[i] = urand(&rng);
    for (size_t i = 0; i < nc; i++) C0[i] = urand(&rng);
    if (beta == 0.0f) /* beta = 0 must not read C: garbage there must not leak through */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C0[(size_t)i * ldc + j] = NAN;
    memcpy(C, C0, sizeof(float) * nc);
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);

    double worst = 0.0;
    int total = samples > 0 ? samples : M * N;
    for (int t = 0; t < total; t++) {
        int i = samples > 0 ? (int)(rng_u64(&rng) % (uint64_t)M) : t / N;
        int j = samples > 0 ? (int)(rng_u64(&rng) % (uint64_t)N) : t % N;
        double c0 = beta == 0.0f ? 0.0 : C0[(size_t)i * ldc + j];
        double want = (double)beta * c0, mag = fabs(want);
        for (int k = 0; k < K; k++) {
            double p = (double)alpha * op_at(A, ta, lda, i, k) * op_at(B, tb, ldb, k, j);
            want += p;
            mag += fabs(p);
        }
        double got = C[(size_t)i * ldc + j];
        double ratio = isfinite(got) ? fabs(got - want) / (ATOL + RTOL * mag) : INFINITY;
        if (ratio > worst) worst = ratio;
    }
    for (int i = 0; i < M; i++) /* padding columns of C: never written */
        for (int j = N; j < ldc; j++)
            if (memcmp(&C[(size_t)i * ldc + j], &C0[(size_t)i * ldc + j], sizeof(float)) != 0) worst = INFINITY;
    free(A);
    free(B);
    free(C);
    free(C0);
    return worst;
}

/* Every transposition x beta in {0, 1} x M, N, K in {1, 7, 33, 257}, all
 * entries checked; padded strides on every other case. */
static void test_exhaustive(void) {
    static const int SIZES[] = {1, 7, 33, 257};
    int n = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int bi = 0; bi < 2; bi++)
                for (int a = 0; a < 4; a++)
                    for (int b = 0; b < 4; b++)
                        for (int c = 0; c < 4; c++) {
                            int M = SIZES[a], N = SIZES[b], K = SIZES[c];
                            float beta = bi ? 1.0f : 0.0f, alpha = bi ? -0.75f : 1.0f;
                            int pad = (n++ % 2) ? 3 : 0;
                            double w = run_case(ta, tb, M, N, K, alpha, beta, pad, 0, 1000 + (uint64_t)n);
                            CHECK(w <= 1.0, "gemm(%d,%d) M=%d N=%d K=%d alpha=%g beta=%g pad=%d: error %.3g x tol",
                                  ta, tb, M, N, K, alpha, beta, pad, w);
                        }
}

/* Other scalars and degenerate sizes. */
static void test_edges(void) {
    CHECK(run_case(0, 0, 33, 7, 257, 0.5f, 0.5f, 1, 0, 1) <= 1.0, "beta = 0.5");
    CHECK(run_case(1, 1, 33, 7, 257, 0.0f, 1.0f, 0, 0, 2) <= 1.0, "alpha = 0 leaves beta C");
    CHECK(run_case(0, 1, 7, 33, 0, 1.0f, 1.0f, 0, 0, 3) <= 1.0, "K = 0, beta = 1: C unchanged");
    CHECK(run_case(1, 0, 7, 33, 0, 1.0f, 0.0f, 2, 0, 4) <= 1.0, "K = 0, beta = 0: C zeroed");
    float c = 5.0f; /* M = 0 and N = 0: nothing is touched */
    gemm(0, 0, 0, 1, 1, 1.0f, NULL, 1, &c, 1, 0.0f, &c, 1);
    gemm(0, 0, 1, 0, 1, 1.0f, &c, 1, NULL, 1, 0.0f, &c, 1);
    CHECK(c == 5.0f, "M = 0 / N = 0 wrote to C");
}

/* The training products at LLM-like proportions (scaled down from 2048
 * tokens x 896 x 4864), sampled entries; threads on. */
static void test_training_shapes(void) {
    static const int S[][6] = {
        /* ta tb M N K beta */
        {0, 1, 384, 896, 256, 0}, /* forward Y = X W^T */
        {0, 0, 384, 256, 896, 1}, /* dX += dY W */
        {1, 0, 896, 256, 384, 1}, /* dW += dY^T X */
        {0, 1, 64, 1000, 4864, 0}, {1, 0, 4864, 96, 64, 1}, {0, 0, 200, 4864, 96, 1},
    };
    for (size_t s = 0; s < sizeof S / sizeof S[0]; s++) {
        double w = run_case(S[s][0], S[s][1], S[s][2], S[s][3], S[s][4], 1.0f, (float)S[s][5], 0, 2000, 77 + s);
        CHECK(w <= 1.0, "training shape gemm(%d,%d) %dx%dx%d beta=%d: error %.3g x tol", S[s][0], S[s][1], S[s][2],
              S[s][3], S[s][4], S[s][5], w);
    }
}

/* Runs the three training patterns into fresh buffers; C holds the results
 * one after another. */
static void run_pattern(float *out, const float *X, const float *W, const float *dY, int n, int in, int outc) {
    float *Y = out, *dX = Y + (size_t)n * outc, *dW = dX + (size_t)n * in;
    gemm(0, 1, n, outc, in, 1.0f, X, in, W, in, 0.0f, Y, outc);
    memset(dX, 0, sizeof(float) * (size_t)n * in);
    gemm(0, 0, n, in, outc, 1.0f, dY, outc, W, in, 1.0f, dX, in);
    memset(dW, 0, sizeof(float) * (size_t)outc * in);
    gemm(1, 0, outc, in, n, 1.0f, dY, outc, X, in, 1.0f, dW, in);
    gemm(1, 0, outc, in, n, 1.0f, dY, outc, X, in, 1.0f, dW, in); /* accumulate a second micro-batch */
}

/* Same inputs, same thread count: bit-identical outputs. Reports (does not
 * require) whether 1 and N threads agree bitwise, except for the built-in
 * kernel, which promises it. */
static void test_determinism(int builtin) {
    const int n = 300, in = 257, outc = 520;
    size_t nout = (size_t)n * outc + (size_t)n * in + (size_t)outc * in;
    float *X = malloc(sizeof(float) * (size_t)n * in), *W = malloc(sizeof(float) * (size_t)outc * in);
    float *dY = malloc(sizeof(float) * (size_t)n * outc);
    float *r[4];
    for (int i = 0; i < 4; i++) r[i] = malloc(sizeof(float) * nout);
    PpaRng rng;
    rng_seed(&rng, 9);
    for (size_t i = 0; i < (size_t)n * in; i++) X[i] = urand(&rng);
    for (size_t i = 0; i < (size_t)outc * in; i++) W[i] = urand(&rng);
    for (size_t i = 0; i < (size_t)n * outc; i++) dY[i] = urand(&rng);

    int deflt = gemm_threads();
    gemm_set_threads(1);
    CHECK(gemm_threads() == 1, "gemm_set_threads(1): gemm_threads() = %d", gemm_threads());
    run_pattern(r[0], X, W, dY, n, in, outc);
    run_pattern(r[1], X, W, dY, n, in, outc);
    gemm_set_threads(0);
    CHECK(gemm_threads() == deflt, "gemm_set_threads(0) restores %d threads, got %d", deflt, gemm_threads());
    int nt = deflt > 1 ? deflt : 2;
    gemm_set_threads(nt);
    run_pattern(r[2], X, W, dY, n, in, outc);
    run_pattern(r[3], X, W, dY, n, in, outc);
    gemm_set_threads(0);
    CHECK(!memcmp(r[0], r[1], sizeof(float) * nout), "1 thread: two runs differ");
    CHECK(!memcmp(r[2], r[3], sizeof(float) * nout), "%d threads: two runs differ", nt);
    int same = !memcmp(r[0], r[2], sizeof(float) * nout);
    if (builtin)
        CHECK(same, "built-in kernel: 1 and %d threads differ", nt);
    else
        printf("note: %s: 1 and %d threads give %s results\n", gemm_kernel(), nt,
               same ? "bit-identical" : "slightly different");
    free(X);
    free(W);
    free(dY);
    for (int i = 0; i < 4; i++) free(r[i]);
}

/* Concurrent calls from an OpenMP parallel region match serial calls. */
static void test_concurrent(void) {
#ifdef _OPENMP
    enum { P = 8, M = 64, N = 48, K = 96 };
    float *A = malloc(sizeof(float) * P * M * K), *B = malloc(sizeof(float) * P * K * N);
    float *Cs = malloc(sizeof(float) * P * M * N), *Cp = malloc(sizeof(float) * P * M * N);
    PpaRng rng;
    rng_seed(&rng, 5);
    for (int i = 0; i < P * M * K; i++) A[i] = urand(&rng);
    for (int i = 0; i < P * K * N; i++) B[i] = urand(&rng);
    for (int p = 0; p < P; p++) gemm(0, 0, M, N, K, 1.0f, A + p * M * K, K, B + p * K * N, N, 0.0f, Cs + p * M * N, N);
#pragma omp parallel for num_threads(2)
    for (int p = 0; p < P; p++) gemm(0, 0, M, N, K, 1.0f, A + p * M * K, K, B + p * K * N, N, 0.0f, Cp + p * M * N, N);
    double worst = 0.0;
    for (int i = 0; i < P * M * N; i++) {
        double d = fabs((double)Cs[i] - Cp[i]) / (ATOL + RTOL * K);
        if (d > worst) worst = d;
    }
    CHECK(worst <= 1.0, "gemm inside an OpenMP parallel region: error %.3g x tol", worst);
    free(A);
    free(B);
    free(Cs);
    free(Cp);
#endif
}

static int is_old_core(const char *k) {
    static const char *const OLD[] = {"Prescott", "Core2", "Penryn", "Nehalem", "Sandybridge",
                                      "Haswell",  "Zen",   "Barcelona", "Bulldozer", "Excavator"};
    for (size_t i = 0; i < sizeof OLD / sizeof OLD[0]; i++)
        if (!strcmp(k, OLD[i])) return 1;
    return 0;
}

static int cpu_avx512(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512cd");
#else
    return 0;
#endif
}

/* Runs this test binary again with extra environment and adds its counts. */
static void run_child(const char *env, const char *what) {
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        printf("note: %s: skipped (no /proc/self/exe)\n", what);
        return;
    }
    self[len] = '\0';
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env -u OPENBLAS_CORETYPE -u PPA_BLAS %s '%s' --child", env, self);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL, "%s: popen failed", what);
    if (!p) return;
    char line[1024];
    int pass = -1, fail = -1;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "test_gemm: %d passed, %d failed", &pass, &fail) == 2) continue;
        printf("  [%s] %s", what, line);
    }
    int status = pclose(p);
    CHECK(pass >= 0 && status == 0, "%s: child failed (status %d, %d passed, %d failed)", what, status, pass, fail);
    if (pass > 0) check_passed += pass;
    if (fail > 0) check_failed += fail;
    printf("  child [%s]: %d passed, %d failed\n", what, pass, fail);
}

int main(int argc, char **argv) {
    int child = argc > 1 && !strcmp(argv[1], "--child");
    gemm_init();
    const char *kernel = gemm_kernel();
    int builtin = !strcmp(kernel, "builtin");
    printf("gemm backend: %s\n", gemm_backend());
    CHECK(strstr(gemm_backend(), kernel) != NULL, "backend line names the kernel");

    const char *expect = getenv("PPA_TEST_EXPECT_KERNEL");
    if (expect) CHECK(!strcmp(kernel, expect), "kernel %s, expected %s", kernel, expect);
    if (expect && getenv("OPENBLAS_CORETYPE"))
        CHECK(strstr(gemm_backend(), "from the environment") != NULL, "user's OPENBLAS_CORETYPE reported");
    const char *pretend = getenv("PPA_GEMM_TEST_PROBE_CORETYPE");
    if (pretend) { /* the library "picked" an old family: ppa loaded SkylakeX and restored the environment */
        char want[128];
        snprintf(want, sizeof want, "the library's own pick on this CPU: %s", pretend);
        CHECK(strstr(gemm_backend(), want) != NULL, "backend line reports the override: %s", gemm_backend());
        CHECK(getenv("OPENBLAS_CORETYPE") == NULL, "OPENBLAS_CORETYPE left set after loading");
    }

    /* the point of the backend: no pre-AVX-512 kernels on an AVX-512 CPU
     * unless the user asked for them */
    if (!builtin && !getenv("OPENBLAS_CORETYPE") && cpu_avx512())
        CHECK(!is_old_core(kernel), "AVX-512 CPU but OpenBLAS runs %s kernels", kernel);

    test_exhaustive();
    test_edges();
    test_training_shapes();
    test_determinism(builtin);
    test_concurrent();

    if (!child) {
        run_child("PPA_BLAS=builtin PPA_TEST_EXPECT_KERNEL=builtin", "built-in kernel");
        if (!builtin) {
            /* the system's default libopenblas.so.0 (pthreads build on Debian) */
            run_child("PPA_BLAS=libopenblas.so.0", "libopenblas.so.0");
#if defined(__x86_64__)
            /* nothing set: the library's own pick, or SkylakeX if that predates AVX-512 */
            run_child("", "OPENBLAS_CORETYPE unset");
            /* a library that picks Prescott by itself (as Debian's 0.3.21 does on some Xeons) */
            if (cpu_avx512())
                run_child("PPA_GEMM_TEST_PROBE_CORETYPE=Prescott PPA_TEST_EXPECT_KERNEL=SkylakeX",
                          "library picks Prescott");
            /* a user's OPENBLAS_CORETYPE is obeyed */
            run_child("OPENBLAS_CORETYPE=Haswell PPA_TEST_EXPECT_KERNEL=Haswell", "OPENBLAS_CORETYPE=Haswell");
#endif
        }
    }
    return check_report("test_gemm");
}
