/* trainer.c: train_run (trainer.h). */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/hash.h"
#include "core/progress.h"
#include "core/timer.h"
#include "device/device.h"
#include "dist/dist.h"
#include "kernels/gemm.h"
#include "model/lora.h"

/* the step's lists, as sums for the log */
typedef struct {
    StepSums sums;
    long lists, tokens;
    double *lambdas; /* [responses of the step] when logging them */
    int *lam_k;      /* [lists] responses per list */
    long n_lam;
    double comm_s, comm_bytes, wait_s; /* in the MPI collectives during the step, and waiting before them (dist_stats) */
    int sharded; /* each rank holds only its share of the summed gradients (step_sum_grads) */
} StepLog;

static void print_num(FILE *f, const char *key, double v) {
    if (isfinite(v)) fprintf(f, ", \"%s\": %.9g", key, v);
    else fprintf(f, ", \"%s\": null", key);
}

/* 0, or -1 (errno) when the line could not be written */
static int log_line(FILE *f, const Model *m, long step, double epoch, const StepLog *s, double lr, double gnorm,
                    double sec, double elapsed) {
    const StepSums *u = &s->sums;
    double n = (double)u->lists;
    fprintf(f, "{\"step\": %ld, \"epoch\": %.6f", step, epoch);
    print_num(f, "loss", u->loss / n);
    print_num(f, "lr", lr);
    print_num(f, "grad_norm", gnorm);
    fprintf(f, ", \"lists\": %ld, \"tokens\": %ld", s->lists, s->tokens);
    print_num(f, "reward", u->reward / n);
    print_num(f, "margin", u->best_worst / n);
    print_num(f, "accuracy", u->lists_with_pairs ? u->acc / (double)u->lists_with_pairs : NAN);
    print_num(f, "ndcg", u->ndcg / n);
    double nr = (double)u->ranked, nl = (double)u->lp_ranked, nf = (double)u->ref_ranked; /* 0: printed as null */
    print_num(f, "rewards_best", u->s_best / nr);
    print_num(f, "rewards_worst", u->s_worst / nr);
    if (u->lp_ranked || !u->ranked) { /* a reward model logs no log-probs */
        print_num(f, "logps_best", u->lp_best / nl);
        print_num(f, "logps_worst", u->lp_worst / nl);
        print_num(f, "logps_margin", (u->lp_best - u->lp_worst) / nl);
    }
    if (u->ref_ranked) {
        print_num(f, "ref_logps_best", u->ref_best / nf);
        print_num(f, "ref_logps_worst", u->ref_worst / nf);
    }
    fputs(", \"objectives\": {", f);
    for (int o = 0, first = 1; o < PPA_N_OBJECTIVES; o++) {
        if (!u->other_ok[o]) continue;
        fprintf(f, "%s\"%s\": %.9g", first ? "" : ", ", ppa_objective_name((PpaObjective)o), u->other[o] / u->other_ok[o]);
        first = 0;
    }
    fputc('}', f);
    if (s->lambdas) {
        fputs(", \"lambdas\": [", f);
        for (long l = 0, at = 0; l < s->lists; l++) {
            fputs(l ? ", [" : "[", f);
            for (int k = 0; k < s->lam_k[l]; k++) fprintf(f, k ? ", %.9g" : "%.9g", s->lambdas[at + k]);
            fputc(']', f);
            at += s->lam_k[l];
        }
        fputc(']', f);
    }
    const ForwardEngine *e = model_train_engine(m);
    if (e && e->peak) fprintf(f, ", \"gpu_peak_gib\": %.3f", (double)e->peak(e->ctx) / (1024.0 * 1024.0 * 1024.0));
    /* timings last: they are the only fields that differ between identical runs */
    if (dist_size() > 1) fprintf(f, ", \"comm_s\": %.3f, \"comm_bytes\": %.0f, \"wait_s\": %.3f", s->comm_s, s->comm_bytes,
                                s->wait_s);
    fprintf(f, ", \"tokens_per_s\": %.1f, \"elapsed_s\": %.3f}\n", sec > 0 ? (double)s->tokens / sec : 0.0, elapsed);
    return fflush(f) || ferror(f) ? -1 : 0;
}

