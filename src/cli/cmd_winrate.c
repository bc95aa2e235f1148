/* cmd_winrate.c: `ppa winrate`: how often the responses of one file beat
 * those of another on the same prompts, by a judge, as one JSON object
 * (src/eval/winrate.h does the counting and the statistics). The judges are
 * the table JUDGES below: each entry opens a judge as WinJudge callbacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/judges.h"
#include "cli/setup.h"
#include "core/common.h"
#include "core/progress.h"
#include "eval/winrate.h"
#include "io/atomic.h"
#include "judge/afinn.h"
#include "judge/vader.h"


/* ---- the sentiment judges: score judges on each response's label01 (the prompt is not used) */

static int afinn_scores(void *ctx, const char *prompt, const char *const *responses, int n, double *out, char *err,
                        size_t errlen) {
    (void)prompt, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) {
        AfinnScore s;
        afinn_analyze(ctx, responses[i], strlen(responses[i]), &s);
        out[i] = afinn_label01(&s);
    }
    return 0;
}

static int vader_scores(void *ctx, const char *prompt, const char *const *responses, int n, double *out, char *err,
                        size_t errlen) {
    (void)prompt, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) {
        VaderScores s;
        vader_polarity(ctx, responses[i], strlen(responses[i]), &s);
        out[i] = vader_label01(&s);
    }
    return 0;
}

static const char *npm_of(const TrainOptions *o) { return o->npm_cache ? o->npm_cache : "cache/npm"; }

static int open_afinn(const TrainOptions *o, WinJudge *j, char *err, size_t errlen) {
    AfinnJudge *afinn = afinn_load_npm(npm_of(o), err, errlen);
    if (!afinn) return -1;
    if (afinn_emoji_count(afinn) == 0)
        fprintf(stderr, "ppa: winrate: no %s/%s: scoring without sentiment's emoji list\n", npm_of(o), AFINN_EMOJI_FILE);
    j->score = afinn_scores, j->ctx = afinn;
    return 0;
}

static void close_afinn(WinJudge *j) { afinn_free(j->ctx); }

static int open_vader(const TrainOptions *o, WinJudge *j, char *err, size_t errlen) {
    VaderJudge *vader = vader_load_npm(npm_of(o), err, errlen);
    if (!vader) return -1;
    j->score = vader_scores, j->ctx = vader;
    return 0;
}

static void close_vader(WinJudge *j) { vader_free(j->ctx); }

static int open_reward(const TrainOptions *o, WinJudge *j, char *err, size_t errlen) {
    (void)err, (void)errlen; /* a model judge dies with its message */
    model_judge_open(o, "reward-model", j);
    return 0;
}

static int open_pair(const TrainOptions *o, WinJudge *j, char *err, size_t errlen) {
    (void)err, (void)errlen;
    model_judge_open(o, "pair-model", j);
    return 0;
}

/* ---- the judges --judge takes, listed by --help and by the unknown-judge
 * message. A new judge is one more entry here: open sets either j->score (a
 * WinScoreFn: scores the responses of a prompt, as a reward model does) or
 * j->prefer (a WinPreferFn: p that A's response is better than B's, as a
 * pair-preference model does) and j->ctx; close releases ctx. The options it
 * needs go into the option table (options/table.c). */
typedef struct {
    const char *name;
    const char *help; /* for --help */
    int (*open)(const TrainOptions *o, WinJudge *j, char *err, size_t errlen);
    void (*close)(WinJudge *j);
} JudgeKind;

static const JudgeKind JUDGES[] = {
    {"afinn", "score: the AFINN-165 label (comparative + 5) / 10 in [0, 1], as `ppa judge --judge afinn`", open_afinn,
     close_afinn},
    {"vader", "score: the VADER label (compound + 1) / 2 in [0, 1], as `ppa judge --judge vader`", open_vader,
     close_vader},
    {"reward-model", "score: --reward-model's output --reward-index, as `ppa judge --reward-model` scores", open_reward,
     model_judge_close},
    {"pair-model", "preference: --pair-model with --pair-template, P(A) against P(B) averaged over both orders; a\n"
                   "               pair counts 1 when p > 1/2 (\"mean_preference\": the mean p)", open_pair,
     model_judge_close},
};

static const char *judge_names(char *buf, size_t n, const char *sep) {
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < PPA_ARRAY_LEN(JUDGES) && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? sep : "", JUDGES[i].name);
    return buf;
}

