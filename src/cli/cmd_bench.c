/* cmd_bench.c: `ppa bench loss`: forward + backward of an objective over many
 * random lists with every thread, median of repeated runs. bench/run_loss.sh
 * runs it next to the PyTorch script for the ratio. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli/commands.h"
#include "cli/load.h"
#include "cli/objective_flags.h"
#include "device/device.h"
#include "core/common.h"
#include "core/rng.h"
#include "core/text.h"
#include "core/timer.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "model/model.h"
#include "model/lora.h"
#include "options/argv.h"
#include "optim/optim.h"
#include "tokenizer/tokenizer.h"

static const char HELP[] =
    "usage: ppa bench loss [--lists N] [--size K] [--objective NAME|all] [--repeat R]\n"
    "                      [--threads T] [--seed S] [--json] [objective options]\n"
    "\n"
    "Times ppa_loss_batch (forward + backward) over N random lists of K items\n"
    "(scores ~ N(0,1), labels ~ U(0,1), float32) with T threads: three warm-up runs,\n"
    "then the median of R runs. Defaults: 10000 lists of 8, all objectives, R = 5,\n"
    "every available thread. --json prints one object per objective.\n"
    "\n";

static const char *kernel_name(void) {
#ifdef __AVX512F__
    return "f64x8 lanes, AVX-512";
#elif defined(__AVX2__)
    return "f64x8 lanes, AVX2";
#else
    return "f64x8 lanes, generic vectors";
#endif
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double time_objective(PpaObjective obj, const PpaLossOptions *o, int B, int K, const float *s,
                             const float *psi, float *grad, int repeat, double *mean_loss) {
    double *ms = xmalloc(sizeof(double) * (size_t)repeat);
    for (int r = 0; r < 3; r++) /* warm-up: threads, caches, clocks */
        ppa_loss_batch(obj, o, B, K, s, psi, NULL, NULL, grad, mean_loss, NULL);
    for (int r = 0; r < repeat; r++) {
        double t0 = timer_now();
        ppa_loss_batch(obj, o, B, K, s, psi, NULL, NULL, grad, mean_loss, NULL);
        ms[r] = 1e3 * (timer_now() - t0);
    }
    qsort(ms, (size_t)repeat, sizeof(double), cmp_double);
    double med = repeat % 2 ? ms[repeat / 2] : 0.5 * (ms[repeat / 2 - 1] + ms[repeat / 2]);
    free(ms);
    return med;
}

