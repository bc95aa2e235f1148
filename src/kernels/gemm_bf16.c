/* gemm_bf16.c: bf16 products through oneDNN's matmul primitive (dlopen()ed,
 * as gemm.c loads OpenBLAS: no start-up cost for commands that never run
 * bf16, and a clear message where the library is missing), with a built-in
 * fallback. The policy is in gemm_bf16.h. */
#include "kernels/gemm_bf16.h"

#include <dlfcn.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/common.h"
#include "core/timer.h"
#include "core/dynlib.h"
#include "kernels/gemm.h"
#include "kernels/gemm_seq.h"

/* the oneDNN C API functions ppa calls, resolved by name */
#define DNNL_FUNCS(X)                                                                                                    \
    X(dnnl_engine_create, dnnl_status_t, (dnnl_engine_t *, dnnl_engine_kind_t, size_t))                                \
    X(dnnl_stream_create, dnnl_status_t, (dnnl_stream_t *, dnnl_engine_t, unsigned))                                   \
    X(dnnl_stream_wait, dnnl_status_t, (dnnl_stream_t))                                                                \
    X(dnnl_memory_desc_init_by_strides, dnnl_status_t,                                                                 \
      (dnnl_memory_desc_t *, int, const dnnl_dims_t, dnnl_data_type_t, const dnnl_dims_t))                             \
    X(dnnl_matmul_desc_init, dnnl_status_t,                                                                            \
      (dnnl_matmul_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,       \
       const dnnl_memory_desc_t *))                                                                                    \
    X(dnnl_primitive_attr_create, dnnl_status_t, (dnnl_primitive_attr_t *))                                            \
    X(dnnl_primitive_attr_destroy, dnnl_status_t, (dnnl_primitive_attr_t))                                            \
    X(dnnl_primitive_attr_set_post_ops, dnnl_status_t, (dnnl_primitive_attr_t, const_dnnl_post_ops_t))                 \
    X(dnnl_post_ops_create, dnnl_status_t, (dnnl_post_ops_t *))                                                        \
    X(dnnl_post_ops_destroy, dnnl_status_t, (dnnl_post_ops_t))                                                         \
    X(dnnl_post_ops_append_sum, dnnl_status_t, (dnnl_post_ops_t, float))                                               \
    X(dnnl_primitive_desc_create, dnnl_status_t,                                                                       \
      (dnnl_primitive_desc_t *, const_dnnl_op_desc_t, const_dnnl_primitive_attr_t, dnnl_engine_t,                     \
       const_dnnl_primitive_desc_t))                                                                                   \
    X(dnnl_primitive_desc_query, dnnl_status_t, (const_dnnl_primitive_desc_t, dnnl_query_t, int, void *))             \
    X(dnnl_primitive_desc_destroy, dnnl_status_t, (dnnl_primitive_desc_t))                                             \
    X(dnnl_primitive_create, dnnl_status_t, (dnnl_primitive_t *, const_dnnl_primitive_desc_t))                         \
    X(dnnl_primitive_destroy, dnnl_status_t, (dnnl_primitive_t))                                                       \
    X(dnnl_primitive_execute, dnnl_status_t, (const_dnnl_primitive_t, dnnl_stream_t, int, const dnnl_exec_arg_t *))   \
    X(dnnl_memory_create, dnnl_status_t, (dnnl_memory_t *, const dnnl_memory_desc_t *, dnnl_engine_t, void *))         \
    X(dnnl_memory_destroy, dnnl_status_t, (dnnl_memory_t))                                                             \
    X(dnnl_memory_set_data_handle, dnnl_status_t, (dnnl_memory_t, void *))                                             \
    X(dnnl_primitive_attr_set_scratchpad_mode, dnnl_status_t, (dnnl_primitive_attr_t, dnnl_scratchpad_mode_t))         \
    X(dnnl_primitive_desc_query_md, const dnnl_memory_desc_t *, (const_dnnl_primitive_desc_t, dnnl_query_t, int))    \
    X(dnnl_memory_desc_get_size, size_t, (const dnnl_memory_desc_t *))                                                 \
    X(dnnl_version, const dnnl_version_t *, (void))

