/* gemm.c: the matrix-multiply backend: loads OpenBLAS at run time with the
 * fastest kernel family this CPU can run, checks it, and falls back to a
 * plain C kernel. The policy is described in gemm.h; the benchmark is in
 * gemm_bench.c.
 *
 * Why dlopen() and not -lopenblas: OpenBLAS reads OPENBLAS_CORETYPE once, in
 * its load-time constructor, so a linked library has chosen its kernels
 * before main() runs and the only ways to change them are re-executing the
 * program or loading the library ourselves after setenv(). Loading it
 * ourselves needs no argv, no restart, and works the same in the CLI, the
 * tests and any program that links libppa.a. */
#include "kernels/gemm.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/common.h"
#include "core/dynlib.h"
#include "kernels/gemm_seq.h"

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

/* cblas_sgemm of an LP64 build (32-bit int indices: libopenblas.so.0) */
typedef void (*SgemmFn)(int order, int transA, int transB, int M, int N, int K, float alpha, const float *A,
                        int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* The kernel family ppa asks for on AVX-512 CPUs. Cooperlake and
 * SapphireRapids use the same sgemm kernel (they add bf16 routines), and
 * SkylakeX needs only AVX-512 F/CD/BW/DQ/VL, which cpu_has_avx512() checks. */
#define FAST_CORE "SkylakeX"

static struct {
    void *handle;                 /* NULL: built-in kernel */
    SgemmFn sgemm;                /* cblas_sgemm */
    char *(*corename)(void);      /* openblas_get_corename, or NULL */
    char *(*config)(void);        /* openblas_get_config */
    int (*parallel)(void);        /* openblas_get_parallel: 0 serial, 1 pthreads, 2 OpenMP */
    void (*set_threads)(int);     /* openblas_set_num_threads */
    int (*get_threads)(void);     /* openblas_get_num_threads */
    void (*bli_set_threads)(long);  /* BLIS (PPA_BLAS=libblis.so.4): bli_thread_set_num_threads */
    long (*bli_get_threads)(void);  /* bli_thread_get_num_threads */
    int default_threads;          /* at load time */
    int builtin_threads;          /* built-in kernel only */
    int builtin_default;          /* its default: omp_get_max_threads() at load */
    char library[256];            /* file or soname loaded */
    char kernel[64];              /* "SkylakeX", "Haswell", "builtin" */
    char origin[256];             /* how the kernel was chosen */
    char line[768];               /* gemm_backend() */
} G;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ppa: warning: gemm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- built-in kernel ------------------------------------------------------------------------ */

/* Row i of C is computed by one thread in a fixed order, so the result does
 * not depend on the thread count. About 10-40 GFLOP/s: a fallback. */
static void gemm_builtin(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                         const float *B, int ldb, float beta, float *C, int ldc, int threads) {
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads) if ((double)M * N * (K + 1) > 65536.0)
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc; /* [N] */
        if (beta == 0.0f)
            for (int j = 0; j < N; j++) c[j] = 0.0f;
        else if (beta != 1.0f)
            for (int j = 0; j < N; j++) c[j] *= beta;
        if (alpha == 0.0f || K == 0) continue;
        if (!transB) { /* c += sum_k op(A)[i,k] B[k,:] */
            for (int k = 0; k < K; k++) {
                float a = alpha * (transA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
                const float *b = B + (size_t)k * ldb; /* [N] */
#pragma omp simd
                for (int j = 0; j < N; j++) c[j] += a * b[j];
            }
        } else { /* c[j] += alpha * dot(op(A)[i,:], B[j,:]) */
            for (int j = 0; j < N; j++) {
                const float *b = B + (size_t)j * ldb; /* [K] */
                float s = 0.0f;
                if (!transA) {
                    const float *a = A + (size_t)i * lda; /* [K] */
                    for (int k = 0; k < K; k++) s += a[k] * b[k];
                } else {
                    for (int k = 0; k < K; k++) s += A[(size_t)k * lda + i] * b[k];
                }
                c[j] += alpha * s;
            }
        }
    }
}

/* ---- CPU and library probing ---------------------------------------------------------------- */

