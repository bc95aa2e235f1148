/* cmd_generate.c: `ppa generate`: K responses per prompt of a JSON Lines
 * file or a JSON array, written as JSON Lines in ppa's native schema (prompt
 * fields as given plus "responses", "finished", "n_tokens"; pre-tokenized
 * prompts get "response_ids"), ready to be scored into a training file; or
 * as the files AlpacaEval's and MT-Bench's judges read (eval/bench_files.h),
 * MT-Bench's later turns asked after the model's answers to the earlier. */
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
#include "eval/bench_files.h"
#include "eval/generate.h"
#include "io/atomic.h"
#include "io/jsonl.h"
#include "model/decode.h"
#include "kernels/gemm.h"
#include "model/model.h"

/* One call of generate() holds at most this many sequences, and its key/value
 * cache and logits at most this many bytes (one prompt always fits). */
#define GROUP_SEQS 256
#define GROUP_BYTES (1UL << 30)
#define GROUP_BYTES_GPU (16UL << 30) /* a GPU's decoder: its cache on the device, beside the weights */
#define GROUP_ROUNDS 4 /* a call's prompts: up to this many times those its slots hold at once */

static const char USAGE[] =
    "usage: ppa generate --model DIR --prompts FILE [--out FILE] [options]\n"
    "\n"
    "K responses per prompt, one output line per prompt in input order (stdout, or --out written\n"
    "atomically): the prompt fields as given (id, prompt / messages / system / template), then\n"
    "\"responses\": [text, ...], \"finished\": [true if it ended on EOS / end of turn / a --stop string, ...]\n"
    "and \"n_tokens\": [generated tokens, the stop token included, ...]. Pre-tokenized prompts\n"
    "(\"prompt_ids\") get \"response_ids\" instead of \"responses\" (the stop token appended when finished).\n"
    "--format alpaca_eval (the default for a JSON array, AlpacaEval's file) writes AlpacaEval's array\n"
    "instead: every input field with \"output\" and \"generator\"; --format mt_bench (the default for\n"
    "rows with \"turns\", FastChat's question.jsonl) writes FastChat's answer lines, every turn asked\n"
    "after the model's answers to the turns before it.\n\n";

typedef enum { FMT_JSONL, FMT_ALPACA, FMT_MTBENCH } GenFormat;

typedef struct {
    const char *model_dir, *prompts, *out, *template_name;
    int max_new_tokens, n, skip_invalid, top_k;
    double temperature, top_p;
    uint64_t seed;
    const TrainOptions *o;
} GenArgs;

static GenArgs gen_args(const TrainOptions *o) {
    return (GenArgs){.model_dir = o->model, .prompts = o->prompts, .out = o->out, .template_name = o->template_name,
                     .max_new_tokens = o->max_new_tokens, .n = o->n_samples, .skip_invalid = o->skip_invalid,
                     .top_k = o->top_k, .temperature = o->temperature, .top_p = o->top_p, .seed = o->seed, .o = o};
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
    ChatTemplate *tpl;
    PromptOptions po; /* how the prompts were rendered: MT-Bench's later turns are rendered the same way */
    PromptSet ps;
    GenFormat fmt;
    int category_temperature; /* mt_bench without --temperature: FastChat's per category */
    char *generator;          /* AlpacaEval's "generator", MT-Bench's "model_id" */
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

static void put_ids(FILE *f, const int *ids, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, i ? ", %d" : "%d", ids[i]);
    fputc(']', f);
}

/* The text of a response: what its ids add to the prompt, cut before the
 * first --stop string (*len its bytes; malloc'd). */
static char *response_text(const Run *r, const int *prompt, int np, const GenSample *s, size_t *len) {
    char *text = generate_decode_continuation(r->tok, prompt, np, s->ids, s->len, len);
    const TrainOptions *o = r->a->o;
    if (o->stop.n) *len = generate_find_stop(text, *len, (const char *const *)o->stop.v, o->stop.n), text[*len] = 0;
    return text;
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
            char *text = response_text(r, p->ids, p->len, &s[j], &len);
            fputs(j ? ", " : "", f);
            json_put_string(f, text, len);
            free(text);
        }
    }
    fputs("], \"finished\": [", f);
    for (int j = 0; j < K; j++) fprintf(f, "%s%s", j ? ", " : "", s[j].finished || s[j].stopped ? "true" : "false");
    fputs("], \"n_tokens\": [", f);
    for (int j = 0; j < K; j++) fprintf(f, j ? ", %d" : "%d", s[j].len + s[j].finished);
    fputs("]}\n", f);
}

