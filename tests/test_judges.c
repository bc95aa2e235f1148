/* test_judges.c: the AFINN and VADER judges (src/judge/).
 * 1. Without the npm cache: the JS object-literal reader on word lists made
 *    up here (bare, quoted, negative, comments, refusals with FILE:LINE), the
 *    sentiment tokeniser and negation, VADER's rules on a made-up lexicon,
 *    and the JavaScript string helpers (toLowerCase, toFixed, \s).
 * 2. With the cache (scripts/fetch-fixtures.sh): every line of
 *    cache/judgeref/{afinn,vader}.jsonl (tests/ref/judges_ref.cjs: the npm
 *    packages on sentiment's 3 x 1001 fixture sentences and our edge cases),
 *    the README examples and validate.js's accuracies. Without the cache these
 *    print SKIP. No AFINN data or fixture text is in this file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/jsonl.h"
#include "judge/afinn.h"
#include "judge/jstext.h"
#include "judge/vader.h"

#define NPM "cache/npm"

static int file_exists(const char *p) { return access(p, R_OK) == 0; }

static char *write_temp(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/ppa_judge_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static AfinnJudge *afinn_text(const char *js, const char *negators, char *err, size_t errlen) {
    char js_path[64], neg_path[64];
    snprintf(js_path, sizeof js_path, "%s", write_temp(js));
    if (negators) snprintf(neg_path, sizeof neg_path, "%s", write_temp(negators));
    AfinnJudge *j = afinn_load(js_path, NULL, negators ? neg_path : NULL, err, errlen);
    unlink(js_path);
    if (negators) unlink(neg_path);
    return j;
}

static void test_js_reader(void) {
    char err[512];
    AfinnJudge *j = afinn_text("/** made-up list */\n// a comment\nexport const list = {\n  zorp: 3,\n"
                               "  'blah blah': -2, /* inline */ \"it's\": -4,\n  $x_1: +1, 'q\\'s': 5,\n"
                               "  zorp: -1,\n};\n",
                               NULL, err, sizeof err);
    CHECK(j != NULL, "made-up list loads: %s", j ? "" : err);
    if (!j) return;
    int v = 0;
    CHECK(afinn_word_count(j) == 5, "5 distinct keys, got %zu", afinn_word_count(j));
    CHECK(afinn_lookup(j, "zorp", 4, &v) && v == -1, "a repeated key keeps the last value (JS)");
    CHECK(afinn_lookup(j, "blah blah", 9, &v) && v == -2, "single-quoted key with a space");
    CHECK(afinn_lookup(j, "it's", 4, &v) && v == -4, "double-quoted key with an apostrophe");
    CHECK(afinn_lookup(j, "$x_1", 4, &v) && v == 1, "identifier with $ and _, +1");
    CHECK(afinn_lookup(j, "q's", 3, &v) && v == 5, "escaped quote in a key");
    CHECK(!afinn_lookup(j, "blah", 4, &v), "absent word");
    afinn_free(j);

    static const struct {
        const char *text, *want;
    } BAD[] = {
        {"export const a = {\n  x: 1,\n  y 2,\n};\n", ":3: expected ':'"},
        {"export const a = {\n  x: 1.5,\n};\n", ":2: a value is not an integer"},
        {"export const a = {\n  'x: 1,\n};\n", ":2: unterminated string key"},
        {"export const a = {\n  x: 1\n  y: 2\n};\n", ":3: expected ',' or '}'"},
        {"export const a = {\n  x: 1,\n};\nmore\n", ":4: unexpected text"},
        {"/* never closed\n", ":1: unterminated /* comment"},
        {"export const a = {};\n", "no entries"},
        {"export const a = [1, 2];\n", ":1: expected `export const NAME = {`"},
        {"", "no object literal"},
        {"export const a = {\n  x: -,\n};\n", ":2: expected an integer"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        err[0] = 0;
        AfinnJudge *b = afinn_text(BAD[i].text, NULL, err, sizeof err);
        CHECK(b == NULL && strstr(err, BAD[i].want) && strstr(err, "/tmp/ppa_judge_"),
              "malformed list %zu refused with FILE:LINE '%s', got '%s'", i, BAD[i].want, err);
        afinn_free(b);
    }
    err[0] = 0;
    j = afinn_load("/nonexistent/afinn.js", NULL, NULL, err, sizeof err);
    CHECK(j == NULL && strstr(err, "/nonexistent/afinn.js"), "missing file named: %s", err);
    j = afinn_load_npm("/nonexistent", err, sizeof err);
    CHECK(j == NULL && strstr(err, "make fixtures"), "missing npm cache says to run make fixtures: %s", err);
}

