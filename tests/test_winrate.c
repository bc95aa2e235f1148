/* test_winrate.c: win rates (src/eval/winrate.h) with made-up judges whose
 * answers are known, on files written here: the counting of pairs, ties as
 * 1/2, every prompt weighing the same, the standard error and the clipped
 * 95% interval against values worked out by hand, and the refusals of bad
 * input with FILE:LINE. The fake judges read each response as a number:
 *   score judge       s(r) = the number
 *   preference judge  p(a, b) = 0.5 + 0.1 (a - b)
 * The real judges (afinn, vader) are tested through the CLI (test_winrate.sh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "eval/winrate.h"

static char tmpdir[64];

typedef struct {
    int calls;
    int sizes; /* sum of n over the calls */
} Fake;

static int fake_score(void *ctx, const char *prompt, const char *const *responses, int n, double *out, char *err,
                      size_t errlen) {
    Fake *f = ctx;
    f->calls++, f->sizes += n;
    if (!prompt) return snprintf(err, errlen, "no prompt"), -1;
    for (int i = 0; i < n; i++) {
        if (!strcmp(responses[i], "fail")) return snprintf(err, errlen, "cannot score '%s'", responses[i]), -1;
        out[i] = strtod(responses[i], NULL); /* "nan" gives NaN */
    }
    return 0;
}

static int fake_prefer(void *ctx, const char *prompt, const char *a, const char *b, double *p, char *err,
                       size_t errlen) {
    Fake *f = ctx;
    f->calls++;
    if (!prompt || !strcmp(a, "fail")) return snprintf(err, errlen, "cannot compare"), -1;
    *p = 0.5 + 0.1 * (strtod(a, NULL) - strtod(b, NULL));
    return 0;
}

/* writes tmpdir/name; the path into path[256] */
static const char *put(char *path, const char *name, const char *text) {
    snprintf(path, 256, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) == EOF || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return path;
}

/* the sets of the last run: a WinResult borrows their paths */
static WinSet set_a, set_b;
/* the per-prompt arrays of the last run's result, freed by the next run */
static WinResult last;

/* reads two files and computes; the status, with err */
static int run(const char *a_text, const char *b_text, int prefer, int skip, WinResult *r, Fake *fake, char *err,
               size_t errlen) {
    char pa[256], pb[256];
    winrate_free(&set_a);
    winrate_free(&set_b);
    *fake = (Fake){0};
    if (winrate_read(put(pa, "a.jsonl", a_text), &set_a, err, errlen)) return -1;
    if (winrate_read(put(pb, "b.jsonl", b_text), &set_b, err, errlen)) return -1;
    WinJudge j = {
        .name = "fake", .score = prefer ? NULL : fake_score, .prefer = prefer ? fake_prefer : NULL, .ctx = fake};
    winrate_result_free(&last);
    int rc = winrate_compute(&set_a, &set_b, &j, skip, r, err, errlen);
    last.means = r->means, last.lines = r->lines;
    return rc;
}

/* The worked example. Per prompt (A's responses x B's):
 *   q1  [4, 4] x [1, 2]  4 wins          m = 1    (4 pairs)
 *   q2  [2]    x [2]     1 tie           m = 1/2  (1 pair)
 *   q3  [0]    x [1, 3]  2 losses        m = 0    (2 pairs)
 *   q4  [1, 3] x [2]     1 loss, 1 win   m = 1/2  (2 pairs)
 * 9 pairs: 5 wins, 1 tie, 3 losses. Weighted by pairs that would be 5.5/9;
 * by prompt: win_rate = (1 + 1/2 + 0 + 1/2) / 4 = 1/2.
 * Deviations from 1/2: 1/2, 0, -1/2, 0; squares sum to 1/2; sample variance
 * 1/2 / 3 = 1/6; stderr = sqrt(1/6) / sqrt(4) = 0.2041241452319315;
 * ci95 = 1/2 -+ 1.959963984540054 x 0.2041241452319315
 *      = [0.09992402697039082, 0.9000759730296092].
 * B's rows are in another order and q2 is a one-response "response" row. */
static const char *EX_A = "{\"prompt\": \"q1\", \"responses\": [\"4\", \"4\"]}\n"
                          "{\"prompt\": \"q2\", \"responses\": [\"2\"], \"id\": 2}\n"
                          "\n"
                          "{\"prompt\": \"q3\", \"responses\": [\"0\"]}\n"
                          "{\"prompt\": \"q4\", \"responses\": [\"1\", \"3\"]}\n";
