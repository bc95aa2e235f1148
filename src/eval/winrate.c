/* winrate.c: win rates of responses A against B by a judge (winrate.h):
 * reading and matching the rows, the pairs, the statistics, the JSON. No
 * judge lives here: it comes in through the callbacks of WinJudge. */
#include "eval/winrate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "io/records.h"
#include "tokenizer/strmap.h"

/* the normal quantile of 0.975 */
#define WIN_Z95 1.959963984540054

/* ---- reading */

static void row_free(void *item) {
    WinRow *r = item;
    free(r->prompt);
    for (int i = 0; i < r->n; i++) free(r->responses[i]);
    free(r->responses);
    memset(r, 0, sizeof *r);
}

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static int row_prompt(const cJSON *j, WinRow *r, char *msg, size_t msglen) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
    if (!p && cJSON_GetObjectItemCaseSensitive(j, "prompt_ids"))
        return ppa_fail(msg, msglen, "a row with \"prompt_ids\" and no \"prompt\": win rates need the prompt text");
    if (!p) return ppa_fail(msg, msglen, "no \"prompt\": rows are matched by their prompt text");
    if (!cJSON_IsString(p)) return ppa_fail(msg, msglen, "\"prompt\" must be a string");
    r->prompt = dup_string(p->valuestring);
    return 0;
}

static int row_responses(const cJSON *j, WinRow *r, char *msg, size_t msglen) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "responses");
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(j, "response");
    if (list && one) return ppa_fail(msg, msglen, "both \"responses\" and \"response\": give one of them");
    if (one) {
        if (!cJSON_IsString(one)) return ppa_fail(msg, msglen, "\"response\" must be a string");
        r->responses = xmalloc(sizeof(char *));
        r->responses[r->n++] = dup_string(one->valuestring);
        return 0;
    }
    if (!list && cJSON_GetObjectItemCaseSensitive(j, "response_ids"))
        return ppa_fail(msg, msglen, "\"response_ids\" are token ids: win rates need \"responses\" (text)");
    if (!list) return ppa_fail(msg, msglen, "no \"responses\" (a list of strings) or \"response\" (a string)");
    if (!cJSON_IsArray(list)) return ppa_fail(msg, msglen, "\"responses\" must be a list of strings");
    int n = cJSON_GetArraySize(list);
    if (n < 1) return ppa_fail(msg, msglen, "\"responses\" is empty: a row needs at least one response");
    r->responses = xmalloc(sizeof(char *) * (size_t)n);
    for (const cJSON *it = list->child; it; it = it->next) {
        if (!cJSON_IsString(it)) return ppa_fail(msg, msglen, "\"responses\"[%d] is not a string", r->n);
        r->responses[r->n++] = dup_string(it->valuestring);
    }
    return 0;
}

/* RecordParseFn: one row; row_free releases a partial one */
static int parse_row(const char *line, size_t len, long lineno, void *item, void *ctx, char *msg, size_t msglen) {
    (void)ctx;
    WinRow *r = item;
    r->line = lineno;
    cJSON *j = json_parse(line, len, msg, msglen);
    if (!j) return -1; /* json_parse said why */
    int rc = !cJSON_IsObject(j)              ? ppa_fail(msg, msglen, "a line must be a JSON object")
             : row_prompt(j, r, msg, msglen) ? -1
                                             : row_responses(j, r, msg, msglen);
    cJSON_Delete(j);
    return rc;
}

/* The prompts of s into m (prompt -> row index); a prompt twice is an error naming both lines. */
static int index_rows(const WinSet *s, StrMap *m, char *err, size_t errlen) {
    strmap_init(m);
    for (int i = 0; i < s->n; i++) {
        const WinRow *r = &s->rows[i];
        size_t len = strlen(r->prompt);
        int k = strmap_get(m, r->prompt, len);
        if (k >= 0) {
            strmap_free(m);
            return ppa_fail(err, errlen, "%s:%ld: the same prompt as %s:%ld (a prompt may appear once per file)",
                            s->path, r->line, s->path, s->rows[k].line);
        }
        strmap_put(m, r->prompt, len, i);
    }
    return 0;
}

