/* test_gpu_engine.c: the GPU engine (src/gpu) against the CPU engine, run on the CPU stand-in of the CUDA module
 * (tests/cuda/mock: every pc_* function in plain C on host memory, the fused attention included), so that the
 * engine's orchestration is checked by make test on a machine without a GPU: the packing, positions, mask bounds,
 * layer order, biases, residuals, the RoPE table, the LM head's (src, tgt) pairs and their sums per response, the
 * reward heads at each response's last token, the bf16 rounding points, the refusals and the memory reuse. The
 * kernels' own correctness on a GPU is make test-cuda's (tests/cuda/test_cuda.c, test_attention.c, and
 * test_gpu_forward.c, these comparisons on the real module).
 *
 * Cases: gpu_engine_cases.h (Llama GQA + tied head, Llama MHA with every bias, Qwen2 with q/k/v biases, llama3
 * RoPE, Mistral with a sliding window, reward models of 1, 3 and 5 labels), head_dim 64. Tolerances:
 *   float32 engine against the CPU's float32 engine: 1e-5 of max(1, |logp|) per response (rewards: of the batch's
 *   largest |reward|): the two sum in other orders (the stand-in's products run k from the last down), so they
 *   agree to float32 rounding carried through two layers and a log-softmax;
 *   bf16 engine against the CPU's bf16 engine (the same rounding points, other summation orders): most responses
 *   agree to float32 rounding, and a few move where a value lands on the other side of a bf16 rounding boundary
 *   (one bf16 ulp, 2^-8 relative, carried through the layers); so two bounds, relative to max(1, |logp|) (rewards:
 *   the largest |reward|): the worst response within 2^-6, the median within 2^-12. Measured on these cases:
 *   worst 9e-4, median 2e-8; over 40-60 seeds of other rows (test_gpu_forward on the stand-in) worst 5.4e-3, median
 *   at most 2.1e-5. A rounding point moved (q and k rounded before RoPE, a planted bug) gives medians of 1e-3;
  *   bit for bit: reruns, each row alone against the same row in the batch (the stand-in's kernels compute every
 *   row on its own), a float32 model scored in bf16 against the frozen bf16 model of the same file. */
#include "check.h"
#include "cuda/mock/mock.h"
#include "gpu/gpu_internal.h"
#include "gpu_engine_cases.h"

static PcApi api;
static char tmpdir[64];

#define F32_TOL 1e-5
#define BF16_TOL 0x1p-6
#define BF16_MED 0x1p-12

/* out of n rows through the CPU (cpu) and the GPU (gpu); widths w; the scale errors are relative to */
static double scale_of(const double *v, int n, int lm) {
    double s = lm ? 1.0 : 0.0;
    for (int i = 0; i < n; i++) s = fmax(s, fabs(v[i]));
    return s > 0 ? s : 1.0;
}

/* max |a - b| / max(floor, |b|) for log-probs (floor 1), or relative to the batch's largest |reward| */
static double err_of(const double *a, const double *b, int n, int lm) {
    return lm ? ge_rel(a, b, n, 1.0) : ge_rel(a, b, n, scale_of(b, n, 0));
}

/* the median of the same */
static double med_of(const double *a, const double *b, int n, int lm) {
    return lm ? ge_rel_median(a, b, n, 1.0) : ge_rel_median(a, b, n, scale_of(b, n, 0));
}

/* each row alone gives the bits it has in the batch */
static int rows_alone_same(GpuModel *g, const GeRows *R, const double *all, int w) {
    char err[1024];
    double out[8 * 8];
    int at = 0, same = 1;
    for (int r = 0; r < R->n; r++) {
        int k = R->rows[r].n_resp;
        if (ge_gpu(g, &R->rows[r], 1, out, NULL, err, sizeof err)) {
            CHECK(0, "row %d alone: %s", r, err);
            return 0;
        }
        same &= !memcmp(out, all + (size_t)at * w, sizeof(double) * (size_t)k * w);
        at += k;
    }
    return same;
}

