/* cmd_bench.c: `ppa bench loss`: forward + backward of an objective over many
 * random lists with every thread, median of repeated runs. bench/run_loss.sh
 * runs it next to the PyTorch script for the ratio. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli/commands.h"
#include "cli/objective_opts.h"
#include "core/common.h"
#include "core/rng.h"
#include "core/timer.h"
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

static int bench_loss(int argc, char **argv) {
    enum { OPT_HELP = 1, OPT_LISTS, OPT_SIZE, OPT_REPEAT, OPT_THREADS, OPT_SEED, OPT_JSON };
    struct option opts[16 + OBJ_OPT_COUNT] = {
        {"help", no_argument, NULL, OPT_HELP},          {"lists", required_argument, NULL, OPT_LISTS},
        {"size", required_argument, NULL, OPT_SIZE},    {"repeat", required_argument, NULL, OPT_REPEAT},
        {"threads", required_argument, NULL, OPT_THREADS}, {"seed", required_argument, NULL, OPT_SEED},
        {"json", no_argument, NULL, OPT_JSON},
    };
    objective_opts_append(opts, 7);
    int B = 10000, K = 8, repeat = 5, threads = 0, json = 0, c;
    unsigned long long seed = 1234;
    PpaObjective obj = PPA_N_OBJECTIVES;
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == OBJ_OPT_BASE && !strcmp(optarg, "all")) continue; /* all objectives */
        if (objective_opts_handle(c, optarg, &obj, &o)) continue;
        switch (c) {
        case OPT_HELP: printf("%s%s", HELP, OBJECTIVE_OPTS_HELP); return 0;
        case OPT_LISTS: B = atoi(optarg); break;
        case OPT_SIZE: K = atoi(optarg); break;
        case OPT_REPEAT: repeat = atoi(optarg); break;
        case OPT_THREADS: threads = atoi(optarg); break;
        case OPT_SEED: seed = strtoull(optarg, NULL, 10); break;
        case OPT_JSON: json = 1; break;
        default: ppa_die(2, "bench loss: see 'ppa bench loss --help'");
        }
    }
    if (B < 1 || K < 2 || repeat < 1 || threads < 0) ppa_die(2, "bench loss: need --lists >= 1, --size >= 2, --repeat >= 1");
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
    rng_seed(&rng, seed);
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
    enum { OPT_HELP = 1, OPT_TOK, OPT_TEXT, OPT_REPEAT, OPT_JSON };
    static const struct option opts[] = {
        {"help", no_argument, NULL, OPT_HELP},     {"tokenizer", required_argument, NULL, OPT_TOK},
        {"text", required_argument, NULL, OPT_TEXT}, {"repeat", required_argument, NULL, OPT_REPEAT},
        {"json", no_argument, NULL, OPT_JSON},     {0},
    };
    const char *tpath = NULL, *xpath = NULL;
    int repeat = 5, json = 0, c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_HELP: fputs(TOKENIZE_HELP, stdout); return 0;
        case OPT_TOK: tpath = optarg; break;
        case OPT_TEXT: xpath = optarg; break;
        case OPT_REPEAT: repeat = atoi(optarg); break;
        case OPT_JSON: json = 1; break;
        default: ppa_die(2, "bench tokenize: see 'ppa bench tokenize --help'");
        }
    }
    if (!tpath || !xpath || repeat < 1) ppa_die(2, "bench tokenize: --tokenizer and --text are required");
    char err[1024];
    Tokenizer *tok = tokenizer_load(tpath, err, sizeof err);
    if (!tok) ppa_die(2, "%s", err);
    FILE *f = fopen(xpath, "rb");
    if (!f) ppa_die(2, "bench tokenize: cannot open %s: %m", xpath);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = xmalloc((size_t)size + 1);
    if (size < 0 || fread(text, 1, (size_t)size, f) != (size_t)size) ppa_die(2, "bench tokenize: cannot read %s", xpath);
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

int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "loss")) return bench_loss(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "tokenize")) return bench_tokenize(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))) {
        printf("usage: ppa bench loss|tokenize [options]     (see 'ppa bench loss --help')\n");
        return 0;
    }
    ppa_die(2, "bench: expected a benchmark name: 'ppa bench loss' or 'ppa bench tokenize'");
}
