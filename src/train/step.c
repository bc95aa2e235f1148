/* step.c: micro_step and the scores (step.h). */
#include "train/step.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"


/* 1 if the loss, every d loss / d s and every s are finite */
static int finite_list(int n, const double *loss, const double *g, const double *s) {
    int ok = isfinite(*loss);
    for (int i = 0; i < n; i++) ok &= isfinite(g[i]) && isfinite(s[i]);
    return ok;
}

void scores_of(const ScoreSpec *sp, int n, const double *lp, const double *ref, const int *ntok, double *s,
               double *ds_dlp) {
    int mean = sp->obj == PPA_SIMPO || sp->obj == PPA_IPO;
    int no_ref = sp->reference_free || sp->obj == PPA_SIMPO;
    for (int i = 0; i < n; i++) {
        if (sp->reward) { /* lp holds the rewards */
            s[i] = lp[i], ds_dlp[i] = 1.0;
            continue;
        }
        double scale = mean ? sp->beta / ntok[i] : sp->beta;
        /* policy = reference gives exactly 0 (pitfall 9): the difference first */
        s[i] = scale * (no_ref ? lp[i] : lp[i] - ref[i]);
        ds_dlp[i] = scale;
    }
}

/* every objective's loss on s, with the run's shared options */
static void other_losses(StepSums *sums, const ScoreSpec *sp, int n, const double *s, const double *psi) {
    for (int o = 0; o < PPA_N_OBJECTIVES; o++) {
        PpaLossOptions lo = sp->lo;
        lo.beta = sp->beta;
        PpaListResult r;
        if (ppa_loss_list((PpaObjective)o, &lo, n, s, psi, NULL, NULL, &r) == PPA_OK)
            sums->other[o] += r.loss, sums->other_ok[o]++;
    }
}

static void list_stats(StepSums *sums, const ScoreSpec *sp, int n, const double *s, const double *psi) {
    double mean = 0;
    int best = 0, worst = 0;
    for (int i = 0; i < n; i++) {
        mean += s[i] / n;
        if (psi[i] > psi[best]) best = i;
        if (psi[i] < psi[worst]) worst = i;
    }
    sums->reward += mean, sums->best_worst += s[best] - s[worst];
    PpaListMetrics m;
    if (ppa_metrics_list(&sp->lo, n, s, psi, NULL, &m) == PPA_OK) {
        if (!isnan(m.ndcg)) sums->ndcg += m.ndcg;
        if (!isnan(m.accuracy)) sums->acc += m.accuracy, sums->lists_with_pairs++;
    }
    other_losses(sums, sp, n, s, psi);
}

/* a reward model's output index of each response into lp, the response lengths into ntok */
static void forward_rewards(Model *m, Batch *b, const MicroLists *mb, int index, double *lp, int *ntok) {
    int nr = batch_n_responses(b), NL = model_config(m)->num_labels;
    double *rw = xmalloc(sizeof(double) * (size_t)nr * (size_t)NL);
    model_forward_rewards(m, b, rw);
    for (int g = 0; g < nr; g++) lp[g] = rw[(size_t)g * NL + index];
    for (int r = 0, g = 0; r < mb->n; r++)
        for (int k = 0; k < mb->rows[r].n_resp; k++) ntok[g++] = mb->rows[r].resp_len[k];
    free(rw);
}

static void backward_rewards(Model *m, Batch *b, int index, const double *dlp) {
    int nr = batch_n_responses(b), NL = model_config(m)->num_labels;
    double *d = xcalloc((size_t)nr * (size_t)NL, sizeof(double));
    for (int g = 0; g < nr; g++) d[(size_t)g * NL + index] = dlp[g];
    model_backward_rewards(m, b, d);
    free(d);
}

int micro_step(Model *m, const MicroLists *mb, const ScoreSpec *sp, double weight, int backward, StepSums *sums,
               double *lambdas, char *err, size_t errlen) {
    Batch *b = batch_new(m, mb->rows, mb->n, err, errlen);
    if (!b) return -1;
    int nr = batch_n_responses(b), rc = 0;
    double *lp = xmalloc(sizeof(double) * (size_t)nr), *dlp = xmalloc(sizeof(double) * (size_t)nr);
    int *ntok = xmalloc(sizeof(int) * (size_t)nr);
    if (sp->reward) forward_rewards(m, b, mb, sp->reward_index, lp, ntok);
    else model_forward(m, b, lp, ntok);
    PpaLossOptions lo = sp->lo;
    if (sp->obj == PPA_IPO) lo.beta = sp->beta;
    for (int r = 0, at = 0; r < mb->n && !rc; r++) {
        int K = mb->rows[r].n_resp;
        double s[PPA_NEURAL_MAX_ITEMS], ds[PPA_NEURAL_MAX_ITEMS], g[PPA_NEURAL_MAX_ITEMS];
        if (K > PPA_NEURAL_MAX_ITEMS) {
            rc = ppa_fail(err, errlen, "a list of %d responses is longer than %d", K, PPA_NEURAL_MAX_ITEMS);
            break;
        }
        scores_of(sp, K, lp + at, mb->ref ? mb->ref[r] : NULL, ntok + at, s, ds);
        char where[64];
        if (mb->lines) snprintf(where, sizeof where, "the list of data line %ld", mb->lines[r]);
        else snprintf(where, sizeof where, "list %d", r);
        int bad_s = -1; /* the model's own numbers first: a log-prob, then a score, that is not finite */
        for (int i = K - 1; i >= 0; i--)
            if (!isfinite(lp[at + i]) || !isfinite(s[i])) bad_s = i;
        if (bad_s >= 0) {
            int i = bad_s;
            const char *what = sp->reward ? "the reward" : "the log-probability";
            if (isfinite(lp[at + i]))
                ppa_fail(err, errlen, "%s: response %d: the score is not finite (%g; %s %g%s%.6g)", where, i + 1, s[i], what,
                         lp[at + i], mb->ref ? ", reference " : "", mb->ref ? mb->ref[r][i] : 0.0);
            else ppa_fail(err, errlen, "%s: response %d: %s is not finite (%g)", where, i + 1, what, lp[at + i]);
            rc = isfinite(lp[at + i]) ? MICRO_NONFINITE_LOSS : MICRO_NONFINITE_LOGP;
            break;
        }
        PpaListResult res;
        PpaStatus st = ppa_loss_list(sp->obj, &lo, K, s, mb->labels[r], NULL, g, &res);
        if (st != PPA_OK) {
            rc = ppa_fail(err, errlen, "%s: %s (response %d)", where, ppa_status_string(st), res.bad_index + 1);
            break;
        }
        if (!finite_list(K, &res.loss, g, s)) { /* finite scores: the objective's arithmetic overflowed */
            ppa_fail(err, errlen, "%s: the loss or its gradient is not finite (loss %g)", where, res.loss);
            rc = MICRO_NONFINITE_LOSS;
            break;
        }
        sums->loss += res.loss, sums->lists++;
        list_stats(sums, sp, K, s, mb->labels[r]);
        for (int i = 0; i < K; i++) {
            dlp[at + i] = weight * g[i] * ds[i];
            if (lambdas) lambdas[at + i] = g[i];
            sums->tokens += ntok[at + i];
        }
        at += K;
    }
    if (!rc && backward) {
        if (sp->reward) backward_rewards(m, b, sp->reward_index, dlp);
        else model_backward(m, b, dlp);
    }
    batch_free(b);
    free(lp), free(dlp), free(ntok);
    return rc;
}
