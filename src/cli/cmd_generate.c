/* cmd_generate.c: `ppa generate`: K responses per prompt of a JSON Lines
 * file, written as JSON Lines in ppa's native schema (prompt fields as given
 * plus "responses", "finished", "n_tokens"; pre-tokenized prompts get
 * "response_ids"), ready to be scored into a training file. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli/commands.h"
#include "core/common.h"
#include "core/timer.h"
#include "data/prompts.h"
#include "eval/generate.h"
#include "io/atomic.h"
#include "model/decode.h"
#include "model/gemm.h"
#include "model/llama.h"

/* One call of generate() holds at most this many sequences, and its key/value
 * cache and logits at most this many bytes (one prompt always fits). */
#define GROUP_SEQS 256
#define GROUP_BYTES (1UL << 30)

static const char HELP[] =
    "usage: ppa generate --model DIR --prompts FILE.jsonl [--out FILE] [--max-new-tokens N]\n"
    "                    [--temperature T] [--top-p P] [-n K | --n K | --num-samples K] [--seed S]\n"
    "                    [--template NAME] [--skip-invalid] [--threads N]\n"
    "\n"
    "K responses per prompt, one output line per prompt in input order (stdout, or --out written\n"
    "atomically): the prompt fields as given (id, prompt / messages / system / template), then\n"
    "\"responses\": [text, ...], \"finished\": [true if it ended on EOS / end of turn, ...] and\n"
    "\"n_tokens\": [generated tokens, the stop token included, ...]. Pre-tokenized prompts\n"
    "(\"prompt_ids\") get \"response_ids\" instead of \"responses\" (the stop token appended when finished).\n"
    "\n"
    "  --max-new-tokens N  at most N new tokens per response (default 128); the model's maximum\n"
    "                      length also ends a response\n"
    "  --temperature T     0 (default): greedy; > 0: sample from softmax(logits / T)\n"
    "  --top-p P           nucleus sampling: the smallest set of likeliest tokens with mass >= P (default 1)\n"
    "  -n, --n K           responses per prompt (default 1)\n"
    "  --seed S            sample j of the prompt on line i draws from a stream fixed by (S, i, j) (default 42)\n"
    "  --template NAME     chatml, llama3, mistral, zephyr, llama2, none (default: detected)\n"
    "  --skip-invalid      report bad prompt lines on stderr and go on\n"
    "  --threads N         threads for matrix products and loops (default: all cores)\n";

typedef struct {
    const char *model_dir, *prompts, *out, *template_name;
    int max_new_tokens, n, skip_invalid, threads;
    double temperature, top_p;
    uint64_t seed;
} GenArgs;

static long parse_long(const char *opt, const char *v, long lo, long hi) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) ppa_die(2, "generate: --%s must be an integer in [%ld, %ld], got '%s'", opt, lo, hi, v);
    return x;
}

static double parse_double(const char *opt, const char *v) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x)) ppa_die(2, "generate: --%s must be a finite number, got '%s'", opt, v);
    return x;
}

