/* step.c: micro_step and the scores (step.h). */
#include "train/step.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "device/device.h"
#include "dist/dist.h"


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

/* lp [n]: the responses' log-probs (a reward model's outputs when sp->reward); ref [n] the reference's, or NULL */
static void list_stats(StepSums *sums, const ScoreSpec *sp, int n, const double *s, const double *psi, const double *lp,
                       const double *ref) {
    double mean = 0;
    int best = 0, worst = 0;
    for (int i = 0; i < n; i++) {
        mean += s[i] / n;
        if (psi[i] > psi[best]) best = i;
        if (psi[i] < psi[worst]) worst = i;
    }
    sums->reward += mean, sums->best_worst += s[best] - s[worst];
    if (psi[best] > psi[worst]) {
        sums->ranked++, sums->s_best += s[best], sums->s_worst += s[worst];
        if (!sp->reward) sums->lp_ranked++, sums->lp_best += lp[best], sums->lp_worst += lp[worst];
        if (!sp->reward && ref && !sp->reference_free) sums->ref_ranked++, sums->ref_best += ref[best], sums->ref_worst += ref[worst];
    }
    PpaListMetrics m;
    if (ppa_metrics_list(&sp->lo, n, s, psi, NULL, &m) == PPA_OK) {
        if (!isnan(m.ndcg)) sums->ndcg += m.ndcg;
        if (!isnan(m.accuracy)) sums->acc += m.accuracy, sums->lists_with_pairs++;
    }
    other_losses(sums, sp, n, s, psi);
}

/* the micro-batch through the model (model_pass_forward): the log-probs, or a reward model's output `index` of
 * each response, into lp [nr]; the response lengths into ntok [nr] */
static int pass_forward(Model *m, const MicroLists *mb, const ScoreSpec *sp, int nr, double *lp, int *ntok, char *err,
                        size_t errlen) {
    if (!sp->reward) return model_pass_forward(m, mb->rows, mb->n, lp, ntok, err, errlen);
    int NL = model_config(m)->num_labels;
    double *rw = xmalloc(sizeof(double) * (size_t)nr * (size_t)NL);
    int rc = model_pass_forward(m, mb->rows, mb->n, rw, ntok, err, errlen);
    for (int g = 0; !rc && g < nr; g++) lp[g] = rw[(size_t)g * NL + sp->reward_index];
    free(rw);
    return rc;
}

static int pass_backward(Model *m, const ScoreSpec *sp, int nr, const double *dlp, char *err, size_t errlen) {
    if (!sp->reward) return model_pass_backward(m, dlp, err, errlen);
    int NL = model_config(m)->num_labels;
    double *d = xcalloc((size_t)nr * (size_t)NL, sizeof(double));
    for (int g = 0; g < nr; g++) d[(size_t)g * NL + sp->reward_index] = dlp[g];
    int rc = model_pass_backward(m, d, err, errlen);
    free(d);
    return rc;
}

int micro_step(Model *m, const MicroLists *mb, const ScoreSpec *sp, double weight, int backward, StepSums *sums,
               double *lambdas, char *err, size_t errlen) {
    int nr = 0, rc = 0;
    for (int r = 0; r < mb->n; r++) nr += mb->rows[r].n_resp;
    size_t n = (size_t)(nr ? nr : 1);
    double *lp = xmalloc(sizeof(double) * n), *dlp = xmalloc(sizeof(double) * n);
    int *ntok = xmalloc(sizeof(int) * n);
    if (pass_forward(m, mb, sp, nr, lp, ntok, err, errlen)) {
        model_pass_end(m);
        free(lp), free(dlp), free(ntok);
        return backward && sp->vote ? step_vote(-1, err, errlen) : -1;
    }
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
        list_stats(sums, sp, K, s, mb->labels[r], lp + at, mb->ref ? mb->ref[r] : NULL);
        for (int i = 0; i < K; i++) {
            dlp[at + i] = weight * g[i] * ds[i];
            if (lambdas) lambdas[at + i] = g[i];
            sums->tokens += ntok[at + i];
        }
        at += K;
    }
    if (backward && sp->vote) rc = step_vote(rc, err, errlen);
    static long backwards; /* tests: "R:K" stops rank R before its K-th backward (ZeRO-2: after the vote) */
    const char *stop_at = PPA_TEST_HOOK("PPA_TEST_STOP_BEFORE_BACKWARD");
    int sr;
    long sk;
    if (!rc && backward && stop_at && sscanf(stop_at, "%d:%ld", &sr, &sk) == 2 && sr == dist_rank() && ++backwards == sk)
        raise(SIGSTOP);
    if (!rc && backward) rc = pass_backward(m, sp, nr, dlp, err, errlen);
    model_pass_end(m);
    free(lp), free(dlp), free(ntok);
    return rc;
}

/* ---- the optimizer's side ---- */

int step_zero_grads(Model *m, char *err, size_t errlen) {
    const ForwardEngine *e = model_train_engine(m);
    if (e) return e->zero_grads(e->ctx, err, errlen);
    model_zero_grads(m);
    return 0;
}

