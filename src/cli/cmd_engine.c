/* cmd_engine.c: `ppa logprobs` (summed response log-probabilities of a
 * model) and `ppa grad` (the gradient of an objective on implicit rewards,
 * under the Hugging Face tensor names). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/load.h"
#include "cli/output.h"
#include "cli/setup.h"
#include "core/common.h"
#include "core/progress.h"
#include "dist/dist.h"
#include "data/rows.h"
#include "kernels/gemm.h"
#include "model/model.h"
#include "model/lora.h"
#include "optim/optim.h"
#include "ppa/losses.h"
#include "io/records.h"

#define ROWS_PER_BATCH 8

/* Model, its tokenizer (optional: pre-tokenized rows need none) and the data. */
typedef struct {
    Model *model;
    Tokenizer *tok;
    ChatTemplate *tpl;
    DataSet data;
} Loaded;

static int verbose;

static void load_all(Loaded *L, const TrainOptions *opt, int trainable) {
    char err[4096];
    const char *model_dir = opt->model, *data = opt->data, *template = opt->template_name;
    int skip = opt->skip_invalid, strict = opt->strict;
    L->model = load_model(opt, model_dir, trainable);
    if (verbose) fprintf(stderr, "ppa: %s\n", load_kernels(L->model));
    L->tok = tokenizer_load_folder(model_dir, err, sizeof err); /* absent: pre-tokenized rows only */
    if (!L->tok && err[0]) ppa_die(2, "%s", err);
    const ModelConfig *c = model_config(L->model);
    if (!(L->tpl = chat_template_open(template, model_dir, L->tok, err, sizeof err))) ppa_die(2, "%s", err);
    DataOptions o = {L->tok, L->tpl, c->n_eos ? c->eos_token_ids[0] : -1, c->vocab_size, skip, strict,
                     opt->special_tokens_in_text, model_dir, 0};
    if (data_read(&L->data, data, &o, err, sizeof err)) ppa_die(2, "%s", err);
    if (L->data.boundary_fixes)
        fprintf(stderr, "ppa: %ld responses began with a token merged across the prompt boundary; their prompt ends "
                        "where the tokenizations differ (use --strict to refuse them)\n", L->data.boundary_fixes);
}

static void unload(Loaded *L) {
    data_free(&L->data);
    chat_template_free(L->tpl);
    tokenizer_free(L->tok);
    model_free(L->model);
}

/* Forward over rows [r0, r1): logps and scored-token counts in row order. */
static Batch *forward_rows(Model *m, const DataSet *d, int r0, int r1, double *logps, int *n_tokens) {
    Row rows[ROWS_PER_BATCH];
    for (int r = r0; r < r1; r++) {
        const DataRow *x = &d->rows[r];
        rows[r - r0] = (Row){x->prompt_len, x->prompt, x->n_resp, x->resp_len, (const int *const *)x->resp};
    }
    char err[512];
    Batch *b = batch_new(m, rows, r1 - r0, err, sizeof err);
    if (!b) ppa_die(2, "rows %d..%d: %s", r0 + 1, r1, err);
    model_forward(m, b, logps, n_tokens);
    return b;
}

/* the tokens a forward computes for row x: the prompt once, every response */
static long row_tokens(const DataRow *x) {
    long n = x->prompt_len;
    for (int k = 0; k < x->n_resp; k++) n += x->resp_len[k];
    return n;
}

/* the end of the batch from row r0: rows up to budget tokens (the prompt once), at least one, before hi */
static int batch_end(const DataSet *d, int r0, int hi, long budget) {
    long t = 0;
    int r1 = r0;
    while (r1 < hi) {
        long n = row_tokens(&d->rows[r1]);
        if (r1 > r0 && t + n > budget) break;
        t += n, r1++;
    }
    return r1;
}

static int batch_responses(const DataSet *d, int r0, int r1) {
    int n = 0;
    for (int r = r0; r < r1; r++) n += d->rows[r].n_resp;
    return n;
}

/* 1 with "FILE:LINE: response K: ..." in msg if a log-prob of rows [r0, r1) is not finite, and why: NaN or Inf in
 * the weights (m's trainable ones: an adapter's, with one), or finite weights too large for float32 products */
