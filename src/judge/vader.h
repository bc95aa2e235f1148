/* vader.h: the VADER judge: vader-sentiment@1.1.3's JavaScript port of VADER
 * (src/vaderSentiment.js, run as build/vaderSentiment.bundle.js), reproduced
 * rule for rule, with its lexicon read at run time from the npm cache
 * (vader_lexicon.txt). Where the port differs from the Python original, the
 * port is followed (the differences are noted in vader.c).
 *
 *   polarity: {neg, neu, pos} proportions rounded to 3 decimals and compound
 *             = x / sqrt(x^2 + 15) rounded to 4, as toFixed() rounds them
 *   label01   = (compound + 1) / 2, in [0, 1] */
#ifndef PPA_VADER_H
#define PPA_VADER_H

#include <stddef.h>

typedef struct VaderJudge VaderJudge;

typedef struct {
    double neg, neu, pos, compound;
} VaderScores;

/* The lexicon inside an npm cache folder (cache/npm). */
#define VADER_LEXICON_FILE "vader-sentiment-1.1.3/vader_lexicon.txt"

/* Lines "token\tmean[\t...]"; a repeated token keeps its last mean, as the
 * port's lexicon does. NULL with "FILE:LINE: reason" in err. */
VaderJudge *vader_load(const char *lexicon_txt, char *err, size_t errlen);

/* Loads VADER_LEXICON_FILE from an npm cache folder; a missing file gives a
 * message that says how to fetch it. */
VaderJudge *vader_load_npm(const char *npm_dir, char *err, size_t errlen);

void vader_free(VaderJudge *j);

/* Distinct tokens of the lexicon. */
size_t vader_lexicon_size(const VaderJudge *j);

/* 1 and the mean in *valence when the token is in the lexicon (exact bytes). */
int vader_lookup(const VaderJudge *j, const char *token, size_t len, double *valence);

void vader_polarity(const VaderJudge *j, const char *text, size_t len, VaderScores *out);

/* (compound + 1) / 2 */
double vader_label01(const VaderScores *s);

#endif
