/* step.h: one micro-batch of preference lists through the policy: forward,
 * implicit rewards, the objective of every list, d loss / d s, backward.
 * Also the per-step statistics of the training log.
 *
 * Scores (objectives.md 2.1): s_i = beta (logp_i - ref_i) on summed response
 * log-probs; simpo: s_i = beta logp_i / n_i (mean over tokens, no reference);
 * ipo: s_i = beta (logp_i - ref_i) / n_i; with reference_free, ref_i = 0;
 * a reward model (`ppa reward`): s_i = r(x, y_i), one output of its head.
 * The step loss is the mean over the lists of the optimizer step, so a
 * micro-batch's lists carry weight 1 / (lists per optimizer step) and
 * gradient accumulation equals one large batch (pitfall 23). */
#ifndef PPA_STEP_H
#define PPA_STEP_H

#include "model/model.h"
#include "optim/optim.h"
#include "ppa/losses.h"

typedef struct {
    PpaObjective obj;
    PpaLossOptions lo; /* the objective's options; lo.beta is set to beta for ipo */
    double beta;
    int reference_free;
    int reward;       /* a reward model trains: s_i = its head's output reward_index (no beta, no reference) */
    int reward_index;
    int vote; /* several ranks whose backward reduces with the others (step_reduce_in_backward): each says before it
                 whether its forward failed (step_vote), so that none waits in a reduction another never joins */
} ScoreSpec;

/* The lists of one forward/backward: row r is one prompt with its K_r responses. */
typedef struct {
    int n;
    const Row *rows;              /* [n] */
    const double *const *labels;  /* [n][K_r] */
    const double *const *ref;     /* [n][K_r] reference log-probs (unused when reference-free) */
    const long *lines;            /* [n] data file line of each list, for messages; may be NULL */
} MicroLists;

/* Sums over the lists of a step, for the log (means are taken when printed). */
typedef struct {
    long lists, tokens;
    double loss, reward, best_worst, acc, ndcg;
    long lists_with_pairs;
    double other[PPA_N_OBJECTIVES]; /* every objective's loss on the same s */
    int other_ok[PPA_N_OBJECTIVES];
    /* what alignment users watch (likelihood displacement): over the lists whose labels differ (`ranked`), the score,
     * the summed log-prob and the reference's of the best-labelled response and of the worst-labelled (the first of
     * the highest label and the first of the lowest, in list order); a reward model has no log-probs (lp_ranked 0),
     * a reference-free objective no reference (ref_ranked 0) */
    double s_best, s_worst, lp_best, lp_worst, ref_best, ref_worst;
    long ranked, lp_ranked, ref_ranked;
} StepSums;

/* s and ds/dlogp of n responses */
void scores_of(const ScoreSpec *sp, int n, const double *lp, const double *ref, const int *ntok, double *s,
               double *ds_dlp);

/* Forward (and backward when backward != 0, adding weight * d loss / d params
 * into the gradients) of the lists; adds to sums. lambdas (may be NULL):
 * [sum of K_r] receives d loss / d s for each response (unweighted).
 * Returns 0; MICRO_NONFINITE_LOGP with err when a response's log-prob is
 * not finite (the model's weights), MICRO_NONFINITE_LOSS when a score, the
 * loss or d loss / d s is not finite (the reference or the objective's
 * arithmetic); or -1 with err for another bad list (negative labels for a
 * gain objective, ...). err names the list's data line when mb->lines is
 * given (then the response); on an error nothing was added to the gradients. */
#define MICRO_NONFINITE_LOGP (-2)
#define MICRO_NONFINITE_LOSS (-3)
int micro_step(Model *m, const MicroLists *mb, const ScoreSpec *sp, double weight, int backward, StepSums *sums,
               double *lambdas, char *err, size_t errlen);

/* The optimizer's side of a step where the model trains: its engine (model_train_engine: the GPU's copy of the
 * weights, gradients and moments) or the CPU (model_grads, the device table's norm and AdamW, then the bf16 copy
 * refreshed by the caller: model_bf16_refresh, after a ZeRO share is gathered). Each returns 0, or -1 with why in
 * err (an engine's failure; the CPU's never fail). step_adamw advances a->step as adamw_step does; base and a ZeRO
 * share are the CPU's (an engine updates the share it was made with, gpu_train.h, and its own bf16 copy). */
int step_zero_grads(Model *m, char *err, size_t errlen);
/* sharded: each rank holds only its share of the summed gradients (step_sum_grads said so): the ranks' squares added */
int step_grad_norm(Model *m, int sharded, double *norm, char *err, size_t errlen);
int step_adamw(Model *m, AdamW *a, float grad_scale, const Spans *decay, size_t base, double lr, const AdamWConfig *c,
               char *err, size_t errlen);
/* The engine's weights (and moments, with a) into the host's buffers, the bf16 copy refreshed; or the host's into the
 * engine. Nothing to do on the CPU. The trainer pushes before its first step and pulls before it reads the weights. */
int step_pull(Model *m, AdamW *a, char *err, size_t errlen);
/* Every process's gradients added up on every process (dist_sum_f32 over model_grads; an engine's through the
 * host: read back, summed, written again), unless the engine's last backward did it (step_reduce_in_backward).
 * Nothing in one process. Under ZeRO an engine with NCCL sums each rank's share alone, and *sharded says so: the
 * rest of its buffer is not the sum. */
int step_sum_grads(Model *m, int *sharded, char *err, size_t errlen);
/* Several ranks whose engine reduces the gradients inside the backward (NCCL's buckets, ZeRO-2): before each
 * backward, whether it is the step's last; 1 when that backward reduces (then every rank must run as many, with
 * sp->vote: step_idle for a rank without lists), 0 when the gradients are summed after the step (step_sum_grads) */
int step_reduce_in_backward(Model *m, int last);
/* a rank that has no lists left for a micro-step its step's other ranks run votes with them and joins its backward's
 * reductions (of zero gradients under ZeRO-2, else of what it accumulated) */
int step_idle(Model *m, char *err, size_t errlen);
/* [*lo, *hi): rank r's share of n parameters under ZeRO: equal chunks of ceil(n / R) (the last one shorter, a rank
 * past the end none), which NCCL's reduce-scatter and all-gather take in place */
void step_zero_share(size_t n, int r, size_t *lo, size_t *hi);
/* Several processes, before a step's gradients are summed: every rank says whether its micro-steps failed (bad:
 * micro_step's code, err its message), so that a failing rank never leaves the others waiting in the sum. 0 when no
 * rank failed; else the first failing rank's code on every rank, err its message ("rank R: ..." on the others). */
int step_vote(int bad, char *err, size_t errlen);
/* ZeRO (several processes): every rank's share (step_zero_share) of x [n] gathered on every rank */
void step_gather_shares(float *x, size_t n);
/* ZeRO-1: each rank updated its share of the weights; every rank gets all of them (an engine's through the host:
 * read back, gathered, written again, its bf16 copy refreshed) */
int step_zero_gather(Model *m, char *err, size_t errlen);
int step_push(Model *m, const AdamW *a, char *err, size_t errlen);

#endif
