/* bench_generate.c: `ppa bench generate`: ppa generate's sampling (eval/generate.h) timed on one loaded model, as
 * bench/gpu_generate.sh times transformers' generate beside it: a warm-up call, then the fastest of R calls, each
 * the whole job (prefill, steps, draws), the model's load and upload outside the clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/common.h"
#include "core/timer.h"
#include "data/prompts.h"
#include "device/cuda.h"
#include "eval/generate.h"
#include "gpu/gpu_model.h"
#include "kernels/gemm.h"
#include "model/decode.h"
#include "model/model.h"
#include "options/argv.h"

static const char HELP[] =
    "usage: ppa bench generate --model DIR --prompts FILE [--max-new-tokens N] [--temperature T]\n"
    "                          [--top-p P] [--top-k K] [-n K] [--max-seqs N] [--repeat R] [--seed S]\n"
    "                          [--device cpu|cuda] [--precision fp32|bf16] [--sampler device|exact] [--json]\n"
    "\n"
    "Times ppa generate's sampling of K responses to each prompt of FILE ({\"prompt_ids\": [...]} lines)\n"
    "on one loaded model: a warm-up call (first use of the kernels, cached algorithms, graphs), then the\n"
    "fastest of R calls (default 2), each the whole job: prefill, decoding steps, draws. No stop id: set\n"
    "the config's eos_token_id to null for responses of exactly N new tokens (default 128). Reports new\n"
    "tokens per second, warm and of the first call. Defaults: temperature 1, top-p 1, top-k 0, K 1, the\n"
    "CPU in fp32; with --device cuda bf16 and the device's sampler.\n";

/* the samples' tokens, the stop token included */
static long tokens_of(const GenSample *s, int n) {
    long t = 0;
    for (int i = 0; i < n; i++) t += s[i].len + s[i].finished;
    return t;
}