int winrate_read(const char *path, WinSet *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    void *rows;
    long skipped;
    if (records_read_all(path, sizeof(WinRow), parse_row, row_free, NULL, 0, &rows, &s->n, &skipped, err, errlen))
        return -1;
    s->rows = rows;
    s->path = dup_string(path);
    StrMap m;
    if (index_rows(s, &m, err, errlen)) {
        winrate_free(s);
        return -1;
    }
    strmap_free(&m);
    return 0;
}

void winrate_free(WinSet *s) {
    for (int i = 0; i < s->n; i++) row_free(&s->rows[i]);
    free(s->rows);
    free(s->path);
    memset(s, 0, sizeof *s);
}

/* ---- matching */

/* match[i] = the row of b with a's row i's prompt, or -1. An unmatched row of
 * either file is an error unless skip (then counted in *skipped). */
static int match_rows(const WinSet *a, const WinSet *b, int skip, int *match, long *skipped, char *err,
                      size_t errlen) {
    char wh[1024];
    StrMap ma, mb;
    if (index_rows(a, &ma, err, errlen)) return -1;
    strmap_free(&ma); /* built for the duplicate check only */
    if (index_rows(b, &mb, err, errlen)) return -1;
    char *used = xcalloc((size_t)b->n + 1, 1);
    int rc = 0;
    *skipped = 0;
    for (int i = 0; i < a->n && !rc; i++) {
        match[i] = strmap_get(&mb, a->rows[i].prompt, strlen(a->rows[i].prompt));
        if (match[i] >= 0) used[match[i]] = 1;
        else if (skip) (*skipped)++;
        else rc = ppa_fail(err, errlen, "%s: this prompt is not in %s (--skip-unmatched to leave it out)",
                           records_where(a->path, a->rows[i].line, wh, sizeof wh), b->path);
    }
    for (int i = 0; i < b->n && !rc; i++) {
        if (used[i]) continue;
        if (skip) (*skipped)++;
        else rc = ppa_fail(err, errlen, "%s: this prompt is not in %s (--skip-unmatched to leave it out)",
                           records_where(b->path, b->rows[i].line, wh, sizeof wh), a->path);
    }
    free(used);
    strmap_free(&mb);
    return rc;
}

/* ---- judging one prompt */

typedef struct {
    double outcome; /* sum of the pairs' outcomes */
    double p;       /* sum of the pairs' p (preference judges) */
    long wins, ties, losses;
} PromptSums;

static void count(PromptSums *s, double outcome) {
    s->outcome += outcome;
    if (outcome == 1.0) s->wins++;
    else if (outcome == 0.5) s->ties++;
    else s->losses++;
}

static int score_file(const WinJudge *j, const WinSet *s, const WinRow *r, double *out, char *err, size_t errlen) {
    char why[1024] = "";
    if (j->score(j->ctx, r->prompt, (const char *const *)r->responses, r->n, out, why, sizeof why))
        return ppa_fail(err, errlen, "%s:%ld: judge %s: %s", s->path, r->line, j->name, why);
    for (int k = 0; k < r->n; k++)
        if (!isfinite(out[k]))
            return ppa_fail(err, errlen, "%s:%ld: judge %s gave response %d the score %g (not finite)", s->path,
                            r->line, j->name, k, out[k]);
    return 0;
}

