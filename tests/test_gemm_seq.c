/* test_gemm_seq.c: the in-order fma products (gemm_seq.h) against a plain
 * loop written here (s = fmaf(a, b, s) over k, then C = s or C + s), bit for
 * bit: every transpose pattern, beta 0 and 1, float32 and bf16, edges of
 * every size against the 6 x 16 tiles, blocks of rows, op(B) packed once or
 * per block, K = 0 and 1, NaN and
 * infinities; then row invariance (a slice of rows alone = the same rows of
 * the whole product), the same bits at 1 and 2 threads, and the products
 * against float64 within the float32 sum's bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "check.h"
#include "core/common.h"
#include "core/rng.h"
#include "kernels/gemm_seq.h"

static PpaRng rng;

static float *randf(size_t n) {
    float *x = xmalloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = (float)(2.0 * rng_uniform(&rng) - 1.0);
    return x;
}

static bf16 *to_bf16(const float *x, size_t n) {
    bf16 *y = xmalloc(sizeof(bf16) * (n ? n : 1));
    bf16_from_f32(y, x, n);
    return y;
}

/* the definition, element by element; bf: read A and B as bf16 */
static void naive(int tA, int tB, int M, int N, int K, const void *A, int lda, const void *B, int ldb, float beta,
                  float *C, int ldc, int bf) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) {
                size_t ia = tA ? (size_t)k * lda + i : (size_t)i * lda + k, ib = tB ? (size_t)j * ldb + k : (size_t)k * ldb + j;
                float a = bf ? bf16_f32(((const bf16 *)A)[ia]) : ((const float *)A)[ia];
                float b = bf ? bf16_f32(((const bf16 *)B)[ib]) : ((const float *)B)[ib];
                s = fmaf(a, b, s);
            }
            float *c = C + (size_t)i * ldc + j;
            *c = beta == 0.0f ? s : *c + s;
        }
}

