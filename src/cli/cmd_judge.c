/* cmd_judge.c: `ppa judge`: adds "scores" to each row of a JSON Lines file,
 * from a lexicon (AFINN or VADER, src/judge/; word lists from the npm cache
 * at run time) or a reward model (each response scored on prompt + response,
 * the prompt computed once per row). The rows are copied with the field
 * added, so the output is a training file as it stands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/judges.h"
#include "cli/dataset.h"
#include "cli/load.h"
#include "cli/output.h"
#include "cli/setup.h"
#include "core/common.h"
#include "core/progress.h"
#include "dist/dist.h"
#include "core/timer.h"
#include "io/atomic.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "judge/afinn.h"
#include "judge/vader.h"
#include "model/decode.h"
#include "train/refcache.h"
#include "io/records.h"

static const char USAGE[] =
    "usage: ppa judge --judge afinn|vader --data FILE.jsonl [--out FILE] [--raw] [--npm-cache DIR]\n"
    "       ppa judge --reward-model DIR --data FILE.jsonl [--reward-index N] [--out FILE] [options]\n"
    "       ppa judge --pair-model DIR --pair-template FILE --data FILE.jsonl [--out FILE] [options]\n"
    "\n"
    "Reads JSON Lines rows and writes each row back with \"scores\" (one per response) added, replaced\n"
    "if present, so the output is a training file as it stands:\n"
    "  afinn  (comparative + 5) / 10 clipped to [0, 1], where comparative is the sum of the AFINN-165\n"
    "         valences per token of the `sentiment` npm package (emoji scores and negation included)\n"
    "  vader  (compound + 1) / 2 in [0, 1], compound being VADER's normalised score (JS port 1.1.3)\n"
    "  pair-model  a causal LM asked which of two responses is better (--pair-template: the prompt text\n"
    "         with {prompt}, {response_A}, {response_B}): p = P(\"A\") / (P(\"A\") + P(\"B\")) at the answer\n"
    "         position, averaged over both orders; every two responses of a row are judged, written as\n"
    "         \"preferences\" [K][K] (p that i beats j), and \"scores\" are each response's mean p\n"
    "  reward-model  the reward head's output --reward-index on prompt + response, rendered with the\n"
    "         reward model's tokenizer and chat template (or pre-tokenized prompt_ids / response_ids),\n"
    "         read at the last token; the prompt of a row is computed once for its responses\n"
    "Lexicons read \"responses\" (strings) and/or \"text\" (a string, scored into \"score\"); a reward\n"
    "model reads the rows `ppa train` reads. The word lists are not part of ppa: AFINN-165 is ODbL-1.0,\n"
    "VADER's lexicon MIT (`make fixtures` fetches them). A malformed row stops the run with exit status 2\n"
    "and FILE:LINE (--skip-invalid: a reward model's bad rows are left out of the output, counted).\n\n";

typedef struct {
    const AfinnJudge *afinn;
    const VaderJudge *vader;
    int raw;
    const WinJudge *pair;     /* the pair-model judge, or NULL */
    long pairs;               /* pairs judged */
    const DataSet *ds;        /* a reward model's rows, in file order */
    const RefCache *rewards;  /* their scores */
    int next;                 /* the next row of ds */
    long dropped;             /* lines data_read skipped (--skip-invalid) */
    RecordReader *in; /* the rows, read once more than the reader of --data did */
    char why[1100]; /* what is wrong with the current row */
    char err[2048]; /* FILE:LINE: why */
    long rows, texts;
    long lo, hi; /* the input rows this rank judges (under MPI); hi < 0: all of them */
    long total;  /* rows to judge (0: not known, from stdin) */
    Progress pr; /* a lexicon's or the pair model's rows (a reward model's are scored before, by refcache) */
} Judging;