/* the step's line (core/progress.h: rewritten in place on a terminal, else the first, one every 30 s and the last) */
static void progress(Progress *pr, long step, long total, const StepLog *s, double step_sec, double t_start,
                     long first_step) {
    const StepSums *u = &s->sums;
    progress_update(pr, step, "step %ld/%ld  loss %.4f  acc %.3f  ndcg %.3f  %.2f s/step  %.0f tok/s", step, total,
                    u->loss / (double)u->lists, u->lists_with_pairs ? u->acc / (double)u->lists_with_pairs : NAN,
                    u->ndcg / (double)u->lists, (timer_now() - t_start) / (double)(step - first_step),
                    step_sec > 0 ? (double)s->tokens / step_sec : 0.0);
}

void train_tally_add(TrainTally *t, long step, double lr, double gnorm) {
    if (!t->steps) t->first = step;
    t->steps++;
    if (!(lr > 0)) {
        if (!t->lr0++) t->first_lr0 = step;
    } else if (!(gnorm > 0)) {
        if (!t->flat++) t->first_flat = step;
    } else {
        t->changed++;
    }
}

/* appends "step 3 WHAT" or "4 steps WHAT (the first, step 3)" to buf, after "; " when it holds some */
static void add_steps(char *buf, size_t n, long count, long first, const char *what) {
    size_t at = strlen(buf);
    if (count == 1) snprintf(buf + at, n - at, "%sstep %ld %s", at ? "; " : "", first, what);
    else snprintf(buf + at, n - at, "%s%ld steps %s (the first, step %ld)", at ? "; " : "", count, what, first);
}

void train_tally_text(const TrainTally *t, char *buf, size_t n) {
    char from[96] = "", why[256] = "";
    if (t->first > 1 && t->steps == 1) snprintf(from, sizeof from, " (step %ld, resumed after step %ld)", t->first, t->first - 1);
    else if (t->first > 1) snprintf(from, sizeof from, " (%ld to %ld, resumed after step %ld)", t->first,
                                    t->first + t->steps - 1, t->first - 1);
    if (t->lr0) add_steps(why, sizeof why, t->lr0, t->first_lr0, "had lr 0");
    if (t->flat) add_steps(why, sizeof why, t->flat, t->first_flat, "had a zero gradient");
    snprintf(buf, n, "%ld step%s%s, %ld changed the weights%s%s%s", t->steps, t->steps == 1 ? "" : "s", from, t->changed,
             why[0] ? " (" : "", why, why[0] ? ")" : "");
}

/* Every rank's share of a step made whole on every rank: the gradients and the log's sums added up (each list
 * weighs 1/n of the step's lists on whichever rank it ran), the lambdas and list sizes gathered in list order. */
static int combine(Model *m, StepLog *sl, long n, long mine, char *err, size_t errlen) {
    if (dist_size() < 2) return 0;
    if (step_sum_grads(m, &sl->sharded, err, errlen)) return -1;
    StepSums *u = &sl->sums;
    enum { NO = PPA_N_OBJECTIVES };
    double v[6 + 2 * NO] = {(double)u->lists, (double)u->tokens, (double)u->lists_with_pairs, (double)sl->tokens,
                            u->loss, u->reward};
    for (int o = 0; o < NO; o++) v[6 + o] = u->other[o], v[6 + NO + o] = u->other_ok[o];
    double w[12] = {u->best_worst, u->acc, u->ndcg, u->s_best, u->s_worst, u->lp_best, u->lp_worst, u->ref_best,
                    u->ref_worst, (double)u->ranked, (double)u->lp_ranked, (double)u->ref_ranked};
    dist_sum_f64(v, 6 + 2 * NO);
    dist_sum_f64(w, 12);
    u->s_best = w[3], u->s_worst = w[4], u->lp_best = w[5], u->lp_worst = w[6], u->ref_best = w[7], u->ref_worst = w[8];
    u->ranked = (long)w[9], u->lp_ranked = (long)w[10], u->ref_ranked = (long)w[11];
    u->lists = (long)v[0], u->tokens = (long)v[1], u->lists_with_pairs = (long)v[2], sl->tokens = (long)v[3];
    u->loss = v[4], u->reward = v[5], u->best_worst = w[0], u->acc = w[1], u->ndcg = w[2];
    for (int o = 0; o < NO; o++) u->other[o] = v[6 + o], u->other_ok[o] = (int)v[6 + NO + o];
    if (!sl->lam_k) return 0;
    /* lambdas: every rank's count, then the values in rank (= list) order */
    int R = dist_size();
    long *lists = xcalloc((size_t)R, sizeof(long)), *resp = xcalloc((size_t)R, sizeof(long));
    double *cnt = xcalloc((size_t)(2 * R), sizeof(double));
    cnt[dist_rank()] = (double)mine, cnt[R + dist_rank()] = (double)sl->n_lam;
    dist_sum_f64(cnt, (size_t)(2 * R));
    for (int r = 0; r < R; r++) lists[r] = (long)cnt[r], resp[r] = (long)cnt[R + r];
    double *k = xmalloc(sizeof(double) * (size_t)(n ? n : 1)), *mine_k = xmalloc(sizeof(double) * (size_t)(mine ? mine : 1));
    for (long i = 0; i < mine; i++) mine_k[i] = sl->lam_k[i];
    dist_allgather_f64(mine_k, k, lists);
    for (long i = 0; i < n; i++) sl->lam_k[i] = (int)k[i];
    long total = 0;
    for (int r = 0; r < R; r++) total += resp[r];
    double *all = xmalloc(sizeof(double) * (size_t)(total ? total : 1));
    dist_allgather_f64(sl->lambdas, all, resp);
    free(sl->lambdas);
    sl->lambdas = all, sl->n_lam = total;
    free(lists), free(resp), free(cnt), free(k), free(mine_k);
    return 0;
}