static int first_nonfinite_logp(Model *m, const DataSet *d, int r0, int r1, const double *lp, const char *path,
                                char *msg, size_t len) {
    for (int r = r0, g = 0; r < r1; g += d->rows[r++].n_resp)
        for (int k = 0; k < d->rows[r].n_resp; k++)
            if (!isfinite(lp[g + k])) {
                long i = first_nonfinite(model_params(m), model_n_params(m));
                const char *whose = model_lora(m) ? "the adapter's weights" : "the model's weights";
                char why[160], wh[1024];
                if (i >= 0) snprintf(why, sizeof why, "%s hold NaN or Inf (parameter %ld)", whose, i);
                else snprintf(why, sizeof why, "%s are finite, so their float32 products overflow: weights too large (a "
                              "diverged model?)", whose);
                snprintf(msg, len, "%s: response %d: the log-probability is not finite (%g): %s",
                         records_where(path, d->rows[r].line, wh, sizeof wh), k + 1, lp[g + k], why);
                return 1;
            }
    return 0;
}

static const char LOGPROBS_USAGE[] =
    "usage: ppa logprobs --model DIR --data FILE.jsonl [options]\n"
    "\n"
    "One line per row: {\"logps\": [...], \"n_tokens\": [...]}: the summed log-probability of each\n"
    "response given its prompt, and its number of scored tokens. Rows are text rows (rendered with\n"
    "the chat template, default: detected) or pre-tokenized {\"prompt_ids\", \"response_ids\"}.\n\n";

int cmd_logprobs(int argc, char **argv) {
    TrainOptions o;
    setup_options(CMD_LOGPROBS, LOGPROBS_USAGE, argc, argv, &o);
    verbose = o.verbose;
    Loaded L = {0};
    load_all(&L, &o, 0);
    long lo, hi; /* this rank's rows; its lines are gathered in row order (one process: all of them, to stdout) */
    dist_share(L.data.n, dist_rank(), &lo, &hi);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = dist_size() > 1 ? open_memstream(&buf, &len) : stdout;
    long budget = setup_batch_tokens(&o), all = 0, done = 0; /* progress in tokens: rows differ a lot */
    for (long r = lo; r < hi; r++) all += row_tokens(&L.data.rows[r]);
    Progress pr;
    progress_init(&pr, "logprobs", "log-probs", dist_rank() == 0); /* under MPI: rank 0's share */
    progress_start(&pr, 0, all);
    for (int r0 = (int)lo, r1; r0 < hi; r0 = r1) {
        r1 = batch_end(&L.data, r0, (int)hi, budget);
        int n = batch_responses(&L.data, r0, r1);
        double *lp = xmalloc(sizeof(double) * (size_t)n);
        int *nt = xmalloc(sizeof(int) * (size_t)n), g = 0;
        Row *rows = xmalloc(sizeof(Row) * (size_t)(r1 - r0));
        for (int r = r0; r < r1; r++) {
            const DataRow *x = &L.data.rows[r];
            rows[r - r0] = (Row){x->prompt_len, x->prompt, x->n_resp, x->resp_len, (const int *const *)x->resp};
        }
        char err[4096];
        /* the CPU, or the GPU attached: a GPU's failure is a runtime one, the CPU's refusal of a batch too large not */
        if (model_forward_rows(L.model, rows, r1 - r0, lp, nt, err, sizeof err))
            progress_break(&pr), ppa_die(model_forward_engine(L.model) ? 1 : 2, "logprobs: rows %d..%d: %s", r0 + 1, r1, err);
        free(rows);
        char bad[512];
        if (first_nonfinite_logp(L.model, &L.data, r0, r1, lp, o.data, bad, sizeof bad)) { /* JSON has no NaN: refuse to print one */
            free(lp), free(nt), unload(&L), train_options_free(&o);
            progress_break(&pr);
            ppa_die(2, "logprobs: %s", bad);
        }
        for (int r = r0; r < r1; r++) {
            fputs("{\"logps\": [", out);
            for (int k = 0; k < L.data.rows[r].n_resp; k++) fprintf(out, k ? ", %.17g" : "%.17g", lp[g + k]);
            fputs("], \"n_tokens\": [", out);
            for (int k = 0; k < L.data.rows[r].n_resp; k++) fprintf(out, k ? ", %d" : "%d", nt[g + k]);
            fputs("]}\n", out);
            g += L.data.rows[r].n_resp;
            done += row_tokens(&L.data.rows[r]);
        }
        free(lp), free(nt);
        progress_update(&pr, done, "%ld/%ld rows, %ld/%ld tokens", r1 - lo, hi - lo, done, all);
    }
    progress_end(&pr);
    if (out != stdout) {
        if (fclose(out)) ppa_die(1, "logprobs: cannot buffer the output");
        output_gathered(buf, len, NULL, "logprobs");
        free(buf);
    }
    unload(&L);
    train_options_free(&o);
    if (fflush(stdout) || ferror(stdout)) ppa_die(1, "logprobs: error writing the output");
    return 0;
}