#define DECLARE(name, ret, args) ret(*name) args;
static struct {
    DNNL_FUNCS(DECLARE)
} D;
#undef DECLARE

/* one cached primitive: a shape, its descriptors and the implementation's name */
typedef struct {
    int used, transA, transB, M, N, K, lda, ldb, ldc, beta;
    int threads; /* oneDNN plans its work for the thread count at creation (test_bf16 compares 1 and 2) */
    unsigned long last; /* clock of the last use, for eviction */
    dnnl_primitive_t prim;
    dnnl_memory_desc_t a, b, c, scratch; /* scratch: the primitive's scratchpad, in ppa's buffer */
    size_t scratch_n;
    char impl[48];
} Entry;

#define CACHE_SIZE 96 /* a model's products at two or three batch sizes */

static struct {
    int ready;         /* 1 oneDNN, 2 builtin, -1 unavailable */
    char why[512];     /* when unavailable */
    char version[32];  /* "2.6.3" */
    char impl[48];     /* the last product's implementation */
    char big_impl[48]; /* the implementation of a 512^3 product */
    char line[640];
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    Entry cache[CACHE_SIZE];
    unsigned long clock;
    void *scratch; /* the primitives' scratchpads (packed operands), kept: oneDNN would allocate one per call */
    size_t scratch_n;
    bf16 *pad_a;   /* the last row block's rows of A, zeros below them: [ROW_BLOCK, lda] */
    float *pad_c;  /* its rows of C: [ROW_BLOCK, ldc] */
    size_t pad_a_n, pad_c_n;
} B;

static pthread_once_t b_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t b_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- built-in kernel ---- */

/* gemm_seq_bf16: C[i, j] (+)= sum_k op(A)[i, k] op(B)[k, j], k in order, in float32 (fma chains; each product of
 * two bf16 is exact, so only the sums round). The same bytes for any M and thread count. */