/* the micro-batches of rank r's share of a step's n lists */
static long micro_steps(long n, int r, int micro_batch) {
    long lo, hi;
    dist_share(n, r, &lo, &hi);
    return (hi - lo + micro_batch - 1) / micro_batch;
}

/* one optimizer step: its lists in micro-batches, gradients accumulated */
static int run_step(Model *m, TrainData *data, const RefCache *ref, TrainState *st, const TrainPlan *p, StepLog *sl,
                    char *err, size_t errlen) {
    long per_epoch = train_data_lists(data), left = per_epoch - st->cursor;
    long n = left < p->batch_size ? left : p->batch_size; /* an epoch's last step may be smaller */
    double weight = 1.0 / (double)n;
    memset(sl, 0, sizeof *sl);
    if (step_zero_grads(m, err, errlen)) return -1;
    double c0, b0, w0, c1, b1, w1;
    dist_stats(&c0, &b0, &w0);
    long lo, hi; /* this rank's lists of the step (all of them in one process) */
    dist_share(n, dist_rank(), &lo, &hi);
    if (p->log_lambdas) sl->lam_k = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    int bad = 0, fr, fs;
    const char *fail_at = PPA_TEST_HOOK("PPA_TEST_FAIL_STEP"); /* tests: "R:S" fails rank R's step S */
    if (fail_at && sscanf(fail_at, "%d:%d", &fr, &fs) == 2 && fr == dist_rank() && fs == st->step + 1) {
        bad = -1, snprintf(err, errlen, "a test's failure (PPA_TEST_FAIL_STEP)");
        if (p->score.vote) bad = step_vote(bad, err, errlen); /* with the others' first micro-step */
    }
    /* with p->score.vote every rank runs as many micro-steps as the one with the most (an idle one: the reductions
     * alone), the step's last reducing the gradients in its backward (step_reduce_in_backward) */
    long mine = micro_steps(n, dist_rank(), p->micro_batch), most = mine;
    for (int r = 0; p->score.vote && r < dist_size(); r++)
        if (micro_steps(n, r, p->micro_batch) > most) most = micro_steps(n, r, p->micro_batch);
    for (long k = 0, done = lo; k < most && !bad; k++) {
        if (p->score.vote) step_reduce_in_backward(m, k == most - 1);
        if (k >= mine) {
            bad = step_idle(m, err, errlen);
            continue;
        }
        int mb = (int)(hi - done < p->micro_batch ? hi - done : p->micro_batch);
        MicroLists ml;
        train_data_take(data, st->epoch, st->cursor + done, mb, p->score.reference_free ? NULL : ref, &ml);
        long resp = 0;
        for (int r = 0; r < mb; r++) {
            resp += ml.rows[r].n_resp;
            sl->tokens += ml.rows[r].prompt_len;
            for (int j = 0; j < ml.rows[r].n_resp; j++) sl->tokens += ml.rows[r].resp_len[j];
            if (sl->lam_k) sl->lam_k[done - lo + r] = ml.rows[r].n_resp;
        }
        double *lam = NULL;
        if (p->log_lambdas) {
            sl->lambdas = xrealloc(sl->lambdas, sizeof(double) * (size_t)(sl->n_lam + resp));
            lam = sl->lambdas + sl->n_lam, sl->n_lam += resp;
        }
        uint64_t where[3] = {st->seed, (uint64_t)st->step, (uint64_t)done}; /* a resumed run draws the same masks */
        model_lora_dropout(m, 1, hash64(where, sizeof where, 0x64726f70ull));
        bad = micro_step(m, &ml, &p->score, weight, 1, &sl->sums, lam, err, errlen);
        model_lora_dropout(m, 0, 0); /* evaluation and sampling run without */
        done += mb;
    }
    /* a rank whose micro-step failed says so before the gradients' sum, which it would not join. With p->score.vote
     * a forward's failure was agreed before its backward; one after it (a device error, a reduction that timed out
     * on a rank that stopped) is agreed here, where a rank that never arrives is named by the host's collective
     * timeout (dist.h) */
    if (!(p->score.vote && dist_failure_agreed())) bad = step_vote(bad, err, errlen);
    if (bad) return bad;
    st->cursor += n;
    if (combine(m, sl, n, hi - lo, err, errlen)) return -1;
    dist_stats(&c1, &b1, &w1);
    sl->comm_s = c1 - c0, sl->comm_bytes = b1 - b0, sl->wait_s = w1 - w0;
    sl->lists = n;
    if (st->cursor == per_epoch) st->epoch++, st->cursor = 0;
    return 0;
}

