/* data.h: from a tokenized data set to the lists of each training step.
 *
 * data_prepare (in place, in file order):
 *   1. responses whose label is missing (NaN) are removed;
 *   2. truncation (formats.md a.4, without trl's over-truncation, pitfall 4):
 *      only when prompt + longest response > max_length, the prompt keeps its
 *      last max_prompt_length tokens, then each response keeps its first
 *      max_length - prompt tokens (>= 1 since max_prompt_length < max_length;
 *      a cut response loses its end-of-turn token, as in trl);
 *   3. responses identical (same ids) to an earlier one of the row are
 *      removed (the first, in file order, stays), counted;
 *   4. rows left with fewer than 2 responses, or whose labels are all equal
 *      (no ranking to learn), are dropped, counted.
 * TrainData: each epoch visits the rows in a seeded order (a pure function of
 * seed and epoch); a row with more than list_size responses gives a list of
 * the 2 best and the 2 worst by label (ties: file order) and list_size - 4
 * drawn from the others (list_size 3: best, worst and one drawn; 2: best and
 * worst), a pure function of (seed, epoch, row): resuming needs only
 * (epoch, cursor). Lists are ordered by label, descending (stable). */
#ifndef PPA_TRAIN_DATA_H
#define PPA_TRAIN_DATA_H

#include <stdint.h>

#include "data/rows.h"
#include "train/trainer.h"

typedef struct {
    long masked_responses, truncated_prompts, truncated_responses, duplicate_responses;
    long dropped_few, dropped_equal; /* rows */
} PrepStats;

/* 0, or -1 with err when no row is left: "holds no rows" (an empty file; "holds no valid rows: ..." when
 * --skip-invalid skipped them all) or "gives no list: of its N rows, ..." with the counts; err reads after the
 * file's name */
int data_prepare(DataSet *ds, int max_length, int max_prompt_length, PrepStats *st, char *err, size_t errlen);
/* "dropped 3 rows (2 with all labels equal, 1 with fewer than 2 responses); ..." */
void prep_stats_print(FILE *f, const PrepStats *st, const char *prefix);

TrainData *train_data_new(const DataSet *ds, int list_size, uint64_t seed);
void train_data_free(TrainData *d);

#endif