/* prompts [p0, end) of gp[0..np) that one generate() call takes from p0, decoded *slots sequences at a time: the
 * prompts whose K samples each fit in memory (and --max-seqs) at once, and up to GROUP_ROUNDS times as many that
 * take their slots as earlier ones end (continuous batching), as long as the longest of them still fits */
static int group_end(const Run *r, const GenPrompt *gp, int np, int K, int p0, int *slots) {
    const ModelConfig *c = model_config(r->model);
    size_t budget = model_forward_engine(r->model) ? GROUP_BYTES_GPU : GROUP_BYTES;
    int max_len = 0, e = p0, fit = 0;
    while (e < np) {
        int need = generate_max_len(c, gp[e].len, r->a->max_new_tokens);
        int ml = need > max_len ? need : max_len, seqs = fit ? fit * K : (e - p0 + 1) * K;
        size_t bytes = generate_cache_bytes(c, seqs, ml) + sizeof(float) * (size_t)seqs * c->vocab_size;
        int most = r->a->o->max_seqs > 0 ? r->a->o->max_seqs : GROUP_SEQS;
        if (e > p0 && (seqs > most || bytes > budget)) {
            if (fit) break;
            fit = e - p0; /* the slots are set: more prompts wait for them */
            continue;
        }
        max_len = ml, e++;
        if (fit && e - p0 >= GROUP_ROUNDS * fit) break;
    }
    *slots = (fit ? fit : e - p0) * K;
    return e;
}

/* What a group's samples are for: done(r, first, n, s, ctx) gets prompts
 * [first, first + n) of the call and their samples (K each, in order). */
typedef int (*GroupDone)(Run *r, int first, int n, const GenSample *s, void *ctx);

/* gp[0..np), K samples each, through generate() in groups that fit in memory */
static int run_groups(Run *r, const GenPrompt *gp, int np, int K, GroupDone done, void *ctx) {
    const GenArgs *a = r->a;
    const TrainOptions *o = a->o;
    GenOptions go = {.max_new_tokens = a->max_new_tokens, .temperature = a->temperature, .top_p = a->top_p,
                     .top_k = a->top_k, .n_samples = K, .seed = a->seed, .stop = r->stop, .n_stop = r->n_stop,
                     .banned = r->banned, .n_banned = r->n_banned, .stop_strings = (const char *const *)o->stop.v,
                     .n_stop_strings = o->stop.n, .tok = r->tok, .on_tokens = progress, .ctx = r,
                     .device_sampler = o->device == DEVICE_CUDA && (!o->sampler || !strcmp(o->sampler, "device"))};
    for (int p0 = 0; p0 < np;) {
        int slots, p1 = group_end(r, gp, np, K, p0, &slots), n = p1 - p0;
        go.max_seqs = slots;
        GenSample *s = xmalloc(sizeof(GenSample) * (size_t)n * K);
        char err[1024];
        if (generate(r->model, gp + p0, n, &go, s, err, sizeof err)) ppa_die(1, "generate: %s", err);
        for (int i = 0; i < n * K; i++) r->tokens += s[i].len + s[i].finished;
        r->responses += (long)n * K;
        int rc = done(r, p0, n, s, ctx);
        generate_free(s, n * K);
        free(s);
        if (rc) return -1;
        p0 = p1;
    }
    return 0;
}

/* the prompts of this rank as generate() takes them (the stream of a prompt is its line: skipping other lines
 * changes nothing) */
static GenPrompt *first_prompts(const Run *r) {
    GenPrompt *gp = xmalloc(sizeof(GenPrompt) * (size_t)(r->hi - r->lo + 1));
    for (int i = r->lo; i < r->hi; i++) {
        const PromptRow *p = &r->ps.rows[i];
        gp[i - r->lo] = (GenPrompt){.ids = p->ids, .len = p->len, .stream = (uint64_t)p->line};
        if (r->category_temperature) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(p->source, "category");
            gp[i - r->lo].own_temperature = 1;
            gp[i - r->lo].temperature = mtbench_temperature(cJSON_IsString(c) ? c->valuestring : NULL);
        }
    }
    return gp;
}