static int by_score(const WinJudge *j, const WinSet *a, const WinRow *ra, const WinSet *b, const WinRow *rb,
                    PromptSums *s, char *err, size_t errlen) {
    double *sa = xmalloc(sizeof(double) * (size_t)(ra->n + rb->n)), *sb = sa + ra->n;
    int rc = score_file(j, a, ra, sa, err, errlen);
    if (!rc) rc = score_file(j, b, rb, sb, err, errlen);
    for (int x = 0; x < ra->n && !rc; x++)
        for (int y = 0; y < rb->n; y++) count(s, sa[x] > sb[y] ? 1.0 : sa[x] == sb[y] ? 0.5 : 0.0);
    free(sa);
    return rc;
}

static int by_preference(const WinJudge *j, const WinSet *a, const WinRow *ra, const WinRow *rb, PromptSums *s,
                         char *err, size_t errlen) {
    char wh[1024];
    char why[1024] = "";
    for (int x = 0; x < ra->n; x++)
        for (int y = 0; y < rb->n; y++) {
            double p = NAN;
            if (j->prefer(j->ctx, ra->prompt, ra->responses[x], rb->responses[y], &p, why, sizeof why))
                return ppa_fail(err, errlen, "%s: judge %s: %s", records_where(a->path, ra->line, wh, sizeof wh), j->name, why);
            if (!(p >= 0.0 && p <= 1.0)) /* NaN fails too */
                return ppa_fail(err, errlen,
                                "%s: judge %s gave p = %g for response %d of A against %d of B (not in [0, 1])",
                                records_where(a->path, ra->line, wh, sizeof wh), j->name, p, x, y);
            s->p += p;
            count(s, p > 0.5 ? 1.0 : p == 0.5 ? 0.5 : 0.0);
        }
    return 0;
}

/* ---- statistics and output */

void winrate_summarize(const double *means, long n, double *rate, double *se, double ci95[2]) {
    double sum = 0.0;
    for (long i = 0; i < n; i++) sum += means[i];
    double mean = sum / (double)n, ss = 0.0;
    for (long i = 0; i < n; i++) ss += (means[i] - mean) * (means[i] - mean);
    *rate = mean;
    *se = n > 1 ? sqrt(ss / (double)(n - 1)) / sqrt((double)n) : 0.0;
    ci95[0] = fmax(0.0, mean - WIN_Z95 * *se);
    ci95[1] = fmin(1.0, mean + WIN_Z95 * *se);
}

int winrate_compute(const WinSet *a, const WinSet *b, const WinJudge *j, int skip_unmatched, WinResult *r, char *err,
                    size_t errlen) {
    *r = (WinResult){.judge = j->name, .a = a->path, .b = b->path, .has_preference = j->prefer != NULL};
    if (!j->score == !j->prefer)
        return ppa_fail(err, errlen, "judge %s: give exactly one of score and prefer", j->name);
    int *match = xmalloc(sizeof(int) * ((size_t)a->n + 1));
    if (match_rows(a, b, skip_unmatched, match, &r->skipped_unmatched, err, errlen)) {
        free(match);
        return -1;
    }
    double *means = xmalloc(sizeof(double) * ((size_t)a->n + 1)), *prefs = xmalloc(sizeof(double) * ((size_t)a->n + 1));
    long *lines = xmalloc(sizeof(long) * ((size_t)a->n + 1)), matched = 0;
    for (int i = 0; i < a->n; i++) matched += match[i] >= 0;
    if (j->progress) progress_start(j->progress, 0, matched); /* prompts: each the same K_A x K_B, as generate writes */
    int rc = 0;
    for (int i = 0; i < a->n && !rc; i++) {
        if (match[i] < 0) continue;
        const WinRow *ra = &a->rows[i], *rb = &b->rows[match[i]];
        PromptSums s = {0};
        rc = j->score ? by_score(j, a, ra, b, rb, &s, err, errlen) : by_preference(j, a, ra, rb, &s, err, errlen);
        long pairs = (long)ra->n * rb->n;
        lines[r->prompts] = ra->line;
        means[r->prompts] = s.outcome / (double)pairs;
        prefs[r->prompts++] = s.p / (double)pairs;
        r->pairs += pairs, r->wins += s.wins, r->ties += s.ties, r->losses += s.losses;
        if (j->progress && !rc) progress_update(j->progress, r->prompts, "%ld/%ld prompts", r->prompts, matched);
    }
    if (j->progress) progress_end(j->progress);
    if (!rc && r->prompts == 0) rc = ppa_fail(err, errlen, "no prompt is in both %s and %s", a->path, b->path);
    if (!rc) {
        winrate_summarize(means, r->prompts, &r->win_rate, &r->se, r->ci95);
        double sum = 0.0;
        for (long i = 0; i < r->prompts; i++) sum += prefs[i];
        if (r->has_preference) r->mean_preference = sum / (double)r->prompts;
    }
    free(prefs);
    free(match);
    if (rc) {
        free(means);
        free(lines);
    } else {
        r->means = means, r->lines = lines;
    }
    return rc;
}