/* ---- non-finite numbers: why ----
 * Before this run's first update a non-finite log-prob, score, loss or
 * gradient comes from the weights as loaded (NaN or Inf, or finite but so
 * large that their float32 products overflow) or from the objective's
 * settings; after an update it means the model diverged, and the settings
 * that size an update are named, those beyond their usual ranges as the
 * likely cause. The bounds that certainly overflow are refused up front
 * (options/check.c); these are the ranges seen in practice. */
#define USUAL_LR_MAX 1e-2     /* full fine-tuning uses about 1e-7..1e-4, LoRA up to about 1e-3 */
#define USUAL_SHARP_MAX 1e3   /* beta, beta / tau, beta x alpha, beta x sigma: the gradient's scale */
#define USUAL_IPO_BETA_MIN 1e-3
#define USUAL_SCALE_MAX 100   /* an adapter's alpha / r: about 0.5..16 */

void train_hint(const Model *m, double lr, const ScoreSpec *sp, char *buf, size_t n) {
    char likely[512] = "", all[512] = "";
    size_t nl = 0, na = 0;
#define ADD(dst, len, ...) (len += (size_t)snprintf(dst + len, len < sizeof dst ? sizeof dst - len : 0, __VA_ARGS__))
    if (lr > 0) {
        ADD(all, na, "lr %g", lr);
        if (lr > USUAL_LR_MAX) ADD(likely, nl, "the learning rate %g (fine-tuning uses about 1e-7 to 1e-4)", lr);
    }
    if (sp && !sp->reward) {
        ADD(all, na, "%sbeta %g", na ? ", " : "", sp->beta);
        if (sp->obj == PPA_IPO && sp->beta < USUAL_IPO_BETA_MIN)
            ADD(likely, nl, "%sipo's beta %g (its target margin is 1/(2 beta))", nl ? " and " : "", sp->beta);
        else if (sp->obj != PPA_IPO && sp->beta > USUAL_SHARP_MAX)
            ADD(likely, nl, "%sbeta %g (it scales the gradient)", nl ? " and " : "", sp->beta);
    }
    if (sp) {
        double beta = sp->reward ? 1 : sp->beta, sharp = 0;
        const char *name = NULL, *product = NULL;
        if (sp->obj == PPA_NEURAL_NDCG) name = "tau", sharp = 1 / sp->lo.tau, product = "beta / tau";
        if (sp->obj == PPA_APPROX_NDCG) name = "alpha", sharp = sp->lo.alpha, product = "beta x alpha";
        if (sp->obj == PPA_LAMBDA) name = "sigma", sharp = sp->lo.sigma, product = "beta x sigma";
        if (name) {
            double v = sp->obj == PPA_NEURAL_NDCG ? sp->lo.tau : sharp;
            ADD(all, na, "%s%s %g", na ? ", " : "", name, v);
            if (beta * sharp > USUAL_SHARP_MAX)
                ADD(likely, nl, "%s%s %g (%s = %g scales the gradient)", nl ? " and " : "", name, v, product, beta * sharp);
        }
    }
    const LoraSpec *ls = model_lora(m);
    if (ls) {
        double scale = lora_scale(ls);
        ADD(all, na, "%sadapter scale %g", na ? ", " : "", scale);
        if (scale > USUAL_SCALE_MAX)
            ADD(likely, nl, "%sthe adapter's scale alpha / %s = %g", nl ? " and " : "", ls->rslora ? "sqrt(r)" : "r", scale);
    }
#undef ADD
    if (nl) snprintf(buf, n, "likely cause: %s (settings: %s)", likely, all);
    else snprintf(buf, n, "no setting is extreme (%s)%s", na ? all : "none", lr > 0 ? ": a smaller learning rate may help" : "");
}

