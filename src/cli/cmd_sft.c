/* cmd_sft.c: `ppa sft`: supervised next-token training with AdamW on plain
 * text rows or prompt/response rows (the prompt masked), writing a model
 * folder. The loss of a step is the mean negative log-probability over all
 * scored tokens of the step, so micro-batching changes nothing but memory. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "core/common.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/rows.h"
#include "model/gemm.h"
#include "model/llama.h"
#include "optim/optim.h"

static const char HELP[] =
    "usage: ppa sft --model DIR --data FILE.jsonl --out DIR [options]\n"
    "\n"
    "Next-token training on {\"text\": ...} rows, or on prompt/response rows (every response of a\n"
    "row, the prompt rendered with the chat template and not scored). Prints one JSON line per step.\n"
    "\n"
    "  --epochs N          passes over the data (1)\n"
    "  --max-steps N       stop after N optimizer steps (default: from --epochs)\n"
    "  --lr X              peak learning rate (1e-4)\n"
    "  --batch-size N      rows per optimizer step (8)\n"
    "  --micro-batch N     rows per forward/backward (default: the batch size)\n"
    "  --grad-accum N      micro-batches per step (sets --batch-size = micro-batch x N)\n"
    "  --max-length N      tokens per prompt + response, longer ones cut (1024)\n"
    "  --warmup-ratio X    share of the steps with linear warm-up (0)\n"
    "  --schedule S        cosine (default) | linear | constant\n"
    "  --weight-decay X    AdamW decoupled decay on matrices (0)\n"
    "  --clip-grad X       global L2 norm clipping, 0 = off (1.0)\n"
    "  --seed N            data order (42)\n"
    "  --template NAME     chat template of prompt/response rows (default: detected)\n"
    "  --save-dtype D      f32 (default) | bf16\n";

typedef struct {
    const char *model, *data, *out, *template;
    int epochs, max_steps, batch, micro, accum, max_length, bf16;
    double lr, warmup_ratio, weight_decay, clip;
    Schedule schedule;
    unsigned long long seed;
} SftArgs;

static void parse_args(int argc, char **argv, SftArgs *a) {
    enum { O_HELP = 1, O_MODEL, O_DATA, O_OUT, O_EPOCHS, O_STEPS, O_LR, O_BATCH, O_MICRO, O_ACCUM, O_MAXLEN, O_WARM, O_SCHED,
           O_WD, O_CLIP, O_SEED, O_TEMPLATE, O_DTYPE };
    static const struct option opts[] = {
        {"help", no_argument, NULL, O_HELP},           {"model", required_argument, NULL, O_MODEL},
        {"data", required_argument, NULL, O_DATA},     {"out", required_argument, NULL, O_OUT},
        {"epochs", required_argument, NULL, O_EPOCHS}, {"max-steps", required_argument, NULL, O_STEPS},
        {"lr", required_argument, NULL, O_LR},         {"batch-size", required_argument, NULL, O_BATCH},
        {"micro-batch", required_argument, NULL, O_MICRO}, {"grad-accum", required_argument, NULL, O_ACCUM},
        {"max-length", required_argument, NULL, O_MAXLEN}, {"warmup-ratio", required_argument, NULL, O_WARM},
        {"schedule", required_argument, NULL, O_SCHED}, {"weight-decay", required_argument, NULL, O_WD},
        {"clip-grad", required_argument, NULL, O_CLIP}, {"seed", required_argument, NULL, O_SEED},
        {"template", required_argument, NULL, O_TEMPLATE}, {"save-dtype", required_argument, NULL, O_DTYPE}, {0},
    };
    *a = (SftArgs){.epochs = 1, .batch = 8, .max_length = 1024, .lr = 1e-4, .clip = 1.0, .seed = 42};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_HELP: fputs(HELP, stdout); exit(0);
        case O_MODEL: a->model = optarg; break;
        case O_DATA: a->data = optarg; break;
        case O_OUT: a->out = optarg; break;
        case O_EPOCHS: a->epochs = atoi(optarg); break;
        case O_STEPS: a->max_steps = atoi(optarg); break;
        case O_LR: a->lr = atof(optarg); break;
        case O_BATCH: a->batch = atoi(optarg); break;
        case O_MICRO: a->micro = atoi(optarg); break;
        case O_ACCUM: a->accum = atoi(optarg); break;
        case O_MAXLEN: a->max_length = atoi(optarg); break;
        case O_WARM: a->warmup_ratio = atof(optarg); break;
        case O_SCHED:
            if (schedule_parse(optarg, &a->schedule)) ppa_die(2, "sft: --schedule must be cosine, linear or constant");
            break;
        case O_WD: a->weight_decay = atof(optarg); break;
        case O_CLIP: a->clip = atof(optarg); break;
        case O_SEED: a->seed = strtoull(optarg, NULL, 10); break;
        case O_TEMPLATE: a->template = optarg; break;
        case O_DTYPE: a->bf16 = !strcmp(optarg, "bf16"); break;
        default: ppa_die(2, "sft: see 'ppa sft --help'");
        }
    }
    if (!a->model || !a->data || !a->out) ppa_die(2, "sft: --model, --data and --out are required");
    if (a->micro <= 0) a->micro = a->accum > 0 ? a->batch / a->accum : a->batch;
    if (a->accum > 0) a->batch = a->micro * a->accum;
    if (a->epochs < 1 || a->batch < 1 || a->micro < 1 || a->max_length < 2 || !(a->lr > 0) || a->warmup_ratio < 0 ||
        a->warmup_ratio >= 1)
        ppa_die(2, "sft: need --epochs >= 1, --batch-size >= 1, --max-length >= 2, --lr > 0, 0 <= --warmup-ratio < 1");
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

/* forward + backward of rows idx[0..n): adds -1/n_tok_step * d logp into the gradients */
static double micro_step(Model *m, const DataSet *d, const int *idx, int n, long n_tok_step) {
    Row rows[64];
    int n_resp = 0;
    for (int i = 0; i < n; i++) {
        const DataRow *x = &d->rows[idx[i]];
        rows[i] = (Row){x->prompt_len, x->prompt, x->n_resp, x->resp_len, (const int *const *)x->resp};
        n_resp += x->n_resp;
    }
    char err[512];
    Batch *b = batch_new(m, rows, n, err, sizeof err);
    if (!b) ppa_die(2, "sft: %s", err);
    double *lp = xmalloc(sizeof(double) * (size_t)n_resp), *g = xmalloc(sizeof(double) * (size_t)n_resp), sum = 0;
    model_forward(m, b, lp, NULL);
    for (int i = 0; i < n_resp; i++) sum += lp[i], g[i] = -1.0 / (double)n_tok_step;
    model_backward(m, b, g);
    batch_free(b);
    free(lp), free(g);
    return -sum;
}