static void expect_afinn(const AfinnJudge *j, const char *text, long score, long tokens, const char *what) {
    AfinnScore s;
    afinn_analyze(j, text, strlen(text), &s);
    CHECK(s.score == score && s.tokens == tokens && s.comparative == (double)score / (double)tokens,
          "%s: \"%s\" gave score %ld over %ld tokens, want %ld over %ld", what, text, s.score, s.tokens, score, tokens);
}

static void test_afinn_rules(void) {
    char err[512];
    AfinnJudge *j = afinn_text("export const w = {\n  glad: 3,\n  gloom: -2,\n  'glad day': 5,\n  'de-glad': 2,\n"
                               "  \"glad's\": 1,\n  '\\u00e9t\\u00e9': 4,\n  'k': 1\n}\n",
                               "{\"nah\": 1, \"zero\": 0}", err, sizeof err);
    CHECK(j != NULL, "made-up list with negators loads: %s", j ? "" : err);
    if (!j) return;
    expect_afinn(j, "", 0, 1, "the empty text is one empty token");
    expect_afinn(j, "   ", 0, 1, "white space only");
    expect_afinn(j, "Glad.", 3, 1, "lower-case, punctuation to space, trim");
    expect_afinn(j, "GLAD gloom", 1, 2, "sum");
    expect_afinn(j, "nah glad", -3, 2, "negator from the file");
    expect_afinn(j, "zero glad", 3, 2, "a negator whose value is falsy does not negate");
    expect_afinn(j, "not glad", 3, 2, "the default negators are replaced by the file's");
    expect_afinn(j, "constructor glad", -3, 2, "Object.prototype.constructor is truthy in negators[prev]");
    expect_afinn(j, "glad day", 3, 2, "multi-word keys never match");
    expect_afinn(j, "de-glad glad's", 3, 2, "hyphens and apostrophes stay inside tokens");
    expect_afinn(j, "glad\tgloom", 0, 1, "a lone tab stays inside a token");
    expect_afinn(j, "glad \t gloom", 1, 2, "a run of white space becomes one space");
    expect_afinn(j, "glad\n\ngloom!!!", 1, 2, "newlines and !");
    expect_afinn(j, "glad\xc2\xa0\xc2\xa0gloom", 1, 2, "a run of NBSPs is white space in JS");
    expect_afinn(j, "\xc3\x89T\xc3\x89", 4, 1, "non-ASCII lower-casing");
    expect_afinn(j, "\xe2\x84\xaa", 1, 1, "the Kelvin sign lower-cases to k");
    expect_afinn(j, "a,b;c:d(e)f{g}h=i_j`k\"l~m#n$o%p^q&r*s/t?u", 1, 21, "every listed punctuation splits");
    expect_afinn(j, "glad+gloom|glad<glad>", 0, 1, "other punctuation does not split");
    AfinnScore s = {.comparative = -7};
    CHECK(afinn_label01(&s) == 0, "label01 clips below");
    s.comparative = 1;
    CHECK(afinn_label01(&s) == 0.6, "label01 of comparative 1 is 0.6");
    afinn_free(j);
    j = afinn_text("export const w = {glad: 3};", NULL, err, sizeof err);
    expect_afinn(j, "isn't glad", -3, 2, "built-in negators without a file");
    expect_afinn(j, "never glad", 3, 2, "'never' is not one of sentiment's negators");
    afinn_free(j);
}

