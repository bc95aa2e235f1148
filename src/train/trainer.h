/* trainer.h: the optimisation loop of `ppa train`: optimizer steps of
 * batch_size lists (micro-batches of micro_batch lists, gradients
 * accumulated), clipping, AdamW with the warm-up + decay schedule, one JSON
 * line of metrics per step, a progress line, and checkpoints every
 * save_every steps. The loop is deterministic: the lists of a step are a
 * function of (seed, epoch, cursor) and the reference log-probs come from
 * the cache, so a run resumed from a checkpoint continues with the same bytes
 * as one that never stopped (the same matrix-product kernel and threads
 * assumed; ppa_state.json records them). */
#ifndef PPA_TRAINER_H
#define PPA_TRAINER_H

#include <stdio.h>

#include "model/model.h"
#include "optim/optim.h"
#include "train/refcache.h"
#include "train/state.h"
#include "train/step.h"

/* The source of lists: implemented over the prepared data set (train/data.h). */
typedef struct TrainData TrainData;
long train_data_lists(const TrainData *d); /* lists per epoch */
/* The next n lists at (epoch, cursor) (n <= lists left in the epoch), with
 * their labels and (ref != NULL) reference log-probs; valid until the next call. */
void train_data_take(TrainData *d, long epoch, long cursor, int n, const RefCache *ref, MicroLists *out);

/* What a run's optimizer steps did to the weights, for its last line. A step counts as changing them when its
 * learning rate was above 0 and its gradient norm above 0 (the norm is finite, or the run stopped): at lr 0 AdamW
 * leaves every weight exactly as it was on every engine (its step size and decay are 0), and with a zero gradient
 * only the moments of earlier steps or weight decay could move them. */
typedef struct {
    long first;               /* the run's first step (1-based; a resumed run's is after its checkpoint) */
    long steps, changed;      /* this run's steps, and those that changed the weights */
    long lr0, first_lr0;      /* steps at learning rate 0 (warm-up starts at 0), and the first of them */
    long flat, first_flat;    /* steps with a zero gradient (lr > 0), and the first */
} TrainTally;

/* counts step `step` (1-based), taken at learning rate lr with gradient norm gnorm */
void train_tally_add(TrainTally *t, long step, double lr, double gnorm);
/* "12 steps, 11 changed the weights (step 1 had lr 0)"; a resumed run's first step is named */
void train_tally_text(const TrainTally *t, char *buf, size_t n);

typedef struct {
    ScoreSpec score;
    long total_steps, warmup_steps, batch_size; /* lists per step */
    int micro_batch;
    double lr, weight_decay, clip_grad;
    Schedule schedule;
    long save_every; /* 0: none */
    int log_lambdas;
    const char *out;          /* checkpoints go to OUT/checkpoint-STEP */
    const char *tokenizer_dir; /* copied into checkpoints (may be NULL) */
    const char *options_json;  /* stored in checkpoints, compared on resume */
    FILE *log;                 /* JSON lines (may be NULL); a failed write stops the run */
    const char *log_path;      /* its name, for that message */
    int progress;              /* print progress to stderr */
    const char *who;           /* the command, in progress lines ("train" when NULL) */
    /* held-out evaluation (eval may be NULL): after every eval_every steps
     * (0: none on the way) and after the last step; it may log to plan->log */
    void (*eval)(Model *policy, long step, FILE *log, void *ctx);
    void *eval_ctx;
    long eval_every;
    int zero; /* the ZeRO stage over the MPI ranks (1, 2; 0: none): opt holds this rank's share (trainer_zero_share) */
    TrainTally *tally; /* may be NULL: counts what this run's steps did to the weights */
} TrainPlan;

/* [*lo, *hi): the parameters whose AdamW state this rank keeps under ZeRO (step_zero_share; all in one process) */
void trainer_zero_share(size_t n, size_t *lo, size_t *hi);

/* Runs from st (step, epoch, cursor; zeros for a fresh run) to total_steps.
 * opt: AdamW over the policy's parameters (moments loaded when resuming), or
 * over this rank's share of them with plan->zero. Under MPI every rank runs
 * it: each takes its share of every step's lists, the gradients are summed
 * over the ranks, and rank 0 alone logs (plan->log NULL elsewhere) and
 * writes checkpoints.
 * A non-finite log-prob, score, list loss, d loss / d s or gradient norm
 * stops the run before the update (naming the step, the list's data line
 * and the likely cause: the weights as loaded, or after this run's updates
 * a model that diverged, with the settings that size an update). After the
 * last update and before every checkpoint the step's own lists go through
 * the new weights again (forward only) and the weights are checked finite,
 * so a diverged or NaN model is never saved. Returns 0, or -1 with err; -2 when the weights as loaded (before
 * this run's first update) give the non-finite numbers, a fault of the input rather than of the run. */
int train_run(Model *policy, TrainData *data, const RefCache *ref, AdamW *opt, TrainState *st, const TrainPlan *plan,
              char *err, size_t errlen);

/* For a message about a model that diverged (or numbers that overflowed):
 * "likely cause: ..." naming the settings beyond their usual ranges (lr when
 * > 0, beta, tau / alpha / sigma of sp's objective, the adapter's scale of
 * m), or "no setting is extreme (...)". sp may be NULL (ppa sft). */
void train_hint(const Model *m, double lr, const ScoreSpec *sp, char *buf, size_t n);

#endif