/* ": why" for a non-finite number met at step `step` after `updates` updates of this run (lr: the last one's); kind:
 * MICRO_NONFINITE_LOGP (a log-prob: the model), else the scores, loss or gradient */
static void nonfinite_cause(Model *m, const TrainPlan *p, long updates, long step, double lr, int kind, char *buf,
                            size_t n) {
    char pulled[256];
    if (step_pull(m, NULL, pulled, sizeof pulled)) { /* the weights stay on the engine: nothing to look at */
        snprintf(buf, n, " (the weights could not be read back to check them: %s)", pulled);
        return;
    }
    long i = first_nonfinite(model_params(m), model_n_params(m));
    char hint[1200];
    train_hint(m, updates ? lr : 0, &p->score, hint, sizeof hint);
    if (!updates && i >= 0) snprintf(buf, n, ": parameter %ld of the weights is not finite (NaN or Inf as loaded)", i);
    else if (!updates && kind == MICRO_NONFINITE_LOGP)
        snprintf(buf, n, ": the weights as loaded are finite, so their float32 products overflow: weights too large");
    else if (!updates)
        snprintf(buf, n, ": the weights are finite, so the objective's or the backward's arithmetic overflows (weights too "
                 "large, or the settings); %s", hint);
    else if (i >= 0) snprintf(buf, n, ": the model diverged in the update of step %ld (parameter %ld is not finite); %s", step,
                              i, hint);
    else snprintf(buf, n, ": the model diverged in the update of step %ld (its weights are finite, their float32 products "
                  "overflow); %s", step, hint);
}

/* a NaN model is never saved as a success: the weights are checked before every checkpoint and at the end */
static int weights_finite(Model *m, const TrainPlan *p, long step, double lr, char *err, size_t errlen) {
    if (step_pull(m, NULL, err, errlen)) return 0; /* an engine's weights, read back */
    long i = first_nonfinite(model_params(m), model_n_params(m));
    if (i < 0) return 1;
    char hint[1200];
    train_hint(m, lr, &p->score, hint, sizeof hint);
    snprintf(err, errlen, "after step %ld parameter %ld is not finite: the model diverged; %s; nothing was saved", step, i,
             hint);
    return 0;
}

/* After the update of step `step`, its own lists (epoch, cursor, n) through the new weights, forward only: a model
 * whose log-probs, scores or loss are no longer finite is never saved. Every rank checks its share of the lists and
 * all learn the outcome. */
