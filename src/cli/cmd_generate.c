/* cmd_generate.c: `ppa generate`: K responses per prompt of a JSON Lines
 * file, written as JSON Lines in ppa's native schema (prompt fields as given
 * plus "responses", "finished", "n_tokens"; pre-tokenized prompts get
 * "response_ids"), ready to be scored into a training file. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/load.h"
#include "cli/output.h"
#include "cli/setup.h"
#include "core/common.h"
#include "core/progress.h"
#include "dist/dist.h"
#include "core/timer.h"
#include "data/prompts.h"
#include "eval/generate.h"
#include "io/atomic.h"
#include "model/decode.h"
#include "kernels/gemm.h"
#include "model/model.h"

/* One call of generate() holds at most this many sequences, and its key/value
 * cache and logits at most this many bytes (one prompt always fits). */
#define GROUP_SEQS 256
#define GROUP_BYTES (1UL << 30)
#define GROUP_BYTES_GPU (16UL << 30) /* a GPU's decoder: its cache on the device, beside the weights */

static const char USAGE[] =
    "usage: ppa generate --model DIR --prompts FILE.jsonl [--out FILE] [options]\n"
    "\n"
    "K responses per prompt, one output line per prompt in input order (stdout, or --out written\n"
    "atomically): the prompt fields as given (id, prompt / messages / system / template), then\n"
    "\"responses\": [text, ...], \"finished\": [true if it ended on EOS / end of turn, ...] and\n"
    "\"n_tokens\": [generated tokens, the stop token included, ...]. Pre-tokenized prompts\n"
    "(\"prompt_ids\") get \"response_ids\" instead of \"responses\" (the stop token appended when finished).\n\n";

typedef struct {
    const char *model_dir, *prompts, *out, *template_name;
    int max_new_tokens, n, skip_invalid;
    double temperature, top_p;
    uint64_t seed;
    const TrainOptions *o;
} GenArgs;

static GenArgs gen_args(const TrainOptions *o) {
    return (GenArgs){o->model,          o->prompts,   o->out,         o->template_name, o->max_new_tokens,
                     o->n_samples,      o->skip_invalid, o->temperature, o->top_p,        o->seed, o};
}

/* the template's end-of-turn token, if the tokenizer has it */
static int end_of_turn(const Tokenizer *t, const ChatTemplate *c) {
    const char *s = chat_template_eot(c);
    return t && s ? tokenizer_token_id(t, s) : -1;
}

typedef struct {
    const GenArgs *a;
    Model *model;
    Tokenizer *tok;
    PromptSet ps;
    int stop[MODEL_MAX_EOS + 1], n_stop;
    int *banned, n_banned; /* ids whose text holds a NUL byte: no reader of ppa's takes such text */
    long tokens, responses; /* written so far */
    int done;               /* prompts written so far */
    long sampled;           /* tokens sampled so far (progress) */
    long budget, spent;     /* every response's room (generate_room), and the room sampled or left unused by the
                             * responses that ended: the progress units (even, where prompts finish in groups),
                             * with one more per prompt written, so that the last line comes after the last prompt */
    double t0;              /* start */
    Progress pr;
    int lo, hi;             /* the prompts of this rank (all of them in one process) */
} Run;

/* GenOptions.on_tokens: the progress line (core/progress.h) */
static void progress(void *ctx, int sampled, int unused) {
    Run *r = ctx;
    r->sampled += sampled, r->spent += sampled + unused;
    double dt = timer_now() - r->t0;
    progress_update(&r->pr, r->spent + (r->done - r->lo),
                    "%ld/%ld tokens of the budget, %d/%d prompts written, %ld tokens sampled (%.1f/s)", r->spent,
                    r->budget, r->done - r->lo, r->hi - r->lo, r->sampled, dt > 0 ? r->sampled / dt : 0.0);
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
    while (e < r->hi) {
        int need = generate_max_len(c, r->ps.rows[e].len, r->a->max_new_tokens);
        int ml = need > max_len ? need : max_len, seqs = (e - p0 + 1) * K;
        size_t bytes = generate_cache_bytes(c, seqs, ml) + sizeof(float) * (size_t)seqs * c->vocab_size;
        size_t budget = model_forward_engine(r->model) ? GROUP_BYTES_GPU : GROUP_BYTES;
        if (e > p0 && (seqs > GROUP_SEQS || bytes > budget)) break;
        max_len = ml, e++;
    }
    return e;
}

static int write_all(FILE *f, const void *ctx) {
    Run *r = (Run *)ctx;
    const GenArgs *a = r->a;
    int K = a->n;
    GenOptions o = {a->max_new_tokens, a->temperature, a->top_p, K, a->seed, r->stop, r->n_stop, r->banned, r->n_banned,
                    progress, r};
    r->t0 = timer_now();
    for (int i = r->lo; i < r->hi; i++) r->budget += (long)K * generate_room(model_config(r->model), r->ps.rows[i].len,
                                                                             a->max_new_tokens);
    progress_init(&r->pr, "generate", NULL, dist_rank() == 0); /* under MPI: rank 0's share */
    progress_start(&r->pr, 0, r->budget + (r->hi - r->lo));
    r->done = r->lo;
    for (int p0 = r->lo; p0 < r->hi;) {
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
        progress(r, 0, 0); /* the prompts written */
        if (ferror(f)) return -1;
    }
    progress_end(&r->pr);
    return ferror(f) ? -1 : 0;
}