int cmd_sft(int argc, char **argv) {
    SftArgs a;
    parse_args(argc, argv, &a);
    if (a.micro > 64) ppa_die(2, "sft: --micro-batch is at most 64 rows");
    char err[4096];
    Model *m = model_load(a.model, err, sizeof err);
    if (!m) ppa_die(2, "%s", err);
    Tokenizer *tok = tokenizer_load(a.model, err, sizeof err);
    const ModelConfig *cfg = model_config(m);
    DataOptions o = {tok, TEMPLATE_NONE, cfg->n_eos ? cfg->eos_token_ids[0] : -1, cfg->vocab_size, 0, 0};
    if (a.template && template_parse(a.template, &o.tpl)) ppa_die(2, "sft: unknown template '%s'", a.template);
    if (!a.template && tok) {
        char *chat = template_from_config(a.model);
        o.tpl = template_detect(tok, chat);
        free(chat);
    }
    DataSet d;
    if (data_read(&d, a.data, &o, err, sizeof err)) ppa_die(2, "%s", err);
    if (!d.n) ppa_die(2, "sft: %s has no rows", a.data);
    truncate_rows(&d, a.max_length);

    long steps_per_epoch = (d.n + a.batch - 1) / a.batch, total = a.max_steps > 0 ? a.max_steps : a.epochs * steps_per_epoch;
    long warmup = (long)(a.warmup_ratio * (double)total + 0.999999);
    size_t n_params = model_n_params(m);
    AdamW opt;
    adamw_init(&opt, n_params);
    AdamWConfig ac = {0.9, 0.999, 1e-8, a.weight_decay};
    unsigned char *decay = model_decay_mask(m);
    int *perm = xmalloc(sizeof(int) * (size_t)d.n);
    fprintf(stderr, "ppa sft: %d rows, %ld steps of %d rows (micro-batch %d), lr %g %s, warm-up %ld; matrix products: %s\n",
            d.n, total, a.batch, a.micro, a.lr,
            a.schedule == SCHEDULE_COSINE ? "cosine" : a.schedule == SCHEDULE_LINEAR ? "linear" : "constant", warmup,
            gemm_backend());
    double t0 = timer_now();
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
        double ts = timer_now(), nll = 0;
        model_zero_grads(m);
        for (int i = 0; i < n; i += a.micro) nll += micro_step(m, &d, perm + at + i, n - i < a.micro ? n - i : a.micro, tokens);
        double gnorm = grad_norm(model_grads(m), n_params), lr = schedule_lr(a.schedule, a.lr, step, warmup, total);
        adamw_step(&opt, model_params(m), model_grads(m), clip_scale(gnorm, a.clip), decay, lr, &ac);
        double dt = timer_now() - ts;
        printf("{\"step\": %ld, \"epoch\": %ld, \"loss\": %.6f, \"lr\": %.6g, \"grad_norm\": %.6g, \"tokens\": %ld, "
               "\"tokens_per_s\": %.1f}\n", step + 1, epoch + 1, nll / tokens, lr, gnorm, tokens, tokens / dt);
        fflush(stdout);
    }
    fprintf(stderr, "ppa sft: %ld steps in %.1f s\n", total, timer_now() - t0);
    struct stat sb;
    char tokjson[4200];
    snprintf(tokjson, sizeof tokjson, "%s/tokenizer.json", a.model);
    if (model_save(m, a.out, a.bf16, stat(tokjson, &sb) ? NULL : a.model, err, sizeof err)) ppa_die(1, "%s", err);
    fprintf(stderr, "ppa sft: wrote %s\n", a.out);
    free(perm), free(decay);
    adamw_free(&opt);
    data_free(&d);
    tokenizer_free(tok);
    model_free(m);
    return 0;
}