static const char *EX_B = "{\"prompt\": \"q4\", \"responses\": [\"2\"]}\n"
                          "{\"prompt\": \"q3\", \"responses\": [\"1\", \"3\"]}\n"
                          "{\"prompt\": \"q2\", \"response\": \"2\"}\n"
                          "{\"prompt\": \"q1\", \"responses\": [\"1\", \"2\"], \"finished\": [true, false]}\n";

static void check_example_counts(const WinResult *r, const char *what) {
    CHECK(r->prompts == 4 && r->pairs == 9, "%s: 4 prompts, 9 pairs (got %ld, %ld)", what, r->prompts, r->pairs);
    CHECK(r->wins == 5 && r->ties == 1 && r->losses == 3, "%s: 5 wins, 1 tie, 3 losses (got %ld, %ld, %ld)", what,
          r->wins, r->ties, r->losses);
    CHECK(r->win_rate == 0.5, "%s: win rate 1/2 by prompt, not 5.5/9 by pair: got %.17g", what, r->win_rate);
    CHECK_NEAR(r->se, 0.2041241452319315, 0, 1e-15, "%s: stderr sqrt(1/6)/2", what);
    CHECK_NEAR(r->ci95[0], 0.09992402697039082, 0, 1e-14, "%s: ci95 low", what);
    CHECK_NEAR(r->ci95[1], 0.9000759730296092, 0, 1e-14, "%s: ci95 high", what);
    CHECK(r->skipped_unmatched == 0, "%s: nothing skipped", what);
}

static void test_score_judge(void) {
    WinResult r;
    Fake f;
    char err[1024];
    int rc = run(EX_A, EX_B, 0, 0, &r, &f, err, sizeof err);
    CHECK(rc == 0, "score example: %s", rc ? err : "");
    if (rc) return;
    check_example_counts(&r, "score judge");
    CHECK(!r.has_preference, "a score judge has no mean_preference");
    CHECK(f.calls == 8 && f.sizes == 12,
          "one call per prompt and file with all its responses (got %d calls, %d responses)", f.calls, f.sizes);
    CHECK(!strcmp(r.judge, "fake"), "the judge's name");
}

/* Same pairs, p = 0.5 + 0.1 (a - b):
 *   q1  p = .8 .7 .8 .7 -> mean .75, all > 1/2 (wins)
 *   q2  p = .5          -> mean .5, exactly 1/2 (tie)
 *   q3  p = .4 .2       -> mean .3, losses
 *   q4  p = .4 .6       -> mean .5, one loss one win
 * The outcomes are those of the score judge; mean_preference, by prompt as
 * the win rate: (.75 + .5 + .3 + .5) / 4 = .5125. */
static void test_preference_judge(void) {
    WinResult r;
    Fake f;
    char err[1024];
    int rc = run(EX_A, EX_B, 1, 0, &r, &f, err, sizeof err);
    CHECK(rc == 0, "preference example: %s", rc ? err : "");
    if (rc) return;
    check_example_counts(&r, "preference judge");
    CHECK(r.has_preference, "a preference judge has mean_preference");
    CHECK_NEAR(r.mean_preference, 0.5125, 1e-15, 0, "mean preference");
    CHECK(f.calls == 9, "one call per pair (got %d)", f.calls);
}

/* q1: 2 x 2 pairs all won, m = 1; q2: 1 pair lost, m = 0. By prompt 1/2 (by
 * pair it would be 4/5). stderr = sd(1, 0) / sqrt(2) = sqrt(1/2) / sqrt(2) =
 * 1/2; 1/2 -+ 0.98 leaves [0, 1] on both sides: clipped to [0, 1]. */