static void test_case(const GeCase *k) {
    char err[1024];
    ModelConfig c;
    if (ge_config(k, 0, &c, err, sizeof err)) {
        CHECK(0, "%s: config: %s", k->name, err);
        return;
    }
    int lm = c.head == HEAD_LM;
    Model *m32 = ge_model(tmpdir, k->name, &c, 0.3, ST_F32, MODEL_FP32, err, sizeof err);
    Model *mb = m32 ? ge_model(tmpdir, k->name, &c, 0.3, ST_F32, MODEL_BF16, err, sizeof err) : NULL;
    Model *mbf = mb ? ge_model(tmpdir, k->name, &c, 0.3, ST_BF16, MODEL_BF16, err, sizeof err) : NULL;
    CHECK(m32 && mb && mbf, "%s: models: %s", k->name, err);
    if (!mbf) {
        model_free(m32), model_free(mb);
        return;
    }
    /* float32; bf16 from the float32 file (frozen) and from a BF16 file (mapped); the float32 model in bf16 */
    GpuModel *g32 = gpu_model_new(&api, m32, MODEL_FP32, err, sizeof err);
    CHECK(g32 != NULL, "%s: gpu_model_new fp32: %s", k->name, err);
    GpuModel *gb = gpu_model_new(&api, mb, MODEL_BF16, err, sizeof err);
    CHECK(gb != NULL, "%s: gpu_model_new bf16: %s", k->name, err);
    GpuModel *gbf = gpu_model_new(&api, mbf, MODEL_BF16, err, sizeof err);
    CHECK(gbf != NULL, "%s: gpu_model_new bf16 (BF16 file): %s", k->name, err);
    GpuModel *g32b = gpu_model_new(&api, m32, MODEL_BF16, err, sizeof err);
    CHECK(g32b != NULL, "%s: gpu_model_new fp32 model in bf16: %s", k->name, err);
    if (!g32 || !gb || !gbf || !g32b) goto done;

    GeRows R, S;
    ge_rows(&R, &c, 1000 + (uint64_t)(k - GE_CASES), 6, 10, 9, 4);
    ge_separate(&R, &S);
    int nr = ge_n_resp(R.rows, R.n), w = ge_width(&c), n = nr * w, ok = 1;
    double *cpu = calloc((size_t)n, sizeof(double)), *gpu = calloc((size_t)n, sizeof(double));
    double *sep = calloc((size_t)n, sizeof(double)), *again = calloc((size_t)n, sizeof(double));
    double *cpub = calloc((size_t)n, sizeof(double)), *gpub = calloc((size_t)n, sizeof(double));
    double *cpubf = calloc((size_t)n, sizeof(double)), *gpubf = calloc((size_t)n, sizeof(double));
    int ns_cpu[64 * 8], ns_gpu[64 * 8];
    memset(ns_gpu, 0xff, sizeof ns_gpu);

    /* float32 */
    ok &= !ge_cpu(m32, R.rows, R.n, cpu, ns_cpu, err, sizeof err);
    ok &= !ge_gpu(g32, R.rows, R.n, gpu, ns_gpu, err, sizeof err);
    CHECK(ok, "%s: float32 forwards: %s", k->name, err);
    double e32 = err_of(gpu, cpu, n, lm);
    CHECK(e32 <= F32_TOL, "%s: float32: GPU engine within %g of the CPU engine (%.3g)", k->name, F32_TOL, e32);
    if (lm) CHECK(!memcmp(ns_cpu, ns_gpu, sizeof(int) * (size_t)nr), "%s: the scored counts are the CPU's", k->name);
    ok &= !ge_gpu(g32, S.rows, S.n, sep, NULL, err, sizeof err);
    double esep = err_of(sep, gpu, n, lm);
    CHECK(ok && esep <= F32_TOL, "%s: float32: shared-prompt rows = separate sequences (%.3g) %s", k->name, esep, err);
    ok &= !ge_gpu(g32, R.rows, R.n, again, NULL, err, sizeof err);
    CHECK(ok && !memcmp(again, gpu, sizeof(double) * (size_t)n), "%s: float32: a rerun gives the same bits", k->name);
    CHECK(rows_alone_same(g32, &R, gpu, w), "%s: float32: each row alone = the row in the batch, bit for bit",
          k->name);

    /* bf16 */
    ok &= !ge_cpu(mb, R.rows, R.n, cpub, NULL, err, sizeof err);
    ok &= !ge_gpu(gb, R.rows, R.n, gpub, NULL, err, sizeof err);
    ok &= !ge_cpu(mbf, R.rows, R.n, cpubf, NULL, err, sizeof err);
    ok &= !ge_gpu(gbf, R.rows, R.n, gpubf, NULL, err, sizeof err);
    CHECK(ok, "%s: bf16 forwards: %s", k->name, err);
    double eb = err_of(gpub, cpub, n, lm), ebf = err_of(gpubf, cpubf, n, lm), eb32 = err_of(gpub, cpu, n, lm);
    double mb_ = med_of(gpub, cpub, n, lm), mbf_ = med_of(gpubf, cpubf, n, lm);
    CHECK(eb <= BF16_TOL && mb_ <= BF16_MED, "%s: bf16: GPU engine within %g of the CPU bf16 engine, median %g (%.3g, "
          "%.3g)", k->name, BF16_TOL, BF16_MED, eb, mb_);
    CHECK(ebf <= BF16_TOL && mbf_ <= BF16_MED, "%s: bf16, BF16 file: GPU within %g of the CPU bf16 engine, median %g "
          "(%.3g, %.3g)", k->name, BF16_TOL, BF16_MED, ebf, mbf_);
    ok &= !ge_gpu(g32b, R.rows, R.n, again, NULL, err, sizeof err);
    CHECK(ok && !memcmp(again, gpub, sizeof(double) * (size_t)n),
          "%s: bf16: the float32 model in bf16 = the frozen bf16 model, bit for bit", k->name);
    ok &= !ge_gpu(gb, S.rows, S.n, sep, NULL, err, sizeof err);
    double esepb = err_of(sep, gpub, n, lm);
    CHECK(ok && esepb <= BF16_TOL, "%s: bf16: shared-prompt rows = separate sequences (%.3g)", k->name, esepb);
    ok &= !ge_gpu(gb, R.rows, R.n, again, NULL, err, sizeof err);
    CHECK(ok && !memcmp(again, gpub, sizeof(double) * (size_t)n), "%s: bf16: a rerun gives the same bits", k->name);
    CHECK(rows_alone_same(gb, &R, gpub, w), "%s: bf16: each row alone = the row in the batch, bit for bit", k->name);

    /* where the tied LM head lives: the embedding's buffer when their values are the same in the products' dtype */
    if (lm && c.tie_word_embeddings) {
        CHECK(g32->lm_head == g32->embed && g32->embed_dt == PC_F32, "%s: float32: the tied head is the embedding",
              k->name);
        CHECK(gbf->lm_head == gbf->embed && gbf->embed_dt == PC_BF16,
              "%s: BF16 file: the tied head is the embedding, in bf16", k->name);
        CHECK(gb->lm_head != gb->embed && gb->embed_dt == PC_F32,
              "%s: float32 file in bf16: the embedding float32 (its rows), the head bf16, apart", k->name);
    } else if (lm) {
        CHECK(g32->lm_head != g32->embed && gbf->lm_head != gbf->embed, "%s: untied: the head apart", k->name);
    }
    printf("%-15s %-62s fp32 %.1e (separate %.1e) | bf16 %.1e (median %.1e), BF16 file %.1e (%.1e) | bf16 - CPU "
           "fp32: %.1e\n", k->name, k->what, e32, esep, eb, mb_, ebf, mbf_, eb32);
    free(cpu), free(gpu), free(sep), free(again), free(cpub), free(gpub), free(cpubf), free(gpubf);
    ge_rows_free(&R);
done:
    gpu_model_free(g32), gpu_model_free(gb), gpu_model_free(gbf), gpu_model_free(g32b);
    model_free(m32), model_free(mb), model_free(mbf);
}