/* ---- oneDNN ---- */

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int cpu_has_bf16(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

static int entry_make(Entry *e, char *why, size_t nwhy) {
    dnnl_dims_t da = {e->M, e->K}, db = {e->K, e->N}, dc = {e->M, e->N};
    dnnl_dims_t sa = {e->transA ? 1 : e->lda, e->transA ? e->lda : 1};
    dnnl_dims_t sb = {e->transB ? 1 : e->ldb, e->transB ? e->ldb : 1}, sc = {e->ldc, 1};
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    const char *impl = "?";
    int ok = D.dnnl_memory_desc_init_by_strides(&e->a, 2, da, dnnl_bf16, sa) == dnnl_success &&
             D.dnnl_memory_desc_init_by_strides(&e->b, 2, db, dnnl_bf16, sb) == dnnl_success &&
             D.dnnl_memory_desc_init_by_strides(&e->c, 2, dc, dnnl_f32, sc) == dnnl_success &&
             D.dnnl_matmul_desc_init(&md, &e->a, &e->b, NULL, &e->c) == dnnl_success &&
             D.dnnl_primitive_attr_create(&attr) == dnnl_success;
    if (ok && e->beta) /* C += : oneDNN's sum post-op adds the old destination, in float32 */
        ok = D.dnnl_post_ops_create(&po) == dnnl_success && D.dnnl_post_ops_append_sum(po, 1.0f) == dnnl_success &&
             D.dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    ok = ok && D.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    ok = ok && D.dnnl_primitive_desc_create(&pd, &md, attr, B.engine, NULL) == dnnl_success &&
         D.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
         D.dnnl_primitive_create(&e->prim, pd) == dnnl_success;
    if (ok) {
        snprintf(e->impl, sizeof e->impl, "%s", impl);
        const dnnl_memory_desc_t *sm = D.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        e->scratch_n = sm ? D.dnnl_memory_desc_get_size(sm) : 0;
        if (sm) e->scratch = *sm;
    }
    if (pd) D.dnnl_primitive_desc_destroy(pd);
    if (po) D.dnnl_post_ops_destroy(po);
    if (attr) D.dnnl_primitive_attr_destroy(attr);
    if (!ok) snprintf(why, nwhy, "oneDNN cannot make a bf16 matmul of %dx%dx%d", e->M, e->N, e->K);
    return ok ? 0 : -1;
}

/* the cached primitive of a shape (made, evicting the least recently used, when new); NULL and why when oneDNN
 * cannot make it */
static Entry *entry_get(int transA, int transB, int M, int N, int K, int lda, int ldb, int ldc, int beta, char *why,
                        size_t nwhy) {
    Entry *lru = &B.cache[0];
    int threads = max_threads();
    B.clock++;
    for (int i = 0; i < CACHE_SIZE; i++) {
        Entry *e = &B.cache[i];
        if (e->used && e->transA == transA && e->transB == transB && e->M == M && e->N == N && e->K == K &&
            e->lda == lda && e->ldb == ldb && e->ldc == ldc && e->beta == beta && e->threads == threads) {
            e->last = B.clock;
            return e;
        }
        if (!e->used || (lru->used && e->last < lru->last)) lru = e;
    }
    if (lru->used) D.dnnl_primitive_destroy(lru->prim);
    *lru = (Entry){1, transA, transB, M, N, K, lda, ldb, ldc, beta, threads, B.clock, NULL, {0}, {0}, {0}, {0}, 0, ""};
    if (entry_make(lru, why, nwhy)) {
        lru->used = 0;
        return NULL;
    }
    return lru;
}

/* Row blocks. oneDNN chooses its implementation, blocking and reduction by the whole shape, M included (2.6.3 with
 * AMX: no AMX when M <= 32 and M N <= 256, M blocks that divide M, K split among threads from 16 threads on; its
 * gemm:jit kernel blocks by M too), so a row of X W^T would depend on how many rows share its product. So every
 * product whose rows are the batch's (A not transposed: the forward's X W^T and the backward's dY W) runs as
 * products of exactly ROW_BLOCK rows through one primitive per (transB, N, K, strides, beta): every row goes through
 * the same implementation, blocking and summation order, whatever M, the batch or the row's place in it, on every
 * instruction set; the last block's rows go through a copy of the same strides padded with zero rows. 256 rows is
 * what oneDNN packs B for at a time on its own (AMX: 4 blocks of 64 rows; AVX512: a block of at most 256), so
 * products of many rows pack no more than before; a product of fewer rows computes 256 (decoding batches up to 256
 * sequences, cmd_generate.c). The products that sum over the batch's rows (dW = dY^T X) keep oneDNN's own shape. */
#define ROW_BLOCK GEMM_BF16_ROW_BLOCK

/* grows *p to hold n bytes, zeroed when new (the padding rows of a last block are zeros) */
static void grow(void **p, size_t *have, size_t n) {
    if (n <= *have) return;
    free(*p);
    if (posix_memalign(p, 4096, n)) ppa_die(1, "gemm_bf16: out of memory allocating %zu bytes", n);
    memset(*p, 0, n);
    *have = n;
}

static int run_dnnl(int transA, int transB, int M, int N, int K, const bf16 *A, int lda, const bf16 *Bm, int ldb,
                    float beta, float *C, int ldc, char *why, size_t nwhy) {
    int rows = !transA, m = rows ? ROW_BLOCK : M;
    Entry *e = entry_get(transA, transB, m, N, K, lda, ldb, ldc, beta != 0.0f, why, nwhy);
    if (!e) return -1;
    if (e->scratch_n > B.scratch_n) { /* grown, never shrunk: no page faults in later steps */
        free(B.scratch);
        if (posix_memalign(&B.scratch, 4096, e->scratch_n)) ppa_die(1, "gemm_bf16: out of memory allocating %zu bytes", e->scratch_n);
        B.scratch_n = e->scratch_n;
    }
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
    int ok = D.dnnl_memory_create(&ma, &e->a, B.engine, (void *)A) == dnnl_success &&
             D.dnnl_memory_create(&mb, &e->b, B.engine, (void *)Bm) == dnnl_success &&
             D.dnnl_memory_create(&mc, &e->c, B.engine, C) == dnnl_success &&
             (!e->scratch_n || D.dnnl_memory_create(&ms, &e->scratch, B.engine, B.scratch) == dnnl_success);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc},
                               {DNNL_ARG_SCRATCHPAD, ms}};