static cJSON *judge_text(const Judging *g, const char *text) {
    size_t len = strlen(text);
    if (g->afinn) {
        AfinnScore s;
        afinn_analyze(g->afinn, text, len, &s);
        if (!g->raw) return cJSON_CreateNumber(afinn_label01(&s));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "score", (double)s.score);
        cJSON_AddNumberToObject(o, "comparative", s.comparative);
        return o;
    }
    VaderScores s;
    vader_polarity(g->vader, text, len, &s);
    if (!g->raw) return cJSON_CreateNumber(vader_label01(&s));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "neg", s.neg);
    cJSON_AddNumberToObject(o, "neu", s.neu);
    cJSON_AddNumberToObject(o, "pos", s.pos);
    cJSON_AddNumberToObject(o, "compound", s.compound);
    return o;
}

static void set_field(cJSON *row, const char *name, cJSON *value) {
    cJSON_DeleteItemFromObjectCaseSensitive(row, name);
    cJSON_AddItemToObject(row, name, value);
}

/* the reward model's scores of ds row g->next, which is this line */
static void reward_row(Judging *g, cJSON *row) {
    const RefCache *rc = g->rewards;
    cJSON *scores = cJSON_CreateArray();
    for (int i = rc->offset[g->next]; i < rc->offset[g->next + 1]; i++, g->texts++)
        cJSON_AddItemToArray(scores, json_number_exact(rc->logp[i]));
    set_field(row, "scores", scores);
    g->next++;
}

/* A pair-preference model on every two responses of the row: "preferences" [K][K] (p that response i beats
 * j; null on the diagonal) and "scores", each response's mean preference over the others (1/2 alone) */
static int pair_row(Judging *g, cJSON *row, const cJSON *resp) {
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(row, "prompt");
    if (!cJSON_IsString(prompt)) {
        snprintf(g->why, sizeof g->why, "the pair model needs \"prompt\" (a string) and \"responses\" (strings)");
        return -1;
    }
    int K = cJSON_GetArraySize(resp);
    double *p = xcalloc((size_t)K * (size_t)K, sizeof(double));
    const char **text = xmalloc(sizeof(char *) * (size_t)(K ? K : 1));
    int k = 0;
    for (const cJSON *r = resp->child; r; r = r->next) text[k++] = r->valuestring;
    for (int i = 0; i < K; i++)
        for (int j = i + 1; j < K; j++, g->pairs++) {
            char why[1024];
            if (g->pair->prefer(g->pair->ctx, prompt->valuestring, text[i], text[j], &p[i * K + j], why, sizeof why)) {
                snprintf(g->why, sizeof g->why, "responses %d and %d: %.900s", i + 1, j + 1, why);
                free(p), free(text);
                return -1;
            }
            p[j * K + i] = 1.0 - p[i * K + j]; /* exact: the judge averages both orders symmetrically */
        }
    cJSON *scores = cJSON_CreateArray(), *prefs = cJSON_CreateArray();
    for (int i = 0; i < K; i++, g->texts++) {
        cJSON *line = cJSON_CreateArray();
        double sum = 0.0;
        for (int j = 0; j < K; j++) {
            cJSON_AddItemToArray(line, i == j ? cJSON_CreateNull() : json_number_exact(p[i * K + j]));
            sum += i == j ? 0.0 : p[i * K + j];
        }
        cJSON_AddItemToArray(prefs, line);
        cJSON_AddItemToArray(scores, json_number_exact(K > 1 ? sum / (K - 1) : 0.5));
    }
    set_field(row, "scores", scores);
    set_field(row, "preferences", prefs);
    free(p), free(text);
    return 0;
}