static void test_jstext(void) {
    CHECK(js_to_fixed(0.0625, 3) == 0.063, "toFixed rounds an exact tie up: 0.0625 -> 0.063");
    CHECK(js_to_fixed(-0.0625, 3) == -0.063, "toFixed rounds a negative tie away from zero");
    CHECK(js_to_fixed(0.1235, 3) == 0.123, "0.1235 is below the tie in binary -> 0.123 (as node)");
    CHECK(js_to_fixed(0.9999, 3) == 1.0, "carry into the units");
    CHECK(js_to_fixed(0.85449999, 4) == 0.8545, "compound rounding");
    CHECK(js_to_fixed(0.0004, 3) == 0 && js_to_fixed(1e-300, 3) == 0, "tiny values round to 0");
    CHECK(js_utf16_len("a\xf0\x9f\x98\x80", 5) == 3 && js_utf16_len("\xc3\xa9", 2) == 1, "UTF-16 lengths");
    size_t n;
    char *s = js_lower("\xc4\xb0X\xe2\x84\xaa\xc3\x89", 8, &n);
    CHECK(n == 7 && !memcmp(s, "i\xcc\x87xk\xc3\xa9", 7), "toLowerCase: U+0130 -> i + U+0307, Kelvin -> k");
    free(s);
    CHECK(js_is_space(0xfeff) && js_is_space(0x2028) && !js_is_space(0x85) && !js_is_space(0x200b),
          "JS \\s: U+FEFF and U+2028 in, U+0085 and U+200B out");
}

static VaderJudge *vader_text(const char *txt, char *err, size_t errlen) {
    char *p = write_temp(txt);
    VaderJudge *j = vader_load(p, err, errlen);
    unlink(p);
    return j;
}

static void test_vader_rules(void) {
    char err[512];
    VaderJudge *j = vader_text("nice\t2.0\t0.5\t[2, 2]\nnasty\t-2.5\t0.5\t[-2]\nnice\t1.5\t0\t[1]\n:)\t2\t0\t[2]\n",
                               err, sizeof err);
    CHECK(j != NULL, "made-up lexicon loads: %s", j ? "" : err);
    if (!j) return;
    double v;
    CHECK(vader_lexicon_size(j) == 3 && vader_lookup(j, "nice", 4, &v) && v == 1.5,
          "3 tokens, a repeated token keeps its last mean");
    VaderScores s;
    vader_polarity(j, "", 0, &s);
    CHECK(s.neg == 0 && s.neu == 0 && s.pos == 0 && s.compound == 0, "empty text: all zero");
    vader_polarity(j, "nice", 4, &s);
    /* sum 1.5: compound 1.5 / sqrt(2.25 + 15); pos = (1.5 + 1) / (1.5 + 1) */
    CHECK(s.pos == 1 && s.neu == 0 && s.compound == js_to_fixed(1.5 / sqrt(17.25), 4), "one positive word");
    VaderScores t;
    vader_polarity(j, "not nice", 8, &t);
    CHECK(t.compound == js_to_fixed(-1.11 / sqrt(1.11 * 1.11 + 15), 4) && t.neg > 0, "negation: x * -0.74");
    vader_polarity(j, "Not nice", 8, &t);
    CHECK(t.compound == js_to_fixed(1.5 / sqrt(17.25), 4), "the port's negation test is case-sensitive");
    vader_polarity(j, "very nice", 9, &t);
    CHECK(t.compound == js_to_fixed(1.793 / sqrt(1.793 * 1.793 + 15), 4), "booster +0.293");
    vader_polarity(j, "nice!!", 6, &t);
    CHECK(t.compound == js_to_fixed((1.5 + 0.584) / sqrt((1.5 + 0.584) * (1.5 + 0.584) + 15), 4), "!! adds 2 x 0.292");
    vader_polarity(j, "nice, but nasty", 15, &t);
    double x = 0.75 + -3.75;
    CHECK(t.compound == js_to_fixed(x / sqrt(x * x + 15), 4), "but: 0.5 before, 1.5 after");
    vader_polarity(j, "NICE day", 8, &t);
    CHECK(t.compound == js_to_fixed(2.233 / sqrt(2.233 * 2.233 + 15), 4), "ALL CAPS among mixed case: +0.733");
    vader_polarity(j, "(nice)", 6, &t);
    CHECK(t.compound == 0 && t.neu == 1, "punctuation on both sides is not stripped by the port");
    vader_polarity(j, "nice!!!!", 8, &s);
    vader_polarity(j, "nice!!!", 7, &t);
    CHECK(s.neu == 1 && t.pos == 1, "the port strips only PUNC_LIST entries (!!! but not !!!!)");
    VaderScores u = {.compound = -1};
    CHECK(vader_label01(&u) == 0 && (u.compound = 0.5, vader_label01(&u) == 0.75), "label01 = (compound + 1) / 2");
    vader_free(j);

    j = vader_text("ok\t1\nbroken line\n", err, sizeof err);
    CHECK(j == NULL && strstr(err, ":2: expected"), "lexicon line without a tab refused: %s", err);
    vader_free(j);
    j = vader_text("ok\tabc\t1\n", err, sizeof err);
    CHECK(j == NULL && strstr(err, ":1: the mean rating is not a number"), "bad mean refused: %s", err);
    vader_free(j);
    j = vader_load_npm("/nonexistent", err, sizeof err);
    CHECK(j == NULL && strstr(err, "make fixtures"), "missing lexicon says to run make fixtures: %s", err);
}