static void run(int tA, int tB, int M, int N, int K, const void *A, int lda, const void *B, int ldb, float beta,
                float *C, int ldc, int bf) {
    if (bf)
        gemm_seq_bf16(tA, tB, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else
        gemm_seq_f32(tA, tB, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

/* one shape and pattern against the loop, bit for bit (strides padded by 3) */
static void one(int tA, int tB, int M, int N, int K, float beta, int bf) {
    int lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 3, ldc = N + 3;
    size_t na = (size_t)(tA ? K : M) * lda, nb = (size_t)(tB ? N : K) * ldb, nc = (size_t)M * ldc;
    float *Af = randf(na), *Bf = randf(nb), *C = randf(nc), *D = xmalloc(sizeof(float) * (nc ? nc : 1));
    memcpy(D, C, sizeof(float) * nc);
    bf16 *Ab = to_bf16(Af, na), *Bb = to_bf16(Bf, nb);
    const void *A = bf ? (const void *)Ab : Af, *B = bf ? (const void *)Bb : Bf;
    run(tA, tB, M, N, K, A, lda, B, ldb, beta, C, ldc, bf);
    naive(tA, tB, M, N, K, A, lda, B, ldb, beta, D, ldc, bf);
    CHECK(!memcmp(C, D, sizeof(float) * nc), "%s tA %d tB %d M %d N %d K %d beta %g: the loop's bits",
          bf ? "bf16" : "f32", tA, tB, M, N, K, (double)beta);
    free(Af), free(Bf), free(C), free(D), free(Ab), free(Bb);
}

static void test_patterns(void) {
    int sizes[][3] = {{1, 1, 1}, {5, 15, 7}, {6, 16, 9}, {7, 17, 33}, {13, 31, 0}, {29, 50, 64}, {64, 3, 100}};
    for (int bf = 0; bf < 2; bf++)
        for (size_t s = 0; s < PPA_ARRAY_LEN(sizes); s++)
            for (int p = 0; p < 4; p++)
                for (int beta = 0; beta < 2; beta++)
                    one(p & 1, p >> 1, sizes[s][0], sizes[s][1], sizes[s][2], (float)beta, bf);
    /* K long enough to split the rows into blocks (2 MB of packed rows), and few panels (rows split among threads) */
    one(0, 1, 70, 20, 9000, 1.0f, 0);
    one(1, 0, 131, 5, 4100, 0.0f, 1);
    /* chains longer than a piece (2048) in every transpose pattern, one just over it */
    one(0, 0, 9, 21, 4500, 1.0f, 1);
    one(1, 1, 10, 18, 2049, 0.0f, 0);
    one(1, 1, 8, 35, 6145, 1.0f, 1);
    one(0, 0, 13, 7, 2049, 0.0f, 0);
    /* op(B) over 64 MB: packed per block of rows instead of once */
    one(0, 1, 7, 4097, 4100, 1.0f, 1);
}

/* IEEE specials go through the chain as they go through the loop */
static void test_specials(void) {
    int M = 7, N = 18, K = 5;
    float *A = randf((size_t)M * K), *B = randf((size_t)N * K), *C = xcalloc((size_t)M * N, sizeof(float));
    float *D = xcalloc((size_t)M * N, sizeof(float));
    A[0] = NAN, A[K + 1] = INFINITY, B[2 * K] = -INFINITY, A[3 * K + 2] = 3e38f, B[4] = 3e38f;
    gemm_seq_f32(0, 1, M, N, K, A, K, B, K, 0.0f, C, N);
    naive(0, 1, M, N, K, A, K, B, K, 0.0f, D, N, 0);
    int same = 1;
    for (int i = 0; i < M * N; i++) same &= isnan(C[i]) ? isnan(D[i]) : C[i] == D[i];
    CHECK(same, "NaN, infinities and overflow as the loop has them");
    free(A), free(B), free(C), free(D);
}

/* rows [s, s + m) alone give the bytes of those rows in the whole product */
static void test_rows(int bf) {
    int M = 300, N = 70, K = 96, ok = 1;
    float *Af = randf((size_t)M * K), *Bf = randf((size_t)N * K), *C = xmalloc(sizeof(float) * (size_t)M * N);
    float *D = xmalloc(sizeof(float) * (size_t)M * N);
    bf16 *Ab = to_bf16(Af, (size_t)M * K), *Bb = to_bf16(Bf, (size_t)N * K);
    size_t es = bf ? sizeof(bf16) : sizeof(float);
    const char *A = bf ? (const char *)Ab : (const char *)Af;
    const void *B = bf ? (const void *)Bb : Bf;
    run(0, 1, M, N, K, A, K, B, K, 0.0f, C, N, bf);
    for (int s = 0; s < 40; s += 7)
        for (int m = 1; m < M - s; m = 2 * m + 5) {
            run(0, 1, m, N, K, A + (size_t)s * K * es, K, B, K, 0.0f, D, N, bf);
            ok &= !memcmp(D, C + (size_t)s * N, sizeof(float) * (size_t)m * N);
        }
    CHECK(ok, "%s: a slice of rows alone = the same rows of the whole product", bf ? "bf16" : "f32");
    free(Af), free(Bf), free(C), free(D), free(Ab), free(Bb);
}

static void test_threads(void) {
#ifdef _OPENMP
    int M = 200, N = 130, K = 77;
    float *A = randf((size_t)M * K), *B = randf((size_t)K * N), *C1 = xmalloc(sizeof(float) * (size_t)M * N);
    float *C2 = xmalloc(sizeof(float) * (size_t)M * N);
    int was = omp_get_max_threads();
    omp_set_num_threads(1);
    gemm_seq_f32(1, 0, M, N, K, A, M, B, N, 0.0f, C1, N);
    omp_set_num_threads(2);
    gemm_seq_f32(1, 0, M, N, K, A, M, B, N, 0.0f, C2, N);
    omp_set_num_threads(was);
    CHECK(!memcmp(C1, C2, sizeof(float) * (size_t)M * N), "1 and 2 threads: the same bits");
    free(A), free(B), free(C1), free(C2);
#endif
}

/* |C - C64| <= K 2^-24 sum |a b| (each of K roundings at most half an ulp of a partial sum) */
static void test_accuracy(void) {
    int M = 50, N = 40, K = 500;
    float *A = randf((size_t)M * K), *B = randf((size_t)N * K), *C = xmalloc(sizeof(float) * (size_t)M * N);
    gemm_seq_f32(0, 1, M, N, K, A, K, B, K, 0.0f, C, N);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)A[(size_t)i * K + k] * B[(size_t)j * K + k];
                s += p, sa += fabs(p);
            }
            double r = fabs(C[(size_t)i * N + j] - s) / (K * ldexp(1.0, -24) * sa);
            worst = r > worst ? r : worst;
        }
    CHECK(worst <= 1.0, "float64 within the float32 sum's bound (worst %.3f of it)", worst);
    free(A), free(B), free(C);
}

int main(void) {
    rng_seed(&rng, 7);
    printf("gemm_seq: tiles on %s\n", gemm_seq_isa());
    test_patterns();
    test_specials();
    test_rows(0);
    test_rows(1);
    test_threads();
    test_accuracy();
    return check_report("test_gemm_seq");
}