/* Adds the scores to one parsed row; -1 with g->why set. */
static int judge_row(Judging *g, cJSON *row) {
    if (g->ds) {
        reward_row(g, row);
        return 0;
    }
    const cJSON *resp = cJSON_GetObjectItemCaseSensitive(row, "responses");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(row, "text");
    if (!resp && !text) {
        snprintf(g->why, sizeof g->why, "a row needs \"responses\" (a list of strings) or \"text\" (a string)");
        return -1;
    }
    if (resp && !cJSON_IsArray(resp)) {
        snprintf(g->why, sizeof g->why, "\"responses\" must be a list of strings");
        return -1;
    }
    if (text && !cJSON_IsString(text)) {
        snprintf(g->why, sizeof g->why, "\"text\" must be a string");
        return -1;
    }
    int i = 0;
    for (const cJSON *r = resp ? resp->child : NULL; r; r = r->next, i++)
        if (!cJSON_IsString(r)) {
            snprintf(g->why, sizeof g->why, "\"responses\"[%d] is not a string", i);
            return -1;
        }
    if (g->pair) {
        if (!resp) {
            snprintf(g->why, sizeof g->why, "the pair model needs \"prompt\" (a string) and \"responses\" (strings)");
            return -1;
        }
        return pair_row(g, row, resp);
    }
    if (resp) {
        cJSON *scores = cJSON_CreateArray();
        for (const cJSON *r = resp->child; r; r = r->next, g->texts++)
            cJSON_AddItemToArray(scores, judge_text(g, r->valuestring));
        set_field(row, "scores", scores);
    }
    if (text) {
        set_field(row, "score", judge_text(g, text->valuestring));
        g->texts++;
    }
    return 0;
}

/* AtomicWriteFn (and the stdout path): every row in, every row out */
static int judge_all(FILE *out, const void *ctx) {
    Judging *g = (Judging *)ctx;
    const char *line;
    size_t len;
    long loc;
    int rc = 0;
    if (!g->ds) progress_start(&g->pr, 0, g->total);
    for (long at = 0; !rc; at++) {
        int got = records_next(g->in, &line, &len, &loc);
        if (got < 0) {
            snprintf(g->err, sizeof g->err, "%s", records_error(g->in, NULL));
            rc = -1;
            break;
        }
        if (!got) break;
        if (g->hi >= 0 && (at < g->lo || at >= g->hi)) continue; /* another rank's row */
        if (g->ds && (g->next >= g->ds->n || g->ds->rows[g->next].line != loc)) {
            g->dropped++; /* refused by the reader, with --skip-invalid */
            continue;
        }
        cJSON *row = json_parse(line, len, g->why, sizeof g->why);
        if (!row) {
            rc = -1;
        } else if (!cJSON_IsObject(row)) {
            snprintf(g->why, sizeof g->why, "a line must be a JSON object");
            rc = -1;
        } else if (judge_row(g, row)) {
            rc = -1;
        } else {
            char *s = cJSON_PrintUnformatted(row);
            if (!s) ppa_die(1, "judge: out of memory printing row %ld", at + 1);
            if (fputs(s, out) == EOF || fputc('\n', out) == EOF) rc = -2;
            free(s);
            g->rows++;
            if (!g->ds && g->total > 0) progress_update(&g->pr, g->rows, "%ld/%ld rows", g->rows, g->total);
            else if (!g->ds) progress_update(&g->pr, g->rows, "%ld rows", g->rows);
        }
        if (rc == -1) {
            char wh[768];
            snprintf(g->err, sizeof g->err, "%s: %s", records_here(g->in, loc, wh, sizeof wh), g->why);
        }
        cJSON_Delete(row);
    }
    if (!g->ds) progress_end(&g->pr);
    if (rc == -1) errno = EINVAL;
    return rc;
}

static void load_judge(Judging *g, const char *which, const char *npm) {
    char err[1024];
    if (!strcmp(which, "afinn")) {
        g->afinn = afinn_load_npm(npm, err, sizeof err);
        if (!g->afinn) ppa_die(2, "judge: %s", err);
        if (afinn_emoji_count(g->afinn) == 0)
            fprintf(stderr, "ppa: judge: no %s/%s: scoring without sentiment's emoji list\n", npm, AFINN_EMOJI_FILE);
    } else {
        g->vader = vader_load_npm(npm, err, sizeof err);
        if (!g->vader) ppa_die(2, "judge: %s", err);
    }
}

/* the rows of g's input file (as judge_all reads them), read once to divide them among the ranks */
static long count_rows(const char *path) {
    char err[1024];
    RecordReader *r = records_open(path, err, sizeof err);
    if (!r) ppa_die(2, "judge: %s", err);
    const char *line;
    size_t len;
    long loc, n = 0;
    int got;
    while ((got = records_next(r, &line, &len, &loc)) == 1) n++;
    if (got < 0) ppa_die(2, "judge: %s", records_error(r, NULL));
    records_close(r);
    return n;
}