void winrate_result_free(WinResult *r) {
    free(r->means);
    free(r->lines);
    r->means = NULL, r->lines = NULL;
}

/* "per_prompt" and "per_prompt_lines" on o; 0 when out of memory */
static int add_per_prompt(cJSON *o, const WinResult *r) {
    cJSON *m = cJSON_CreateArray(), *l = cJSON_CreateArray();
    int ok = m && l;
    for (long i = 0; ok && i < r->prompts; i++)
        ok = cJSON_AddItemToArray(m, json_number_exact(r->means[i])) &&
             cJSON_AddItemToArray(l, cJSON_CreateNumber((double)r->lines[i]));
    if (ok && cJSON_AddItemToObject(o, "per_prompt", m)) {
        if (cJSON_AddItemToObject(o, "per_prompt_lines", l)) return 1;
        cJSON_Delete(l);
        return 0;
    }
    cJSON_Delete(m);
    cJSON_Delete(l);
    return 0;
}

cJSON *winrate_json(const WinResult *r) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int ok = cJSON_AddStringToObject(o, "judge", r->judge) && cJSON_AddStringToObject(o, "a", r->a) &&
             cJSON_AddStringToObject(o, "b", r->b) && cJSON_AddNumberToObject(o, "prompts", (double)r->prompts) &&
             cJSON_AddNumberToObject(o, "pairs", (double)r->pairs) &&
             cJSON_AddNumberToObject(o, "wins", (double)r->wins) &&
             cJSON_AddNumberToObject(o, "ties", (double)r->ties) &&
             cJSON_AddNumberToObject(o, "losses", (double)r->losses) &&
             cJSON_AddItemToObject(o, "win_rate", json_number_exact(r->win_rate)) &&
             cJSON_AddItemToObject(o, "stderr", json_number_exact(r->se));
    cJSON *ci = ok ? cJSON_CreateArray() : NULL; /* exact numbers: the shortest text that reads back the same */
    ok = ci && cJSON_AddItemToArray(ci, json_number_exact(r->ci95[0])) && cJSON_AddItemToArray(ci, json_number_exact(r->ci95[1]));
    ok = ok && cJSON_AddItemToObject(o, "ci95", ci);
    if (ci && !ok) cJSON_Delete(ci);
    ok = ok && cJSON_AddNumberToObject(o, "skipped_unmatched", (double)r->skipped_unmatched);
    if (ok && r->has_preference) ok = cJSON_AddItemToObject(o, "mean_preference", json_number_exact(r->mean_preference));
    if (ok && r->write_per_prompt) ok = add_per_prompt(o, r);
    if (!ok) cJSON_Delete(o);
    return ok ? o : NULL;
}

int winrate_write_json(FILE *f, const WinResult *r) {
    cJSON *o = winrate_json(r);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s) {
        errno = ENOMEM;
        return -1;
    }
    int rc = fputs(s, f) == EOF || fputc('\n', f) == EOF ? -1 : 0;
    free(s);
    return rc;
}