static void help(void) {
    char names[256];
    printf("usage: ppa winrate --a A.jsonl --b B.jsonl --judge %s [options]\n\n",
           judge_names(names, sizeof names, "|"));
    fputs("How often the responses of A beat those of B on the same prompts, by a judge. Rows are those of\n"
          "`ppa generate`: {\"prompt\": \"...\", \"responses\": [\"...\", ...]} (or one \"response\": \"...\"),\n"
          "matched by their prompt text. On each prompt every response of A meets every response of B; a pair\n"
          "counts 1 when A's response is judged better, 1/2 on a tie, 0 when B's is better.\n"
          "  win_rate  the mean over prompts of each prompt's mean over its pairs (every prompt weighs the same)\n"
          "  stderr    the sample standard deviation of those per-prompt means / sqrt(prompts); 0 with one prompt\n"
          "  ci95      win_rate -+ 1.96 stderr, clipped to [0, 1]\n\n"
          "Judges (a score judge: the higher score wins, equal scores tie):\n",
          stdout);
    for (size_t i = 0; i < PPA_ARRAY_LEN(JUDGES); i++) printf("  %-12s %s\n", JUDGES[i].name, JUDGES[i].help);
    fputs("\n"
          "Output: {\"judge\", \"a\", \"b\", \"prompts\", \"pairs\", \"wins\", \"ties\", \"losses\", \"win_rate\",\n"
          "\"stderr\", \"ci95\": [lo, hi], \"skipped_unmatched\"} on one line, and a summary line on stderr;\n"
          "--per-prompt adds \"per_prompt\" (each prompt's mean outcome, in A's order) and \"per_prompt_lines\"\n"
          "(A's line of each), for differences paired over prompts between two runs.\n"
          "A malformed row, a row with \"prompt_ids\" but no \"prompt\", an empty response list, a prompt twice in\n"
          "one file or a prompt in one file only stops the run with exit status 2 and FILE:LINE.\n\n",
          stdout);
}

static const JudgeKind *find_judge(const char *name) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(JUDGES); i++)
        if (!strcmp(name, JUDGES[i].name)) return &JUDGES[i];
    char names[256];
    ppa_die(2, "winrate: unknown judge '%s' (valid: %s)", name, judge_names(names, sizeof names, ", "));
}

/* AtomicWriteFn */
static int write_result(FILE *f, const void *ctx) { return winrate_write_json(f, ctx); }

static void read_set(const char *path, WinSet *s) {
    char err[1024];
    if (winrate_read(path, s, err, sizeof err)) ppa_die(2, "%s", err);
}

static void summary(const WinResult *r, const char *out) {
    fprintf(stderr, "ppa: winrate %s: A wins %.3f \u00b1 %.2f (95%% CI %.2f-%.2f) over %ld prompts, %ld pairs",
            r->judge, r->win_rate, r->se, r->ci95[0], r->ci95[1], r->prompts, r->pairs);
    if (r->has_preference) fprintf(stderr, ", mean preference %.3f", r->mean_preference);
    if (r->skipped_unmatched)
        fprintf(stderr, "; %ld unmatched prompt%s skipped", r->skipped_unmatched, r->skipped_unmatched > 1 ? "s" : "");
    fprintf(stderr, "%s%s\n", out ? " -> " : "", out ? out : "");
}

int cmd_winrate(int argc, char **argv) {
    for (int i = 1; i < argc; i++) /* the judges' list first, then the option table's lines */
        if (!strcmp(argv[i], "--help")) help();
    TrainOptions o;
    setup_options(CMD_WINRATE, "", argc, argv, &o);
    const JudgeKind *kind = find_judge(o.judge);
    WinSet a, b;
    read_set(o.a, &a); /* the inputs first: a bad row is found before a judge is loaded */
    read_set(o.b, &b);
    char err[1024];
    Progress pr;
    progress_init(&pr, "winrate", kind->name, 1);
    WinJudge judge = {.name = kind->name};
    if (kind->open(&o, &judge, err, sizeof err)) ppa_die(2, "winrate: %s", err);
    /* the model judges run a forward per response or pair; a lexicon judges thousands of rows a second */
    if (kind->close == model_judge_close) judge.progress = &pr;
    WinResult r;
    if (winrate_compute(&a, &b, &judge, o.skip_unmatched, &r, err, sizeof err)) ppa_die(2, "winrate: %s", err);
    r.write_per_prompt = o.per_prompt;
    if (o.out) {
        if (atomic_write(o.out, write_result, &r, err, sizeof err)) ppa_die(1, "winrate: %s", err);
    } else if (winrate_write_json(stdout, &r) || fflush(stdout) || ferror(stdout)) {
        ppa_die(1, "winrate: error writing the output");
    }
    summary(&r, o.out);
    winrate_result_free(&r);
    kind->close(&judge);
    winrate_free(&a);
    winrate_free(&b);
    train_options_free(&o);
    return 0;
}