int step_grad_norm(Model *m, int sharded, double *norm, char *err, size_t errlen) {
    const ForwardEngine *e = model_train_engine(m);
    if (e && sharded) { /* the shares' squares, added in rank order */
        double sq;
        if (e->grad_norm(e->ctx, 1, &sq, err, errlen)) return -1;
        sq *= sq;
        dist_sum_f64(&sq, 1);
        *norm = sqrt(sq);
        return 0;
    }
    if (e) return e->grad_norm(e->ctx, 0, norm, err, errlen);
    *norm = model_device(m)->grad_norm(model_grads(m), model_n_params(m));
    return 0;
}

int step_adamw(Model *m, AdamW *a, float grad_scale, const Spans *decay, size_t base, double lr, const AdamWConfig *c,
               char *err, size_t errlen) {
    const ForwardEngine *e = model_train_engine(m);
    if (e) {
        a->step++;
        return e->adamw(e->ctx, a->step, grad_scale, lr, c->beta1, c->beta2, c->eps, c->weight_decay, err, errlen);
    }
    model_device(m)->adamw_step(a, model_params(m) + base, model_grads(m) + base, grad_scale, decay, base, lr, c);
    return 0;
}

int step_pull(Model *m, AdamW *a, char *err, size_t errlen) {
    const ForwardEngine *e = model_train_engine(m);
    if (!e) return 0;
    if (e->pull(e->ctx, model_params(m), a ? a->m : NULL, a ? a->v : NULL, err, errlen)) return -1;
    model_bf16_refresh(m);
    return 0;
}

int step_push(Model *m, const AdamW *a, char *err, size_t errlen) {
    const ForwardEngine *e = model_train_engine(m);
    return e ? e->push(e->ctx, model_params(m), a ? a->m : NULL, a ? a->v : NULL, err, errlen) : 0;
}

void step_zero_share(size_t n, int r, size_t *lo, size_t *hi) {
    size_t R = (size_t)(dist_size() > 0 ? dist_size() : 1), c = (n + R - 1) / R, a = (size_t)r * c;
    *lo = a < n ? a : n, *hi = a + c < n ? a + c : n;
}

void step_gather_shares(float *x, size_t n) {
    int R = dist_size();
    long *counts = xmalloc(sizeof(long) * (size_t)R);
    size_t lo, hi;
    for (int r = 0; r < R; r++) step_zero_share(n, r, &lo, &hi), counts[r] = (long)(hi - lo);
    step_zero_share(n, dist_rank(), &lo, &hi);
    float *mine = xmalloc(sizeof(float) * (size_t)(hi - lo ? hi - lo : 1));
    memcpy(mine, x + lo, sizeof(float) * (size_t)(hi - lo));
    dist_allgather_f32(mine, x, counts);
    free(mine), free(counts);
}

int step_zero_gather(Model *m, char *err, size_t errlen) {
    const ForwardEngine *e = model_train_engine(m);
    if (e && e->zero_gather) { /* device to device where the engine can */
        int rc = e->zero_gather(e->ctx, err, errlen);
        if (rc <= 0) return rc;
    }
    if (e && e->pull(e->ctx, model_params(m), NULL, NULL, err, errlen)) return -1;
    step_gather_shares(model_params(m), model_n_params(m));
    return e ? e->push(e->ctx, model_params(m), NULL, NULL, err, errlen) : 0;
}

int step_vote(int bad, char *err, size_t errlen) {
    if (dist_size() < 2) return bad;
    double any = bad != 0; /* the usual answer, no rank failed, in one small sum */
    dist_sum_f64(&any, 1);
    if (any == 0) return 0;
    enum { TEXT = 1024 };
    char mine[TEXT] = {0}, first[TEXT];
    if (bad) snprintf(mine, sizeof mine, "%d:%s", bad, err); /* the code, then the message */
    int r = dist_first_text(mine, TEXT, first, sizeof first);
    const char *colon = strchr(first, ':');
    int code = atoi(first);
    if (r != dist_rank()) snprintf(err, errlen, "rank %d: %s", r, colon ? colon + 1 : first);
    dist_agreed_failure(); /* every rank ends with it: each says why before the job ends */
    return code ? code : -1;
}

int step_sum_grads(Model *m, int *sharded, char *err, size_t errlen) {
    *sharded = 0;
    if (dist_size() < 2) return 0;
    const ForwardEngine *e = model_train_engine(m);
    int rc = e && e->sum_grads ? e->sum_grads(e->ctx, sharded, err, errlen) : 1; /* NCCL, where it can */
    if (rc <= 0) return rc;
    float *g = model_grads(m); /* an engine's run: the host's buffer carries them */
    if (e && e->grads(e->ctx, g, 0, err, errlen)) return -1;
    dist_sum_f32(g, model_n_params(m));
    return e ? e->grads(e->ctx, g, 1, err, errlen) : 0;
}

int step_reduce_in_backward(Model *m, int last) {
    const ForwardEngine *e = model_train_engine(m);
    return dist_size() > 1 && e && e->reduce_in_backward ? e->reduce_in_backward(e->ctx, last) : 0;
}

int step_idle(Model *m, char *err, size_t errlen) {
    if (step_vote(0, err, errlen)) return -1;
    const ForwardEngine *e = model_train_engine(m);
    return e && e->train_idle ? e->train_idle(e->ctx, err, errlen) : 0;
}