int bench_generate(int argc, char **argv) {
    enum {
        O_MODEL = 1, O_PROMPTS, O_NEW, O_T, O_P, O_K, O_N, O_MAXSEQS, O_REPEAT, O_SEED, O_DEVICE, O_PREC, O_SAMPLER,
        O_JSON
    };
    static const struct option opts[] = {
        {"model", required_argument, NULL, O_MODEL},       {"prompts", required_argument, NULL, O_PROMPTS},
        {"max-new-tokens", required_argument, NULL, O_NEW}, {"temperature", required_argument, NULL, O_T},
        {"top-p", required_argument, NULL, O_P},           {"top-k", required_argument, NULL, O_K},
        {"n", required_argument, NULL, O_N},               {"num-samples", required_argument, NULL, O_N},
        {"max-seqs", required_argument, NULL, O_MAXSEQS},
        {"repeat", required_argument, NULL, O_REPEAT},     {"seed", required_argument, NULL, O_SEED},
        {"device", required_argument, NULL, O_DEVICE},     {"precision", required_argument, NULL, O_PREC},
        {"sampler", required_argument, NULL, O_SAMPLER},   {"json", no_argument, NULL, O_JSON},
        {0},
    };
    const char *model = NULL, *prompts = NULL, *v, *who = "bench generate", *device = "cpu", *prec = NULL;
    const char *sampler = NULL;
    int new_tokens = 128, top_k = 0, K = 1, max_seqs = 0, repeat = 2, json = 0;
    double temperature = 1.0, top_p = 1.0;
    long seed = 1;
    char err[4096];
    ArgvParser p;
    argv_begin(&p, who, opts, "n", argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        switch (c) {
        case ARGV_HELP: fputs(HELP, stdout); return 0;
        case O_MODEL: model = v; break;
        case O_PROMPTS: prompts = v; break;
        case O_NEW: new_tokens = bench_int_value(who, "--max-new-tokens", v, 1); break;
        case O_T:
            if (argv_double("--temperature", v, 0, 1e6, &temperature, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
            break;
        case O_P:
            if (argv_double("--top-p", v, 1e-9, 1, &top_p, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
            break;
        case O_K: top_k = bench_int_value(who, "--top-k", v, 0); break;
        case O_N: K = bench_int_value(who, "-n", v, 1); break;
        case O_MAXSEQS: max_seqs = bench_int_value(who, "--max-seqs", v, 0); break;
        case O_REPEAT: repeat = bench_int_value(who, "--repeat", v, 1); break;
        case O_SEED:
            if (argv_long("--seed", v, 0, (1L << 62), &seed, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
            break;
        case O_DEVICE: device = v; break;
        case O_PREC: prec = v; break;
        case O_SAMPLER: sampler = v; break;
        case O_JSON: json = 1; break;
        default: ppa_die(2, "%s: %s", who, err);
        }
    }
    if (!model || !prompts) ppa_die(2, "%s: --model DIR and --prompts FILE are required", who);
    if (strcmp(device, "cpu") && strcmp(device, "cuda"))
        ppa_die(2, "%s: --device: expected cpu or cuda, found '%s'", who, device);
    int gpu = !strcmp(device, "cuda");
    if (!prec) prec = gpu ? "bf16" : "fp32";
    if (strcmp(prec, "fp32") && strcmp(prec, "bf16"))
        ppa_die(2, "%s: --precision: expected fp32 or bf16, found '%s'", who, prec);
    if (!sampler) sampler = gpu ? "device" : "exact";
    if (strcmp(sampler, "device") && strcmp(sampler, "exact"))
        ppa_die(2, "%s: --sampler: expected device or exact, found '%s'", who, sampler);
    if (!gpu && !strcmp(sampler, "device")) ppa_die(2, "%s: --sampler device draws on the GPU: --device cuda", who);
    gemm_init();
    if (gpu && device_cuda_open(-1, err, sizeof err)) ppa_die(2, "%s: --device cuda: %s", who, err);
    if (gpu && !strcmp(prec, "bf16")) setenv("PPA_BF16", "builtin", 0); /* the host copy is only uploaded */
    Model *m = model_load_as(model, !strcmp(prec, "bf16") ? MODEL_BF16 : MODEL_FP32, 1, err, sizeof err);
    if (!m) ppa_die(2, "%s: %s", who, err);
    if (gpu) {
        GpuModel *g = gpu_model_new(device_cuda_api(), m, model_precision(m), err, sizeof err);
        if (!g) ppa_die(1, "%s: --device cuda: %s", who, err);
        ForwardEngine e = gpu_model_engine(g, device_cuda_name());
        model_set_forward_engine(m, &e);
    }
    const ModelConfig *c = model_config(m);
    PromptSet ps = {0};
    PromptOptions po = {.vocab_size = c->vocab_size, .max_len = decoder_model_max_len(c), .model_dir = model};
    if (prompts_read(&ps, prompts, &po, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
    if (ps.n < 1) ppa_die(2, "%s: %s holds no prompt", who, prompts);
    GenPrompt *gp = xmalloc(sizeof(GenPrompt) * (size_t)ps.n);
    for (int i = 0; i < ps.n; i++)
        gp[i] = (GenPrompt){.ids = ps.rows[i].ids, .len = ps.rows[i].len, .stream = (uint64_t)i};
    int stop[8], n_stop = 0;
    for (int i = 0; i < c->n_eos && n_stop < 8; i++) stop[n_stop++] = c->eos_token_ids[i];
    GenOptions go = {.max_new_tokens = new_tokens, .temperature = temperature, .top_p = top_p, .top_k = top_k,
                     .n_samples = K, .seed = (uint64_t)seed, .stop = stop, .n_stop = n_stop,
                     .device_sampler = !strcmp(sampler, "device"), .max_seqs = max_seqs};
    int N = ps.n * K;
    GenSample *s = xmalloc(sizeof(GenSample) * (size_t)N);
    double first = 0, best = 0;
    long tokens = 0;
    for (int r = 0; r <= repeat; r++) { /* call 0 warms up */
        double t0 = timer_now();
        if (generate(m, gp, ps.n, &go, s, err, sizeof err)) ppa_die(1, "%s: %s", who, err);
        double t = timer_now() - t0;
        long tk = tokens_of(s, N);
        if (r && tk != tokens)
            ppa_die(1, "%s: call %d made %ld tokens, the warm-up %ld: not the same job", who, r, tk, tokens);
        tokens = tk;
        generate_free(s, N);
        if (!r) first = t;
        else if (r == 1 || t < best) best = t;
    }
    const char *dev = gpu ? device_cuda_name() : "cpu";
    if (json)
        printf("{\"bench\": \"generate\", \"prompts\": %d, \"samples\": %d, \"new_tokens\": %ld, "
               "\"max_new_tokens\": %d, \"s\": %.4f, \"new_tokens_per_s\": %.1f, \"s_first_call\": %.4f, "
               "\"first_call_new_tokens_per_s\": %.1f, "
               "\"repeat\": %d, \"sampler\": \"%s\", \"precision\": \"%s\", \"device\": \"%s\"}\n",
               ps.n, N, tokens, new_tokens, best, tokens / best, first, tokens / first, repeat, sampler, prec, dev);
    else
        printf("ppa bench generate: %d prompts x %d, %ld new tokens: %.3f s warm (fastest of %d), %.1f new tokens/s; "
               "first call %.3f s (%.1f tokens/s); sampler %s, %s, %s\n",
               ps.n, K, tokens, best, repeat, tokens / best, first, tokens / first, sampler, prec, dev);
    free(s), free(gp);
    prompts_free(&ps);
    model_free(m);
    return 0;
}