/* sentiment's test/benchmark/validate.js on one fixture file */
static double validate_accuracy(const AfinnJudge *j, const char *set) {
    char path[256];
    snprintf(path, sizeof path, NPM "/sentiment-5.0.2/test/fixtures/%s.json", set);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf) return fclose(f), -1;
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = 0;
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    long pass = 0, total = 0;
    for (const cJSON *r = root ? root->child : NULL; r; r = r->next, total++) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(r, "text");
        const cJSON *cls = cJSON_GetObjectItemCaseSensitive(r, "class");
        AfinnScore s;
        const char *t = cJSON_IsString(text) ? text->valuestring : "";
        afinn_analyze(j, t, strlen(t), &s);
        int zero = cJSON_IsNumber(cls) && cls->valuedouble == 0; /* no class: counted as class 1 */
        pass += zero ? s.comparative < 0 : s.comparative >= 0;
    }
    cJSON_Delete(root);
    return total ? (double)pass / (double)total : -1;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

typedef struct {
    const char *name;
    long lines, ok, exact;
} SetCount;

static SetCount *set_of(SetCount *sets, const cJSON *row) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, "set");
    for (int i = 0; i < 4; i++)
        if (cJSON_IsString(s) && !strcmp(s->valuestring, sets[i].name)) return &sets[i];
    return &sets[3];
}

static void print_sets(const char *judge, const SetCount *sets, const char *exact_what) {
    printf("%s: ", judge);
    for (int i = 0; i < 4; i++)
        printf("%s%s %ld/%ld match (%ld %s)", i ? ", " : "", sets[i].name, sets[i].ok, sets[i].lines, sets[i].exact,
               exact_what);
    printf("\n");
}

static void afinn_published_checks(const AfinnJudge *j) {
    CHECK(afinn_word_count(j) == 3382, "AFINN-165 has 3382 entries (formats.md), got %zu", afinn_word_count(j));
    CHECK(afinn_emoji_count(j) == 767, "sentiment's emoji.json has 767 entries, got %zu", afinn_emoji_count(j));
    AfinnScore s;
    afinn_analyze(j, "Cats are stupid.", 16, &s);
    CHECK(s.score == -2 && js_to_fixed(s.comparative, 4) == -0.6667, "README: \"Cats are stupid.\" -> -2, -0.6667");
    static const struct {
        const char *set;
        double want;
    } ACC[] = {{"amazon", 0.726}, {"imdb", 0.765}, {"yelp", 0.696}};
    for (int i = 0; i < 3; i++) {
        double acc = validate_accuracy(j, ACC[i].set);
        printf("validate.js accuracy %s: %.4f (README %.3f)\n", ACC[i].set, acc, ACC[i].want);
        CHECK(fabs(acc - ACC[i].want) < 5e-4, "%s accuracy %.6f, README says %.3f", ACC[i].set, acc, ACC[i].want);
    }
}

/* One line of an oracle file: compares the judge on text with the row's
 * numbers (CHECKs naming ref:line); sets *exact when bit-identical. */
typedef int (*CompareFn)(const void *judge, const char *t, const cJSON *row, const char *ref, long line, int *exact);

/* Every line of an oracle file through cmp, counted per fixture set. */
static void compare_reference(const void *judge, const char *ref, CompareFn cmp, const char *title, const char *exact_what) {
    FILE *f = fopen(ref, "r");
    JsonlReader rd;
    jsonl_init(&rd, f, ref);
    SetCount sets[4] = {{"amazon", 0, 0, 0}, {"imdb", 0, 0, 0}, {"yelp", 0, 0, 0}, {"edge", 0, 0, 0}};
    char *line;
    while (jsonl_next(&rd, &line)) {
        cJSON *row = cJSON_Parse(line);
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(row, "text");
        SetCount *c = set_of(sets, row);
        int exact = 0, ok = cmp(judge, cJSON_IsString(text) ? text->valuestring : "", row, ref, rd.line, &exact);
        c->lines++;
        c->ok += ok;
        c->exact += ok && exact;
        cJSON_Delete(row);
    }
    jsonl_free(&rd);
    fclose(f);
    print_sets(title, sets, exact_what);
}