static void test_prompt_weighting(void) {
    WinResult r;
    Fake f;
    char err[1024];
    int rc = run("{\"prompt\": \"q1\", \"responses\": [\"9\", \"8\"]}\n{\"prompt\": \"q2\", \"response\": \"0\"}\n",
                 "{\"prompt\": \"q1\", \"responses\": [\"1\", \"2\"]}\n{\"prompt\": \"q2\", \"response\": \"5\"}\n", 0,
                 0, &r, &f, err, sizeof err);
    CHECK(rc == 0, "weighting: %s", rc ? err : "");
    if (rc) return;
    CHECK(r.pairs == 5 && r.wins == 4 && r.losses == 1, "4 of 5 pairs won");
    CHECK(r.win_rate == 0.5, "a 4-pair prompt weighs as much as a 1-pair one: got %.17g", r.win_rate);
    CHECK_NEAR(r.se, 0.5, 1e-15, 0, "stderr of (1, 0)");
    CHECK(r.ci95[0] == 0.0 && r.ci95[1] == 1.0, "both ends clipped: [%g, %g]", r.ci95[0], r.ci95[1]);
}

/* Means (1, 1, 1/2): rate 5/6; deviations 1/6, 1/6, -1/3, squares 1/36 +
 * 1/36 + 4/36 = 1/6, variance 1/12, stderr sqrt(1/12)/sqrt(3) = 1/6;
 * 5/6 + 1.96/6 = 1.16 -> clipped to 1, low 5/6 - 0.32666 = 0.5066726692433243.
 * Swapped (0, 0, 1/2): rate 1/6, low -0.16 -> clipped to 0, high
 * 0.4933273307566757; wins and losses trade places. */
static void test_clip_and_swap(void) {
    const char *a = "{\"prompt\": \"x\", \"responses\": [\"3\"]}\n{\"prompt\": \"y\", \"responses\": [\"3\"]}\n"
                    "{\"prompt\": \"z\", \"responses\": [\"1\", \"3\"]}\n";
    const char *b = "{\"prompt\": \"z\", \"responses\": [\"2\"]}\n{\"prompt\": \"y\", \"responses\": [\"1\"]}\n"
                    "{\"prompt\": \"x\", \"responses\": [\"2\"]}\n";
    WinResult r, s;
    Fake f;
    char err[1024];
    int rc = run(a, b, 0, 0, &r, &f, err, sizeof err);
    CHECK(rc == 0, "clip: %s", rc ? err : "");
    if (!rc) {
        CHECK_NEAR(r.win_rate, 5.0 / 6.0, 1e-15, 0, "rate 5/6");
        CHECK_NEAR(r.se, 1.0 / 6.0, 1e-15, 0, "stderr 1/6");
        CHECK(r.ci95[1] == 1.0, "high end clipped to 1: %.17g", r.ci95[1]);
        CHECK_NEAR(r.ci95[0], 0.5066726692433243, 1e-15, 0, "low end");
    }
    rc = run(b, a, 0, 0, &s, &f, err, sizeof err);
    CHECK(rc == 0, "swap: %s", rc ? err : "");
    if (rc) return;
    CHECK_NEAR(s.win_rate, 1.0 / 6.0, 1e-15, 0, "swapped rate 1/6");
    CHECK_NEAR(s.win_rate, 1.0 - r.win_rate, 1e-15, 0, "swapped rate = 1 - rate");
    CHECK_NEAR(s.se, r.se, 1e-15, 0, "swapped stderr unchanged");
    CHECK(s.ci95[0] == 0.0, "low end clipped to 0: %.17g", s.ci95[0]);
    CHECK_NEAR(s.ci95[1], 0.4933273307566757, 1e-15, 0, "high end");
    CHECK(s.wins == r.losses && s.losses == r.wins && s.ties == r.ties, "wins and losses swapped");
}

/* One prompt, 2 x 2 pairs (1 win, 2 ties, 1 loss): rate 1/2, stderr 0, ci [1/2, 1/2]. */
static void test_one_prompt(void) {
    WinResult r;
    Fake f;
    char err[1024];
    int rc = run("{\"prompt\": \"only\", \"responses\": [\"2\", \"1\"]}\n",
                 "{\"prompt\": \"only\", \"responses\": [\"1\", \"2\"]}\n", 0, 0, &r, &f, err, sizeof err);
    CHECK(rc == 0, "one prompt: %s", rc ? err : "");
    if (rc) return;
    CHECK(r.wins == 1 && r.ties == 2 && r.losses == 1, "1 win, 2 ties, 1 loss");
    CHECK(r.win_rate == 0.5 && r.se == 0.0, "n = 1: stderr 0 (got %g)", r.se);
    CHECK(r.ci95[0] == 0.5 && r.ci95[1] == 0.5, "n = 1: the interval is the point");
}