#define EXEC(a, c)                                                                                                     \
    (D.dnnl_memory_set_data_handle(ma, (void *)(a)) == dnnl_success &&                                                 \
     D.dnnl_memory_set_data_handle(mc, (c)) == dnnl_success &&                                                         \
     D.dnnl_primitive_execute(e->prim, B.stream, e->scratch_n ? 4 : 3, args) == dnnl_success &&                       \
     D.dnnl_stream_wait(B.stream) == dnnl_success)
    if (!rows)
        ok = ok && EXEC(A, C);
    else {
        int full = M / ROW_BLOCK * ROW_BLOCK, r = M - full;
        for (int i = 0; ok && i < full; i += ROW_BLOCK) ok = EXEC(A + (size_t)i * lda, C + (size_t)i * ldc);
        if (ok && r) { /* pad_a: [ROW_BLOCK, lda], rows r.. zero; pad_c: [ROW_BLOCK, ldc] */
            grow((void **)&B.pad_a, &B.pad_a_n, sizeof(bf16) * ROW_BLOCK * (size_t)lda);
            grow((void **)&B.pad_c, &B.pad_c_n, sizeof(float) * ROW_BLOCK * (size_t)ldc);
            for (int i = 0; i < r; i++) {
                memcpy(B.pad_a + (size_t)i * lda, A + (size_t)(full + i) * lda, sizeof(bf16) * (size_t)K);
                if (beta != 0.0f) memcpy(B.pad_c + (size_t)i * ldc, C + (size_t)(full + i) * ldc, sizeof(float) * (size_t)N);
            }
            memset(B.pad_a + (size_t)r * lda, 0, sizeof(bf16) * (size_t)(ROW_BLOCK - r) * lda);
            ok = EXEC(B.pad_a, B.pad_c);
            for (int i = 0; ok && i < r; i++)
                memcpy(C + (size_t)(full + i) * ldc, B.pad_c + (size_t)i * ldc, sizeof(float) * (size_t)N);
        }
    }
#undef EXEC
    if (ma) D.dnnl_memory_destroy(ma);
    if (mb) D.dnnl_memory_destroy(mb);
    if (mc) D.dnnl_memory_destroy(mc);
    if (ms) D.dnnl_memory_destroy(ms);
    if (!ok) {
        snprintf(why, nwhy, "oneDNN failed on a %dx%dx%d product", M, N, K);
        return -1;
    }
    memcpy(B.impl, e->impl, sizeof B.impl);
    return 0;
}

/* Compares the library with the built-in kernel on a few shapes (every
 * transposition, both betas); both sum exact products in float32, so they
 * agree to K ulps of sum |a b|. */
