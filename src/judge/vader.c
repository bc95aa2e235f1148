/* vader.c: the rules of vader-sentiment@1.1.3 (src/vaderSentiment.js,
 * SentimentIntensityAnalyzer), in the port's order of floating-point
 * operations. Where the port differs from the Python original (vaderSentiment
 * 3.x), the port is followed:
 *  - words are split off punctuation by the port's dictionary rule
 *    (vader_words.c), not by Python's _strip_punc_if_word;
 *  - the negation test of a single preceding word compares it with NEGATE
 *    case-sensitively ("Not" does not negate; Python lower-cases);
 *  - "but" is found case-sensitively as "but", else "BUT" ("But" is not a
 *    contrast), and every valence before/after its first occurrence is scaled
 *    by position (Python 3.x uses the same positions);
 *  - "never so/this" and the idioms compare the words as written;
 *  - no emoji-to-description step (Python 3.3 added one; the port has none);
 *  - pos/neg/neu and compound are rounded with toFixed() (3 and 4 decimals). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "judge/internal.h"
#include "judge/jstext.h"

static const double B_INCR = 0.293, B_DECR = -0.293, C_INCR = 0.733, N_SCALAR = -0.74;

typedef struct {
    const char *words[3];
    double value;
} Idiom;

/* SPECIAL_CASE_IDIOMS */
static const Idiom IDIOMS[] = {
    {{"the", "shit"}, 3},        {{"the", "bomb"}, 3},           {{"bad", "ass"}, 1.5},
    {{"yeah", "right"}, -2},     {{"cut", "the", "mustard"}, 2}, {{"kiss", "of", "death"}, -1.5},
    {{"hand", "to", "mouth"}, -2},
};

/* the two-word BOOSTER_DICT keys (all three are dampeners) */
static const char *const BOOST_PAIRS[][2] = {{"just", "enough"}, {"kind", "of"}, {"sort", "of"}};

typedef struct {
    const VaderJudge *j;
    const VaderWord *w;
    size_t n;
    int cap_diff;
} Text;

static int eq(const char *s, size_t n, const char *lit) { return strlen(lit) == n && !memcmp(s, lit, n); }
static int word_is(const Text *t, size_t i, const char *lit) { return eq(t->w[i].s, t->w[i].n, lit); }
static int lower_is(const Text *t, size_t i, const char *lit) { return eq(t->w[i].lower, t->w[i].nl, lit); }
static int in_lexicon(const Text *t, size_t i) { return strmap_index(&t->j->lexicon, t->w[i].lower, t->w[i].nl) >= 0; }

/* words i, i+1, ... joined with " " equal the idiom (words never hold " ") */
static int seq_is(const Text *t, size_t i, const char *const *words, size_t count) {
    for (size_t k = 0; k < count; k++)
        if (!words[k] || !word_is(t, i + k, words[k])) return 0;
    return count == 3 || !words[count];
}

/* SPECIAL_CASE_IDIOMS.hasOwnProperty(words i..i+count-1 joined) */
static int idiom(const Text *t, size_t i, size_t count, double *value) {
    for (size_t k = 0; k < PPA_ARRAY_LEN(IDIOMS); k++)
        if (seq_is(t, i, IDIOMS[k].words, count)) {
            *value = IDIOMS[k].value;
            return 1;
        }
    return 0;
}

static int booster_pair(const Text *t, size_t i) {
    for (size_t k = 0; k < PPA_ARRAY_LEN(BOOST_PAIRS); k++)
        if (word_is(t, i, BOOST_PAIRS[k][0]) && word_is(t, i + 1, BOOST_PAIRS[k][1])) return 1;
    return 0;
}

/* negated([word]): in NEGATE (case-sensitive) or containing "n't" */
static int negated(const Text *t, size_t i) {
    const VaderWord *w = &t->w[i];
    if (strmap_index(&t->j->negate, w->s, w->n) >= 0) return 1;
    for (size_t k = 0; k + 3 <= w->n; k++)
        if (!memcmp(w->s + k, "n't", 3)) return 1;
    return 0;
}

/* scalar_inc_dec */
static double scalar_inc_dec(const Text *t, size_t i, double valence) {
    long e = strmap_index(&t->j->boosters, t->w[i].lower, t->w[i].nl);
    if (e < 0) return 0.0;
    double scalar = t->j->boosters.values[e] > 0 ? B_INCR : B_DECR;
    if (valence < 0) scalar *= -1;
    if (t->cap_diff && t->w[i].is_upper) {
        if (valence > 0) scalar += C_INCR;
        else scalar -= C_INCR;
    }
    return scalar;
}

/* never_check; the start_i == 2 test has the port's (and Python's) missing
 * "never" before its second clause */
static double never_check(const Text *t, double v, int start_i, size_t i) {
    if (start_i == 0 && negated(t, i - 1)) v *= N_SCALAR;
    if (start_i == 1) {
        if (word_is(t, i - 2, "never") && (word_is(t, i - 1, "so") || word_is(t, i - 1, "this"))) v *= 1.5;
        else if (negated(t, i - 2)) v *= N_SCALAR;
    }
    if (start_i == 2) {
        if ((word_is(t, i - 3, "never") && (word_is(t, i - 2, "so") || word_is(t, i - 2, "this"))) ||
            word_is(t, i - 1, "so") || word_is(t, i - 1, "this"))
            v *= 1.25;
        else if (negated(t, i - 3)) v *= N_SCALAR;
    }
    return v;
}