static void start_progress(Run *r, long budget) {
    r->t0 = timer_now();
    r->budget = budget;
    progress_init(&r->pr, "generate", NULL, dist_rank() == 0); /* under MPI: rank 0's share */
    progress_start(&r->pr, 0, r->budget + (r->hi - r->lo));
    r->done = r->lo;
}

/* GroupDone of the native and AlpacaEval formats: the group's lines */
static int write_group(Run *r, int first, int n, const GenSample *s, void *ctx) {
    FILE *f = ctx;
    int K = r->a->n;
    for (int i = 0; i < n; i++) {
        int row = r->lo + first + i;
        const PromptRow *p = &r->ps.rows[row];
        if (r->fmt == FMT_JSONL) {
            write_line(f, r, p, s + (size_t)i * K, K);
            continue;
        }
        size_t len;
        char *text = response_text(r, p->ids, p->len, &s[i], &len);
        alpaca_write_element(f, p->source, text, len, r->generator, row, r->ps.n);
        free(text);
    }
    r->done = r->lo + first + n;
    progress(r, 0, 0); /* the prompts written */
    return ferror(f) ? -1 : 0;
}

/* ---- MT-Bench: every turn after the answers to the turns before it ---- */

typedef struct {
    int turn;            /* 0-based */
    const GenPrompt *gp; /* the turn's prompts */
    int *q, *j;          /* [n] a later turn's prompts: the question (in the rank's share) and the choice */
    char **text;         /* [questions * K * T] answers: choice j's turn t of question i at (i * K + j) * T + t */
    size_t *len;
    int T;               /* the most turns of a question */
} Turns;

/* Python's str.strip() on ASCII text */
static int is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* GroupDone of MT-Bench: the answers, without surrounding blanks as FastChat's output.strip() writes them */
static int keep_answers(Run *r, int first, int n, const GenSample *s, void *ctx) {
    Turns *tt = ctx;
    int K = tt->turn ? 1 : r->a->n;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < K; k++) {
            int q = tt->turn ? tt->q[first + i] : first + i, j = tt->turn ? tt->j[first + i] : k;
            const GenPrompt *g = &tt->gp[first + i];
            size_t len, at = ((size_t)q * r->a->n + j) * tt->T + tt->turn, b = 0;
            char *text = response_text(r, g->ids, g->len, &s[(size_t)i * K + k], &len);
            while (len && is_blank(text[len - 1])) len--;
            while (b < len && is_blank(text[b])) b++;
            memmove(text, text + b, len - b), len -= b, text[len] = 0;
            tt->text[at] = text, tt->len[at] = len;
        }
    if (!tt->turn) r->done = r->lo + first + n, progress(r, 0, 0);
    return 0;
}

/* where a row is, for messages: "FILE:LINE" or "FILE: element N" */
static const char *row_where(const Run *r, const PromptRow *p, char *buf, size_t len) {
    snprintf(buf, len, r->ps.array ? "%s: element %ld" : "%s:%ld", r->a->prompts, p->line);
    return buf;
}

/* The prompts of turn t (>= 1): for each question with that many turns and
 * each choice j, the conversation so far ([system], user turn 0, answer 0,
 * ..., user turn t) rendered as the first turn was. A conversation that no
 * longer fits in the model gets FastChat's answer to a failed generation,
 * "ERROR", with a note. Returns the number of prompts in tt->gp. */