/* what the CPU refuses, refused with its message; what the GPU cannot run; out of GPU memory and back */
static void test_refusals(void) {
    char err[1024], cerr[1024];
    ModelConfig c;
    const GeCase *mistral = &GE_CASES[4], *reward = &GE_CASES[5];
    CHECK(!strcmp(mistral->fixture, "mistral_gqa") && !strcmp(reward->fixture, "reward_llama"), "the cases' order");
    if (ge_config(mistral, 0, &c, err, sizeof err)) {
        CHECK(0, "config: %s", err);
        return;
    }
    Model *m = ge_model(tmpdir, mistral->name, &c, 0.3, ST_F32, MODEL_FP32, err, sizeof err);
    GpuModel *g = m ? gpu_model_new(&api, m, MODEL_FP32, err, sizeof err) : NULL;
    CHECK(g != NULL, "mistral: %s", err);
    if (!g) {
        model_free(m);
        return;
    }
    double out[64];
    int prompt[30], resp[30], len = 5;
    for (int i = 0; i < 30; i++) prompt[i] = resp[i] = i % c.vocab_size;
    const int *rp[1] = {resp};
    Row row = {3, prompt, 1, &len, rp};
    resp[2] = c.vocab_size; /* outside the vocabulary */
    int rc = ge_gpu(g, &row, 1, out, NULL, err, sizeof err), crc = ge_cpu(m, &row, 1, out, NULL, cerr, sizeof cerr);
    CHECK(rc && crc && !strcmp(err, cerr), "an id outside the vocabulary: the CPU's refusal: '%s' / '%s'", err, cerr);
    resp[2] = 1, row.prompt_len = 16; /* 16 + 5 > the window of 20 */
    rc = ge_gpu(g, &row, 1, out, NULL, err, sizeof err), crc = ge_cpu(m, &row, 1, out, NULL, cerr, sizeof cerr);
    CHECK(rc && crc && !strcmp(err, cerr) && strstr(err, "sliding window"),
          "longer than the sliding window: the CPU's refusal: '%s' / '%s'", err, cerr);
    row.prompt_len = 15; /* 15 + 5 = the window: accepted, equal to the CPU */
    rc = ge_gpu(g, &row, 1, out, NULL, err, sizeof err), crc = ge_cpu(m, &row, 1, out + 1, NULL, cerr, sizeof cerr);
    CHECK(!rc && !crc && fabs(out[0] - out[1]) <= F32_TOL * fmax(1.0, fabs(out[1])),
          "a sequence as long as the window: accepted, the CPU's log-prob");
    row.n_resp = 0;
    rc = ge_gpu(g, &row, 1, out, NULL, err, sizeof err), crc = ge_cpu(m, &row, 1, out, NULL, cerr, sizeof cerr);
    CHECK(rc && crc && !strcmp(err, cerr), "a row without responses: the CPU's refusal: '%s'", err);
    rc = gpu_forward_rewards(g, &row, 1, out, err, sizeof err);
    CHECK(rc && strstr(err, "reward model"), "rewards of a causal LM refused: %s", err);

    /* out of GPU memory: a batch larger than the device is refused with the sizes; the model stays usable */
    GeRows small, big;
    ge_rows(&small, &c, 5, 3, 8, 6, 3);
    ge_rows(&big, &c, 6, 12, 10, 9, 4);
    double a[64 * 8], b[64 * 8], d[64 * 8];
    rc = ge_gpu(g, small.rows, small.n, a, NULL, err, sizeof err);
    size_t have = gpu_model_activation_bytes(g);
    mock_set_capacity(have);
    int rcb = ge_gpu(g, big.rows, big.n, b, NULL, err, sizeof err);
    mock_set_capacity((size_t)16 << 30);
    CHECK(!rc && rcb && strstr(err, "out of GPU memory") && strstr(err, "bytes") && strstr(err, "free") &&
          strstr(err, "activations"), "a batch larger than the device: refused with the sizes: %s", err);
    CHECK(gpu_model_activation_bytes(g) == 0, "the refused batch holds no activations");
    rcb = ge_gpu(g, big.rows, big.n, b, NULL, err, sizeof err) || ge_cpu(m, big.rows, big.n, d, NULL, err, sizeof err);
    int nb = ge_n_resp(big.rows, big.n);
    CHECK(!rcb && ge_rel(b, d, nb, 1.0) <= F32_TOL, "after a refusal the model runs: %s", rcb ? err : "");
    size_t grown = gpu_model_activation_bytes(g);
    double again[64 * 8];
    rc = ge_gpu(g, small.rows, small.n, again, NULL, err, sizeof err);
    CHECK(!rc && grown > have && gpu_model_activation_bytes(g) == grown &&
          !memcmp(a, again, sizeof(double) * (size_t)ge_n_resp(small.rows, small.n)),
          "a smaller batch reuses the larger activations (%zu bytes, %zu before), the same bits", grown, have);
    mock_set_capacity(gpu_model_weight_bytes(g) / 2);
    GpuModel *none = gpu_model_new(&api, m, MODEL_FP32, err, sizeof err);
    mock_set_capacity((size_t)16 << 30);
    CHECK(!none && strstr(err, "out of GPU memory") && strstr(err, "weights"), "weights larger than the device: %s",
          err);
    ge_rows_free(&small), ge_rows_free(&big);
    gpu_model_free(g), model_free(m);

    /* a reward model: no log-probs */
    if (ge_config(reward, 0, &c, err, sizeof err)) {
        CHECK(0, "config: %s", err);
        return;
    }
    m = ge_model(tmpdir, reward->name, &c, 0.3, ST_F32, MODEL_FP32, err, sizeof err);
    g = m ? gpu_model_new(&api, m, MODEL_FP32, err, sizeof err) : NULL;
    len = 3, row.prompt_len = 2, row.n_resp = 1;
    rc = g ? gpu_forward_logps(g, &row, 1, out, NULL, err, sizeof err) : 0;
    CHECK(g && rc && strstr(err, "causal LM"), "log-probs of a reward model refused: %s", err);
    gpu_model_free(g), model_free(m);

    /* the fixtures' own head sizes (8, 16): the GPU's attention runs 64 and 128 */
    if (ge_config(&GE_CASES[0], 1, &c, err, sizeof err)) {
        CHECK(0, "config: %s", err);
        return;
    }
    m = model_new(&c, 1, err, sizeof err);
    g = m ? gpu_model_new(&api, m, MODEL_FP32, err, sizeof err) : NULL;
    CHECK(m && !g && strstr(err, "head_dim 8") && strstr(err, "64 and 128"), "head_dim 8 refused: %s", err);
    model_free(m);
}

int main(void) {
    setenv("PPA_BF16", "builtin", 0); /* the CPU's bf16 products: the built-in kernel where oneDNN cannot run */
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_gpu_engine_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    api = ge_linked_api();
    char err[512];
    CHECK(api.pc_init(0, err, sizeof err) == 0, "the stand-in starts: %s", err);
    printf("%-15s %-62s errors against the CPU engine (relative)\n", "case", "");
    for (int i = 0; i < GE_N_CASES; i++) test_case(&GE_CASES[i]);
    test_refusals();
    api.pc_shutdown();
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_gpu_engine");
}
