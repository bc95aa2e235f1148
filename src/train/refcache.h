/* refcache.h: the reference model's log-probabilities, computed once and
 * cached on disk (pitfalls 9-11: no trainer should run the reference every
 * step). A cache holds, for every row of a prepared data set (after
 * templating, tokenisation, truncation and filtering), the summed log-prob
 * and the scored-token count of each of its responses, all of them: list
 * sampling picks responses later, per epoch.
 *
 * A cache is valid only for the same reference weights, the same token ids
 * (which covers tokenizer, template, data and truncation) and the same
 * settings; the key stores each part separately so that a mismatch can be
 * named ("the data file changed"). File: "PPAREF1\n", one JSON header line
 * (the key and the sizes), then little-endian int32 offsets [n_rows + 1],
 * float64 log-probs [n], int32 counts [n], and a trailing hash of the payload. */
#ifndef PPA_REFCACHE_H
#define PPA_REFCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/progress.h"
#include "data/rows.h"
#include "model/model.h"

typedef struct {
    uint64_t weights;   /* hash of the reference's float32 parameters */
    uint64_t tokens;    /* hash of every row's prompt and response ids, in order */
    uint64_t data_file; /* hash of the data file's bytes (0: not known) */
    char template_name[32];
    int max_length, max_prompt_length;
} RefKey;

typedef struct {
    RefKey key;
    int n_rows;
    int *offset;   /* [n_rows + 1]: row r's responses are [offset[r], offset[r + 1]) */
    double *logp;  /* [offset[n_rows]] */
    int *n_scored; /* [offset[n_rows]] */
} RefCache;

uint64_t refkey_weights(Model *m);
uint64_t refkey_tokens(const DataRow *rows, int n);

/* Runs the reference over the rows, max_tokens packed tokens per forward
 * (rows are never split; a longer row runs alone). pr (may be NULL: no
 * lines), initialised by the caller, is started here and updated after each
 * batch: its units are the rows' tokens (prompt + responses), its text the
 * rows and tokens done. */
void refcache_compute(RefCache *c, Model *ref, const DataRow *rows, int n, long max_tokens, Progress *pr);
/* refcache_compute with a reward model too: then logp holds each response's
 * reward, output index of the head (0 <= index < num_labels), and n_scored
 * its token count (the key is left for the caller). */
void refcache_compute_at(RefCache *c, Model *m, const DataRow *rows, int n, long max_tokens, int index,
                         Progress *pr);
/* refcache_compute with the rows divided among the ranks of an MPI job
 * (contiguous shares) and the results gathered on every rank: the same
 * bytes as one process (a response's log-prob does not depend on its batch).
 * Every rank must call it; pr counts the rank's own share. */
void refcache_compute_ranks(RefCache *c, Model *m, const DataRow *rows, int n, long max_tokens, int index,
                            Progress *pr);
int refcache_save(const RefCache *c, const char *path, char *err, size_t errlen);
int refcache_load(RefCache *c, const char *path, char *err, size_t errlen);
/* 0 if the cache was made for `want` and the rows' shapes, else -1 with the
 * first difference, in words, in why. */
int refcache_check(const RefCache *c, const RefKey *want, const DataRow *rows, int n, char *why, size_t whylen);
void refcache_free(RefCache *c);

#endif