static int cpu_has_avx512(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    /* libgcc also checks that the OS saves the AVX-512 state (XCR0) */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

/* OpenBLAS x86-64 kernel families without AVX-512 (names as
 * openblas_get_corename() spells them). Names not listed, including ones
 * newer than this list, are left alone. */
static int core_predates_avx512(const char *name) {
    static const char *const OLD[] = {"Unknown",   "Katmai",     "Coppermine", "Northwood",   "Prescott",
                                      "Banias",    "Atom",       "Core2",      "Penryn",      "Dunnington",
                                      "Nehalem",   "Athlon",     "Opteron",    "Opteron_SSE3", "Barcelona",
                                      "Nano",      "Sandybridge", "Bobcat",    "Bulldozer",   "Piledriver",
                                      "Steamroller", "Excavator", "Haswell",   "Zen"};
    for (size_t i = 0; i < PPA_ARRAY_LEN(OLD); i++)
        if (!strcasecmp(name, OLD[i])) return 1;
    return 0;
}

/* Loads `lib` in a child process and reports the kernel family OpenBLAS
 * picks there on its own (OPENBLAS_CORETYPE is unset). The child exits
 * without touching the parent's state. Returns 0, or -1 with a reason. */
static int probe_corename(const char *lib, char *out, size_t n, char *why, size_t nwhy) {
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(why, nwhy, "pipe failed");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        snprintf(why, nwhy, "fork failed");
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        /* test hook: make the library in the probe pick a given family, as if
         * it had detected it (tests/test_gemm.c exercises the override) */
        const char *as = PPA_TEST_HOOK("PPA_GEMM_TEST_PROBE_CORETYPE");
        if (as && *as) setenv("OPENBLAS_CORETYPE", as, 1);
        char e[512];
        void *h = dynlib_open(lib, RTLD_NOW | RTLD_LOCAL, e, sizeof e);
        char *(*corename)(void) = h ? (char *(*)(void))dlsym(h, "openblas_get_corename") : NULL;
        const char *name = corename ? corename() : h ? "-" : ""; /* "-": loads, but is not OpenBLAS */
        ssize_t len = (ssize_t)strlen(name), off = 0;
        while (off < len) {
            ssize_t w = write(fd[1], name + off, (size_t)(len - off));
            if (w <= 0) break;
            off += w;
        }
        _exit(corename ? 0 : 3);
    }
    close(fd[1]);
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd[0], out + got, n - 1 - got);
        if (r <= 0 || (got += (size_t)r) >= n - 1) break;
    }
    out[got] = '\0';
    close(fd[0]);
    int status = 0; /* the exit status does not matter; what the child wrote does */
    pid_t w;
    do w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    if (got == 0) {
        snprintf(why, nwhy, "the probe process did not report a kernel");
        return -1;
    }
    return 0;
}

/* ---- self-check ----------------------------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static float rnd(uint64_t *s) { /* uniform in [-1, 1) */
    *s = mix(*s);
    return (float)((double)(*s >> 40) / (double)(1ULL << 23) - 1.0);
}

/* Runs `sgemm` on a small and a mid-sized product in each transposition and
 * compares sampled entries with float64 dot products; tolerance 1e-5 of
 * sum |alpha a b| + |beta c| plus 1e-6. Returns 0 if all match. */