static void test_summarize(void) {
    double rate, se, ci[2];
    winrate_summarize((const double[]){1, 0.5, 0, 0.5}, 4, &rate, &se, ci);
    CHECK(rate == 0.5, "summarize: rate");
    CHECK_NEAR(se, 0.2041241452319315, 0, 1e-15, "summarize: stderr");
    CHECK_NEAR(ci[0], 0.09992402697039082, 0, 1e-14, "summarize: low");
    winrate_summarize((const double[]){0.25}, 1, &rate, &se, ci);
    CHECK(rate == 0.25 && se == 0.0 && ci[0] == 0.25 && ci[1] == 0.25, "summarize: n = 1");
    winrate_summarize((const double[]){1, 1, 1}, 3, &rate, &se, ci);
    CHECK(rate == 1.0 && se == 0.0 && ci[1] == 1.0, "summarize: no spread");
}

static void test_json(void) {
    WinResult r;
    Fake f;
    char err[1024];
    static const char *const keys[] = {"judge",          "a",      "b",        "prompts", "pairs", "wins",
                                       "ties",           "losses", "win_rate", "stderr",  "ci95",  "skipped_unmatched",
                                       "mean_preference"};
    if (run(EX_A, EX_B, 1, 0, &r, &f, err, sizeof err)) {
        CHECK(0, "json: %s", err);
        return;
    }
    cJSON *o = winrate_json(&r);
    CHECK(o != NULL, "json object");
    if (!o) return;
    size_t k = 0;
    for (const cJSON *it = o->child; it; it = it->next, k++)
        CHECK(k < 13 && !strcmp(it->string, keys[k]), "key %zu is %s", k, k < 13 ? keys[k] : "(none)");
    CHECK(k == 13, "13 keys with mean_preference (got %zu)", k);
    char *text = cJSON_PrintUnformatted(o); /* the numbers as written: they read back exactly */
    cJSON *back = cJSON_Parse(text);
    const cJSON *ci = cJSON_GetObjectItemCaseSensitive(back, "ci95");
    CHECK(cJSON_GetArraySize(ci) == 2 && cJSON_GetArrayItem(ci, 0)->valuedouble == r.ci95[0] &&
              cJSON_GetArrayItem(ci, 1)->valuedouble == r.ci95[1], "ci95 [lo, hi], exactly");
    CHECK(cJSON_GetObjectItemCaseSensitive(back, "win_rate")->valuedouble == r.win_rate, "win_rate, exactly");
    cJSON_Delete(back);
    free(text);
    CHECK(cJSON_GetObjectItemCaseSensitive(o, "wins")->valuedouble == 5, "wins");
    CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(o, "judge")->valuestring, "fake"), "judge name");
    CHECK(strstr(cJSON_GetObjectItemCaseSensitive(o, "a")->valuestring, "/a.jsonl") != NULL, "a's path");
    cJSON_Delete(o);
    r.has_preference = 0;
    o = winrate_json(&r);
    CHECK(o && !cJSON_GetObjectItemCaseSensitive(o, "mean_preference"), "no mean_preference for a score judge");
    CHECK(o && cJSON_GetArraySize(o) == 12, "12 keys for a score judge");
    cJSON_Delete(o);
    /* per prompt, in A's order: q1 1, q2 1/2, q3 0, q4 1/2, on A's lines 1, 2, 4, 5 (line 3 is blank) */
    r.write_per_prompt = 1;
    cJSON *built = winrate_json(&r); /* exact numbers are raw text: read them back */
    text = built ? cJSON_PrintUnformatted(built) : NULL;
    cJSON_Delete(built);
    o = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "per_prompt"),
                *l = cJSON_GetObjectItemCaseSensitive(o, "per_prompt_lines");
    static const double want[4] = {1, 0.5, 0, 0.5}, want_line[4] = {1, 2, 4, 5};
    int same = cJSON_GetArraySize(m) == 4 && cJSON_GetArraySize(l) == 4;
    for (int i = 0; same && i < 4; i++)
        same = cJSON_GetArrayItem(m, i)->valuedouble == want[i] && cJSON_GetArrayItem(l, i)->valuedouble == want_line[i];
    CHECK(same, "per_prompt [1, 0.5, 0, 0.5] on A's lines [1, 2, 4, 5]");
    CHECK(o && cJSON_GetArraySize(o) == 14, "14 keys with the per-prompt arrays");
    cJSON_Delete(o);
}

