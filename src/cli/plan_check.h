/* plan_check.h: a training run (train, reward, sft) that would learn nothing, refused before any work: as soon as
 * the data is read, before the out folder, the models or the reference. docs/training.md "Runs that would learn
 * nothing" is the user's account of the rules. */
#ifndef PPA_CLI_PLAN_CHECK_H
#define PPA_CLI_PLAN_CHECK_H

#include "optim/optim.h"
#include "options/options.h"

typedef struct {
    const char *unit;   /* what the data holds, singular: "list" (train, reward) or "row" (sft) */
    long items;         /* of them, after filtering */
    long batch;         /* per optimizer step */
    long total, warmup; /* the plan's optimizer steps, and of them warm-up steps */
    long start;         /* steps already taken: a resumed checkpoint's, else 0 */
    double lr;          /* the peak learning rate of schedule */
    Schedule schedule;
} RunPlan;

/* The run's optimizer steps: --max-steps when above 0, else --epochs x the steps of an epoch (its last one may be
 * smaller); of them *warmup warm up, --warmup-ratio x *total rounded up (transformers' get_warmup_steps). */
void plan_steps(const TrainOptions *o, long items, long batch, long *total, long *warmup);

/* Dies with status 2, naming the numbers and the options to change, when
 *   - the data gives fewer items than one step and the batch size is the default (one explicitly given, from the
 *     command line, a recipe or micro-batch x grad-accum, runs its partial steps with a note);
 *   - no step is planned (a resumed run already at its last step goes on with a note: it writes the checkpoint's
 *     weights again);
 *   - every step left, by schedule_lr, has learning rate 0.
 * Notes go to stderr on rank 0. It reads only values every MPI rank has (the data, the options, the checkpoint's
 * step), so every rank decides alike. */
void plan_check(const TrainOptions *o, const RunPlan *r);

#endif