/* Several ranks: each judges its share of the rows into memory, rank 0 writes them all in input order (a bad row
 * stops the job from the rank that read it, before anything is written) */
static void write_rows_ranks(Judging *g, const char *out, const char *path) {
    if (!strcmp(path, "-")) ppa_die(2, "judge: several ranks read --data by row: give a file, not stdin");
    dist_share(count_rows(path), dist_rank(), &g->lo, &g->hi);
    g->total = g->hi - g->lo;
    char *mine = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&mine, &n);
    int rc = judge_all(mem, g);
    if (rc == -1) ppa_die(2, "%s%s%s", g->err, out ? " (left unchanged: " : "", out ? out : "");
    if (rc || fclose(mem)) ppa_die(1, "judge: cannot buffer the output");
    output_gathered(mine, n, out, "judge");
    double counts[3] = {(double)g->rows, (double)g->texts, (double)g->pairs};
    dist_sum_f64(counts, 3);
    g->rows = (long)counts[0], g->texts = (long)counts[1], g->pairs = (long)counts[2];
    free(mine);
}

/* every row in, every row out: to --out atomically or to stdout */
static void write_rows(Judging *g, const char *out) {
    char err[1024];
    if (out) {
        if (atomic_write(out, judge_all, g, err, sizeof err)) {
            if (g->err[0]) ppa_die(2, "%s (%s left unchanged)", g->err, out);
            ppa_die(1, "judge: %s", err);
        }
    } else {
        int rc = judge_all(stdout, g);
        if (rc == -1) ppa_die(2, "%s", g->err);
        if (rc || fflush(stdout) || ferror(stdout)) ppa_die(1, "judge: error writing the output");
    }
}

static void open_input(Judging *g, const char *data) {
    char err[1024];
    g->in = records_open(data, err, sizeof err);
    if (!g->in) ppa_die(2, "judge: %s", err);
}

/* a response longer than the model computes exactly is refused, naming its line (no silent truncation) */
static void check_lengths(const Prepared *p, const Model *m, const char *path) {
    char wh[1024];
    int limit = decoder_model_max_len(model_config(m));
    for (int r = 0; r < p->data.n; r++) {
        const DataRow *x = &p->data.rows[r];
        for (int k = 0; k < x->n_resp; k++)
            if (x->prompt_len + x->resp_len[k] > limit)
                ppa_die(2, "judge: %s: response %d is %d tokens with its prompt, more than the %d the reward model "
                           "computes exactly", records_where(path, x->line, wh, sizeof wh), k + 1, x->prompt_len + x->resp_len[k], limit);
    }
}

static void reward_judge(TrainOptions *o, Judging *g) {
    if (!strcmp(o->data, "-")) ppa_die(2, "judge: a reward model reads --data twice: give a file, not stdin");
    Model *m = load_judge_model(o, o->reward_model, 1);
    PrepArgs pa = dataset_args(o, m);
    pa.model_dir = o->reward_model;
    Prepared p;
    dataset_read(&p, &pa, "judge");
    check_lengths(&p, m, o->data);
    if (o->verbose) fprintf(stderr, "ppa judge: %s; template %s\n", load_kernels(m), p.template_name);
    RefCache rc;
    long tokens = 0; /* of the sequences scored: prompt + response, each */
    for (int r = 0; r < p.data.n; r++)
        for (int k = 0; k < p.data.rows[r].n_resp; k++) tokens += p.data.rows[r].prompt_len + p.data.rows[r].resp_len[k];
    double t0 = timer_now();
    Progress pr;
    progress_init(&pr, "judge", "reward model", dist_rank() == 0);
    refcache_compute_ranks(&rc, m, p.data.rows, p.data.n, setup_batch_tokens(o), o->reward_index, &pr); /* rows divided */
    double secs = timer_now() - t0;
    if (dist_rank()) { /* rank 0 writes every row */
        refcache_free(&rc), dataset_free(&p), model_free(m);
        return;
    }
    g->ds = &p.data, g->rewards = &rc;
    open_input(g, o->data);
    write_rows(g, o->out);
    records_close(g->in);
    fprintf(stderr, "ppa: judge reward-model: %ld rows, %ld responses scored (output %d of %s) in %.2f s, %.1f tokens/s "
                    "of prompt + response; %ld invalid rows left out%s%s\n", g->rows, g->texts, o->reward_index,
            o->reward_model, secs, secs > 0 ? (double)tokens / secs : 0.0, g->dropped, o->out ? " -> " : "",
            o->out ? o->out : "");
    refcache_free(&rc);
    dataset_free(&p);
    model_free(m);
}

