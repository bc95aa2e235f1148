/* state.h: training checkpoints for exact resume. OUT/checkpoint-STEP/ is a
 * model folder (float32 always, so that resuming is exact) plus
 *   optimizer.safetensors  AdamW moments "exp_avg", "exp_avg_sq" [n_params],
 *                          flat in ppa's parameter order (the tensor table);
 *   ppa_state.json         step, epoch, data cursor, seed, the matrix-product
 *                          kernel and thread count, and the run's options.
 * The folder is assembled as OUT/checkpoint-STEP.partial and renamed into
 * place only when every file is on disk, so a crash or kill during a save
 * leaves the previous checkpoint as it was (a stale .partial is removed by
 * the next save). */
#ifndef PPA_STATE_H
#define PPA_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "optim/optim.h"

typedef struct {
    long step;          /* optimizer steps done */
    long epoch, cursor; /* the data position: lists consumed within the epoch */
    uint64_t seed;
    char kernel[48];    /* gemm_kernel() and gemm_threads(): bitwise resume needs the same */
    int threads;
    int ranks;          /* MPI ranks that wrote it (1 alone): another count resumes to float rounding */
    char *options;      /* JSON object of the options that must not change on resume (owned) */
} TrainState;

/* Writes OUT/checkpoint-<st->step>; the path written goes to path (may be NULL). */
/* Removes what killed saves left in out (checkpoint-STEP.partial*, .final.partial*); 0, or -1 with err. */
int state_clean_partials(const char *out, char *err, size_t errlen);
int state_save(const char *out, const Model *m, const AdamW *opt, const TrainState *st, const char *tokenizer_dir,
               char *path, size_t pathlen, char *err, size_t errlen);
/* Reads the optimizer moments (opt initialised for m's size) and the state
 * of a checkpoint folder; the weights are loaded with model_load(dir). step,
 * epoch and cursor are whole numbers from 0 to 2^53 (else an error); whether
 * the cursor fits the data is train_run's check. */
int state_load(const char *dir, AdamW *opt, TrainState *st, char *err, size_t errlen);
/* state_load in two halves: the state file alone (before the model is loaded: its step plans the run), then the
 * moments */
int state_read(const char *dir, TrainState *st, char *err, size_t errlen);
int state_read_moments(const char *dir, AdamW *opt, char *err, size_t errlen);
void state_free(TrainState *st);

/* Removes a folder and everything under it; 0 or -1 (errno). */
int remove_tree(const char *path);

#endif
