/* afinn.c: sentiment@5.0.2's tokeniser and scoring (lib/tokenize.js,
 * lib/index.js, languages/en/scoring-strategy.js), operation for operation,
 * with JavaScript's string semantics from jstext.c. */
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "judge/internal.h"
#include "judge/jstext.h"

/* /[.,\/#!?$%\^&\*;:{}=_`\"~()]/g in lib/tokenize.js */
static const char PUNCT[] = ".,/#!?$%^&*;:{}=_`\"~()";

int afinn_lookup(const AfinnJudge *j, const char *token, size_t len, int *value) {
    long e = strmap_index(&j->labels, token, len);
    if (e < 0) return 0;
    *value = j->labels.values[e];
    return 1;
}

/* `negators[prevtoken]` looks the token up on a plain object, so members
 * inherited from Object.prototype are truthy too. Tokens are lower-case and
 * have no '_', which leaves "constructor" as the only such name that occurs. */
static int is_negator(const AfinnJudge *j, const char *tok, size_t n) {
    if (n == 11 && !memcmp(tok, "constructor", 11)) return 1;
    return strmap_index(&j->negators, tok, n) >= 0;
}

/* toLowerCase, "\n" and PUNCT to " ", /\s\s+/g to " ", trim(). Returns the
 * new string; its length in *n. No two white-space characters stay adjacent,
 * so trimming removes at most one at each end. */
static char *normalise(const char *text, size_t len, size_t *n) {
    size_t ln;
    char *low = js_lower(text, len, &ln);
    for (size_t i = 0; i < ln; i++)
        if (low[i] == '\n' || (low[i] && strchr(PUNCT, low[i]))) low[i] = ' ';
    char *out = xmalloc(ln + 1);
    size_t o = 0, last_start = 0;
    int last_space = 0;
    for (size_t i = 0; i < ln;) {
        size_t k = js_space_len(low + i, ln - i);
        if (!k) {
            out[o++] = low[i++];
            last_space = 0;
            continue;
        }
        size_t run = 0, end = i;
        for (size_t m; (m = js_space_len(low + end, ln - end)) > 0; end += m) run++;
        last_start = o;
        last_space = 1;
        if (run >= 2) out[o++] = ' ';
        else memcpy(out + o, low + i, k), o += k;
        i = end;
    }
    if (last_space) o = last_start;
    size_t lead = js_space_len(out, o);
    memmove(out, out + lead, o - lead);
    out[o - lead] = 0;
    *n = o - lead;
    free(low);
    return out;
}

void afinn_analyze(const AfinnJudge *j, const char *text, size_t len, AfinnScore *out) {
    size_t n;
    char *s = normalise(text, len, &n);
    long score = 0, tokens = 0;
    const char *prev = NULL;
    size_t prev_n = 0;
    for (size_t start = 0;;) { /* split(" "): the empty string is one empty token */
        const char *sp = memchr(s + start, ' ', n - start);
        size_t end = sp ? (size_t)(sp - s) : n;
        int v;
        if (afinn_lookup(j, s + start, end - start, &v)) {
            if (prev && is_negator(j, prev, prev_n)) v = -v;
            score += v;
        }
        tokens++;
        prev = s + start;
        prev_n = end - start;
        if (!sp) break;
        start = end + 1;
    }
    free(s);
    out->score = score;
    out->tokens = tokens;
    out->comparative = (double)score / (double)tokens;
}

double afinn_label01(const AfinnScore *s) {
    double x = (s->comparative + 5.0) / 10.0;
    return x < 0 ? 0 : x > 1 ? 1 : x;
}