static void parse_args(GenArgs *a, int argc, char **argv) {
    enum { OPT_HELP = 1, OPT_MODEL, OPT_PROMPTS, OPT_OUT, OPT_MAXNEW, OPT_TEMP, OPT_TOPP, OPT_SEED, OPT_TEMPLATE, OPT_SKIP, OPT_THREADS };
    static const struct option opts[] = {
        {"help", no_argument, NULL, OPT_HELP},
        {"model", required_argument, NULL, OPT_MODEL},
        {"prompts", required_argument, NULL, OPT_PROMPTS},
        {"out", required_argument, NULL, OPT_OUT},
        {"max-new-tokens", required_argument, NULL, OPT_MAXNEW},
        {"temperature", required_argument, NULL, OPT_TEMP},
        {"top-p", required_argument, NULL, OPT_TOPP},
        {"n", required_argument, NULL, 'n'},
        {"num-samples", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"template", required_argument, NULL, OPT_TEMPLATE},
        {"skip-invalid", no_argument, NULL, OPT_SKIP},
        {"threads", required_argument, NULL, OPT_THREADS},
        {0},
    };
    *a = (GenArgs){.max_new_tokens = 128, .n = 1, .top_p = 1.0, .seed = 42};
    int c;
    while ((c = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
        switch (c) {
        case OPT_HELP: fputs(HELP, stdout); exit(0);
        case OPT_MODEL: a->model_dir = optarg; break;
        case OPT_PROMPTS: a->prompts = optarg; break;
        case OPT_OUT: a->out = optarg; break;
        case OPT_MAXNEW: a->max_new_tokens = (int)parse_long("max-new-tokens", optarg, 1, 1 << 24); break;
        case OPT_TEMP: a->temperature = parse_double("temperature", optarg); break;
        case OPT_TOPP: a->top_p = parse_double("top-p", optarg); break;
        case 'n': a->n = (int)parse_long("n", optarg, 1, 1 << 16); break;
        case OPT_SEED: a->seed = (uint64_t)parse_long("seed", optarg, 0, INT64_MAX); break;
        case OPT_TEMPLATE: a->template_name = optarg; break;
        case OPT_SKIP: a->skip_invalid = 1; break;
        case OPT_THREADS: a->threads = (int)parse_long("threads", optarg, 0, 4096); break;
        default: ppa_die(2, "generate: see 'ppa generate --help'");
        }
    }
    if (optind < argc) ppa_die(2, "generate: unexpected argument '%s' (see 'ppa generate --help')", argv[optind]);
    if (!a->model_dir || !a->prompts) ppa_die(2, "generate: --model and --prompts are required");
    if (a->temperature < 0) ppa_die(2, "generate: --temperature must be >= 0");
    if (!(a->top_p > 0 && a->top_p <= 1)) ppa_die(2, "generate: --top-p must be in (0, 1]");
}

/* the template's end-of-turn token, if the tokenizer has it */
static int end_of_turn(const Tokenizer *t, TemplateKind k) {
    const char *s = k == TEMPLATE_CHATML ? "<|im_end|>" : k == TEMPLATE_LLAMA3 ? "<|eot_id|>" : k == TEMPLATE_NONE ? NULL : "</s>";
    return t && s ? tokenizer_token_id(t, s) : -1;
}

typedef struct {
    const GenArgs *a;
    Model *model;
    Tokenizer *tok;
    PromptSet ps;
    int stop[MODEL_MAX_EOS + 1], n_stop;
    long tokens, responses; /* written so far */
    int done;               /* prompts written so far */
    long sampled;           /* tokens sampled so far (progress) */
    double t0, shown;       /* start, last progress line */
} Run;

/* the progress line on a terminal, at most twice a second */
static void progress(void *ctx, int n) {
    Run *r = ctx;
    r->sampled += n;
    double now = timer_now();
    if (now - r->shown < 0.5 && r->done < r->ps.n) return;
    r->shown = now;
    fprintf(stderr, "\rppa generate: %d/%d prompts done, %ld tokens, %.1f tokens/s ", r->done, r->ps.n, r->sampled,
            now > r->t0 ? r->sampled / (now - r->t0) : 0.0);
}

/* s as a JSON string: UTF-8 as is, control characters (NUL too) escaped */
static void put_json_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') fputc('\\', f), fputc(ch, f);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch == '\t') fputs("\\t", f);
        else if (ch == '\r') fputs("\\r", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void put_ids(FILE *f, const int *ids, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, i ? ", %d" : "%d", ids[i]);
    fputc(']', f);
}

/* One output line: the echoed prompt fields, then the K samples. */
static void write_line(FILE *f, const Run *r, const PromptRow *p, const GenSample *s, int K) {
    char *echo = cJSON_PrintUnformatted(p->echo);
    size_t n = strlen(echo);
    fwrite(echo, 1, n - 1, f); /* without its closing brace */
    fputs(n > 2 ? ", " : "", f);
    free(echo);
    if (p->pretokenized) {
        fputs("\"response_ids\": [", f);
        for (int j = 0; j < K; j++) fputs(j ? ", " : "", f), put_ids(f, s[j].ids, s[j].len + s[j].finished);
    } else {
        fputs("\"responses\": [", f);
        for (int j = 0; j < K; j++) {
            size_t len;
            char *text = generate_decode_continuation(r->tok, p->ids, p->len, s[j].ids, s[j].len, &len);
            fputs(j ? ", " : "", f);
            put_json_string(f, text, len);
            free(text);
        }
    }
    fputs("], \"finished\": [", f);
    for (int j = 0; j < K; j++) fprintf(f, "%s%s", j ? ", " : "", s[j].finished ? "true" : "false");
    fputs("], \"n_tokens\": [", f);
    for (int j = 0; j < K; j++) fprintf(f, j ? ", %d" : "%d", s[j].len + s[j].finished);
    fputs("]}\n", f);
}

/* prompts [p0, end) that one generate() call takes from p0 */
static int group_end(const Run *r, int p0) {
    const ModelConfig *c = model_config(r->model);
    int K = r->a->n, max_len = 0, e = p0;
    while (e < r->ps.n) {
        int need = generate_max_len(c, r->ps.rows[e].len, r->a->max_new_tokens);
        int ml = need > max_len ? need : max_len, seqs = (e - p0 + 1) * K;
        size_t bytes = generate_cache_bytes(c, seqs, ml) + sizeof(float) * (size_t)seqs * c->vocab_size;
        if (e > p0 && (seqs > GROUP_SEQS || bytes > GROUP_BYTES)) break;
        max_len = ml, e++;
    }
    return e;
}

static int write_all(FILE *f, const void *ctx) {
    Run *r = (Run *)ctx;
    const GenArgs *a = r->a;
    int K = a->n, tty = isatty(2);
    GenOptions o = {a->max_new_tokens, a->temperature, a->top_p, K, a->seed, r->stop, r->n_stop, tty ? progress : NULL, r};
    r->t0 = timer_now();
    for (int p0 = 0; p0 < r->ps.n;) {
        int p1 = group_end(r, p0), np = p1 - p0;
        GenPrompt *gp = xmalloc(sizeof(GenPrompt) * (size_t)np);
        for (int i = 0; i < np; i++) { /* the stream of a prompt is its line: skipping other lines changes nothing */
            const PromptRow *p = &r->ps.rows[p0 + i];
            gp[i] = (GenPrompt){p->ids, p->len, (uint64_t)p->line};
        }
        GenSample *s = xmalloc(sizeof(GenSample) * (size_t)np * K);
        char err[1024];
        if (generate(r->model, gp, np, &o, s, err, sizeof err)) ppa_die(1, "generate: %s", err);
        for (int i = 0; i < np; i++) {
            write_line(f, r, &r->ps.rows[p0 + i], s + (size_t)i * K, K);
            for (int j = 0; j < K; j++) r->tokens += s[i * K + j].len + s[i * K + j].finished;
        }
        r->responses += (long)np * K;
        generate_free(s, np * K);
        free(s), free(gp);
        p0 = r->done = p1;
        if (tty) progress(r, 0);
        if (ferror(f)) return -1;
    }
    if (tty && r->ps.n) fputc('\n', stderr);
    return ferror(f) ? -1 : 0;
}

static void load(Run *r, const GenArgs *a) {
    char err[4096];
    if (!(r->model = model_load(a->model_dir, err, sizeof err))) ppa_die(2, "%s", err);
    r->tok = tokenizer_load(a->model_dir, err, sizeof err); /* absent: pre-tokenized prompts only */
    const ModelConfig *c = model_config(r->model);
    TemplateKind tpl = TEMPLATE_NONE;
    if (a->template_name) {
        if (template_parse(a->template_name, &tpl))
            ppa_die(2, "unknown template '%s' (chatml, llama3, mistral, zephyr, llama2, none)", a->template_name);
    } else if (r->tok) {
        char *chat = template_from_config(a->model_dir);
        tpl = template_detect(r->tok, chat);
        free(chat);
    }
    for (int i = 0; i < c->n_eos; i++) r->stop[r->n_stop++] = c->eos_token_ids[i];
    int eot = end_of_turn(r->tok, tpl), dup = 0;
    for (int i = 0; i < r->n_stop; i++) dup |= r->stop[i] == eot;
    if (eot >= 0 && eot < c->vocab_size && !dup) r->stop[r->n_stop++] = eot;
    fprintf(stderr, "ppa generate: template %s, stop ids [", template_name(tpl)); /* the resolved settings */
    for (int i = 0; i < r->n_stop; i++) fprintf(stderr, i ? ", %d" : "%d", r->stop[i]);
    fprintf(stderr, "], temperature %g%s, top-p %g, n %d, max-new-tokens %d, seed %llu\n", a->temperature,
            a->temperature > 0 ? "" : " (greedy)", a->top_p, a->n, a->max_new_tokens, (unsigned long long)a->seed);
    PromptOptions po = {r->tok, tpl, c->vocab_size, decoder_model_max_len(c), a->skip_invalid};
    if (prompts_read(&r->ps, a->prompts, &po, err, sizeof err)) ppa_die(2, "%s", err);
}

int cmd_generate(int argc, char **argv) {
    GenArgs a;
    parse_args(&a, argc, argv);
    if (a.threads > 0) {
        gemm_set_threads(a.threads);
#ifdef _OPENMP
        omp_set_num_threads(a.threads);
#endif
    }
    gemm_init();
    Run r = {.a = &a};
    load(&r, &a);
    if (a.temperature == 0 && a.n > 1)
        fprintf(stderr, "ppa generate: note: --temperature 0 is greedy, so the %d responses of a prompt are all equal\n", a.n);
    if (!r.n_stop) fprintf(stderr, "ppa generate: note: no EOS or end-of-turn token known: responses end at the length cap\n");
    double t0 = timer_now();
    char err[4096];
    if (a.out) {
        if (atomic_write(a.out, write_all, &r, err, sizeof err)) ppa_die(1, "%s", err);
    } else if (write_all(stdout, &r) || fflush(stdout)) {
        ppa_die(1, "generate: error writing the output");
    }
    double dt = timer_now() - t0;
    fprintf(stderr, "ppa generate: %d prompts, %ld responses, %ld tokens in %.2f s (%.1f tokens/s)", r.ps.n, r.responses,
            r.tokens, dt, dt > 0 ? r.tokens / dt : 0.0);
    if (r.ps.skipped) fprintf(stderr, "; skipped %ld of %ld lines", r.ps.skipped, r.ps.skipped + r.ps.n);
    fputc('\n', stderr);
    prompts_free(&r.ps);
    tokenizer_free(r.tok);
    model_free(r.model);
    return 0;
}
