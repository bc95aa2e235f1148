/* vader_words.c: SentiText.get_words_and_emoticons of the JS port: split on
 * each white-space character (/\s/), drop pieces of UTF-16 length <= 1, and
 * replace a piece by its word when it is that word with one PUNC_LIST entry
 * before or after it.
 *
 * The port does the last step with a dictionary mapping p + w and w + p to w
 * for every p in PUNC_LIST and every word w (length > 1) of the text with all
 * ASCII punctuation removed. Since such a w holds no punctuation, a piece is
 * a key exactly when its maximal leading (or trailing) run of ASCII
 * punctuation is a PUNC_LIST entry and the rest is punctuation-free and
 * longer than one unit; that rest is then one of the words, so no dictionary
 * is built. The Python original strips punctuation differently
 * (_strip_punc_if_word); the port's rule is the one reproduced. */
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "judge/internal.h"
#include "judge/jstext.h"

static const char *const PUNC_LIST[] = {".", "!", "?", ",", ";", ":", "-", "'", "\"", "!!", "!!!",
                                        "??", "???", "?!?", "!?!", "?!?!", "!?!?"};

/* REGEX_REMOVE_PUNCTUATION: the 32 ASCII punctuation characters */
static int is_punct(char c) { return c && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) != NULL; }

static int in_punc_list(const char *p, size_t n) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(PUNC_LIST); i++)
        if (strlen(PUNC_LIST[i]) == n && !memcmp(PUNC_LIST[i], p, n)) return 1;
    return 0;
}

static int word_ok(const char *w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (is_punct(w[i])) return 0;
    return js_utf16_len(w, n) > 1;
}

static void strip(const char **s, size_t *n) {
    size_t lead = 0, trail = 0;
    while (lead < *n && is_punct((*s)[lead])) lead++;
    while (trail < *n && is_punct((*s)[*n - 1 - trail])) trail++;
    if (lead > 0 && lead < *n && in_punc_list(*s, lead) && word_ok(*s + lead, *n - lead)) {
        *s += lead;
        *n -= lead;
    } else if (trail > 0 && trail < *n && in_punc_list(*s + *n - trail, trail) && word_ok(*s, *n - trail)) {
        *n -= trail;
    }
}

/* Python's str.isupper() as the port writes it: /^[^a-z]*[A-Z]+[^a-z]*$/,
 * i.e. some ASCII capital and no ASCII small letter. */
static int is_upper(const char *s, size_t n) {
    int cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 'a' && s[i] <= 'z') return 0;
        cap |= s[i] >= 'A' && s[i] <= 'Z';
    }
    return cap;
}

static void add_word(VaderWord **w, size_t *n, size_t *cap, const char *s, size_t len) {
    if (js_utf16_len(s, len) <= 1) return;
    strip(&s, &len);
    if (*n == *cap) *w = xrealloc(*w, sizeof **w * (*cap = *cap ? 2 * *cap : 16));
    VaderWord *x = &(*w)[(*n)++];
    x->s = s;
    x->n = len;
    x->lower = js_lower(s, len, &x->nl);
    x->is_upper = is_upper(s, len);
}

size_t vader_words(const char *text, size_t len, VaderWord **out) {
    VaderWord *w = NULL;
    size_t n = 0, cap = 0, start = 0;
    for (size_t i = 0; i < len;) {
        size_t k = js_space_len(text + i, len - i);
        if (!k) {
            long cp;
            i += js_utf8_next(text + i, len - i, &cp);
            continue;
        }
        add_word(&w, &n, &cap, text + start, i - start);
        i += k;
        start = i;
    }
    add_word(&w, &n, &cap, text + start, len - start);
    *out = w;
    return n;
}

void vader_words_free(VaderWord *w, size_t n) {
    for (size_t i = 0; i < n; i++) free(w[i].lower);
    free(w);
}