static int step_lists_finite(Model *m, TrainData *data, const RefCache *ref, const TrainPlan *p, long epoch,
                             long cursor, long n, long step, double lr, char *err, size_t errlen) {
    long lo, hi;
    dist_share(n, dist_rank(), &lo, &hi);
    StepSums sums;
    memset(&sums, 0, sizeof sums);
    char why[1024] = "";
    int bad = 0;
    for (long done = lo; done < hi && !bad;) {
        int mb = (int)(hi - done < p->micro_batch ? hi - done : p->micro_batch);
        MicroLists ml;
        train_data_take(data, epoch, cursor + done, mb, p->score.reference_free ? NULL : ref, &ml);
        bad = micro_step(m, &ml, &p->score, 1.0, 0, &sums, NULL, why, sizeof why);
        done += mb;
    }
    double any = bad != 0;
    dist_sum_f64(&any, 1);
    if (!any) return 1;
    if (!bad) snprintf(why, sizeof why, "another rank's lists are not finite");
    char cause[1600];
    nonfinite_cause(m, p, 1, step, lr, bad, cause, sizeof cause);
    snprintf(err, errlen, "step %ld: after its update, %s%s; nothing was saved", step, why, cause);
    return 0;
}

void trainer_zero_share(size_t n, size_t *lo, size_t *hi) { step_zero_share(n, dist_rank(), lo, hi); }

/* the whole optimizer state for a checkpoint: opt itself, or under ZeRO-1 every rank's share gathered (in *tmp) */
static const AdamW *whole_state(const AdamW *opt, size_t n, int zero, AdamW *tmp) {
    if (!zero) return opt;
    adamw_init(tmp, n);
    size_t lo, hi;
    trainer_zero_share(n, &lo, &hi);
    memcpy(tmp->m + lo, opt->m, sizeof(float) * (hi - lo)), memcpy(tmp->v + lo, opt->v, sizeof(float) * (hi - lo));
    step_gather_shares(tmp->m, n), step_gather_shares(tmp->v, n);
    tmp->step = opt->step;
    return tmp;
}

/* the ranks hold the same weights: a check of the reductions' promise at every save */
static int same_weights(Model *m, char *err, size_t errlen) {
    if (dist_size() < 2) return 1;
    uint64_t h = hash64(model_params(m), sizeof(float) * model_n_params(m), 1), h0 = h;
    dist_bcast(&h0, sizeof h0, 0);
    int bad = h != h0;
    double any = bad;
    dist_sum_f64(&any, 1);
    if (!any) return 1;
    snprintf(err, errlen, "the ranks' weights differ (rank %d's from rank 0's%s): the reductions were not identical "
             "on every rank", dist_rank(), bad ? "" : ", on another rank");
    return 0;
}