static int afinn_line(const void *judge, const char *t, const cJSON *row, const char *ref, long line, int *exact) {
    AfinnScore s;
    afinn_analyze(judge, t, strlen(t), &s);
    double want_score = num(row, "score"), want_cmp = num(row, "comparative");
    int ok = (double)s.score == want_score && fabs(s.comparative - want_cmp) <= 1e-12;
    CHECK(ok, "%s:%ld: \"%s\": score %ld comparative %.17g, sentiment says %.17g %.17g", ref, line, t, s.score,
          s.comparative, want_score, want_cmp);
    *exact = s.comparative == want_cmp;
    return ok;
}

static int vader_line(const void *judge, const char *t, const cJSON *row, const char *ref, long line, int *exact) {
    VaderScores s;
    vader_polarity(judge, t, strlen(t), &s);
    double w[4] = {num(row, "neg"), num(row, "neu"), num(row, "pos"), num(row, "compound")};
    double g[4] = {s.neg, s.neu, s.pos, s.compound};
    int ok = 1;
    *exact = 1;
    for (int k = 0; k < 4; k++) ok &= fabs(g[k] - w[k]) <= 1e-4, *exact &= g[k] == w[k];
    CHECK(ok, "%s:%ld: \"%s\": neg %g neu %g pos %g compound %g, the JS port says %g %g %g %g", ref, line, t, g[0], g[1],
          g[2], g[3], w[0], w[1], w[2], w[3]);
    return ok;
}

static void test_afinn_reference(void) {
    const char *ref = "cache/judgeref/afinn.jsonl";
    char err[512];
    if (!file_exists(NPM "/" AFINN_JS_FILE) || !file_exists(NPM "/" AFINN_EMOJI_FILE)) {
        printf("SKIP AFINN against sentiment@5.0.2: no %s or %s (run scripts/fetch-fixtures.sh)\n",
               NPM "/" AFINN_JS_FILE, NPM "/" AFINN_EMOJI_FILE);
        return;
    }
    AfinnJudge *j = afinn_load_npm(NPM, err, sizeof err);
    CHECK(j != NULL, "AFINN loads from the cache: %s", j ? "" : err);
    if (!j) return;
    afinn_published_checks(j);
    if (file_exists(ref)) compare_reference(j, ref, afinn_line, "AFINN vs sentiment@5.0.2", "bit-identical comparative");
    else printf("SKIP AFINN against sentiment@5.0.2: no %s (run scripts/fetch-fixtures.sh)\n", ref);
    afinn_free(j);
}

static void test_vader_reference(void) {
    const char *ref = "cache/judgeref/vader.jsonl";
    char err[512];
    if (!file_exists(NPM "/" VADER_LEXICON_FILE)) {
        printf("SKIP VADER against vader-sentiment@1.1.3: no %s (run scripts/fetch-fixtures.sh)\n",
               NPM "/" VADER_LEXICON_FILE);
        return;
    }
    VaderJudge *j = vader_load_npm(NPM, err, sizeof err);
    CHECK(j != NULL, "VADER lexicon loads: %s", j ? "" : err);
    if (!j) return;
    CHECK(vader_lexicon_size(j) == 7503, "7517 lines, 14 repeated: 7503 tokens, got %zu", vader_lexicon_size(j));
    const char *readme = "VADER is very smart, handsome, and funny";
    VaderScores s;
    vader_polarity(j, readme, strlen(readme), &s);
    CHECK(s.neg == 0 && s.neu == 0.299 && s.pos == 0.701 && s.compound == 0.8545,
          "README example: neg %g neu %g pos %g compound %g", s.neg, s.neu, s.pos, s.compound);
    if (!file_exists(ref)) {
        printf("SKIP VADER against vader-sentiment@1.1.3: no %s (run scripts/fetch-fixtures.sh)\n", ref);
        vader_free(j);
        return;
    }
    compare_reference(j, ref, vader_line, "VADER vs vader-sentiment@1.1.3", "bit-identical");
    vader_free(j);
}

int main(void) {
    test_jstext();
    test_js_reader();
    test_afinn_rules();
    test_vader_rules();
    test_afinn_reference();
    test_vader_reference();
    return check_report("test_judges");
}