static int later_prompts(Run *r, Turns *tt, GenPrompt **gpo) {
    int K = r->a->n, nq = r->hi - r->lo, n = 0;
    GenPrompt *gp = xmalloc(sizeof(GenPrompt) * (size_t)nq * K + 1);
    ChatMessage *m = xmalloc(sizeof(ChatMessage) * (size_t)(2 * tt->T + 2));
    for (int q = 0; q < nq; q++) {
        const PromptRow *p = &r->ps.rows[r->lo + q];
        if (p->n_turns <= tt->turn) continue;
        const cJSON *sys = cJSON_GetObjectItemCaseSensitive(p->source, "system"),
                    *turns = cJSON_GetObjectItemCaseSensitive(p->source, "turns");
        for (int j = 0; j < K; j++) {
            int nm = 0, t = 0;
            if (cJSON_IsString(sys)) m[nm++] = (ChatMessage){"system", sys->valuestring};
            for (const cJSON *u = turns->child; t <= tt->turn; u = u->next, t++) {
                m[nm++] = (ChatMessage){"user", u->valuestring};
                if (t < tt->turn) m[nm++] = (ChatMessage){"assistant", tt->text[((size_t)q * K + j) * tt->T + t]};
            }
            int *ids, len;
            char err[1024], where[1200];
            if (prompts_encode(&r->po, p->template_none, m, nm, &ids, &len, err, sizeof err)) {
                fprintf(stderr, "ppa generate: note: %s: turn %d of choice %d: %s: its answer is \"ERROR\", as FastChat "
                        "writes for a failed generation\n", row_where(r, p, where, sizeof where), tt->turn + 1, j, err);
                size_t at = ((size_t)q * K + j) * tt->T + tt->turn;
                tt->text[at] = xmalloc(6), memcpy(tt->text[at], "ERROR", 6), tt->len[at] = 5;
                continue;
            }
            /* stream (seed, line + t 2^40, j): a turn's draws do not depend on the other questions or turns */
            gp[n] = (GenPrompt){.ids = ids, .len = len, .stream = (uint64_t)p->line + ((uint64_t)tt->turn << 40),
                                .sample0 = (uint64_t)j};
            if (r->category_temperature) {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(p->source, "category");
                gp[n].own_temperature = 1, gp[n].temperature = mtbench_temperature(cJSON_IsString(c) ? c->valuestring : NULL);
            }
            tt->q[n] = q, tt->j[n] = j, n++;
        }
    }
    free(m);
    *gpo = gp;
    return n;
}

static int write_mtbench(FILE *f, Run *r) {
    int K = r->a->n, nq = r->hi - r->lo;
    Turns tt = {0};
    for (int i = r->lo; i < r->hi; i++) tt.T = r->ps.rows[i].n_turns > tt.T ? r->ps.rows[i].n_turns : tt.T;
    size_t slots = (size_t)nq * K * tt.T + 1;
    tt.text = xcalloc(slots, sizeof(char *)), tt.len = xcalloc(slots, sizeof(size_t));
    tt.q = xmalloc(sizeof(int) * ((size_t)nq * K + 1)), tt.j = xmalloc(sizeof(int) * ((size_t)nq * K + 1));
    long budget = 0;
    for (int i = r->lo; i < r->hi; i++)
        budget += (long)K * r->ps.rows[i].n_turns * generate_room(model_config(r->model), r->ps.rows[i].len,
                                                                  r->a->max_new_tokens);
    start_progress(r, budget);
    GenPrompt *gp = first_prompts(r);
    tt.gp = gp;
    if (run_groups(r, gp, nq, K, keep_answers, &tt)) return -1;
    free(gp);
    for (tt.turn = 1; tt.turn < tt.T; tt.turn++) {
        int n = later_prompts(r, &tt, &gp);
        tt.gp = gp;
        if (run_groups(r, gp, n, 1, keep_answers, &tt)) return -1;
        for (int i = 0; i < n; i++) free((int *)gp[i].ids);
        free(gp);
    }
    double tstamp = 0;
    char err[512];
    for (int q = 0; q < nq; q++) {
        const PromptRow *p = &r->ps.rows[r->lo + q];
        const cJSON *qid = cJSON_GetObjectItemCaseSensitive(p->source, "question_id");
        char id[23], *qtext = cJSON_PrintUnformatted(qid);
        if (!qtext) ppa_die(1, "generate: out of memory");
        mtbench_answer_id(id, r->a->seed, r->generator, p->line, qtext);
        free(qtext);
        if (bench_tstamp(&tstamp, err, sizeof err)) ppa_die(2, "generate: %s", err);
        size_t at = (size_t)q * K * tt.T;
        /* a question of fewer turns than the longest: its own, the rest of its slots unused */
        char **text = xmalloc(sizeof(char *) * (size_t)K * p->n_turns + 1);
        size_t *len = xmalloc(sizeof(size_t) * (size_t)K * p->n_turns + 1);
        for (int j = 0; j < K; j++)
            for (int t = 0; t < p->n_turns; t++)
                text[j * p->n_turns + t] = tt.text[at + (size_t)j * tt.T + t], len[j * p->n_turns + t] = tt.len[at + (size_t)j * tt.T + t];
        mtbench_write_answer(f, qid, id, r->generator, text, len, K, p->n_turns, tstamp);
        free(text), free(len);
    }
    for (size_t i = 0; i < slots; i++) free(tt.text[i]);
    free(tt.text), free(tt.len), free(tt.q), free(tt.j);
    progress_end(&r->pr);
    return ferror(f) ? -1 : 0;
}

