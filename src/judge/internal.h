/* internal.h: the judges' shared internals: the loaded word lists and the
 * helpers the loaders share. Not part of the public API (afinn.h, vader.h). */
#ifndef PPA_JUDGE_INTERNAL_H
#define PPA_JUDGE_INTERNAL_H

#include <stddef.h>

#include "judge/afinn.h"
#include "judge/vader.h"
#include "tokenizer/strmap.h"

struct AfinnJudge {
    StrMap labels;     /* word or emoji -> valence (AFINN, then emoji on top, as Object.assign does) */
    StrMap negators;   /* word -> 1 */
    size_t n_afinn;    /* entries read from the AFINN list (duplicates counted once) */
    size_t n_emoji;    /* entries read from emoji.json */
    int have_negators; /* negators came from a file (else the built-in list) */
};

struct VaderJudge {
    StrMap lexicon;  /* token -> index into valence */
    double *valence; /* [lexicon.count] mean rating */
    StrMap boosters; /* single-word boosters/dampeners -> +1 (B_INCR) or -1 (B_DECR) */
    StrMap negate;   /* the NEGATE words, compared case-sensitively */
    int least_in_lexicon;
};

/* One word of VADER's words_and_emoticons: a span of the text, its
 * lower-case form, and whether Python's str.isupper() holds for it. */
typedef struct {
    const char *s;
    size_t n;
    char *lower;
    size_t nl;
    int is_upper;
} VaderWord;

/* Splits text into words_and_emoticons (vader_words.c); returns the count,
 * the array in *out (free with vader_words_free). */
size_t vader_words(const char *text, size_t len, VaderWord **out);
void vader_words_free(VaderWord *w, size_t n);

/* Reads a whole file into a NUL-terminated buffer; NULL with "PATH: reason"
 * in err. *len may be NULL. */
char *judge_read_file(const char *path, size_t *len, char *err, size_t errlen);

/* 1-based line of position p in buf, for FILE:LINE messages. */
long judge_line_of(const char *buf, const char *p);

#endif