int train_run(Model *policy, TrainData *data, const RefCache *ref, AdamW *opt, TrainState *st, const TrainPlan *p,
              char *err, size_t errlen) {
    long per_epoch = train_data_lists(data);
    if (st->cursor < 0 || st->cursor >= per_epoch) { /* a saved cursor is always inside its epoch */
        snprintf(err, errlen, "data cursor %ld is outside the epoch's %ld lists (a checkpoint of other data?)",
                 st->cursor, per_epoch);
        return -1;
    }
    size_t n_params = model_n_params(policy);
    Spans decay = model_decay(policy);
    AdamWConfig ac = {0.9, 0.999, 1e-8, p->weight_decay};
    double t0 = timer_now();
    long first = st->step;
    Progress pr;
    progress_init(&pr, p->who ? p->who : "train", NULL, p->progress);
    progress_start(&pr, first, p->total_steps);
    double last_lr = 0; /* of this run's last update */
    int rc = 0;
    opt->step = st->step;
    if (step_push(policy, opt, err, errlen)) { /* an engine starts from the host's weights and moments */
        spans_free(&decay);
        return -1;
    }
    while (st->step < p->total_steps && !rc) {
        double ts = timer_now();
        StepLog sl;
        long epoch0 = st->epoch, cursor0 = st->cursor; /* the step's lists, for the check after its update */
        int bad = run_step(policy, data, ref, st, p, &sl, err, errlen);
        if (bad) {
            char why[1024], cause[1600] = "";
            snprintf(why, sizeof why, "%s", err);
            int nonfinite = bad == MICRO_NONFINITE_LOGP || bad == MICRO_NONFINITE_LOSS;
            if (nonfinite) nonfinite_cause(policy, p, st->step - first, st->step, last_lr, bad, cause, sizeof cause);
            snprintf(err, errlen, "step %ld: %s%s%s", st->step + 1, why, cause, nonfinite ? "; nothing was updated" : "");
            rc = nonfinite && st->step == first ? -2 : -1;
        } else {
            double gnorm; /* clipping happens inside the AdamW pass */
            if (step_grad_norm(policy, sl.sharded, &gnorm, err, errlen)) {
                rc = -1;
                free(sl.lambdas), free(sl.lam_k);
                break;
            }
            if (!isfinite(gnorm)) {
                char cause[1600];
                nonfinite_cause(policy, p, st->step - first, st->step, last_lr, MICRO_NONFINITE_LOSS, cause, sizeof cause);
                snprintf(err, errlen, "step %ld: the gradient norm is not finite (%g)%s; nothing was updated", st->step + 1,
                         gnorm, cause);
                rc = st->step == first ? -2 : -1;
                free(sl.lambdas), free(sl.lam_k);
                break;
            }
            double lr = schedule_lr(p->schedule, p->lr, st->step, p->warmup_steps, p->total_steps);
            size_t lo = 0, hi = n_params;
            if (p->zero) trainer_zero_share(n_params, &lo, &hi);
            if (step_adamw(policy, opt, clip_scale(gnorm, p->clip_grad), &decay, lo, lr, &ac, err, errlen)) {
                rc = -1;
                free(sl.lambdas), free(sl.lam_k);
                break;
            }
            if (p->zero && step_zero_gather(policy, err, errlen)) {
                rc = -1;
                free(sl.lambdas), free(sl.lam_k);
                break;
            }
            if (!model_train_engine(policy)) model_bf16_refresh(policy); /* the products' copy follows the masters */
            st->step++;
            last_lr = lr;
            if (p->tally) train_tally_add(p->tally, st->step, lr, gnorm);
            double epoch = (double)st->epoch + (double)st->cursor / (double)train_data_lists(data);
            if (p->log && log_line(p->log, policy, st->step, epoch, &sl, lr, gnorm, timer_now() - ts, timer_now() - t0)) {
                snprintf(err, errlen, "step %ld: cannot write the log %s: %s", st->step, p->log_path ? p->log_path : "",
                         strerror(errno));
                rc = -1;
                free(sl.lambdas), free(sl.lam_k);
                break;
            }
            progress(&pr, st->step, p->total_steps, &sl, timer_now() - ts, t0, first);
            int saving = p->save_every > 0 && st->step % p->save_every == 0 && st->step < p->total_steps;
            /* the last model and every checkpoint: still finite on the step's own lists after the update */
            if ((saving || st->step == p->total_steps) &&
                !step_lists_finite(policy, data, ref, p, epoch0, cursor0, sl.lists, st->step, lr, err, errlen)) {
                rc = -1;
                free(sl.lambdas), free(sl.lam_k);
                break;
            }
            if (p->eval && ((p->eval_every > 0 && st->step % p->eval_every == 0) || st->step == p->total_steps)) {
                progress_break(&pr);
                p->eval(policy, st->step, p->log, p->eval_ctx);
            }
            if (saving) {
                model_kernel_name(policy, st->kernel, sizeof st->kernel);
                st->threads = gemm_threads();
                free(st->options), st->options = p->options_json ? strdup(p->options_json) : NULL;
                char path[4096];
                st->ranks = dist_size();
                AdamW tmp = {0};
                const AdamW *whole = NULL;
                /* an engine's weights and moments first (its share of them under ZeRO), then every rank's share */
                if (step_pull(policy, opt, err, errlen) || !(whole = whole_state(opt, n_params, p->zero, &tmp)) ||
                    !weights_finite(policy, p, st->step, lr, err, errlen) || !same_weights(policy, err, errlen) ||
                    (dist_rank() == 0 && /* one writer; the others' weights are the same bytes */
                     state_save(p->out, policy, whole, st, p->tokenizer_dir, path, sizeof path, err, errlen)))
                    rc = -1;
                else if (p->progress) progress_break(&pr), fprintf(stderr, "ppa %s: saved %s\n", p->who ? p->who : "train", path);
                adamw_free(&tmp);
            }
        }
        free(sl.lambdas), free(sl.lam_k);
    }
    spans_free(&decay);
    progress_end(&pr);
    if (!rc && step_pull(policy, opt, err, errlen)) rc = -1; /* the host holds the run's last weights and moments */
    if (!rc && (!weights_finite(policy, p, st->step, last_lr, err, errlen) || !same_weights(policy, err, errlen))) rc = -1;
    return rc;
}
