/* afinn.h: the AFINN-165 judge: the `sentiment` npm package's scorer
 * (shared/spec/formats.md section f), reproduced exactly. The word lists are
 * read at run time from the npm cache (never committed: AFINN is ODbL-1.0).
 *
 *   tokens      = lower-case; "\n" and . , / # ! ? $ % ^ & * ; : { } = _ ` " ~ ( )
 *                 to spaces; runs of 2+ white-space characters to one space; trim;
 *                 split on " " (the empty text is one empty token)
 *   score       = sum of the labels of the tokens found, each negated when the
 *                 previous token is a negator
 *   comparative = score / tokens
 *   label01     = (comparative + 5) / 10 clipped to [0, 1], the training label */
#ifndef PPA_AFINN_H
#define PPA_AFINN_H

#include <stddef.h>

typedef struct AfinnJudge AfinnJudge;

typedef struct {
    long score;         /* integer sum of the (negated) labels */
    long tokens;        /* number of tokens */
    double comparative; /* score / tokens */
} AfinnScore;

/* Files inside an npm cache folder (cache/npm, scripts/fetch-fixtures.sh). */
#define AFINN_JS_FILE "afinn-165-2.0.2/index.js"
#define AFINN_EMOJI_FILE "sentiment-5.0.2/build/emoji.json"
#define AFINN_NEGATORS_FILE "sentiment-5.0.2/languages/en/negators.json"

/* afinn_js: the afinn-165 ES module (`export const afinn165 = {key: int, ...}`).
 * emoji_json (may be NULL): {"emoji": int, ...} merged on top, as `sentiment`
 * does. negators_json (may be NULL: the 12 words of formats.md section f):
 * {"word": truthy, ...}. NULL with "FILE:LINE: reason" in err. */
AfinnJudge *afinn_load(const char *afinn_js, const char *emoji_json, const char *negators_json, char *err,
                       size_t errlen);

/* Loads from an npm cache folder: AFINN_JS_FILE, plus the emoji and negator
 * files of sentiment@5.0.2 when they exist. A missing AFINN file gives a
 * message that says how to fetch it. */
AfinnJudge *afinn_load_npm(const char *npm_dir, char *err, size_t errlen);

void afinn_free(AfinnJudge *j);

/* Entries read from the AFINN file and from emoji.json. */
size_t afinn_word_count(const AfinnJudge *j);
size_t afinn_emoji_count(const AfinnJudge *j);

/* 1 and the label in *value when the token (already lower-case) is listed. */
int afinn_lookup(const AfinnJudge *j, const char *token, size_t len, int *value);

void afinn_analyze(const AfinnJudge *j, const char *text, size_t len, AfinnScore *out);

/* (comparative + 5) / 10, clipped to [0, 1]. Every label is within [-5, 5],
 * so comparative is too and the clip only guards the contract. */
double afinn_label01(const AfinnScore *s);

#endif