static int self_check(SgemmFn sgemm, char *why, size_t nwhy) {
    static const int SHAPES[][3] = {{7, 5, 33}, {150, 136, 200}};
    for (size_t s = 0; s < PPA_ARRAY_LEN(SHAPES); s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
                int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
                size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
                float *A = xmalloc(sizeof(float) * (na + nb + 2 * nc));
                float *B = A + na, *C = B + nb, *C0 = C + nc;
                uint64_t seed = 12345 + 100 * s + 10 * ta + tb;
                for (size_t i = 0; i < na + nb + nc; i++) A[i] = rnd(&seed);
                memcpy(C0, C, sizeof(float) * nc);
                const float alpha = 0.75f, beta = 0.5f;
                sgemm(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N, K,
                      alpha, A, lda, B, ldb, beta, C, ldc);
                int bad = 0;
                for (int t = 0; t < 64 && !bad; t++) {
                    int i = (int)(mix(seed + 2 * t) % (uint64_t)M), j = (int)(mix(seed + 2 * t + 1) % (uint64_t)N);
                    double want = beta * (double)C0[(size_t)i * ldc + j], mag = fabs(want);
                    for (int k = 0; k < K; k++) {
                        double p = alpha * (double)(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                                   (double)(tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                        want += p;
                        mag += fabs(p);
                    }
                    double got = C[(size_t)i * ldc + j];
                    if (!(fabs(got - want) <= 1e-6 + 1e-5 * mag)) {
                        snprintf(why, nwhy, "%s%s %dx%dx%d: C[%d,%d] = %.9g, want %.9g", ta ? "T" : "N",
                                 tb ? "T" : "N", M, N, K, i, j, got, want);
                        bad = 1;
                    }
                }
                free(A);
                if (bad) return -1;
            }
    return 0;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* Loads one candidate library. Returns 0 and fills G, or -1 with a reason. */
static int load_library(const char *lib, char *why, size_t nwhy) {
    const char *user_core = getenv("OPENBLAS_CORETYPE");
    char own_pick[64] = "", probe_why[128] = "";
    int forced = 0, probed = 0;
    if (!user_core && cpu_has_avx512()) {
        probed = probe_corename(lib, own_pick, sizeof own_pick, probe_why, sizeof probe_why) == 0;
        /* If the probe failed we cannot know the library's own pick; SkylakeX
         * runs on every CPU that passed cpu_has_avx512(), so ask for it. */
        int not_openblas = probed && !strcmp(own_pick, "-");
        if (!not_openblas && (!probed || core_predates_avx512(own_pick))) {
            if (setenv("OPENBLAS_CORETYPE", FAST_CORE, 1) == 0) forced = 1;
        }
    }
    void *h = dynlib_open(lib, RTLD_NOW | RTLD_LOCAL, why, nwhy);
    if (forced) unsetenv("OPENBLAS_CORETYPE"); /* the user's environment, as it was */
    if (!h) return -1;
    SgemmFn sgemm = (SgemmFn)dlsym(h, "cblas_sgemm");
    if (!sgemm) {
        snprintf(why, nwhy, "%s has no cblas_sgemm", lib);
        dlclose(h);
        return -1;
    }
    if (self_check(sgemm, why, nwhy) != 0) {
        /* not dlclose()d: OpenBLAS threads may be running */
        return -1;
    }
    memset(&G, 0, sizeof G);
    G.handle = h;
    G.sgemm = sgemm;
    G.corename = (char *(*)(void))dlsym(h, "openblas_get_corename");
    G.config = (char *(*)(void))dlsym(h, "openblas_get_config");
    G.parallel = (int (*)(void))dlsym(h, "openblas_get_parallel");
    G.set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
    G.get_threads = (int (*)(void))dlsym(h, "openblas_get_num_threads");
    snprintf(G.library, sizeof G.library, "%s", lib);
    snprintf(G.kernel, sizeof G.kernel, "%s", G.corename ? G.corename() : "unknown");
    if (!G.corename) { /* another CBLAS; BLIS gets its name, version and threads */
        int (*arch_id)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id"); /* arch_t: an enum */
        char *(*arch_name)(int) = (char *(*)(int))dlsym(h, "bli_arch_string");
        if (arch_id && arch_name) snprintf(G.kernel, sizeof G.kernel, "%s", arch_name(arch_id()));
        G.bli_set_threads = (void (*)(long))dlsym(h, "bli_thread_set_num_threads");
        G.bli_get_threads = (long (*)(void))dlsym(h, "bli_thread_get_num_threads");
    }
    G.default_threads = G.get_threads ? G.get_threads() : G.bli_get_threads ? (int)G.bli_get_threads() : 0;

    if (!G.corename)
        snprintf(G.origin, sizeof G.origin, "not OpenBLAS: %s chose them", lib);
    else if (user_core)
        snprintf(G.origin, sizeof G.origin, "OPENBLAS_CORETYPE=%s from the environment", user_core);
    else if (forced && !strcasecmp(G.kernel, FAST_CORE))
        if (probed)
            snprintf(G.origin, sizeof G.origin, "chosen by ppa; the library's own pick on this CPU: %s", own_pick);
        else
            snprintf(G.origin, sizeof G.origin, "chosen by ppa; the library's own pick is unknown: %s", probe_why);
    else if (forced) {
        snprintf(G.origin, sizeof G.origin, "ppa asked for " FAST_CORE ", the library kept its own pick");
        warn("asked OpenBLAS for " FAST_CORE " kernels but it uses %s (a build without DYNAMIC_ARCH, or a "
             "library already loaded before gemm_init, e.g. linked with -lopenblas?); matrix products may run at "
             "half speed or less",
             G.kernel);
    } else
        snprintf(G.origin, sizeof G.origin, "detected by the library");
    if (G.corename && user_core && cpu_has_avx512() && core_predates_avx512(G.kernel))
        warn("OPENBLAS_CORETYPE=%s from the environment selects pre-AVX-512 kernels on this AVX-512 CPU (about "
             "half the speed); ppa keeps it. Unset it to let ppa choose",
             user_core);
    if (G.corename && !user_core && !forced && cpu_has_avx512() && core_predates_avx512(G.kernel))
        warn("OpenBLAS uses %s kernels on an AVX-512 CPU; OPENBLAS_CORETYPE=" FAST_CORE " is about 2x faster",
             G.kernel);
    return 0;
}

static int threads_now(void) {
    if (G.handle && G.get_threads) return G.get_threads();
    if (G.handle && G.bli_get_threads) { /* BLIS reports -1 until set: then it uses all cores */
        long t = G.bli_get_threads();
        return t > 0 ? (int)t : (int)sysconf(_SC_NPROCESSORS_ONLN);
    }
    if (G.handle) return 1;
    return G.builtin_threads;
}

static void build_line(void) {
    if (!G.handle) {
        int t = G.builtin_threads;
        snprintf(G.line, sizeof G.line, "builtin C kernel (%s), %d thread%s", G.origin, t, t == 1 ? "" : "s");
        return;
    }
    char version[64] = "BLAS";
    if (G.config) { /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" */
        const char *c = G.config();
        const char *sp = strchr(c, ' ');
        sp = sp ? strchr(sp + 1, ' ') : NULL;
        int len = sp ? (int)(sp - c) : (int)strlen(c);
        snprintf(version, sizeof version, "%.*s", len, c);
    } else if (G.corename)
        snprintf(version, sizeof version, "OpenBLAS");
    else {
        char *(*blis_version)(void) = (char *(*)(void))dlsym(G.handle, "bli_info_get_version_str");
        if (blis_version) snprintf(version, sizeof version, "BLIS %s", blis_version());
    }
    const char *par = "";
    if (G.parallel) {
        int p = G.parallel();
        par = p == 2 ? " (OpenMP build)" : p == 1 ? " (pthreads build)" : p == 0 ? " (single-threaded build)" : "";
    }
    int t = threads_now();
    snprintf(G.line, sizeof G.line, "%s%s, %s kernels (%s), %d thread%s", version, par, G.kernel, G.origin, t,
             t == 1 ? "" : "s");
}

static void init_once(void) {
    char reasons[1024] = "";
    const char *env = getenv("PPA_BLAS");
    int loaded = 0;
    if (env && *env && strcmp(env, "builtin") != 0) {
        char why[512] = "";
        if (load_library(env, why, sizeof why) == 0)
            loaded = 1;
        else
            snprintf(reasons, sizeof reasons, "PPA_BLAS=%s: %s", env, why);
    } else if (!env || !*env) {
        /* The OpenMP build first: inside our OpenMP parallel regions it runs
         * single-threaded instead of starting a second pool of threads. */
        static const char *const CANDIDATES[] = {
#if defined(__x86_64__)
            "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
#elif defined(__aarch64__)
            "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0",
#endif
            "libopenblas.so.0",
        };
        for (size_t i = 0; i < PPA_ARRAY_LEN(CANDIDATES) && !loaded; i++) {
            const char *lib = CANDIDATES[i];
            if (strchr(lib, '/') && access(lib, R_OK) != 0) continue;
            char why[512] = "";
            if (load_library(lib, why, sizeof why) == 0)
                loaded = 1;
            else {
                size_t used = strlen(reasons);
                snprintf(reasons + used, sizeof reasons - used, "%s%s", used ? "; " : "", why);
            }
        }
    }
    if (!loaded) {
        memset(&G, 0, sizeof G);
        snprintf(G.kernel, sizeof G.kernel, "builtin");
#ifdef _OPENMP
        G.builtin_threads = G.builtin_default = omp_get_max_threads();
#else
        G.builtin_threads = G.builtin_default = 1;
#endif
        if (env && !strcmp(env, "builtin"))
            snprintf(G.origin, sizeof G.origin, "PPA_BLAS=builtin");
        else {
            snprintf(G.origin, sizeof G.origin, "no usable OpenBLAS");
            warn("no usable OpenBLAS (%s); using the built-in kernel, several times slower (install "
                 "libopenblas0-openmp or libopenblas0)",
                 reasons[0] ? reasons : "libopenblas.so.0 not found");
        }
    }
    build_line();
}

void gemm_init(void) { pthread_once(&g_once, init_once); }

/* ---- public API ----------------------------------------------------------------------------- */

/* ---- statistics for benchmarks: floating-point operations and time spent in gemm() ---- */

static struct {
    int on;
    double flops, seconds, bf16_flops, bf16_seconds;
} S;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gemm_stats_reset(int enable) {
    S.flops = S.seconds = S.bf16_flops = S.bf16_seconds = 0.0;
    S.on = enable;
}

void gemm_stats(double *flops, double *seconds) {
    *flops = S.flops;
    *seconds = S.seconds;
}

void gemm_stats_bf16(double *flops, double *seconds) {
    *flops = S.bf16_flops;
    *seconds = S.bf16_seconds;
}

static void sgemm_call(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc);

void gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
          int ldb, float beta, float *C, int ldc) {
    if (!S.on) {
        sgemm_call(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    double t0 = now_s();
    sgemm_call(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    gemm_stats_add(2.0 * M * N * K, now_s() - t0, 0);
}

int gemm_stats_on(void) { return S.on; }

void gemm_stats_add(double f, double dt, int bf16) {
    int team = 1;
#ifdef _OPENMP
    team = omp_get_num_threads(); /* inside a parallel region: one of team's concurrent calls */
#endif
#pragma omp atomic
    S.flops += f;
#pragma omp atomic
    S.seconds += dt / team;
    if (!bf16) return;
#pragma omp atomic
    S.bf16_flops += f;
#pragma omp atomic
    S.bf16_seconds += dt / team;
}

static void sgemm_call(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc) {
    gemm_init();
    int colsA = transA ? M : K, colsB = transB ? K : N;
    if (M < 0 || N < 0 || K < 0 || lda < (colsA > 1 ? colsA : 1) || ldb < (colsB > 1 ? colsB : 1) ||
        ldc < (N > 1 ? N : 1))
        ppa_die(70, "gemm: bad arguments: transA %d transB %d M %d N %d K %d lda %d ldb %d ldc %d", transA, transB,
                M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (G.sgemm)
        G.sgemm(CBLAS_ROW_MAJOR, transA ? CBLAS_TRANS : CBLAS_NO_TRANS, transB ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N,
                K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        gemm_builtin(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, G.builtin_threads);
}

/* rows at which OpenBLAS 0.3.21 takes its general (row-invariant) path for
 * every shape we measured: its small-matrix kernels served up to M N ~ 1.5e3
 * and M N K ~ 1e6 (tests/test_engine.c checks the invariance end to end) */
static int rows_needed(int N, int K) {
    long m = GEMM_ROWS_MIN, by_n = (8192 + N - 1) / N, by_nk = ((2L << 20) + (long)N * K - 1) / ((long)N * K);
    m = by_n > m ? by_n : m;
    return (int)(by_nk > m ? by_nk : m);
}

/* gemm_rows through the library: a zero-padded copy below rows_needed */
static void rows_blas(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                      int ldc) {
    int need = M && N && K ? rows_needed(N, K) : 0;
    if (M >= need) {
        gemm(0, 1, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    float *a = calloc((size_t)need * K, sizeof(float)), *c = calloc((size_t)need * N, sizeof(float));
    if (!a || !c) ppa_die(1, "gemm_rows: out of memory");
    for (int i = 0; i < M; i++) {
        memcpy(a + (size_t)i * K, A + (size_t)i * lda, sizeof(float) * (size_t)K);
        if (beta != 0.0f) memcpy(c + (size_t)i * N, C + (size_t)i * ldc, sizeof(float) * (size_t)N);
    }
    gemm(0, 1, need, N, K, 1.0f, a, K, B, ldb, beta, c, N);
    for (int i = 0; i < M; i++) memcpy(C + (size_t)i * ldc, c + (size_t)i * N, sizeof(float) * (size_t)N);
    free(a), free(c);
}

typedef void (*RowsFn)(int, int, int, const float *, int, const float *, int, float, float *, int);

/* rows [37, 37 + m) of A alone equal the same rows of the whole product, through f */
static int probe_rows(RowsFn f, int M, int N, int K) {
    float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)N * K);
    float *C = malloc(sizeof(float) * (size_t)M * N), *D = malloc(sizeof(float) * (size_t)M * N);
    if (!A || !B || !C || !D) ppa_die(1, "gemm: out of memory");
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < (size_t)M * K; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, A[i] = (float)(x % 2001) / 1000.0f - 1.0f;
    for (size_t i = 0; i < (size_t)N * K; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, B[i] = (float)(x % 2001) / 1000.0f - 1.0f;
    f(M, N, K, A, K, B, K, 0.0f, C, N);
    int same = 1;
    for (int m = 1; m < M - 37 && same; m = 2 * m + 5) {
        f(m, N, K, A + (size_t)37 * K, K, B, K, 0.0f, D, N);
        same = !memcmp(D, C + (size_t)37 * N, sizeof(float) * (size_t)m * N);
    }
    free(A), free(B), free(C), free(D);
    return same;
}

static int probe_all(RowsFn f) { return probe_rows(f, 700, 48, 40) && probe_rows(f, 600, 160, 96) && probe_rows(f, 300, 700, 64); }

/* 1 when the library's rows keep the promise; otherwise gemm_rows runs gemm_seq (probed once, on first use) */
static int blas_rows_known;
static pthread_once_t blas_rows_once = PTHREAD_ONCE_INIT;
static void blas_rows_probe(void) { blas_rows_known = probe_all(rows_blas); }
static int blas_rows(void) {
    pthread_once(&blas_rows_once, blas_rows_probe);
    return blas_rows_known;
}

void gemm_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    gemm_init();
    if (blas_rows()) {
        rows_blas(M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    double t0 = S.on ? now_s() : 0.0;
    gemm_seq_f32(0, 1, M, N, K, A, lda, B, ldb, beta, C, ldc);
    if (S.on) gemm_stats_add(2.0 * M * N * K, now_s() - t0, 0);
}

int gemm_rows_invariant(void) {
    static int known = -1;
    if (known < 0) known = probe_all(gemm_rows);
    return known;
}

const char *gemm_rows_kernel(void) {
    gemm_init();
    static char line[64];
    if (blas_rows()) return "the library's";
    snprintf(line, sizeof line, "ppa's in-order fma kernel (%s)", gemm_seq_isa());
    return line;
}

const char *gemm_backend(void) {
    gemm_init();
    return G.line;
}

const char *gemm_kernel(void) {
    gemm_init();
    return G.kernel;
}

int gemm_threads(void) {
    gemm_init();
    return threads_now();
}

void gemm_set_threads(int n) {
    gemm_init();
    if (G.handle) {
        int t = n > 0 ? n : (G.default_threads > 0 ? G.default_threads : (int)sysconf(_SC_NPROCESSORS_ONLN));
        if (G.set_threads) G.set_threads(t);
        if (G.bli_set_threads) G.bli_set_threads(t);
    } else {
#ifdef _OPENMP
        G.builtin_threads = n > 0 ? n : G.builtin_default;
#else
        G.builtin_threads = 1;
#endif
    }
    build_line();
}
