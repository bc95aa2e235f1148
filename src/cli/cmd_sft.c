/* cmd_sft.c: `ppa sft`: supervised next-token training with AdamW on plain
 * text rows or prompt/response rows (the prompt masked), writing a model
 * folder. The loss of a step is the mean negative log-probability over all
 * scored tokens of the step, so micro-batching changes nothing but memory. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/load.h"
#include "cli/plan_check.h"
#include "cli/setup.h"
#include "cli/run_folder.h"
#include "core/common.h"
#include "device/device.h"
#include "cli/model_card.h"
#include "cli/report.h"
#include "hf/carry.h"
#include "dist/dist.h"
#include "core/hash.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/rows.h"
#include "kernels/gemm.h"
#include "model/model.h"
#include "model/lora.h"
#include "optim/optim.h"
#include "train/state.h" /* remove_tree */
#include "train/trainer.h"

static const char USAGE[] =
    "usage: ppa sft --model DIR --data FILE.jsonl --out DIR [options]\n"
    "\n"
    "Next-token training on {\"text\": ...} rows, or on prompt/response rows (every response of a\n"
    "row, the prompt rendered with the chat template and not scored). Prints one JSON line per step.\n"
    "Rows longer than --max-length are cut: the prompt keeps its end, the response its start.\n\n";

typedef struct {
    const char *model, *data, *out, *template;
    int epochs, max_steps, batch, micro, accum, max_length, bf16, skip_invalid;
    double lr, warmup_ratio, weight_decay, clip;
    Schedule schedule;
    unsigned long long seed;
} SftArgs;

static SftArgs sft_args(const TrainOptions *o) {
    if (o->micro_batch > 64) ppa_die(2, "sft: --micro-batch is at most 64 rows");
    if (o->max_steps > 1L << 30) ppa_die(2, "sft: --max-steps is at most 2^30");
    return (SftArgs){o->model, o->data, o->out, o->template_name, o->epochs, (int)o->max_steps, o->batch_size,
                     o->micro_batch, o->grad_accum, o->max_length, o->save_dtype == SAVE_BF16, o->skip_invalid, o->lr,
                     o->warmup_ratio, o->weight_decay, o->clip_grad, o->schedule, o->seed};
}

/* Cuts rows to max_length: the prompt keeps its end, the response its start. */
static void truncate_rows(DataSet *d, int max_length) {
    for (int r = 0; r < d->n; r++) {
        DataRow *x = &d->rows[r];
        if (x->prompt_len > max_length - 1) {
            int drop = x->prompt_len - (max_length - 1);
            memmove(x->prompt, x->prompt + drop, sizeof(int) * (size_t)(max_length - 1));
            x->prompt_len = max_length - 1;
        }
        for (int k = 0; k < x->n_resp; k++)
            if (x->prompt_len + x->resp_len[k] > max_length) x->resp_len[k] = max_length - x->prompt_len;
    }
}

/* the forward of rows idx[0..n) (at most 64) through the model (model_pass_forward: its engine or the CPU), their
 * responses' log-probs in *lp (allocated) and count in *n_resp; what the backward needs is kept */
static void sft_forward(Model *m, const DataSet *d, const int *idx, int n, double **lp, int *n_resp) {
    Row rows[64];
    *n_resp = 0;
    for (int i = 0; i < n; i++) {
        const DataRow *x = &d->rows[idx[i]];
        rows[i] = (Row){x->prompt_len, x->prompt, x->n_resp, x->resp_len, (const int *const *)x->resp};
        *n_resp += x->n_resp;
    }
    char err[4096];
    *lp = xmalloc(sizeof(double) * (size_t)(*n_resp ? *n_resp : 1));
    if (model_pass_forward(m, rows, n, *lp, NULL, err, sizeof err)) /* the CPU refuses a batch too large; a GPU fails */
        ppa_die(model_train_engine(m) ? 1 : 2, "sft: %s", err);
}

/* forward only: 1 if every response of rows idx[0..n) has a finite log-probability */
static int sft_rows_finite(Model *m, const DataSet *d, const int *idx, int n) {
    int n_resp, ok = 1;
    double *lp;
    sft_forward(m, d, idx, n, &lp, &n_resp);
    model_pass_end(m);
    for (int i = 0; i < n_resp; i++) ok &= isfinite(lp[i]) != 0;
    free(lp);
    return ok;
}