static int self_check(char *why, size_t nwhy) {
    static const int SHAPES[][3] = {{5, 7, 33}, {70, 40, 96}};
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t s = 0; s < PPA_ARRAY_LEN(SHAPES); s++)
        for (int t = 0; t < 8; t++) {
            int M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2], ta = t & 1, tb = t >> 1 & 1;
            float beta = (float)(t >> 2);
            int lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1, ldc = N + 3;
            size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
            bf16 *A = xmalloc(sizeof(bf16) * (na + nb));
            float *C = xmalloc(sizeof(float) * 2 * nc), *R = C + nc;
            for (size_t i = 0; i < na + nb; i++) { /* random bf16 of either sign, magnitudes 2^-7 .. 2^-1 */
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                A[i] = (bf16)((0x3c00 + x % 0x300) | (x >> 40 & 0x8000));
            }
            for (size_t i = 0; i < nc; i++) C[i] = R[i] = (float)(i % 7) - 3.0f;
            if (run_dnnl(ta, tb, M, N, K, A, lda, A + na, ldb, beta, C, ldc, why, nwhy)) {
                free(A), free(C);
                return -1;
            }
            gemm_seq_bf16(ta, tb, M, N, K, A, lda, A + na, ldb, beta, R, ldc);
            int bad = 0;
            for (int i = 0; i < M && !bad; i++)
                for (int j = 0; j < N && !bad; j++) {
                    double mag = 0.0; /* |C0| <= 3 is in the + 8 below */
                    for (int k = 0; k < K; k++)
                        mag += fabs((double)bf16_f32(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                                    bf16_f32(tb ? A[na + (size_t)j * ldb + k] : A[na + (size_t)k * ldb + j]));
                    double d = fabs((double)C[(size_t)i * ldc + j] - R[(size_t)i * ldc + j]);
                    if (!(d <= 2.0 * K * 0x1p-24 * (mag + 8.0))) {
                        snprintf(why, nwhy, "oneDNN's bf16 product %c%c %dx%dx%d beta %g differs from the built-in "
                                 "kernel at [%d,%d]: %.9g vs %.9g", ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, beta, i,
                                 j, C[(size_t)i * ldc + j], R[(size_t)i * ldc + j]);
                        bad = 1;
                    }
                }
            free(A), free(C);
            if (bad) return -1;
        }
    return 0;
}