static int write_all(FILE *f, const void *ctx) {
    Run *r = (Run *)ctx;
    if (r->fmt == FMT_MTBENCH) return write_mtbench(f, r);
    const GenArgs *a = r->a;
    long budget = 0;
    for (int i = r->lo; i < r->hi; i++)
        budget += (long)a->n * generate_room(model_config(r->model), r->ps.rows[i].len, a->max_new_tokens);
    start_progress(r, budget);
    if (r->fmt == FMT_ALPACA && r->ps.n == 0 && dist_rank() == 0) alpaca_write_element(f, NULL, NULL, 0, NULL, 0, 0);
    GenPrompt *gp = first_prompts(r);
    int rc = run_groups(r, gp, r->hi - r->lo, a->n, write_group, f);
    free(gp);
    progress_end(&r->pr);
    return rc || ferror(f) ? -1 : 0;
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

/* the last part of a folder's path ("runs/aligned/" gives "aligned"), malloc'd */
static char *folder_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    char *s = xmalloc(n - b + 6);
    if (n > b) memcpy(s, path + b, n - b), s[n - b] = 0;
    else memcpy(s, "model", 6);
    return s;
}

/* The output's format: --format, else from the input (a JSON array: AlpacaEval's; a first row with "turns":
 * MT-Bench's; else ppa's rows); then every row checked against it, and the format's defaults where the user gave
 * no value. */
static void resolve_format(Run *r, GenArgs *a) {
    const TrainOptions *o = a->o;
    const char *f = o->format && strcmp(o->format, "auto") ? o->format : NULL;
    if (f) r->fmt = !strcmp(f, "alpaca_eval") ? FMT_ALPACA : !strcmp(f, "mt_bench") ? FMT_MTBENCH : FMT_JSONL;
    else r->fmt = r->ps.array ? FMT_ALPACA : r->ps.n && r->ps.rows[0].n_turns ? FMT_MTBENCH : FMT_JSONL;
    static const char *const NAMES[] = {"jsonl", "alpaca_eval", "mt_bench"};
    const char *name = NAMES[r->fmt];
    if (r->fmt == FMT_ALPACA && a->n != 1)
        ppa_die(2, "generate: --format alpaca_eval writes one output per instruction (AlpacaEval's file): -n must be 1, "
                   "found %d (one run per --seed gives more)", a->n);
    for (int i = 0; i < r->ps.n; i++) {
        const PromptRow *p = &r->ps.rows[i];
        char w[1200];
        if (r->fmt == FMT_JSONL && p->n_turns)
            ppa_die(2, "%s: \"turns\" (an MT-Bench question) needs --format mt_bench", row_where(r, p, w, sizeof w));
        if (r->fmt != FMT_JSONL && p->pretokenized)
            ppa_die(2, "%s: --format %s writes text: a pre-tokenized row (\"prompt_ids\") has none", row_where(r, p, w, sizeof w),
                    name);
        if (r->fmt == FMT_MTBENCH && !p->n_turns)
            ppa_die(2, "%s: no \"turns\": --format mt_bench reads FastChat's question.jsonl rows ({\"question_id\", "
                       "\"category\", \"turns\": [...]})", row_where(r, p, w, sizeof w));
        if (r->fmt == FMT_MTBENCH && !cJSON_GetObjectItemCaseSensitive(p->source, "question_id"))
            ppa_die(2, "%s: no \"question_id\" (FastChat's answer file names the question by it)",
                    row_where(r, p, w, sizeof w));
        if (r->fmt == FMT_JSONL) cJSON_Delete(r->ps.rows[i].source), r->ps.rows[i].source = NULL; /* not needed */
    }
    /* --max-new-tokens unless given: FastChat's gen_model_answer.py --max-new-token default 1024; AlpacaEval's
     * model configs (src/alpaca_eval/models_configs/<model>/configs.yaml, completions_kwargs) mostly 2048 */
    if (o->origin[TOPT_MAX_NEW_TOKENS].from == TRAIN_FROM_DEFAULT && r->fmt != FMT_JSONL)
        a->max_new_tokens = r->fmt == FMT_ALPACA ? 2048 : 1024;
    r->category_temperature = r->fmt == FMT_MTBENCH && o->origin[TOPT_TEMPERATURE].from == TRAIN_FROM_DEFAULT;
    if (r->fmt != FMT_JSONL) r->generator = o->generator ? strdup(o->generator) : folder_name(o->adapter ? o->adapter : a->model_dir);
    double t;
    char err[512];
    if (r->fmt == FMT_MTBENCH && bench_tstamp(&t, err, sizeof err)) ppa_die(2, "generate: %s", err);
    if (dist_rank() == 0) { /* the resolved settings */
        fprintf(stderr, "ppa generate: format %s, template %s, stop ids [", name, chat_template_name(r->tpl));
        for (int i = 0; i < r->n_stop; i++) fprintf(stderr, i ? ", %d" : "%d", r->stop[i]);
        fprintf(stderr, "], %d stop strings, ", o->stop.n);
        if (r->category_temperature) fprintf(stderr, "temperature FastChat's per category");
        else fprintf(stderr, "temperature %g%s", a->temperature, a->temperature > 0 ? "" : " (greedy)");
        fprintf(stderr, ", top-k %d, top-p %g, n %d, max-new-tokens %d, seed %llu, sampler %s%s%s\n", a->top_k,
                a->top_p, a->n, a->max_new_tokens, (unsigned long long)a->seed,
                o->device == DEVICE_CUDA && (!o->sampler || !strcmp(o->sampler, "device")) ? "device" : "exact",
                r->generator ? ", generator " : "", r->generator ? r->generator : "");
    }
}