/* idioms_check (only reached with i >= 3) */
static double idioms_check(const Text *t, double v, size_t i) {
    /* onezero, twoonezero, twoone, threetwoone, threetwo: the first match */
    static const int FROM[5] = {1, 2, 2, 3, 3}, COUNT[5] = {2, 3, 2, 3, 2};
    double x;
    for (int k = 0; k < 5; k++)
        if (idiom(t, i - (size_t)FROM[k], (size_t)COUNT[k], &x)) {
            v = x;
            break;
        }
    if (t->n - 1 > i && idiom(t, i, 2, &x)) v = x;
    if (t->n - 1 > i + 1 && idiom(t, i, 3, &x)) v = x;
    if (booster_pair(t, i - 3) || booster_pair(t, i - 2)) v = v + B_DECR;
    return v;
}

/* least_check */
static double least_check(const Text *t, double v, size_t i) {
    int least = i > 0 && lower_is(t, i - 1, "least") && !t->j->least_in_lexicon;
    if (least && i > 1) {
        if (!lower_is(t, i - 2, "at") && !lower_is(t, i - 2, "very")) v *= N_SCALAR;
    } else if (least) {
        v *= N_SCALAR;
    }
    return v;
}

/* sentiment_valence for a word of the lexicon */
static double valence_of(const Text *t, size_t i) {
    double v;
    if (!vader_lookup(t->j, t->w[i].lower, t->w[i].nl, &v)) return 0.0;
    if (t->w[i].is_upper && t->cap_diff) {
        if (v > 0) v += C_INCR;
        else v -= C_INCR;
    }
    for (int start_i = 0; start_i < 3; start_i++) {
        size_t p = i - (size_t)(start_i + 1);
        if (i > (size_t)start_i && !in_lexicon(t, p)) {
            double s = scalar_inc_dec(t, p, v);
            if (start_i == 1 && s != 0) s = s * 0.95;
            else if (start_i == 2 && s != 0) s = s * 0.9;
            v = v + s;
            v = never_check(t, v, start_i, i);
            if (start_i == 2) v = idioms_check(t, v, i);
        }
    }
    return least_check(t, v, i);
}

/* allcap_differential: some, but not all, words are ALL CAPS */
static int allcap_differential(const VaderWord *w, size_t n) {
    size_t caps = 0;
    for (size_t i = 0; i < n; i++) caps += (size_t)w[i].is_upper;
    return n - caps > 0 && n - caps < n;
}

static void but_check(const Text *t, double *s) {
    size_t but = t->n;
    for (size_t i = 0; i < t->n && but == t->n; i++)
        if (word_is(t, i, "but")) but = i;
    for (size_t i = 0; i < t->n && but == t->n; i++)
        if (word_is(t, i, "BUT")) but = i;
    if (but == t->n) return;
    for (size_t i = 0; i < t->n; i++) {
        if (i < but) s[i] = 0.5 * s[i];
        else if (i > but) s[i] = 1.5 * s[i];
    }
}

/* amplify_ep + amplify_qm over the whole text */
static double punctuation_emphasis(const char *text, size_t len) {
    long ep = 0, qm = 0;
    for (size_t i = 0; i < len; i++) ep += text[i] == '!', qm += text[i] == '?';
    if (ep > 4) ep = 4;
    double amp = (double)ep * 0.292, qamp = 0;
    if (qm > 1) qamp = qm <= 3 ? (double)qm * 0.18 : 0.96;
    return amp + qamp;
}

static double normalize(double score) {
    double x = score / sqrt(score * score + 15);
    return x < -1.0 ? -1.0 : x > 1.0 ? 1.0 : x;
}

/* score_valence */
static void score_valence(const double *s, size_t n, const char *text, size_t len, VaderScores *out) {
    *out = (VaderScores){0, 0, 0, 0};
    if (n == 0) return;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += s[i];
    double amp = punctuation_emphasis(text, len);
    if (sum > 0) sum += amp;
    else if (sum < 0) sum -= amp;
    double compound = normalize(sum);
    double pos = 0.0, neg = 0.0, neu = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] > 0) pos += s[i] + 1;
        else if (s[i] < 0) neg += s[i] - 1;
        else neu += 1;
    }
    if (pos > fabs(neg)) pos += amp;
    else if (pos < fabs(neg)) neg -= amp;
    double total = pos + fabs(neg) + neu;
    out->neg = js_to_fixed(fabs(neg / total), 3);
    out->neu = js_to_fixed(fabs(neu / total), 3);
    out->pos = js_to_fixed(fabs(pos / total), 3);
    out->compound = js_to_fixed(compound, 4);
}

void vader_polarity(const VaderJudge *j, const char *text, size_t len, VaderScores *out) {
    Text t = {.j = j};
    VaderWord *w;
    t.n = vader_words(text, len, &w);
    t.w = w;
    t.cap_diff = allcap_differential(w, t.n);
    double *s = xmalloc(sizeof(double) * (t.n ? t.n : 1));
    for (size_t i = 0; i < t.n; i++) {
        int kind_of = i + 1 < t.n && lower_is(&t, i, "kind") && lower_is(&t, i + 1, "of");
        int booster = strmap_index(&j->boosters, w[i].lower, w[i].nl) >= 0;
        s[i] = kind_of || booster ? 0.0 : valence_of(&t, i);
    }
    but_check(&t, s);
    score_valence(s, t.n, text, len, out);
    free(s);
    vader_words_free(w, t.n);
}

double vader_label01(const VaderScores *s) { return (s->compound + 1.0) / 2.0; }
