/* test_gpu_forward.c: the GPU engine (src/gpu) on the real CUDA module against the CPU engine: the comparisons of
 * tests/test_gpu_engine.c (which runs them on the CPU stand-in in make test) on a GPU, on the same cases
 * (../gpu_engine_cases.h: Llama GQA + tied head, Llama MHA with every bias, Qwen2 with q/k/v biases, llama3 RoPE,
 * Mistral with a sliding window, reward models of 1, 3 and 5 labels, head_dim 64), and without --small on a larger
 * model (head_dim 128, rows of hundreds of tokens: many of the attention's query and key blocks); the module's
 * table as device_cuda_open resolves it; a batch larger than the GPU refused with the sizes.
 *
 * Tolerances, per response (rewards: relative to the batch's largest |reward|):
 *   float32 engine against the CPU's float32 engine: 1e-5 of max(1, |logp|) (float32 products without TF32 and a
 *   float32 attention: float32 rounding in other orders);
 *   bf16 engine against the CPU's bf16 engine: the worst response within 2^-6 of max(1, |logp|), the median within
 *   2^-9, or within twice bf16's own error on the same rows (the CPU's bf16 engine against its float32 one, worst
 *   and median) where that is larger: two bf16 engines summing in different orders round apart about as often as
 *   bf16 rounds away from float32. A reward is one dot product of a bf16-rounded hidden state, where a one-ulp
 *   difference is not averaged over tokens as in a log-prob: on an H200 (2026-11-27) the reward cases' medians
 *   were 1.2e-3 to 2.2e-3, the log-prob cases' 6e-4 to 1.2e-3. The rounding points are the CPU's (see gpu_forward.c), but every float32 sum runs in another order and
 *   the fused attention rounds its probabilities before normalising them (exp(s - running max), flash style) where
 *   the CPU rounds the normalised ones, so values near a bf16 boundary round apart and carry one-ulp (2^-8)
 *   differences through the layers. On the CPU stand-in, which differs from the CPU in its orders only, the worst
 *   response over 60 seeds was 5.4e-3 and the median at most 2.1e-5 (tests/test_gpu_engine.c bounds those at 2^-6
 *   and 2^-12); the median bound here leaves room for the attention's rounding, and is still below what a moved
 *   rounding point gives (medians of 1e-3: q and k rounded before RoPE);
 *   bit for bit: reruns, and a float32 model scored in bf16 against the frozen bf16 model of the same file (the
 *   same weights on the same kernels and shapes);
 *   shared-prompt rows against separate sequences, each row alone against the row in a batch: within the
 *   tolerance of the precision (the products' algorithms are chosen per shape, matmul.h: not bit for bit here;
 *   whether the bits matched is printed).
 * Usage: test_gpu_forward [--small] [--seed N] (--small: the fixture cases only, and no out-of-memory batch: what
 * compute-sanitizer runs). Exit status: 0 all passed, 1 a failure, 77 no usable GPU. */
#include <dlfcn.h>
#include <time.h>

#include "../gpu_engine_cases.h"
#include "device/cuda.h"
#include "harness.h"

static PcApi api;
static char tmpdir[64];

#define F32_TOL 1e-5
#define BF16_TOL 0x1p-6
#define BF16_MED 0x1p-9

static double err_of(const double *a, const double *b, int n, int lm) {
    if (lm) return ge_rel(a, b, n, 1.0);
    double s = 0.0;
    for (int i = 0; i < n; i++) s = fmax(s, fabs(b[i]));
    return ge_rel(a, b, n, s > 0 ? s : 1.0);
}