/* --judge, or the judge a model folder implies; conflicts refused */
static const char *judge_kind(const TrainOptions *o) {
    const char *implied = o->reward_model ? "reward-model" : o->pair_model ? "pair-model" : NULL;
    if (o->reward_model && o->pair_model) ppa_die(2, "judge: give --reward-model or --pair-model, not both");
    if (o->judge && implied && strcmp(o->judge, implied))
        ppa_die(2, "judge: --judge %s does not match --%s", o->judge, implied);
    const char *k = o->judge ? o->judge : implied;
    if (!k) ppa_die(2, "judge: --judge afinn|vader, --reward-model DIR or --pair-model DIR is required");
    if (strcmp(k, "afinn") && strcmp(k, "vader") && strcmp(k, "reward-model") && strcmp(k, "pair-model"))
        ppa_die(2, "judge: unknown judge '%s' (afinn, vader, reward-model or pair-model)", k);
    if (!strcmp(k, "reward-model") && !o->reward_model) ppa_die(2, "judge: --judge reward-model needs --reward-model DIR");
    if (!strcmp(k, "pair-model") && !o->pair_model) ppa_die(2, "judge: --judge pair-model needs --pair-model DIR");
    return k;
}

int cmd_judge(int argc, char **argv) {
    TrainOptions o;
    setup_options(CMD_JUDGE, USAGE, argc, argv, &o);
    const char *kind = judge_kind(&o), *npm = o.npm_cache ? o.npm_cache : "cache/npm";
    Judging g = {0};
    g.raw = o.raw;
    if (o.raw && strcmp(kind, "afinn") && strcmp(kind, "vader")) ppa_die(2, "judge: --raw is for the lexicons");
    g.hi = -1;
    int ranks = dist_size() > 1;
    progress_init(&g.pr, "judge", kind, dist_rank() == 0);
    struct stat sb; /* a regular file is read once more for the total; a pipe (--data <(...)) can be read once */
    if (!ranks && strcmp(kind, "reward-model") && strcmp(o.data, "-") && (stat(o.data, &sb) || !S_ISFIFO(sb.st_mode)))
        g.total = count_rows(o.data);
    if (!strcmp(kind, "reward-model")) {
        reward_judge(&o, &g);
    } else if (!strcmp(kind, "pair-model")) {
        WinJudge pj = {0};
        model_judge_open(&o, "pair-model", &pj);
        g.pair = &pj;
        open_input(&g, o.data);
        if (ranks) write_rows_ranks(&g, o.out, o.data);
        else write_rows(&g, o.out);
        records_close(g.in);
        if (!dist_rank())
            fprintf(stderr, "ppa: judge pair-model: %ld rows, %ld responses, %ld pairs judged in both orders%s%s\n",
                    g.rows, g.texts, g.pairs, o.out ? " -> " : "", o.out ? o.out : "");
        model_judge_close(&pj);
    } else {
        load_judge(&g, kind, npm);
        open_input(&g, o.data);
        if (ranks) write_rows_ranks(&g, o.out, o.data);
        else write_rows(&g, o.out);
        records_close(g.in);
        if (!dist_rank())
            fprintf(stderr, "ppa: judge %s: %ld rows, %ld texts scored%s%s\n", kind, g.rows, g.texts,
                    o.out ? " -> " : "", o.out ? o.out : "");
        afinn_free((AfinnJudge *)g.afinn);
        vader_free((VaderJudge *)g.vader);
    }
    train_options_free(&o);
    return 0;
}