/* forward + backward of rows idx[0..n): adds -1/n_tok_step * d logp into the gradients */
static double sft_micro_step(Model *m, const DataSet *d, const int *idx, int n, long n_tok_step) {
    int n_resp;
    double *lp, sum = 0;
    sft_forward(m, d, idx, n, &lp, &n_resp);
    double *g = xmalloc(sizeof(double) * (size_t)(n_resp ? n_resp : 1));
    for (int i = 0; i < n_resp; i++) sum += lp[i], g[i] = -1.0 / (double)n_tok_step;
    char err[4096];
    if (model_pass_backward(m, g, err, sizeof err)) ppa_die(1, "sft: %s", err);
    free(lp), free(g);
    return -sum;
}

int cmd_sft(int argc, char **argv) {
    TrainOptions opts;
    setup_options(CMD_SFT, USAGE, argc, argv, &opts);
    SftArgs a = sft_args(&opts);
    char err[4096];
    int lead = dist_rank() == 0; /* the one rank that writes (src/dist) */
    /* the rows and the plan first: a run that would learn nothing is refused before the out folder and the model */
    ModelConfig mc;
    if (model_config_load(&mc, a.model, err, sizeof err)) ppa_die(2, "sft: %s", err);
    const ModelConfig *cfg = &mc;
    Tokenizer *tok = tokenizer_load_folder(a.model, err, sizeof err);
    if (!tok && err[0]) ppa_die(2, "sft: %s", err);
    ChatTemplate *tpl = chat_template_open(a.template, a.model, tok, err, sizeof err);
    if (!tpl) ppa_die(2, "sft: %s", err);
    /* the files the save carries from --model, checked now: a run never ends in a refused save */
    if (carry_check(a.model, err, sizeof err)) ppa_die(2, "sft: %s", err);
    DataOptions o = {tok, tpl, cfg->n_eos ? cfg->eos_token_ids[0] : -1, cfg->vocab_size, a.skip_invalid, 0,
                     opts.special_tokens_in_text, a.model, opts.assistant_only_loss};
    DataSet d;
    if (data_read(&d, a.data, &o, err, sizeof err)) ppa_die(2, "%s", err);
    chat_template_free(tpl); /* the rows are tokens now */
    if (d.skipped) fprintf(stderr, "ppa sft: skipped %ld invalid rows of %s (--skip-invalid)\n", d.skipped, a.data);
    if (!d.n) ppa_die(2, "sft: %s has no rows", a.data);
    int pos = cfg->max_position_embeddings;
    if (pos >= 2 && a.max_length > pos) { /* never past the positions */
        fprintf(stderr, "ppa sft: note: --max-length %d is more than the model's %d positions: rows are cut to %d\n",
                a.max_length, pos, pos);
        a.max_length = pos;
    }
    truncate_rows(&d, a.max_length);

    long steps_per_epoch = (d.n + a.batch - 1) / a.batch, total, warmup;
    plan_steps(&opts, d.n, a.batch, &total, &warmup);
    plan_check(&opts, &(RunPlan){"row", d.n, a.batch, total, warmup, 0, a.lr, a.schedule});
    if (lead) run_folder_open(a.out, 0, "sft");
    Model *m = load_model(&opts, a.model, 1);
    size_t n_params = model_n_params(m);
    AdamW opt;
    adamw_init(&opt, n_params);
    AdamWConfig ac = {0.9, 0.999, 1e-8, a.weight_decay};
    Spans decay = model_decay(m);
    int *perm = xmalloc(sizeof(int) * (size_t)d.n);
    if (step_push(m, &opt, err, sizeof err)) ppa_die(1, "sft: %s", err); /* an engine starts from the host's weights */
    if (lead) fprintf(stderr, "ppa sft: %d rows, %ld steps of %d rows (micro-batch %d), lr %g %s, warm-up %ld; %s\n",
            d.n, total, a.batch, a.micro, a.lr,
            a.schedule == SCHEDULE_COSINE ? "cosine" : a.schedule == SCHEDULE_LINEAR ? "linear" : "constant", warmup,
            load_kernels(m));
    Report *rep = lead ? report_open(&opts, "sft", NULL) : NULL; /* the log's lines as TensorBoard scalars too */
    FILE *lines = lead ? report_tee(rep, stdout, 0) : NULL;
    double t0 = timer_now(), last_lr = 0;
    TrainTally tally = {0};
    int failed = 0; /* the exit status: 1 the run failed, 2 the weights as loaded give non-finite numbers */
    Progress pr;
    progress_init(&pr, "sft", NULL, lead);
    progress_start(&pr, 0, total);
    for (long step = 0; step < total; step++) {
        long epoch = step / steps_per_epoch, at = (step % steps_per_epoch) * a.batch;
        if (step % steps_per_epoch == 0) { /* a seeded order per epoch */
            PpaRng rng;
            rng_seed(&rng, a.seed * 1000003ULL + (unsigned long long)epoch);
            for (int i = 0; i < d.n; i++) perm[i] = i;
            for (int i = d.n - 1; i > 0; i--) {
                int j = (int)(rng_u64(&rng) % (unsigned long long)(i + 1)), t = perm[i];
                perm[i] = perm[j], perm[j] = t;
            }
        }
        int n = (int)(d.n - at < a.batch ? d.n - at : a.batch);
        long tokens = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < d.rows[perm[at + i]].n_resp; k++) tokens += d.rows[perm[at + i]].resp_len[k];
        double ts = timer_now(), nll = 0, gnorm;
        if (step_zero_grads(m, err, sizeof err)) ppa_die(1, "sft: step %ld: %s", step + 1, err);
        long lo, hi; /* this rank's rows of the step (all of them in one process) */
        dist_share(n, dist_rank(), &lo, &hi);
        for (long i = lo; i < hi; i += a.micro) {
            uint64_t where[3] = {a.seed, (uint64_t)step, (uint64_t)i}; /* LoRA dropout's masks */
            model_lora_dropout(m, 1, hash64(where, sizeof where, 0x64726f70ull));
            nll += sft_micro_step(m, &d, perm + at + i, (int)(hi - i < a.micro ? hi - i : a.micro), tokens);
        }
        model_lora_dropout(m, 0, 0);
        int sharded; /* sft keeps every rank's whole sum (no ZeRO) */
        if (step_sum_grads(m, &sharded, err, sizeof err)) ppa_die(1, "sft: step %ld: %s", step + 1, err);
        dist_sum_f64(&nll, 1);
        if (step_grad_norm(m, 0, &gnorm, err, sizeof err)) ppa_die(1, "sft: step %ld: %s", step + 1, err);
        double lr = schedule_lr(a.schedule, a.lr, step, warmup, total);
        if (!isfinite(nll) || !isfinite(gnorm)) { /* never update with, print or save a NaN */
            char cause[1200], hint[1024];
            train_hint(m, last_lr, NULL, hint, sizeof hint);
            long bad = step_pull(m, NULL, cause, sizeof cause) ? -1 : first_nonfinite(model_params(m), n_params);
            if (step == 0 && bad >= 0) snprintf(cause, sizeof cause, "parameter %ld of the weights is not finite (NaN or Inf "
                                                "as loaded)", bad);
            else if (step == 0) snprintf(cause, sizeof cause, "the weights are finite, so their float32 products overflow "
                                         "(weights too large)");
            else snprintf(cause, sizeof cause, "the model diverged in the update of step %ld; %s", step, hint);
            snprintf(err, sizeof err, "sft: step %ld: the %s is not finite (%g): %s; nothing was updated or saved", step + 1,
                     isfinite(nll) ? "gradient norm" : "loss", isfinite(nll) ? gnorm : nll, cause);
            failed = step == 0 ? 2 : 1;
            break;
        }
        if (step_adamw(m, &opt, clip_scale(gnorm, a.clip), &decay, 0, lr, &ac, err, sizeof err))
            ppa_die(1, "sft: step %ld: %s", step + 1, err);
        if (!model_train_engine(m)) model_bf16_refresh(m); /* an engine refreshes its own */
        last_lr = lr;
        train_tally_add(&tally, step + 1, lr, gnorm);
        if (step + 1 == total) { /* the model to be saved: still finite on the step's own rows after the update */
            double bad = 0;
            for (long i = lo; i < hi; i += a.micro)
                bad += !sft_rows_finite(m, &d, perm + at + i, (int)(hi - i < a.micro ? hi - i : a.micro));
            dist_sum_f64(&bad, 1);
            if (bad) {
                char hint[1024];
                train_hint(m, lr, NULL, hint, sizeof hint);
                snprintf(err, sizeof err, "sft: step %ld: after its update the log-probabilities of its rows are not "
                         "finite: the model diverged in that update; %s; nothing was saved", step + 1, hint);
                failed = 1;
                break;
            }
        }
        double dt = timer_now() - ts;
        if (lead) fprintf(lines, "{\"step\": %ld, \"epoch\": %ld, \"loss\": %.6f, \"lr\": %.6g, \"grad_norm\": %.6g, \"rows\": %d, "
               "\"tokens\": %ld, \"tokens_per_s\": %.1f}\n", step + 1, epoch + 1, nll / tokens, lr, gnorm, (int)n, tokens,
               tokens / dt);
        if (lead && (fflush(lines) || ferror(lines))) { /* the log is the run's record: a lost line stops it */
            snprintf(err, sizeof err, "sft: step %ld: cannot write the log (standard output): %s", step + 1, strerror(errno));
            failed = 1;
            break;
        }
        progress_update(&pr, step + 1, "step %ld/%ld  loss %.4f  %.2f s/step  %.0f tok/s", step + 1, total, nll / tokens,
                        (timer_now() - t0) / (double)(step + 1), tokens / dt);
    }
    progress_end(&pr);
    if (lines && fflush(lines) && !failed) {
        snprintf(err, sizeof err, "sft: cannot write the log (standard output): %s", strerror(errno));
        failed = 1;
    }
    if (!failed && step_pull(m, &opt, err, sizeof err)) failed = 1; /* an engine's weights, for the save */
    if (!failed && first_nonfinite(model_params(m), n_params) >= 0) {
        snprintf(err, sizeof err, "sft: the weights are not finite after the last step: the model diverged; nothing was "
                 "saved");
        failed = 1;
    }
    if (failed) {
        free(perm), spans_free(&decay), adamw_free(&opt), data_free(&d), tokenizer_free(tok), model_free(m);
        train_options_free(&opts);
        ppa_die(failed, "%s", err); /* as train's (cmd_train.c) */
    }
    if (lead) fprintf(stderr, "ppa sft: %ld steps in %.1f s\n", total, timer_now() - t0);
    struct stat sb;
    if (lead) { /* made whole beside the run's files, then moved into place */
        char *tmp = ppa_path_join(a.out, ".final.partial");
        if (!stat(tmp, &sb)) remove_tree(tmp);
        if ((model_lora(m) ? lora_save(m, tmp, a.model, err, sizeof err)
                          : model_save(m, tmp, a.bf16, a.model, err, sizeof err))) ppa_die(1, "%s", err);
        ModelCard card = {&opts, argc, argv, &d, NULL, report_last(rep), total, load_kernels(m)};
        if (model_card_write(tmp, &card, err, sizeof err)) ppa_die(1, "sft: %s", err);
        report_finish(rep, lines, tmp, timer_now() - t0); /* the log's last line and summary.json */
        if (fclose(lines)) ppa_die(1, "sft: cannot write the log (standard output): %s", strerror(errno));
        run_folder_publish(tmp, a.out, "sft");
        report_close(rep);
        free(tmp);
        char done[512];
        train_tally_text(&tally, done, sizeof done);
        fprintf(stderr, "ppa sft: wrote %s: %s\n", a.out, done);
        if (!tally.changed)
            fprintf(stderr, "ppa sft: warning: no step of this run changed the weights: %s holds the weights it started "
                            "from (--model %s)\n", a.out, a.model);
    }
    free(perm), spans_free(&decay);
    adamw_free(&opt);
    data_free(&d);
    tokenizer_free(tok);
    model_free(m);
    train_options_free(&opts);
    return 0;
}