static double med_of(const double *a, const double *b, int n, int lm) {
    if (lm) return ge_rel_median(a, b, n, 1.0);
    double s = 0.0;
    for (int i = 0; i < n; i++) s = fmax(s, fabs(b[i]));
    return ge_rel_median(a, b, n, s > 0 ? s : 1.0);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* each row alone against the row in the batch (the first two with --small: fewer launches under the sanitizer):
 * the worst error, *same = every bit equal */
static double rows_alone(GpuModel *g, const GeRows *R, const double *all, int w, int lm, int *same) {
    char err[1024];
    double out[8 * 8], worst = 0.0;
    int at = 0;
    *same = 1;
    for (int r = 0; r < (h_small && R->n > 2 ? 2 : R->n); r++) {
        int k = R->rows[r].n_resp;
        if (ge_gpu(g, &R->rows[r], 1, out, NULL, err, sizeof err)) {
            H_CHECK(0, "row %d alone: %s", r, err);
            return INFINITY;
        }
        *same &= !memcmp(out, all + (size_t)at * w, sizeof(double) * (size_t)k * w);
        worst = fmax(worst, err_of(out, all + (size_t)at * w, k * w, lm));
        at += k;
    }
    return worst;
}

/* every comparison on one config (weights of std `std`): name, its rows */
static void run_case(const char *name, const char *what, const ModelConfig *c, double std, const GeRows *R) {
    char err[1024];
    int lm = c->head == HEAD_LM, nr = ge_n_resp(R->rows, R->n), w = ge_width(c), n = nr * w, ok = 1;
    Model *m32 = ge_model(tmpdir, name, c, std, ST_F32, MODEL_FP32, err, sizeof err);
    Model *mb = m32 ? ge_model(tmpdir, name, c, std, ST_F32, MODEL_BF16, err, sizeof err) : NULL;
    H_CHECK(m32 && mb, "%s: models: %s", name, err);
    GpuModel *g32 = mb ? gpu_model_new(&api, m32, MODEL_FP32, err, sizeof err) : NULL;
    H_CHECK(!mb || g32, "%s: gpu_model_new fp32: %s", name, err);
    GpuModel *gb = g32 ? gpu_model_new(&api, mb, MODEL_BF16, err, sizeof err) : NULL;
    H_CHECK(!g32 || gb, "%s: gpu_model_new bf16: %s", name, err);
    GpuModel *g32b = gb ? gpu_model_new(&api, m32, MODEL_BF16, err, sizeof err) : NULL;
    H_CHECK(!gb || g32b, "%s: gpu_model_new fp32 model in bf16: %s", name, err);
    double *v = calloc((size_t)n * 7, sizeof(double));
    double *cpu = v, *gpu = v + n, *sep = v + 2 * n, *again = v + 3 * n, *cpub = v + 4 * n, *gpub = v + 5 * n;
    double *sepb = v + 6 * n;
    int *ns = calloc((size_t)nr * 2, sizeof(int));
    GeRows S;
    ge_separate(R, &S);
    if (!g32b) goto done;
    double t0 = now();
    ok &= !ge_cpu(m32, R->rows, R->n, cpu, ns, err, sizeof err);
    double t1 = now();
    ok &= !ge_gpu(g32, R->rows, R->n, gpu, ns + nr, err, sizeof err);
    double t2 = now();
    ok &= !ge_cpu(mb, R->rows, R->n, cpub, NULL, err, sizeof err);
    double t3 = now();
    ok &= !ge_gpu(gb, R->rows, R->n, gpub, NULL, err, sizeof err);
    double t4 = now();
    H_CHECK(ok, "%s: forwards: %s", name, err);
    if (!ok) goto done;
    double e32 = err_of(gpu, cpu, n, lm), eb = err_of(gpub, cpub, n, lm), mb_ = med_of(gpub, cpub, n, lm);
    /* bf16's own error here: the CPU's bf16 engine against its float32 one, on the same rows */
    double own = err_of(cpub, cpu, n, lm), own_med = med_of(cpub, cpu, n, lm);
    double tol = fmax(BF16_TOL, 2.0 * own), tol_med = fmax(BF16_MED, 2.0 * own_med);
    H_CHECK(e32 <= F32_TOL, "%s: float32: the GPU engine within %g of the CPU's (%.3g)", name, F32_TOL, e32);
    H_CHECK(eb <= tol && mb_ <= tol_med, "%s: bf16: the GPU engine within %.3g of the CPU's bf16 engine, median %.3g "
            "(%.3g, %.3g; bf16's own error against float32 %.3g, median %.3g)", name, tol, tol_med, eb, mb_, own,
            own_med);
    if (lm) H_CHECK(!memcmp(ns, ns + nr, sizeof(int) * (size_t)nr), "%s: the scored counts are the CPU's", name);
    ok &= !ge_gpu(g32, S.rows, S.n, sep, NULL, err, sizeof err);
    ok &= !ge_gpu(gb, S.rows, S.n, sepb, NULL, err, sizeof err);
    double es = err_of(sep, gpu, n, lm), esb = err_of(sepb, gpub, n, lm);
    H_CHECK(ok && es <= F32_TOL && esb <= BF16_TOL, "%s: shared-prompt rows = separate sequences (fp32 %.3g, bf16 "
            "%.3g) %s", name, es, esb, ok ? "" : err);
    ok &= !ge_gpu(g32, R->rows, R->n, again, NULL, err, sizeof err);
    H_CHECK(ok && !memcmp(again, gpu, sizeof(double) * (size_t)n), "%s: float32: a rerun gives the same bits", name);
    ok &= !ge_gpu(gb, R->rows, R->n, again, NULL, err, sizeof err);
    H_CHECK(ok && !memcmp(again, gpub, sizeof(double) * (size_t)n), "%s: bf16: a rerun gives the same bits", name);
    ok &= !ge_gpu(g32b, R->rows, R->n, again, NULL, err, sizeof err);
    H_CHECK(ok && !memcmp(again, gpub, sizeof(double) * (size_t)n),
            "%s: the float32 model in bf16 = the frozen bf16 model, bit for bit", name);
    int same32, sameb;
    double ea32 = rows_alone(g32, R, gpu, w, lm, &same32), eab = rows_alone(gb, R, gpub, w, lm, &sameb);
    H_CHECK(ea32 <= F32_TOL && eab <= BF16_TOL, "%s: each row alone = the row in the batch (fp32 %.3g, bf16 %.3g)",
            name, ea32, eab);
    printf("%-15s %-58s T %5d | fp32 %.1e sep %.1e alone %.1e%s | bf16 %.1e med %.1e (own %.1e med %.1e) sep %.1e alone %.1e%s | ms CPU "
           "%.0f/%.0f GPU %.1f/%.1f (first call)\n", name, what, ge_tokens(R->rows, R->n), e32, es, ea32,
           same32 ? " (bits)" : "", eb, mb_, own, own_med, esb, eab, sameb ? " (bits)" : "", 1e3 * (t1 - t0), 1e3 * (t3 - t2),
           1e3 * (t2 - t1), 1e3 * (t4 - t3));
    fflush(stdout);
done:
    free(v), free(ns);
    gpu_model_free(g32), gpu_model_free(gb), gpu_model_free(g32b);
    model_free(m32), model_free(mb);
}

/* the table device_cuda_open resolves from the module this test links: the same functions */
static void test_table(void) {
    Dl_info info;
    char err[1024];
    if (!dladdr((void *)pc_init, &info) || !info.dli_fname) {
        H_CHECK(0, "dladdr(pc_init): the module's path");
        return;
    }
    if (!strstr(info.dli_fname, "libppa_cuda")) { /* the CPU stand-in, linked into the test: no module to load */
        printf("device_cuda_open: not checked (pc_init is in %s, not a module)\n", info.dli_fname);
        return;
    }
    setenv("PPA_CUDA_LIB", info.dli_fname, 1);
    int rc = device_cuda_open(0, err, sizeof err);
    const PcApi *t = device_cuda_api();
    H_CHECK(rc == 0 && t && !memcmp(t, &api, sizeof api), "device_cuda_open(%s): every function of pc_api.h "
            "resolved to the module's: %s", info.dli_fname, rc ? err : "");
    if (!rc) printf("device_cuda_open: %s\n", device_cuda_name());
}

/* a batch larger than the GPU: refused with the sizes, and the model runs on */
static void test_out_of_memory(void) {
    static const char cfg[] = "{\"model_type\": \"llama\", \"vocab_size\": 128, \"hidden_size\": 512, "
                              "\"intermediate_size\": 1024, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
                              "\"num_key_value_heads\": 2, \"head_dim\": 128, \"max_position_embeddings\": 8192}";
    char err[1024];
    ModelConfig c;
    if (model_config_parse(&c, cfg, "oom", err, sizeof err)) {
        H_CHECK(0, "config: %s", err);
        return;
    }
    Model *m = ge_model(tmpdir, "oom", &c, 0.3, ST_F32, MODEL_BF16, err, sizeof err);
    GpuModel *g = m ? gpu_model_new(&api, m, MODEL_BF16, err, sizeof err) : NULL;
    H_CHECK(g != NULL, "oom model: %s", err);
    size_t fr = 0, total = 0;
    api.pc_mem_info(&fr, &total);
    /* per token at least x, xn, gate | up and h: 4H + 2H + 8I + 2I bytes */
    double per = 6.0 * c.hidden_size + 10.0 * c.intermediate_size;
    int R = 4095, n_rows = (int)(1.25 * (double)total / per / (R + 1)) + 1;
    int *tok = calloc((size_t)R, sizeof(int)), prompt[1] = {1};
    const int *rp[1] = {tok};
    Row *rows = calloc((size_t)n_rows, sizeof(Row));
    for (int r = 0; r < n_rows; r++) rows[r] = (Row){1, prompt, 1, &R, rp};
    double *out = calloc((size_t)n_rows, sizeof(double));
    int rc = g ? gpu_forward_logps(g, rows, n_rows, out, NULL, err, sizeof err) : 0;
    H_CHECK(g && rc && strstr(err, "out of GPU memory") && strstr(err, "bytes") && strstr(err, "activations"),
            "a batch of %.1fM tokens on %.0f GiB: refused with the sizes: %s", (double)n_rows * (R + 1) / 1e6,
            total / 1073741824.0, err);
    printf("out of memory: %s\n", err);
    rc = g ? gpu_forward_logps(g, rows, 2, out, NULL, err, sizeof err) : -1;
    H_CHECK(rc == 0 && isfinite(out[0]) && fabs(out[0] - out[1]) <= BF16_TOL * fmax(1.0, fabs(out[1])),
            "after the refusal the model runs: %s", rc ? err : "");
    free(tok), free(rows), free(out);
    gpu_model_free(g), model_free(m);
}

int main(int argc, char **argv) {
    h_begin();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small")) h_small = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) h_seed = strtoull(argv[++i], NULL, 10);
        else return fprintf(stderr, "usage: test_gpu_forward [--small] [--seed N]\n"), 2;
    }
    if (h_gpu_open("test_gpu_forward", "rows")) return 77;
    char err[512];
    api = ge_linked_api();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_gpu_forward_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    test_table();
    for (int i = 0; i < GE_N_CASES; i++) {
        ModelConfig c;
        GeRows R;
        if (ge_config(&GE_CASES[i], 0, &c, err, sizeof err)) {
            H_CHECK(0, "%s: config: %s", GE_CASES[i].name, err);
            continue;
        }
        ge_rows(&R, &c, h_seed + (uint64_t)i, 6, 10, 9, 4);
        run_case(GE_CASES[i].name, GE_CASES[i].what, &c, 0.3, &R);
        ge_rows_free(&R);
    }
    if (!h_small) {
        static const char big[] = "{\"model_type\": \"qwen2\", \"vocab_size\": 3001, \"hidden_size\": 384, "
                                  "\"intermediate_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                  "\"num_key_value_heads\": 2, \"head_dim\": 128, \"max_position_embeddings\": 4096, "
                                  "\"rms_norm_eps\": 1e-6, \"rope_theta\": 1000000.0, \"tie_word_embeddings\": true}";
        ModelConfig c;
        GeRows R;
        if (model_config_parse(&c, big, "qwen2_hs128", err, sizeof err)) {
            H_CHECK(0, "config: %s", err);
        } else {
            ge_rows(&R, &c, h_seed + 99, 5, 300, 200, 5);
            /* std 0.1: attention and logits neither flat nor one-hot at these widths */
            run_case("qwen2_hs128", "Qwen2-shaped, head_dim 128, tied, long rows", &c, 0.1, &R);
            ge_rows_free(&R);
        }
        test_out_of_memory();
    }
    return h_gpu_close("test_gpu_forward", tmpdir);
}