/* Text with a NUL byte would be refused when read back (JSON readers cut C
 * strings there), so tokens that decode to one are never generated. */
static void ban_nul_tokens(Run *r, int V) {
    if (!r->tok) return;
    for (int id = 0; id < V; id++) {
        size_t len;
        char *t = tokenizer_decode(r->tok, &id, 1, 0, &len);
        if (t && memchr(t, 0, len)) {
            r->banned = xrealloc(r->banned, sizeof(int) * (size_t)(r->n_banned + 1));
            r->banned[r->n_banned++] = id;
        }
        free(t);
    }
}

static void load(Run *r, const GenArgs *a) {
    char err[4096];
    r->model = load_model(a->o, a->model_dir, 0);
    r->tok = tokenizer_load_folder(a->model_dir, err, sizeof err); /* absent: pre-tokenized prompts only */
    if (!r->tok && err[0]) ppa_die(2, "generate: %s", err);
    const ModelConfig *c = model_config(r->model);
    ChatTemplate *tpl = chat_template_open(a->template_name, a->model_dir, r->tok, err, sizeof err);
    if (!tpl) ppa_die(2, "generate: %s", err);
    for (int i = 0; i < c->n_eos; i++) r->stop[r->n_stop++] = c->eos_token_ids[i];
    int eot = end_of_turn(r->tok, tpl), dup = 0;
    for (int i = 0; i < r->n_stop; i++) dup |= r->stop[i] == eot;
    if (eot >= 0 && eot < c->vocab_size && !dup) r->stop[r->n_stop++] = eot;
    if (dist_rank() == 0) { /* the resolved settings */
        fprintf(stderr, "ppa generate: template %s, stop ids [", chat_template_name(tpl));
        for (int i = 0; i < r->n_stop; i++) fprintf(stderr, i ? ", %d" : "%d", r->stop[i]);
        fprintf(stderr, "], temperature %g%s, top-p %g, n %d, max-new-tokens %d, seed %llu\n", a->temperature,
                a->temperature > 0 ? "" : " (greedy)", a->top_p, a->n, a->max_new_tokens, (unsigned long long)a->seed);
    }
    ban_nul_tokens(r, c->vocab_size);
    PromptOptions po = {r->tok, tpl, c->vocab_size, decoder_model_max_len(c), a->skip_invalid,
                        a->o->special_tokens_in_text, a->model_dir};
    if (prompts_read(&r->ps, a->prompts, &po, err, sizeof err)) ppa_die(2, "%s", err);
    chat_template_free(tpl); /* the prompts are tokens now */
}

int cmd_generate(int argc, char **argv) {
    TrainOptions opts;
    setup_options(CMD_GENERATE, USAGE, argc, argv, &opts);
    GenArgs a = gen_args(&opts);
    gemm_init();
    Run r = {.a = &a};
    load(&r, &a);
    if (a.temperature == 0 && a.n > 1)
        fprintf(stderr, "ppa generate: note: --temperature 0 is greedy, so the %d responses of a prompt are all equal\n", a.n);
    if (!r.n_stop) fprintf(stderr, "ppa generate: note: no EOS or end-of-turn token known: responses end at the length cap\n");
    double t0 = timer_now();
    char err[4096];
    long lo, hi;
    dist_share(r.ps.n, dist_rank(), &lo, &hi);
    r.lo = (int)lo, r.hi = (int)hi;
    if (dist_size() > 1) { /* each rank its prompts; their lines gathered in input order, written by rank 0 */
        char *mine = NULL;
        size_t n = 0;
        FILE *mem = open_memstream(&mine, &n);
        if (write_all(mem, &r) || fclose(mem)) ppa_die(1, "generate: cannot buffer the output");
        output_gathered(mine, n, a.out, "generate");
        double counts[2] = {(double)r.responses, (double)r.tokens};
        dist_sum_f64(counts, 2);
        r.responses = (long)counts[0], r.tokens = (long)counts[1];
        free(mine);
    } else if (a.out) {
        if (atomic_write(a.out, write_all, &r, err, sizeof err)) ppa_die(1, "%s", err);
    } else if (write_all(stdout, &r) || fflush(stdout)) {
        ppa_die(1, "generate: error writing the output");
    }
    double dt = timer_now() - t0;
    if (dist_rank() == 0) {
        fprintf(stderr, "ppa generate: %d prompts, %ld responses, %ld tokens in %.2f s (%.1f tokens/s)", r.ps.n,
                r.responses, r.tokens, dt, dt > 0 ? r.tokens / dt : 0.0);
        if (r.ps.skipped) fprintf(stderr, "; skipped %ld of %ld lines", r.ps.skipped, r.ps.skipped + r.ps.n);
        fputc('\n', stderr);
    }
    prompts_free(&r.ps);
    free(r.banned);
    tokenizer_free(r.tok);
    model_free(r.model);
    train_options_free(&opts);
    return 0;
}
