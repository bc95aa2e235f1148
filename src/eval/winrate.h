/* winrate.h: win rates of one set of responses (A) against another (B) on the
 * same prompts, by a judge. This is the counting and the statistics, not a
 * judge: judges come in as callbacks (a score judge rates the responses of a
 * prompt, a preference judge compares two responses), so model-based judges
 * plug in without changes here.
 *
 * Input: JSON Lines rows as `ppa generate` writes them, {"prompt": "...",
 * "responses": ["...", ...], ...}, or one "response": "..."; rows are matched
 * by their prompt text (a prompt may appear once per file).
 *
 * On each prompt of both files every response of A meets every response of B
 * (K_A x K_B pairs); a pair's outcome is 1 (A better), 1/2 (tie), 0 (B better).
 *   m_i       = mean outcome over the pairs of prompt i
 *   win_rate  = mean of m_i over the n prompts: each prompt weighs the same,
 *               however many pairs it has
 *   stderr    = sample standard deviation of m_i (divisor n - 1) / sqrt(n);
 *               0 when n = 1: one prompt gives no spread to measure, so the
 *               0 means "unknown", not "exact"
 *   ci95      = win_rate -+ 1.959963984540054 stderr, clipped to [0, 1]
 * The interval is over prompts (a normal approximation); the pairs within a
 * prompt are not independent and are not counted as samples.
 * Sums are in double, in the order of A's rows: results are deterministic. */
#ifndef PPA_WINRATE_H
#define PPA_WINRATE_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/progress.h"

/* Scores out[n] of the n responses of one prompt (higher is better). Called
 * once per prompt and file with all that file's responses, so a model judge
 * can compute the prompt once. 0, or -1 with a message in err. */
typedef int (*WinScoreFn)(void *ctx, const char *prompt, const char *const *responses, int n, double *out, char *err,
                          size_t errlen);

/* *p = probability that response a is better than response b, in [0, 1].
 * Called once per pair, a from A and b from B. 0, or -1 with err. */
typedef int (*WinPreferFn)(void *ctx, const char *prompt, const char *a, const char *b, double *p, char *err,
                           size_t errlen);

typedef struct {
    const char *name;   /* written as "judge" */
    WinScoreFn score;   /* exactly one of score and prefer is set */
    WinPreferFn prefer;
    void *ctx;          /* given to the callback */
    Progress *progress; /* optional (a model judge): a line per prompt judged */
} WinJudge;

typedef struct {
    char *prompt;
    char **responses; /* [n] */
    int n;            /* >= 1 */
    long line;        /* 1-based line of the row in its file */
} WinRow;

typedef struct {
    char *path;   /* the file, for messages and the output */
    WinRow *rows; /* [n] in file order, prompts distinct */
    int n;
} WinSet;

/* Reads every row of path (blank lines skipped). 0, or -1 with
 * "path:LINE: why" in err and nothing allocated: malformed JSON, a missing or
 * mistyped field, "prompt_ids" without "prompt", an empty response list, a
 * prompt already on an earlier line (both lines named). */
int winrate_read(const char *path, WinSet *s, char *err, size_t errlen);
void winrate_free(WinSet *s);

typedef struct {
    const char *judge, *a, *b; /* borrowed: the judge's name, the two paths */
    long prompts;              /* judged: in both files */
    long pairs, wins, ties, losses;
    long skipped_unmatched;    /* rows of A or B whose prompt is not in the other file */
    double win_rate, se;       /* se: "stderr" in the JSON */
    double ci95[2];
    int has_preference;        /* a preference judge: mean_preference is set */
    double mean_preference;    /* mean over prompts of the mean p of their pairs */
    double *means;             /* [prompts] m_i in the order of A's rows (owned) */
    long *lines;               /* [prompts] A's line of each (owned) */
    int write_per_prompt;      /* winrate_json adds "per_prompt" and "per_prompt_lines" */
} WinResult;

/* Judges every prompt of a that is in b. A prompt in only one file is an
 * error naming the first such FILE:LINE (A's rows first), unless
 * skip_unmatched (then it is counted in r->skipped_unmatched). No prompt in
 * both files, a judge's failure, a non-finite score or p outside [0, 1] are
 * errors naming the prompt's FILE:LINE. 0, or -1 with err. */
int winrate_compute(const WinSet *a, const WinSet *b, const WinJudge *j, int skip_unmatched, WinResult *r, char *err,
                    size_t errlen);

/* Frees what winrate_compute allocated in r. */
void winrate_result_free(WinResult *r);

/* win_rate, stderr and ci95 of n >= 1 per-prompt means, as described above. */
void winrate_summarize(const double *means, long n, double *rate, double *se, double ci95[2]);

/* {"judge", "a", "b", "prompts", "pairs", "wins", "ties", "losses",
 * "win_rate", "stderr", "ci95": [lo, hi], "skipped_unmatched"} and
 * "mean_preference" for a preference judge; with write_per_prompt also
 * "per_prompt": [m_i] and "per_prompt_lines": [A's line], so that two runs on
 * the same prompts can be compared prompt by prompt (paired differences).
 * NULL when out of memory. */
cJSON *winrate_json(const WinResult *r);

/* That object on one line; 0, or -1 with errno set. */
int winrate_write_json(FILE *f, const WinResult *r);

#endif