/* a whole-number value of a bench flag, or death naming it */
int bench_int_value(const char *who, const char *flag, const char *v, long lo) {
    long x;
    char err[256];
    if (argv_long(flag, v, lo, INT_MAX, &x, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
    return (int)x;
}

static int bench_loss(int argc, char **argv) {
    enum { OPT_LISTS = 1, OPT_SIZE, OPT_REPEAT, OPT_THREADS, OPT_SEED, OPT_JSON };
    struct option opts[7 + OBJECTIVE_OPT_COUNT] = {
        {"lists", required_argument, NULL, OPT_LISTS},  {"size", required_argument, NULL, OPT_SIZE},
        {"repeat", required_argument, NULL, OPT_REPEAT}, {"threads", required_argument, NULL, OPT_THREADS},
        {"seed", required_argument, NULL, OPT_SEED},    {"json", no_argument, NULL, OPT_JSON},
    };
    objective_flags_append(opts, 6);
    int B = 10000, K = 8, repeat = 5, threads = 0, json = 0;
    long seed = 1234;
    PpaObjective obj = PPA_N_OBJECTIVES;
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    const char *v, *who = "bench loss";
    char err[512];
    ArgvParser p;
    argv_begin(&p, who, opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        if (c == OBJ_FLAG_BASE && !strcmp(v, "all")) continue; /* all objectives */
        if (objective_flags_handle(c, v, &obj, &o)) continue;
        switch (c) {
        case ARGV_HELP: fputs(HELP, stdout), objective_opts_help(stdout); return 0;
        case OPT_LISTS: B = bench_int_value(who, "--lists", v, 1); break;
        case OPT_SIZE: K = bench_int_value(who, "--size", v, 2); break;
        case OPT_REPEAT: repeat = bench_int_value(who, "--repeat", v, 1); break;
        case OPT_THREADS: threads = bench_int_value(who, "--threads", v, 0); break;
        case OPT_SEED:
            if (argv_long("--seed", v, 0, LONG_MAX, &seed, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
            break;
        case OPT_JSON: json = 1; break;
        default: ppa_die(2, "%s: %s", who, err);
        }
    }
    int all = obj == PPA_N_OBJECTIVES;
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
    threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    float *s = xmalloc(sizeof(float) * (size_t)B * K), *psi = xmalloc(sizeof(float) * (size_t)B * K);
    float *grad = xmalloc(sizeof(float) * (size_t)B * K);
    PpaRng rng;
    rng_seed(&rng, (unsigned long long)seed);
    for (size_t i = 0; i < (size_t)B * K; i++) {
        s[i] = (float)rng_normal(&rng);
        psi[i] = (float)rng_uniform(&rng);
    }
    if (!json)
        printf("ppa bench loss: %d lists of %d, %d thread%s, %s, median of %d\n%-16s %10s %14s %12s\n", B, K,
               threads, threads == 1 ? "" : "s", kernel_name(), repeat, "objective", "ms", "lists/s", "mean loss");
    for (int k = 0; k < PPA_N_OBJECTIVES; k++) {
        if (!all && k != (int)obj) continue;
        double loss, ms = time_objective((PpaObjective)k, &o, B, K, s, psi, grad, repeat, &loss);
        const char *name = ppa_objective_name((PpaObjective)k);
        if (json)
            printf("{\"objective\": \"%s\", \"lists\": %d, \"size\": %d, \"ms\": %.4f, \"impl\": \"ppa\", "
                   "\"threads\": %d, \"kernel\": \"%s\", \"sinkhorn_tol\": %g, \"mean_loss\": %.9g}\n",
                   name, B, K, ms, threads, kernel_name(), o.sinkhorn_tol, loss);
        else
            printf("%-16s %10.3f %14.0f %12.6f\n", name, ms, B / (ms * 1e-3), loss);
        fflush(stdout);
    }
    free(s);
    free(psi);
    free(grad);
    return 0;
}

static const char TOKENIZE_HELP[] =
    "usage: ppa bench tokenize --tokenizer FILE|DIR --text FILE [--repeat R] [--json]\n"
    "\n"
    "Encodes each non-empty line of FILE (with the post-processor) on one thread:\n"
    "a first pass with a cold piece cache, then the median of R passes (default 5).\n"
    "Prints MB/s. bench/run_tokenize.sh runs it next to the reference encoder.\n";

/* Encodes every non-empty line (without its newline, with the
 * post-processor, as bench/bench_tokenize_ref.cjs --chunk line does);
 * returns the seconds, the tokens and the bytes encoded. */
static double tokenize_pass(Tokenizer *tok, const char *text, size_t len, long *tokens, long *bytes) {
    char err[256];
    double t0 = timer_now();
    *tokens = *bytes = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (end > at) {
            int *ids;
            long n = tokenizer_encode(tok, text + at, end - at, 1, &ids, err, sizeof err);
            if (n < 0) ppa_die(2, "bench tokenize: %s", err);
            *tokens += n;
            *bytes += (long)(end - at);
            free(ids);
        }
        at = end + 1;
    }
    return timer_now() - t0;
}

static int bench_tokenize(int argc, char **argv) {
    enum { OPT_TOK = 1, OPT_TEXT, OPT_REPEAT, OPT_JSON };
    static const struct option opts[] = {
        {"tokenizer", required_argument, NULL, OPT_TOK}, {"text", required_argument, NULL, OPT_TEXT},
        {"repeat", required_argument, NULL, OPT_REPEAT}, {"json", no_argument, NULL, OPT_JSON}, {0},
    };
    const char *tpath = NULL, *xpath = NULL, *v, *who = "bench tokenize";
    int repeat = 5, json = 0;
    char err[1024];
    ArgvParser p;
    argv_begin(&p, who, opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        switch (c) {
        case ARGV_HELP: fputs(TOKENIZE_HELP, stdout); return 0;
        case OPT_TOK: tpath = v; break;
        case OPT_TEXT: xpath = v; break;
        case OPT_REPEAT: repeat = bench_int_value(who, "--repeat", v, 1); break;
        case OPT_JSON: json = 1; break;
        default: ppa_die(2, "%s: %s", who, err);
        }
    }
    if (!tpath || !xpath) ppa_die(2, "bench tokenize: %s is required", !tpath ? "--tokenizer FILE|DIR" : "--text FILE");
    Tokenizer *tok = tokenizer_load(tpath, err, sizeof err);
    if (!tok) ppa_die(2, "%s", err);
    FILE *f = fopen(xpath, "rb");
    if (!f) ppa_die(2, "bench tokenize: cannot open %s: %m", xpath);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = xmalloc((size_t)size + 1);
    if (size < 0 || fread(text, 1, (size_t)size, f) != (size_t)size) ppa_die(1, "bench tokenize: cannot read %s", xpath);
    fclose(f);
    long tokens, bytes;
    double cold = tokenize_pass(tok, text, (size_t)size, &tokens, &bytes);
    double *sec = xmalloc(sizeof(double) * (size_t)repeat);
    for (int r = 0; r < repeat; r++) sec[r] = tokenize_pass(tok, text, (size_t)size, &tokens, &bytes);
    qsort(sec, (size_t)repeat, sizeof(double), cmp_double);
    double warm = sec[repeat / 2], mb = bytes / 1e6;
    if (json)
        printf("{\"impl\": \"ppa\", \"bytes\": %ld, \"tokens\": %ld, \"seconds\": %.6f, \"mb_per_s\": %.3f, "
               "\"cold_mb_per_s\": %.3f}\n", bytes, tokens, warm, mb / warm, mb / cold);
    else
        printf("ppa bench tokenize: %s, %.2f MB, %ld tokens, 1 thread\n  first pass (cold cache) %8.2f MB/s\n"
               "  median of %d passes     %8.2f MB/s  (%.0f tokens/s)\n",
               tokenizer_family(tok), mb, tokens, mb / cold, repeat, mb / warm, tokens / warm);
    free(sec);
    free(text);
    tokenizer_free(tok);
    return 0;
}

static const char STEP_HELP[] =
    "usage: ppa bench step (--model DIR | --config config.json) --k K --prompt-len P --response-len R\n"
    "                      [--steps N] [--mode shared|separate|both] [--adamw] [--threads T] [--json]\n"
    "                      [--precision fp32|bf16] [--gradient-checkpointing] [--low-memory] [--lora-r R]\n"
    "\n"
    "Forward + backward of the policy on one list: a prompt of P tokens and K responses of R tokens,\n"
    "as one shared-prompt row (shared) and as K separate sequences (separate). Median of N steps\n"
    "(default 3) after a warm-up; tokens/s counts K (P + R) tokens in both modes. --adamw adds an\n"
    "AdamW step (memory of a full training step). Random weights for --config.\n"
    "Also reported: the matrix products' share of the step and their rate (GFLOP/s, counting the\n"
    "products actually run, the backward's recomputations included) against the sgemm peak\n"
    "measured first (square n = 2048, same threads); with --precision bf16, oneDNN's bf16 products'\n"
    "share and rate against the bf16 peak measured the same way (attention's products, on ppa's\n"
    "own bf16 kernel, are not counted).\n"
    "--low-memory: the gradients take no memory in the forward and the backward frees each layer's\n"
    "activations as it goes (a lower peak for page faults in every step).\n"
    "--lora-r R trains a LoRA adapter of rank R on all seven linear layers of a frozen base (with\n"
    "--model: the folder's weights, bf16 only with --precision bf16) instead of every parameter.\n";

static long peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

typedef struct {
    double sec, gemm_flops, gemm_sec, bf16_flops, bf16_sec;
} StepTime;

/* one forward + backward (and optionally AdamW) */
static StepTime train_step(Model *m, const Row *rows, int n_rows, AdamW *opt, const Spans *decay) {
    char err[512];
    gemm_stats_reset(1);
    double t0 = timer_now();
    Batch *b = batch_new(m, rows, n_rows, err, sizeof err);
    if (!b) ppa_die(2, "bench step: %s", err);
    int n = batch_n_responses(b);
    double *lp = xmalloc(sizeof(double) * (size_t)n), *g = xmalloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) g[i] = 1.0;
    model_zero_grads(m);
    model_forward(m, b, lp, NULL);
    model_backward(m, b, g);
    if (opt) {
        AdamWConfig ac = {0.9, 0.999, 1e-8, 0.0};
        model_device(m)->adamw_step(opt, model_params(m), model_grads(m), clip_scale(model_device(m)->grad_norm(model_grads(m), model_n_params(m)), 1.0), decay, 0,
                   1e-7, &ac);
        model_bf16_refresh(m); /* part of a bf16 step */
    }
    batch_free(b);
    free(lp), free(g);
    StepTime st = {timer_now() - t0, 0, 0, 0, 0};
    gemm_stats(&st.gemm_flops, &st.gemm_sec);
    gemm_stats_bf16(&st.bf16_flops, &st.bf16_sec);
    gemm_stats_reset(0);
    return st;
}

static int cmp_step(const void *a, const void *b) { return cmp_double(&((const StepTime *)a)->sec, &((const StepTime *)b)->sec); }

/* GFLOP/s of one square n = 2048 product (sgemm, or bf16), median of 3 after a warm-up */
static double product_peak(int in_bf16) {
    int n = 2048;
    size_t nn = (size_t)n * n;
    float *A = xmalloc(sizeof(float) * nn), *B = xmalloc(sizeof(float) * nn), *C = xmalloc(sizeof(float) * nn);
    bf16 *Ab = xmalloc(sizeof(bf16) * nn), *Bb = xmalloc(sizeof(bf16) * nn);
    for (size_t i = 0; i < nn; i++) A[i] = (float)(i % 13) * 0.01f, B[i] = (float)(i % 7) * 0.02f;
    bf16_from_f32(Ab, A, nn), bf16_from_f32(Bb, B, nn);
    double t[4];
    for (int r = 0; r < 4; r++) { /* the first is the warm-up */
        double t0 = timer_now();
        if (in_bf16)
            gemm_bf16(0, 0, n, n, n, Ab, n, Bb, n, 0.0f, C, n);
        else
            gemm(0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
        t[r] = timer_now() - t0;
    }
    qsort(t + 1, 3, sizeof(double), cmp_double);
    free(A), free(B), free(C), free(Ab), free(Bb);
    return 2.0 * n * n * (double)n / t[2] / 1e9;
}

static Model *step_model(const char *model, const char *config, int in_bf16, int gc, int low, int lora_r) {
    char err[4096];
    Model *m;
    if (model) {
        m = model_load_as(model, in_bf16 ? MODEL_BF16 : MODEL_FP32, lora_r > 0, err, sizeof err); /* a base is frozen */
        if (m) load_need_head(m, model, 0, "bench step");
    } else {
        ModelConfig cfg;
        if (model_config_load(&cfg, config, err, sizeof err)) ppa_die(2, "%s", err);
        m = model_new(&cfg, 1, err, sizeof err);
        if (m && in_bf16 && model_set_precision(m, MODEL_BF16, err, sizeof err)) model_free(m), m = NULL;
    }
    if (!m) ppa_die(2, "bench step: %s", err);
    LoraSpec ls = {lora_r, 2.0 * lora_r, 0.0, 0, LORA_ALL_TARGETS, 0};
    if (lora_r > 0 && model_lora_new(m, &ls, 1, err, sizeof err)) ppa_die(2, "bench step: %s", err);
    model_gradient_checkpointing(m, gc);
    model_low_memory(m, low);
    model_grads(m); /* a model that trains: batches keep what the backward needs */
    return m;
}

typedef struct {
    double sgemm, bf16; /* peaks, GFLOP/s; bf16 0 in fp32 runs */
} Peaks;

static void step_report(const char *name, const Model *m, int K, int P, int R, const StepTime *st, Peaks pk,
                        int adamw, int gc, int low, int json) {
    long tokens = (long)K * (P + R);
    int bf = model_precision(m) == MODEL_BF16;
    double gf = st->gemm_flops / st->gemm_sec / 1e9, bgf = bf ? st->bf16_flops / st->bf16_sec / 1e9 : 0;
    if (json)
        printf("{\"impl\": \"ppa\", \"mode\": \"%s\", \"precision\": \"%s\", \"k\": %d, \"prompt_len\": %d, "
               "\"response_len\": %d, \"tokens\": %ld, \"ms\": %.1f, \"tokens_per_s\": %.1f, \"gflops\": %.1f, "
               "\"gemm_share\": %.3f, \"gemm_gflops\": %.1f, \"sgemm_peak_gflops\": %.1f, \"bf16_share\": %.3f, "
               "\"bf16_gflops\": %.1f, \"bf16_peak_gflops\": %.1f, \"peak_rss_mb\": %ld, \"params\": %zu, "
               "\"adamw\": %s, \"gradient_checkpointing\": %s, \"low_memory\": %s, \"threads\": %d, \"gemm\": \"%s\", "
               "\"gemm_bf16\": \"%s\", \"gemm_rows\": \"%s\", \"lora_r\": %d}\n",
               name, bf ? "bf16" : "fp32", K, P, R, tokens, 1e3 * st->sec, tokens / st->sec,
               st->gemm_flops / st->sec / 1e9, st->gemm_sec / st->sec, gf, pk.sgemm, st->bf16_sec / st->sec, bgf,
               pk.bf16, peak_rss_mb(), model_n_params(m), adamw ? "true" : "false", gc ? "true" : "false", low ? "true" : "false",
               gemm_threads(), gemm_backend(), bf ? gemm_bf16_backend() : "", gemm_rows_kernel(),
               model_lora(m) ? model_lora(m)->r : 0);
    else {
        printf("ppa bench step (%s, %s%s%s): %zu parameters train, K %d, P %d, R %d: %.1f ms/step, %.0f tokens/s, "
               "peak %ld MB%s\n"
               "  matrix products: %.0f%% of the step at %.0f GFLOP/s (sgemm peak %.0f GFLOP/s)\n",
               name, bf ? "bf16" : "fp32", gc ? ", gradient checkpointing" : "", model_lora(m) ? ", LoRA" : "",
               model_n_params(m), K, P, R,
               1e3 * st->sec, tokens / st->sec, peak_rss_mb(), adamw ? " (with AdamW)" : "",
               100 * st->gemm_sec / st->sec, gf, pk.sgemm);
        if (bf)
            printf("  bf16 products: %.0f%% of the step at %.0f GFLOP/s (%.0f%% of the bf16 peak, %.0f GFLOP/s)\n",
                   100 * st->bf16_sec / st->sec, bgf, 100 * bgf / pk.bf16, pk.bf16);
    }
    fflush(stdout);
}

static int bench_step(int argc, char **argv) {
    enum { O_MODEL = 1, O_CONFIG, O_K, O_P, O_R, O_STEPS, O_MODE, O_ADAMW, O_JSON, O_THREADS, O_PREC, O_GC, O_LOW, O_LORA };
    static const struct option opts[] = {
        {"model", required_argument, NULL, O_MODEL}, {"config", required_argument, NULL, O_CONFIG},
        {"k", required_argument, NULL, O_K}, {"prompt-len", required_argument, NULL, O_P},
        {"response-len", required_argument, NULL, O_R}, {"steps", required_argument, NULL, O_STEPS},
        {"mode", required_argument, NULL, O_MODE}, {"adamw", no_argument, NULL, O_ADAMW},
        {"json", no_argument, NULL, O_JSON}, {"threads", required_argument, NULL, O_THREADS},
        {"precision", required_argument, NULL, O_PREC}, {"gradient-checkpointing", no_argument, NULL, O_GC},
        {"low-memory", no_argument, NULL, O_LOW}, {"lora-r", required_argument, NULL, O_LORA}, {0},
    };
    const char *model = NULL, *config = NULL, *mode = "both", *v, *who = "bench step";
    int K = 8, P = 256, R = 256, steps = 3, adamw = 0, json = 0, threads = 0, use_bf16 = 0, gc = 0, low = 0, lora_r = 0;
    char err[1024];
    ArgvParser p;
    argv_begin(&p, who, opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        switch (c) {
        case ARGV_HELP: fputs(STEP_HELP, stdout); return 0;
        case O_MODEL: model = v; break;
        case O_CONFIG: config = v; break;
        case O_K: K = bench_int_value(who, "--k", v, 1); break;
        case O_P: P = bench_int_value(who, "--prompt-len", v, 1); break;
        case O_R: R = bench_int_value(who, "--response-len", v, 1); break;
        case O_STEPS: steps = bench_int_value(who, "--steps", v, 1); break;
        case O_MODE: mode = v; break;
        case O_ADAMW: adamw = 1; break;
        case O_JSON: json = 1; break;
        case O_THREADS: threads = bench_int_value(who, "--threads", v, 0); break;
        case O_PREC:
            if (strcmp(v, "fp32") && strcmp(v, "bf16"))
                ppa_die(2, "bench step: --precision: cannot use '%s': expected fp32 or bf16", v);
            use_bf16 = !strcmp(v, "bf16");
            break;
        case O_GC: gc = 1; break;
        case O_LOW: low = 1; break;
        case O_LORA: lora_r = bench_int_value(who, "--lora-r", v, 0); break;
        default: ppa_die(2, "%s: %s", who, err);
        }
    }
    if (!model == !config) ppa_die(2, "bench step: give --model DIR or --config config.json (one of them)");
    if (strcmp(mode, "both") && strcmp(mode, "shared") && strcmp(mode, "separate"))
        ppa_die(2, "bench step: --mode: cannot use '%s': expected shared, separate or both", mode);
    if (threads > 0) {
        gemm_set_threads(threads);
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
    }
    if (use_bf16 && gemm_bf16_ready(err, sizeof err)) ppa_die(2, "bench step: %s", err);
    Peaks pk = {product_peak(0), use_bf16 ? product_peak(1) : 0};
    if (!json) printf("matrix products: %s; forward rows: %s\n", gemm_backend(), gemm_rows_kernel());
    if (!json && use_bf16) printf("bf16 products: %s\n", gemm_bf16_backend());
    Model *m = step_model(model, config, use_bf16, gc, low, lora_r);
    const ModelConfig *cfg = model_config(m);
    PpaRng rng;
    rng_seed(&rng, 7);
    int *prompt = xmalloc(sizeof(int) * (size_t)P), *resp = xmalloc(sizeof(int) * (size_t)K * R), *lens = xmalloc(sizeof(int) * (size_t)K);
    const int **rp = xmalloc(sizeof(int *) * (size_t)K);
    for (int i = 0; i < P; i++) prompt[i] = (int)(rng_u64(&rng) % (unsigned)cfg->vocab_size);
    for (int i = 0; i < K * R; i++) resp[i] = (int)(rng_u64(&rng) % (unsigned)cfg->vocab_size);
    for (int k = 0; k < K; k++) lens[k] = R, rp[k] = resp + (size_t)k * R;
    Row shared = {P, prompt, K, lens, rp}, *separate = xmalloc(sizeof(Row) * (size_t)K);
    for (int k = 0; k < K; k++) separate[k] = (Row){P, prompt, 1, lens + k, rp + k};
    AdamW opt = {0};
    Spans decay = {0, NULL};
    if (adamw) adamw_init(&opt, model_n_params(m)), decay = model_decay(m);
    for (int pass = 0; pass < 2; pass++) {
        const char *name = pass ? "separate" : "shared";
        if (strcmp(mode, "both") && strcmp(mode, name)) continue;
        StepTime *st = xmalloc(sizeof(StepTime) * (size_t)steps);
        train_step(m, pass ? separate : &shared, pass ? K : 1, adamw ? &opt : NULL, &decay); /* warm-up */
        for (int s = 0; s < steps; s++) st[s] = train_step(m, pass ? separate : &shared, pass ? K : 1, adamw ? &opt : NULL, &decay);
        qsort(st, (size_t)steps, sizeof(StepTime), cmp_step);
        step_report(name, m, K, P, R, &st[steps / 2], pk, adamw, gc, low, json);
        free(st);
    }
    if (adamw) adamw_free(&opt);
    spans_free(&decay), free(prompt), free(resp), free(lens), free(rp), free(separate);
    model_free(m);
    return 0;
}

static int bench_gemm(int argc, char **argv) {
    enum { O_THREADS = 1, O_REPEAT, O_JSON };
    static const struct option opts[] = {
        {"threads", required_argument, NULL, O_THREADS}, {"repeat", required_argument, NULL, O_REPEAT},
        {"json", no_argument, NULL, O_JSON}, {0},
    };
    int threads = 0, repeat = 5, json = 0;
    const char *v, *who = "bench gemm";
    char err[512];
    ArgvParser p;
    argv_begin(&p, who, opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        switch (c) {
        case ARGV_HELP:
            puts("usage: ppa bench gemm [--threads T] [--repeat N] [--json]\n\n"
                 "sgemm through ppa's backend: square products and the training patterns of a\n"
                 "Qwen2-0.5B-sized layer (2048 tokens), each validated against float64, then timed.");
            return 0;
        case O_THREADS: threads = bench_int_value(who, "--threads", v, 0); break;
        case O_REPEAT: repeat = bench_int_value(who, "--repeat", v, 1); break;
        case O_JSON: json = 1; break;
        default: ppa_die(2, "%s: %s", who, err);
        }
    }
    return gemm_bench(stdout, threads, repeat, json);
}

int cmd_bench(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } BENCHES[] = {{"loss", bench_loss}, {"tokenize", bench_tokenize}, {"step", bench_step}, {"gemm", bench_gemm},
                   {"generate", bench_generate}};
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))) {
        printf("usage: ppa bench loss|tokenize|step|gemm|generate [options]     (see 'ppa bench NAME --help')\n");
        return 0;
    }
    TextClosest near = {0};
    for (size_t i = 0; i < PPA_ARRAY_LEN(BENCHES); i++) {
        if (argc >= 2 && !strcmp(argv[1], BENCHES[i].name)) return BENCHES[i].run(argc - 1, argv + 1);
        if (argc >= 2) text_closest_add(&near, argv[1], BENCHES[i].name);
    }
    if (near.best) ppa_die(2, "bench: unknown benchmark '%s' (did you mean '%s'?)", argv[1], near.best);
    ppa_die(2, "bench: expected a benchmark name: 'ppa bench loss', 'ppa bench tokenize', 'ppa bench step', 'ppa bench "
               "gemm' or 'ppa bench generate'");
}