static int load_dnnl(char *why, size_t nwhy) {
    char dl_why[512];
    void *h = dynlib_open("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL, dl_why, sizeof dl_why);
    if (!h) {
        snprintf(why, nwhy, "oneDNN is not installed (libdnnl.so.2: %.300s); install libdnnl2 (Debian), or set "
                 "PPA_BF16=builtin for the built-in kernel (bf16 memory, below float32 speed)", dl_why);
        return -1;
    }
#define RESOLVE(name, ret, args)                                                                                         \
    if (!(*(void **)&D.name = dlsym(h, #name))) {                                                                      \
        snprintf(why, nwhy, "libdnnl.so.2 has no %s (oneDNN 2.x is needed)", #name);                                   \
        return -1;                                                                                                     \
    }
    DNNL_FUNCS(RESOLVE)
#undef RESOLVE
    const dnnl_version_t *v = D.dnnl_version();
    snprintf(B.version, sizeof B.version, "%d.%d.%d", v->major, v->minor, v->patch);
    if (D.dnnl_engine_create(&B.engine, dnnl_cpu, 0) != dnnl_success ||
        D.dnnl_stream_create(&B.stream, B.engine, dnnl_stream_default_flags) != dnnl_success) {
        snprintf(why, nwhy, "oneDNN %s cannot create a CPU engine", B.version);
        return -1;
    }
    if (self_check(why, nwhy)) return -1;
    /* the implementation oneDNN picks for a product of LLM size, for the backend line (tiny products may take
     * another: gemm_bf16_backend names both when the last one differs) */
    Entry *e = entry_get(0, 1, ROW_BLOCK, 512, 512, 512, 512, 512, 0, why, nwhy);
    if (!e) return -1;
    snprintf(B.big_impl, sizeof B.big_impl, "%s", e->impl);
    return 0;
}

static void init_once(void) {
    const char *env = getenv("PPA_BF16");
#ifdef __SANITIZE_ADDRESS__
    /* LeakSanitizer's tracer faults reading a dlopen()ed oneDNN's thread-local storage: sanitizer builds test the
     * built-in kernel (the release tests cover oneDNN) */
    if (!env) env = "builtin";
#endif
    if (env && !strcmp(env, "builtin"))
        B.ready = 2;
    else if (env && *env)
        B.ready = -1, snprintf(B.why, sizeof B.why, "PPA_BF16=%s: expected 'builtin' or unset", env);
    else if (!cpu_has_bf16())
        B.ready = -1, snprintf(B.why, sizeof B.why,
                               "this CPU has no AVX512-BF16, so bf16 products would run slower than float32: use "
                               "--precision fp32 (or set PPA_BF16=builtin: the built-in kernel, bf16 memory below float32 speed)");
    else
        B.ready = load_dnnl(B.why, sizeof B.why) == 0 ? 1 : -1;
}

static void init(void) { pthread_once(&b_once, init_once); }

int gemm_bf16_ready(char *err, size_t errlen) {
    init();
    if (B.ready > 0) return 0;
    snprintf(err, errlen, "--precision bf16: %s", B.why);
    return -1;
}

void gemm_bf16(int transA, int transB, int M, int N, int K, const bf16 *A, int lda, const bf16 *Bm, int ldb,
               float beta, float *C, int ldc) {
    init();
    int colsA = transA ? M : K, colsB = transB ? K : N;
    if (B.ready < 0) ppa_die(70, "gemm_bf16: %s", B.why);
    if (M < 0 || N < 0 || K < 0 || lda < (colsA > 1 ? colsA : 1) || ldb < (colsB > 1 ? colsB : 1) ||
        ldc < (N > 1 ? N : 1) || (beta != 0.0f && beta != 1.0f))
        ppa_die(70, "gemm_bf16: bad arguments: transA %d transB %d M %d N %d K %d lda %d ldb %d ldc %d beta %g",
                transA, transB, M, N, K, lda, ldb, ldc, beta);
    if (M == 0 || N == 0) return;
    if (K == 0) { /* oneDNN refuses empty reductions */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N && beta == 0.0f; j++) C[(size_t)i * ldc + j] = 0.0f;
        return;
    }
    int timed = gemm_stats_on();
    double t0 = timed ? timer_now() : 0.0;
    if (B.ready == 2)
        gemm_seq_bf16(transA, transB, M, N, K, A, lda, Bm, ldb, beta, C, ldc);
    else {
        char why[160];
        pthread_mutex_lock(&b_lock);
        int rc = run_dnnl(transA, transB, M, N, K, A, lda, Bm, ldb, beta, C, ldc, why, sizeof why);
        pthread_mutex_unlock(&b_lock);
        if (rc) ppa_die(1, "gemm_bf16: %s", why);
    }
    if (timed) gemm_stats_add(2.0 * M * N * K, timer_now() - t0, 1);
}

const char *gemm_bf16_backend(void) {
    init();
    int t = max_threads();
    if (B.ready == 1)
    {
        char last[80] = "";
        if (B.impl[0] && strcmp(B.impl, B.big_impl)) snprintf(last, sizeof last, " (last product: %s)", B.impl);
        snprintf(B.line, sizeof B.line, "oneDNN %s, %s%s, %d thread%s", B.version, B.big_impl, last, t,
                 t == 1 ? "" : "s");
    }
    else if (B.ready == 2)
        snprintf(B.line, sizeof B.line, "builtin C kernel (%s; in-order fma, %s), %d thread%s",
#ifdef __SANITIZE_ADDRESS__
                 "sanitizer build",
#else
                 "PPA_BF16=builtin",
#endif
                 gemm_seq_isa(), t, t == 1 ? "" : "s");
    else
        snprintf(B.line, sizeof B.line, "unavailable: %s", B.why);
    return B.line;
}

const char *gemm_bf16_kernel(void) {
    init();
    return B.ready == 1 ? "oneDNN" : B.ready == 2 ? "builtin" : "none";
}