static const char GRAD_USAGE[] =
    "usage: ppa grad --model DIR [--ref DIR] --data FILE.jsonl --objective NAME [objective options]\n"
    "                --beta B --out grads.safetensors [options]\n"
    "\n"
    "loss = mean over rows of the objective on s_k = beta (logp_policy,k - logp_ref,k), labels =\n"
    "the rows' scores (simpo: s_k = beta * mean-token logp_policy; ipo: mean-token log-probs for\n"
    "both). Writes d loss / d theta for every parameter under the Hugging Face names (a tied\n"
    "embedding's gradient includes the LM head's share) and prints {\"loss\": ...}. Without --ref\n"
    "the reference is the policy itself, so every s is 0.\n\n";

/* s from log-probs; returns d s / d logp_policy */
static double implicit_reward(PpaObjective obj, double beta, double lp, double ref, int n, double *s) {
    if (obj == PPA_SIMPO) return *s = beta * lp / n, beta / n;
    if (obj == PPA_IPO) return *s = beta * (lp - ref) / n, beta / n;
    return *s = beta * (lp - ref), beta;
}

int cmd_grad(int argc, char **argv) {
    TrainOptions o;
    setup_options(CMD_GRAD, GRAD_USAGE, argc, argv, &o);
    verbose = o.verbose;
    PpaObjective obj = o.objective;
    const PpaLossOptions lo = o.loss; /* lo.beta is --beta: ipo's beta follows the implicit-reward beta */
    const char *data = o.data;
    double beta = o.beta;
    Loaded L = {0};
    load_all(&L, &o, 1);
    Model *refm = o.ref ? load_frozen(&o, o.ref) : NULL;
    if (!L.data.n) ppa_die(2, "grad: %s has no rows", data);
    model_zero_grads(L.model);
    double total = 0.0;
    for (int r0 = 0; r0 < L.data.n; r0 += ROWS_PER_BATCH) {
        int r1 = r0 + ROWS_PER_BATCH < L.data.n ? r0 + ROWS_PER_BATCH : L.data.n, n = batch_responses(&L.data, r0, r1);
        double *lp = xmalloc(sizeof(double) * (size_t)n), *rl = xmalloc(sizeof(double) * (size_t)n);
        double *dlp = xmalloc(sizeof(double) * (size_t)n), *s = xmalloc(sizeof(double) * (size_t)n);
        double *ds = xmalloc(sizeof(double) * (size_t)n);
        int *nt = xmalloc(sizeof(int) * (size_t)n), g = 0;
        if (refm) batch_free(forward_rows(refm, &L.data, r0, r1, rl, NULL));
        Batch *b = forward_rows(L.model, &L.data, r0, r1, lp, nt);
        if (!refm) memcpy(rl, lp, sizeof(double) * (size_t)n); /* the policy is its own reference: s = 0 */
        for (int r = r0; r < r1; r++) {
            const DataRow *x = &L.data.rows[r];
            for (int k = 0; k < x->n_resp; k++) dlp[g + k] = implicit_reward(obj, beta, lp[g + k], rl[g + k], nt[g + k], &s[g + k]);
            PpaListResult res;
            PpaStatus st = ppa_loss_list(obj, &lo, x->n_resp, s + g, x->scores, NULL, ds + g, &res);
            char wh[1024];
            if (st != PPA_OK) ppa_die(2, "%s: %s", records_where(data, x->line, wh, sizeof wh), ppa_status_string(st));
            total += res.loss;
            for (int k = 0; k < x->n_resp; k++) dlp[g + k] *= ds[g + k] / L.data.n; /* the mean over rows */
            g += x->n_resp;
        }
        model_backward(L.model, b, dlp);
        batch_free(b);
        free(lp), free(rl), free(dlp), free(s), free(ds), free(nt);
    }
    char err[4096];
    if ((model_lora(L.model) ? lora_save_grads(L.model, o.out, err, sizeof err) : model_save_grads(L.model, o.out, err, sizeof err))) ppa_die(1, "%s", err);
    printf("{\"loss\": %.17g}\n", total / L.data.n);
    model_free(refm);
    unload(&L);
    train_options_free(&o);
    return 0;
}