static void load(Run *r, GenArgs *a) {
    char err[4096];
    r->model = load_model(a->o, a->model_dir, 0);
    r->tok = tokenizer_load_folder(a->model_dir, err, sizeof err); /* absent: pre-tokenized prompts only */
    if (!r->tok && err[0]) ppa_die(2, "generate: %s", err);
    if (!r->tok && a->o->stop.n)
        ppa_die(2, "generate: --stop needs the model's tokenizer to read the responses' text, and %s has no tokenizer.json",
                a->model_dir);
    const ModelConfig *c = model_config(r->model);
    r->tpl = chat_template_open(a->template_name, a->model_dir, r->tok, err, sizeof err);
    if (!r->tpl) ppa_die(2, "generate: %s", err);
    for (int i = 0; i < c->n_eos; i++) r->stop[r->n_stop++] = c->eos_token_ids[i];
    int eot = end_of_turn(r->tok, r->tpl), dup = 0;
    for (int i = 0; i < r->n_stop; i++) dup |= r->stop[i] == eot;
    if (eot >= 0 && eot < c->vocab_size && !dup) r->stop[r->n_stop++] = eot;
    ban_nul_tokens(r, c->vocab_size);
    const char *f = a->o->format;
    r->po = (PromptOptions){.tok = r->tok, .tpl = r->tpl, .vocab_size = c->vocab_size, .max_len = decoder_model_max_len(c),
                            .skip_invalid = a->skip_invalid, .special_in_text = a->o->special_tokens_in_text,
                            .model_dir = a->model_dir, .keep_source = !f || strcmp(f, "jsonl")};
    if (prompts_read(&r->ps, a->prompts, &r->po, err, sizeof err)) ppa_die(2, "%s", err);
    resolve_format(r, a);
}

int cmd_generate(int argc, char **argv) {
    TrainOptions opts;
    setup_options(CMD_GENERATE, USAGE, argc, argv, &opts);
    GenArgs a = gen_args(&opts);
    if (opts.sampler && !strcmp(opts.sampler, "device") && opts.device != DEVICE_CUDA)
        ppa_die(2, "generate: --sampler device draws on the GPU and this run is on the CPU: --device cuda, or "
                   "--sampler exact");
    gemm_init();
    Run r = {.a = &a};
    load(&r, &a);
    if (a.temperature == 0 && a.n > 1 && !r.category_temperature)
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
    chat_template_free(r.tpl);
    free(r.generator);
    free(r.banned);
    tokenizer_free(r.tok);
    model_free(r.model);
    train_options_free(&opts);
    return 0;
}