/* run() must fail, and err must hold every fragment: the file names come out
 * of the message relative to tmpdir ("a.jsonl:3:" matches "DIR/a.jsonl:3:"). */
static void expect_error(const char *what, const char *a, const char *b, int prefer, int skip, const char *frag1,
                         const char *frag2) {
    WinResult r;
    Fake f;
    char err[1024] = "";
    int rc = run(a, b, prefer, skip, &r, &f, err, sizeof err);
    CHECK(rc == -1, "%s: refused", what);
    CHECK(strstr(err, frag1) != NULL, "%s: '%s' in the message: %s", what, frag1, err);
    if (frag2) CHECK(strstr(err, frag2) != NULL, "%s: '%s' in the message: %s", what, frag2, err);
}

static void test_refusals(void) {
    const char *ok = "{\"prompt\": \"p\", \"responses\": [\"1\"]}\n";
    expect_error("a prompt twice",
                 "{\"prompt\": \"p\", \"responses\": [\"1\"]}\n\n{\"prompt\": \"q\", \"response\": \"1\"}\n"
                 "{\"prompt\": \"p\", \"response\": \"2\"}\n",
                 ok, 0, 0, "/a.jsonl:4: the same prompt as ", "/a.jsonl:1 ");
    expect_error("a prompt twice in B", ok,
                 "{\"prompt\": \"p\", \"responses\": [\"1\"]}\n{\"prompt\": \"p\", \"response\": \"2\"}\n", 0, 0,
                 "/b.jsonl:2: the same prompt as ", "/b.jsonl:1 ");
    expect_error("bad JSON", "{\"prompt\": \"p\", \"responses\": [\"1\"]}\n{\"prompt\": \"q\",\n", ok, 0, 0,
                 "/a.jsonl:2: ", "invalid JSON");
    expect_error("not an object", "42\n", ok, 0, 0, "/a.jsonl:1: a line must be a JSON object", NULL);
    expect_error("an array of non-objects", "[1]\n", ok, 0, 0, "/a.jsonl:element 1: ", NULL); /* a JSON array file */
    expect_error("no prompt", "{\"messages\": [], \"responses\": [\"1\"]}\n", ok, 0, 0, "/a.jsonl:1: no \"prompt\"",
                 NULL);
    expect_error("prompt not a string",
                 "{\"prompt\": [{\"role\": \"user\", \"content\": \"hi\"}], \"responses\": [\"1\"]}\n", ok, 0, 0,
                 "/a.jsonl:1: \"prompt\" must be a string", NULL);
    expect_error("prompt_ids", ok, "{\"prompt_ids\": [1, 2], \"response_ids\": [[3]]}\n", 0, 0,
                 "/b.jsonl:1: a row with \"prompt_ids\" and no \"prompt\": win rates need the prompt text", NULL);
    expect_error("response_ids", "{\"prompt\": \"p\", \"response_ids\": [[3]]}\n", ok, 0, 0,
                 "/a.jsonl:1: \"response_ids\" are token ids", NULL);
    expect_error("no responses", "\n\n{\"prompt\": \"p\"}\n", ok, 0, 0, "/a.jsonl:3: no \"responses\"", NULL);
    expect_error("empty responses", ok, "{\"prompt\": \"p\", \"responses\": []}\n", 0, 0,
                 "/b.jsonl:1: \"responses\" is empty", NULL);
    expect_error("responses not a list", "{\"prompt\": \"p\", \"responses\": \"1\"}\n", ok, 0, 0,
                 "/a.jsonl:1: \"responses\" must be a list of strings", NULL);
    expect_error("a response not a string", "{\"prompt\": \"p\", \"responses\": [\"1\", 2]}\n", ok, 0, 0,
                 "/a.jsonl:1: \"responses\"[1] is not a string", NULL);
    expect_error("response not a string", "{\"prompt\": \"p\", \"response\": 1}\n", ok, 0, 0,
                 "/a.jsonl:1: \"response\" must be a string", NULL);
    expect_error("both response fields", "{\"prompt\": \"p\", \"response\": \"1\", \"responses\": [\"1\"]}\n", ok, 0, 0,
                 "/a.jsonl:1: both \"responses\" and \"response\"", NULL);
    expect_error("empty file", "", ok, 0, 1, "no prompt is in both", NULL);
    expect_error("judge fails",
                 "{\"prompt\": \"q\", \"response\": \"1\"}\n{\"prompt\": \"p\", \"responses\": [\"1\", \"fail\"]}\n",
                 "{\"prompt\": \"q\", \"response\": \"1\"}\n{\"prompt\": \"p\", \"response\": \"1\"}\n", 0, 0,
                 "/a.jsonl:2: judge fake: cannot score 'fail'", NULL);
    expect_error("non-finite score", ok, "{\"prompt\": \"p\", \"responses\": [\"1\", \"nan\"]}\n", 0, 0,
                 "/b.jsonl:1: judge fake gave response 1 the score nan", NULL);
    expect_error("p outside [0, 1]", ok, "{\"prompt\": \"p\", \"responses\": [\"1\", \"-9\"]}\n", 1, 0,
                 "/a.jsonl:1: judge fake gave p = 1.5 for response 0 of A against 1 of B", NULL);
    expect_error("preference judge fails", "{\"prompt\": \"p\", \"responses\": [\"fail\"]}\n", ok, 1, 0,
                 "/a.jsonl:1: judge fake: cannot compare", NULL);
}

/* A has p (line 1), only-a (line 3) and q; B has q, only-b (line 2) and p. */
static void test_unmatched(void) {
    const char *a = "{\"prompt\": \"p\", \"response\": \"2\"}\n\n{\"prompt\": \"only-a\", \"response\": \"9\"}\n"
                    "{\"prompt\": \"q\", \"response\": \"1\"}\n";
    const char *b = "{\"prompt\": \"q\", \"response\": \"1\"}\n{\"prompt\": \"only-b\", \"response\": \"0\"}\n"
                    "{\"prompt\": \"p\", \"response\": \"1\"}\n";
    expect_error("a prompt only in A", a, b, 0, 0, "/a.jsonl:3: this prompt is not in ", "/b.jsonl");
    expect_error("a prompt only in B", "{\"prompt\": \"q\", \"response\": \"1\"}\n", b, 0, 0,
                 "/b.jsonl:2: this prompt is not in ", "/a.jsonl");
    WinResult r;
    Fake f;
    char err[1024];
    int rc = run(a, b, 0, 1, &r, &f, err, sizeof err);
    CHECK(rc == 0, "--skip-unmatched: %s", rc ? err : "");
    if (!rc) {
        CHECK(r.skipped_unmatched == 2, "one row of each file skipped (got %ld)", r.skipped_unmatched);
        CHECK(r.prompts == 2 && r.pairs == 2 && r.wins == 1 && r.ties == 1, "p won, q tied");
        CHECK(r.win_rate == 0.75, "rate over the matched prompts: %g", r.win_rate);
        CHECK(f.calls == 4, "unmatched rows are not judged (%d calls)", f.calls);
    }
    expect_error("nothing in common", "{\"prompt\": \"x\", \"response\": \"1\"}\n", b, 0, 1, "no prompt is in both",
                 NULL);
}

static void test_judge_shape(void) {
    WinSet s = {0};
    WinResult r;
    char err[256];
    WinJudge both = {.name = "two", .score = fake_score, .prefer = fake_prefer};
    CHECK(winrate_compute(&s, &s, &both, 0, &r, err, sizeof err) == -1 && strstr(err, "exactly one"),
          "a judge with both callbacks is refused");
    WinJudge none = {.name = "none"};
    CHECK(winrate_compute(&s, &s, &none, 0, &r, err, sizeof err) == -1, "a judge without a callback is refused");
    char path[256];
    CHECK(winrate_read(put(path, "absent", "") /* then removed */, &s, err, sizeof err) == 0 && s.n == 0,
          "an empty file reads as no rows");
    winrate_free(&s);
    unlink(path);
    CHECK(winrate_read(path, &s, err, sizeof err) == -1 && strstr(err, "cannot open"), "a missing file: %s", err);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_winrate_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    test_score_judge();
    test_preference_judge();
    test_prompt_weighting();
    test_clip_and_swap();
    test_one_prompt();
    test_summarize();
    test_json();
    test_refusals();
    test_unmatched();
    test_judge_shape();
    winrate_free(&set_a);
    winrate_free(&set_b);
    winrate_result_free(&last);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_winrate");
}
