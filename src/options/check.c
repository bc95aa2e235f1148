/* check.c: after the command line and the recipe: batch size =
 * micro-batch x grad-accum from the values given and the defaults, the
 * ranges and combinations of every value, and the parse as a whole. */
#include <getopt.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "model/lora.h"
#include "template/template.h"
#include "options/internal.h"

/* ---- batch size = micro-batch x grad-accum ---- */

static const TrainOptId BATCH_IDS[3] = {TOPT_BATCH_SIZE, TOPT_MICRO_BATCH, TOPT_GRAD_ACCUM};

static int *batch_field(TrainOptions *o, int k) {
    return k == 0 ? &o->batch_size : k == 1 ? &o->micro_batch : &o->grad_accum;
}

/* "--batch-size 100" or "per_device_train_batch_size 1 (recipe.yaml:38)" */
static const char *batch_desc(const TrainOptions *o, int k, long value, char *buf, size_t len) {
    const TrainOrigin *g = &o->origin[BATCH_IDS[k]];
    char f[64];
    if (g->from == TRAIN_FROM_CONFIG) snprintf(buf, len, "%s %ld (line %d)", g->key, value, g->line);
    else if (g->from == TRAIN_FROM_CLI) snprintf(buf, len, "%s %ld", opt_flag(BATCH_IDS[k], f, sizeof f), value);
    else snprintf(buf, len, "the default %s %ld", OPT[BATCH_IDS[k]].name, value);
    return buf;
}

/* 0 if the known values of v[3] (B, m, a; 0 = unknown) agree; else which rule fails: 1 B != m a, 2 m does not
 * divide B, 3 a does not divide B */
static int batch_conflict(const long v[3]) {
    if (v[0] && v[1] && v[2]) return v[0] != v[1] * v[2] ? 1 : 0;
    if (v[0] && v[1] && v[0] % v[1]) return 2;
    if (v[0] && v[2] && v[0] % v[2]) return 3;
    return 0;
}

static int batch_known(const long v[3]) { return (v[0] != 0) + (v[1] != 0) + (v[2] != 0); }

static void batch_conflict_msg(const TrainOptions *o, const long v[3], int rule, char *out, size_t len) {
    char d0[160], d1[160], d2[160];
    batch_desc(o, 0, v[0], d0, sizeof d0);
    if (rule == 1)
        snprintf(out, len, "%s is not %s x %s = %ld: give two of the three, or values that agree", d0,
                 batch_desc(o, 1, v[1], d1, sizeof d1), batch_desc(o, 2, v[2], d2, sizeof d2), v[1] * v[2]);
    else
        snprintf(out, len, "%s is not a multiple of %s", d0, batch_desc(o, rule == 2 ? 1 : 2, v[rule - 1], d1, sizeof d1));
}

/* The defaults for what was not given. train: one list per micro-batch,
 * then 128 lists per step (the paper); sft: 8 rows per step, in one
 * micro-batch. */
static int fill_defaults(TrainOptions *o, long v[3], char *err, size_t errlen) {
    int sft = o->cmd == CMD_SFT;
    long batch = sft ? 8 : DEFAULT_BATCH;
    char buf[512];
    if (!sft && batch_known(v) < 2 && !v[1]) {
        v[1] = DEFAULT_MICRO;
        opt_set_origin(o, TOPT_MICRO_BATCH, TRAIN_FROM_DEFAULT, 0, NULL);
    }
    if (batch_known(v) < 2 && !v[0]) {
        int k = v[1] ? 1 : 2; /* what the default batch must be a multiple of */
        if (v[k] && batch % v[k]) {
            const TrainOrigin *g = &o->origin[BATCH_IDS[k]];
            if (g->from == TRAIN_FROM_CONFIG) snprintf(buf, sizeof buf, "%s:%d: %s", o->config, g->line, g->key);
            else opt_flag(BATCH_IDS[k], buf, sizeof buf);
            opt_fail(err, errlen, "%s %ld does not divide the default batch size %ld: give the batch size (or "
                                  "%s) too",
                     buf, v[k], batch, k == 1 ? "grad-accum" : "micro-batch");
            return -1;
        }
        v[0] = batch;
        opt_set_origin(o, TOPT_BATCH_SIZE, TRAIN_FROM_DEFAULT, 0, NULL);
    }
    if (sft && batch_known(v) < 2 && !v[2]) {
        v[2] = 1;
        opt_set_origin(o, TOPT_GRAD_ACCUM, TRAIN_FROM_DEFAULT, 0, NULL);
    }
    return 0;
}

int opt_resolve_batch(TrainOptions *o, char *err, size_t errlen) {
    char buf[512], msg[600];
    if (!opt_takes(o->cmd, TOPT_BATCH_SIZE)) return 0;
    for (int k = 0; k < 3; k++) {
        TrainOptId id = BATCH_IDS[k];
        if (o->origin[id].from != TRAIN_FROM_DEFAULT && *batch_field(o, k) < 1) {
            opt_fail(err, errlen, "%s must be >= 1, found %d", opt_where(o, id, buf, sizeof buf), *batch_field(o, k));
            return -1;
        }
    }
    /* each source on its own must agree */
    const TrainSource sources[2] = {TRAIN_FROM_CLI, TRAIN_FROM_CONFIG};
    for (int s = 0; s < 2; s++) {
        long v[3] = {0};
        int line = 0;
        for (int k = 0; k < 3; k++)
            if (o->origin[BATCH_IDS[k]].from == sources[s]) {
                v[k] = *batch_field(o, k);
                if (o->origin[BATCH_IDS[k]].line > line) line = o->origin[BATCH_IDS[k]].line;
            }
        int rule = batch_conflict(v);
        if (rule) {
            batch_conflict_msg(o, v, rule, msg, sizeof msg);
            if (sources[s] == TRAIN_FROM_CONFIG) opt_fail(err, errlen, "%s:%d: %s", o->config, line, msg);
            else opt_fail(err, errlen, "%s", msg);
            return -1;
        }
    }
    /* command line first, then the config (batch size, micro-batch, grad-accum); a config value that
     * contradicts the command line is dropped */
    long v[3] = {0};
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 3; k++) {
            TrainOrigin *g = &o->origin[BATCH_IDS[k]];
            if (g->from != sources[s]) continue;
            long t[3] = {v[0], v[1], v[2]}, want = 0;
            t[k] = *batch_field(o, k);
            if (batch_known(v) == 2) /* the other two fix it */
                want = k == 0 ? v[1] * v[2] : v[0] / v[3 - k];
            if ((want && want != t[k]) || batch_conflict(t)) {
                opt_note(o, "%s:%d: %s %ld not used: it contradicts the command line's batch options", o->config, g->line,
                     g->key, t[k]);
                opt_set_origin(o, BATCH_IDS[k], TRAIN_FROM_DERIVED, 0, NULL);
                continue;
            }
            v[k] = t[k];
        }
    if (fill_defaults(o, v, err, errlen)) return -1;
    for (int k = 0; k < 3; k++)
        if (!v[k]) {
            v[k] = k == 0 ? v[1] * v[2] : v[0] / v[3 - k];
            opt_set_origin(o, BATCH_IDS[k], TRAIN_FROM_DERIVED, 0, NULL);
        }
    if (v[0] > 1000000) {
        opt_fail(err, errlen, "a batch of %ld lists per step is more than ppa allows (1000000)", v[0]);
        return -1;
    }
    for (int k = 0; k < 3; k++) *batch_field(o, k) = (int)v[k];
    return 0;
}

/* ---- validation ---- */

int opt_objective_uses(PpaObjective obj, TrainOptId id) {
    int dpo = obj == PPA_DPO_SINGLE_PAIR || obj == PPA_DPO_BPR || obj == PPA_DPO_OVW || obj == PPA_DPO_ALL_PAIRS;
    switch (id) {
    case TOPT_TAU:
    case TOPT_SINKHORN:
    case TOPT_SINKHORN_ITERS:
    case TOPT_SINKHORN_TOL: return obj == PPA_NEURAL_NDCG;
    case TOPT_ALPHA: return obj == PPA_APPROX_NDCG;
    case TOPT_SIGMA: return obj == PPA_LAMBDA;
    case TOPT_TIES: return dpo || obj == PPA_HINGE || obj == PPA_IPO || obj == PPA_SIMPO;
    case TOPT_PAIRS: return obj == PPA_IPO || obj == PPA_SIMPO;
    case TOPT_LABEL_SMOOTHING: return dpo || obj == PPA_SIMPO;
    case TOPT_GAMMA: return obj == PPA_SIMPO;
    case TOPT_NORMALIZE: return obj == PPA_LISTMLE;
    default: return 1; /* k, gain, discount also shape the NDCG metric */
    }
}

int options_report_to(const char *list, char *ignored, size_t ignoredlen, char *err, size_t errlen) {
    /* transformers' integrations that ppa does not talk to (transformers/integrations/integration_utils.py) */
    static const char *const OTHERS[] = {"azure_ml", "clearml", "codecarbon", "comet_ml", "dagshub", "dvclive",
                                         "flyte", "mlflow", "neptune", "swanlab", "trackio"};
    int bits = 0;
    size_t at = 0;
    ignored[0] = 0;
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
        p += n + (p[n] == ',');
        if (!strcmp(name, "none") || !name[0]) continue;
        if (!strcmp(name, "tensorboard")) bits |= REPORT_TENSORBOARD;
        else if (!strcmp(name, "wandb")) bits |= REPORT_WANDB;
        else if (!strcmp(name, "all")) bits |= REPORT_TENSORBOARD | REPORT_WANDB;
        else {
            size_t i = 0;
            while (i < PPA_ARRAY_LEN(OTHERS) && strcmp(name, OTHERS[i])) i++;
            if (i == PPA_ARRAY_LEN(OTHERS) || n > 63)
                return opt_fail(err, errlen, "'%s' is not a service ppa knows: none, tensorboard, wandb or all (or one "
                                "of transformers' other integrations, which ppa ignores)", name), -1;
            if (at < ignoredlen) at += (size_t)snprintf(ignored + at, ignoredlen - at, "%s%s", at ? ", " : "", name);
        }
    }
    return bits;
}

static int path_exists(const char *p) { return access(p, F_OK) == 0; }

/* the options the command needs given (OPT[].required) */
static int check_required(const TrainOptions *o, char *err, size_t errlen) {
    /* train's recipe keys for the required files */
    static const char *const RECIPE[TOPT_OUT + 1] = {"model_name_or_path", "dataset_mixer, train_file or data",
                                                     "output_dir"};
    for (int id = 0; id < TOPT_COUNT; id++) {
        if (!(OPT[id].required & o->cmd)) continue;
        const void *field = (const char *)o + OPT[id].off;
        int given = OPT[id].type == T_STR ? *(char *const *)field && **(char *const *)field
                                          : o->origin[id].from != TRAIN_FROM_DEFAULT;
        if (given) continue;
        char flag[64];
        opt_flag((TrainOptId)id, flag, sizeof flag);
        const char *mv = OPT[id].metavar;
        for (int i = 0; i < OPT_N_HELP_OVERRIDES; i++)
            if ((int)OPT_HELP_OVERRIDES[i].id == id && (OPT_HELP_OVERRIDES[i].cmds & o->cmd)) mv = OPT_HELP_OVERRIDES[i].metavar;
        if (o->cmd == CMD_TRAIN && id <= TOPT_OUT)
            opt_fail(err, errlen, "%s %s is required (or %s in the --config file)", flag, mv, RECIPE[id]);
        else opt_fail(err, errlen, "%s%s%s is required", flag, mv ? " " : "", mv ? mv : "");
        return -1;
    }
    return 0;
}

/* LoRA: the shape of a new adapter, or an existing one (--adapter) that fixes it */
static int validate_lora(TrainOptions *o, char *err, size_t errlen) {
    char w[512], m[256];
    unsigned mask;
    if (!opt_takes(o->cmd, TOPT_LORA_R)) return 0;
    if (o->lora_r < 0 || o->lora_r > 65536)
        return opt_fail(err, errlen, "%s must be in 0..65536 (0: no adapter), found %d", opt_where(o, TOPT_LORA_R, w, sizeof w),
                        o->lora_r), -1;
    if (!(o->lora_alpha > 0) || !isfinite(o->lora_alpha))
        return opt_fail(err, errlen, "%s must be > 0, found %g", opt_where(o, TOPT_LORA_ALPHA, w, sizeof w), o->lora_alpha), -1;
    if (!(o->lora_dropout >= 0 && o->lora_dropout < 1))
        return opt_fail(err, errlen, "%s must be in [0, 1), found %g", opt_where(o, TOPT_LORA_DROPOUT, w, sizeof w),
                        o->lora_dropout), -1;
    if (o->lora_targets && lora_parse_targets(o->lora_targets, &mask, m, sizeof m))
        return opt_fail(err, errlen, "%s: %s", opt_where(o, TOPT_LORA_TARGETS, w, sizeof w), m), -1;
    for (int id = TOPT_LORA_R; id <= TOPT_USE_RSLORA; id++) {
        if (o->origin[id].from == TRAIN_FROM_DEFAULT) continue;
        if (o->adapter)
            return opt_fail(err, errlen, "%s: the adapter of --adapter %s sets its own shape (its adapter_config.json)",
                            opt_where(o, (TrainOptId)id, w, sizeof w), o->adapter), -1;
        if (id != TOPT_LORA_R && !o->lora_r)
            opt_note(o, "%s has no effect without an adapter (lora_r, or use_peft: true in a recipe)",
                     opt_where(o, (TrainOptId)id, w, sizeof w));
    }
    return 0;
}

/* ranges of generate's options */
static int validate_generate(TrainOptions *o, char *err, size_t errlen) {
    char w[64];
    const char *why = NULL;
    TrainOptId id = TOPT_COUNT;
    if (o->max_new_tokens < 1 || o->max_new_tokens > 1 << 24) id = TOPT_MAX_NEW_TOKENS, why = "must be in 1..16777216";
    else if (o->n_samples < 1 || o->n_samples > 1 << 16) id = TOPT_N, why = "must be in 1..65536";
    else if (!(o->temperature >= 0)) id = TOPT_TEMPERATURE, why = "must be >= 0 (0: greedy)";
    else if (!(o->top_p > 0 && o->top_p <= 1)) id = TOPT_TOP_P, why = "must be in (0, 1]";
    else if (o->top_k < 0) id = TOPT_TOP_K, why = "must be >= 0 (0: off)";
    else if (o->format && strcmp(o->format, "auto") && strcmp(o->format, "jsonl") && strcmp(o->format, "alpaca_eval") &&
             strcmp(o->format, "mt_bench"))
        id = TOPT_FORMAT, why = "must be jsonl, alpaca_eval or mt_bench (or auto: from the input)";
    else if (o->generator && !o->generator[0]) id = TOPT_GENERATOR, why = "must not be empty";
    else if (o->max_seqs < 0 || o->max_seqs > 1 << 20)
        id = TOPT_MAX_SEQS, why = "must be in 0..1048576 (0: as many as fit)";
    else if (o->sampler && strcmp(o->sampler, "device") && strcmp(o->sampler, "exact"))
        id = TOPT_SAMPLER, why = "must be device or exact";
    for (int i = 0; !why && i < o->stop.n; i++)
        if (!o->stop.v[i][0]) id = TOPT_STOP, why = "must not be empty (an empty string would end every response at once)";
    if (!why) return 0;
    char v[64];
    opt_fail(err, errlen, "%s %s, found %s", opt_where(o, id, w, sizeof w), why, opt_value_text(o, id, v, sizeof v));
    return -1;
}

/* ---- magnitudes the arithmetic can carry ----
 * The scores s = beta (logp - ref) are doubles, but the backward gets
 * beta x d loss / d s per response as a float32 gradient (FLT_MAX = 3.4e38),
 * multiplies it by weights and sums it over up to 2^20 tokens and thousands
 * of channels. An objective's |d loss / d s| is at most about K (<= 1024)
 * times its sharpness: 1/tau for neural_ndcg (NeuralSort's
 * Z = (c s - B) / tau), alpha for approx_ndcg (sigmoid(alpha (s_j - s_i))),
 * sigma for lambda, 1 for the others; ipo aims at the margin 1/(2 beta), so
 * its gradient is about 1/beta (and its loss, the square, overflows double
 * below beta = 1e-154). beta x sharpness (1/beta for ipo) is kept below
 * GRAD_SCALE_MAX = 1e20: the per-response gradient stays below 1e23, leaving
 * float32 a factor of 1e15 for the backward's sums, and |s| below
 * 1e20 x 1e8 (2^20 tokens x 100 nats) is far inside double. A LoRA adapter's
 * scale (alpha / r, rslora alpha / sqrt(r)) multiplies its output and its
 * gradients in float32 the same way: also at most 1e20.
 * AdamW moves every trained weight by about lr a step (exactly lr on the
 * first, at most (1 - b1) / sqrt(1 - b2) = 3.2 lr later), and the forward
 * multiplies two moved weights (a norm's scale and a projection; an adapter's
 * B and A): from lr = sqrt(FLT_MAX) / 3.2 = 5.8e18 one update overflows
 * float32 whatever the model, so lr is kept at most STEP_MAX = 1e18. Smaller
 * values can still diverge: the trainer catches that (trainer.c). */
#define GRAD_SCALE_MAX 1e20
#define STEP_MAX 1e18

static int validate_magnitudes(const TrainOptions *o, char *err, size_t errlen) {
    char w[512], wb[600];
    int beta_used = opt_takes(o->cmd, TOPT_BETA), loss = opt_takes(o->cmd, TOPT_OBJECTIVE);
    double beta = beta_used ? o->beta : 1; /* a reward model's score is its head's output: no beta */
    if (o->origin[TOPT_BETA].from == TRAIN_FROM_DEFAULT) snprintf(wb, sizeof wb, "beta %g (the default)", o->beta);
    else snprintf(wb, sizeof wb, "%s %g", opt_where(o, TOPT_BETA, w, sizeof w), o->beta);
    if (beta_used && o->beta > GRAD_SCALE_MAX)
        return opt_fail(err, errlen, "%s is above %g: beta scales the scores s = beta (logp - ref) and, in training, "
                        "the gradient beta x dloss/ds that the float32 backward sums, which overflows (3.4e38) beyond that",
                        wb, GRAD_SCALE_MAX), -1;
    if (loss && o->objective == PPA_IPO && o->beta < 1 / GRAD_SCALE_MAX)
        return opt_fail(err, errlen, "%s is below %g for ipo: its target margin 1/(2 beta) and its gradient, about "
                        "1/beta, overflow float32 in the backward beyond that", wb, 1 / GRAD_SCALE_MAX), -1;
    /* the objective's sharpness: d loss / d s grows with it; tau's bound is a floor, the others' a ceiling */
    const struct {
        TrainOptId id;
        double value, bound;
        const char *product;
    } sh[] = {{TOPT_TAU, o->loss.tau, beta / GRAD_SCALE_MAX, "beta / tau"},
              {TOPT_ALPHA, o->loss.alpha, GRAD_SCALE_MAX / beta, "beta x alpha"},
              {TOPT_SIGMA, o->loss.sigma, GRAD_SCALE_MAX / beta, "beta x sigma"}};
    for (size_t i = 0; loss && i < sizeof sh / sizeof sh[0]; i++) {
        int floor = sh[i].id == TOPT_TAU;
        double product = floor ? beta / sh[i].value : beta * sh[i].value; /* a hair of slack for the bound's rounding */
        if (!opt_objective_uses(o->objective, sh[i].id) || product <= GRAD_SCALE_MAX * (1 + 1e-12)) continue;
        opt_where(o, sh[i].id, w, sizeof w);
        if (beta_used)
            return opt_fail(err, errlen, "%s %g is too %s for %s: %s above %g makes the gradient beta x dloss/ds "
                            "overflow float32 in the backward; %s must be %s %g", w, sh[i].value,
                            floor ? "small" : "large", wb, sh[i].product, GRAD_SCALE_MAX, OPT[sh[i].id].name,
                            floor ? ">= beta / 1e20 =" : "<= 1e20 / beta =", sh[i].bound), -1;
        return opt_fail(err, errlen, "%s %g is %s %g, where the gradient dloss/ds overflows float32 in the backward", w,
                        sh[i].value, floor ? "below" : "above", sh[i].bound), -1;
    }
    if (opt_takes(o->cmd, TOPT_LR) && o->lr > STEP_MAX)
        return opt_fail(err, errlen, "%s %g is above %g: one AdamW step moves a weight by about lr, and the forward "
                        "multiplies two moved weights, which overflows float32 (3.4e38) from lr = 5.8e18 on",
                        opt_where(o, TOPT_LR, w, sizeof w), o->lr, STEP_MAX), -1;
    if (opt_takes(o->cmd, TOPT_LORA_R) && o->lora_r > 0) {
        double scale = o->use_rslora ? o->lora_alpha / sqrt((double)o->lora_r) : o->lora_alpha / o->lora_r;
        char wr[512];
        if (scale > GRAD_SCALE_MAX)
            return opt_fail(err, errlen, "%s %g with %s %d: the adapter's scale alpha / %s = %g is above %g: it "
                            "multiplies the adapter's output and gradients, which overflow float32 beyond that",
                            opt_where(o, TOPT_LORA_ALPHA, w, sizeof w), o->lora_alpha,
                            opt_where(o, TOPT_LORA_R, wr, sizeof wr), o->lora_r, o->use_rslora ? "sqrt(r)" : "r", scale,
                            GRAD_SCALE_MAX), -1;
    }
    return 0;
}

int opt_validate(TrainOptions *o, char *err, size_t errlen) {
    char w[512];
    /* a value of an option the command does not take keeps its valid default */
#define BAD(id, ...)                                                                                                   \
    do {                                                                                                               \
        if (!opt_takes(o->cmd, id)) break;                                                                             \
        char m_[256];                                                                                                  \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                                          \
        opt_fail(err, errlen, "%s %s", opt_where(o, id, w, sizeof w), m_);                                                  \
        return -1;                                                                                                     \
    } while (0)
    if (check_required(o, err, errlen)) return -1;
    /* Hub names in a recipe: ppa reads local files only */
    const TrainOrigin *gd = &o->origin[TOPT_DATA], *gm = &o->origin[TOPT_MODEL];
    if (gd->from == TRAIN_FROM_CONFIG && !path_exists(o->data))
        BAD(TOPT_DATA, "names '%s', which is not a local file: ppa reads a local JSON Lines file; download the "
                       "dataset and give its path (--data FILE)",
            o->data);
    if (gm->from == TRAIN_FROM_CONFIG && !path_exists(o->model))
        BAD(TOPT_MODEL, "names '%s', which is not a local folder: download the model and give its folder (--model DIR)",
            o->model);
    if (!(o->beta > 0)) BAD(TOPT_BETA, "must be > 0, found %g", o->beta);
    if (o->list_size < 2 || o->list_size > PPA_NEURAL_MAX_ITEMS)
        BAD(TOPT_LIST_SIZE, "must be in 2..%d, found %d", PPA_NEURAL_MAX_ITEMS, o->list_size);
    if (o->epochs < 1) BAD(TOPT_EPOCHS, "must be >= 1, found %d", o->epochs);
    if (o->max_steps < 0) BAD(TOPT_MAX_STEPS, "must be >= 0 (0: from the epochs), found %ld", o->max_steps);
    if (!(o->lr > 0)) BAD(TOPT_LR, "must be > 0, found %g", o->lr);
    if (!(o->warmup_ratio >= 0 && o->warmup_ratio < 1)) BAD(TOPT_WARMUP_RATIO, "must be in [0, 1), found %g", o->warmup_ratio);
    if (!(o->weight_decay >= 0)) BAD(TOPT_WEIGHT_DECAY, "must be >= 0, found %g", o->weight_decay);
    if (!(o->clip_grad >= 0)) BAD(TOPT_CLIP_GRAD, "must be >= 0 (0: no clipping), found %g", o->clip_grad);
    if (o->max_length < 2 || o->max_length > 1 << 20) BAD(TOPT_MAX_LENGTH, "must be in 2..%d, found %d", 1 << 20, o->max_length);
    if (o->max_prompt_length < 1 || o->max_prompt_length >= o->max_length)
        BAD(TOPT_MAX_PROMPT_LENGTH, "must be in 1..max_length - 1 = %d (responses get the rest), found %d",
            o->max_length - 1, o->max_prompt_length);
    if (o->save_every < 0) BAD(TOPT_SAVE_EVERY, "must be >= 0 (0: only the final model), found %ld", o->save_every);
    if (o->eval_every < 0) BAD(TOPT_EVAL_EVERY, "must be >= 0 (0: at the end), found %ld", o->eval_every);
    if (o->batch_tokens < 0 || o->batch_tokens > (1L << 30))
        BAD(TOPT_BATCH_TOKENS, "must be in 0..2^30 (0: the device's default), found %ld", o->batch_tokens);
    if (o->max_line_bytes < 1024 || o->max_line_bytes > (1L << 40))
        BAD(TOPT_MAX_LINE_BYTES, "must be in 1024..2^40, found %ld", o->max_line_bytes);
    if (o->threads < 0 || o->threads > 4096) BAD(TOPT_THREADS, "must be in 0..4096 (0: all cores), found %d", o->threads);
    TemplateKind tk;
    if (o->template_name && template_parse(o->template_name, &tk))
        BAD(TOPT_TEMPLATE, "'%s' is not a template: chatml, llama3, mistral, zephyr, llama2 or none", o->template_name);
    if (o->reference_free && (o->ref || o->ref_cache))
        BAD(TOPT_REFERENCE_FREE, "uses no reference model: drop %s", o->ref ? "the reference model (--ref)" : "--ref-cache");
    char m[256];
    if (ppa_loss_options_check(&o->loss, m, sizeof m) != PPA_OK) {
        opt_fail(err, errlen, "objective options: %s", m);
        return -1;
    }
    if (o->eval_every > 0 && !o->eval_data) {
        if (o->origin[TOPT_EVAL_EVERY].from == TRAIN_FROM_CLI) {
            opt_fail(err, errlen, "--eval-every needs --eval-data FILE");
            return -1;
        }
        opt_note(o, "%s %ld has no effect without eval_data (--eval-data FILE)", opt_where(o, TOPT_EVAL_EVERY, w, sizeof w),
             o->eval_every);
    }
    if (o->objective == PPA_SIMPO && (o->ref || o->ref_cache))
        opt_note(o, "simpo uses no reference model: %s is not used", o->ref ? "the reference model (--ref)" : "--ref-cache");
    if (o->cmd == CMD_GENERATE && validate_generate(o, err, errlen)) return -1;
    if (o->cmd == CMD_REWARD && (o->objective == PPA_SIMPO || o->objective == PPA_IPO))
        BAD(TOPT_OBJECTIVE, "%s is defined on log-probs and a beta; a reward model's score is its head's output: "
                            "choose another objective", ppa_objective_name(o->objective));
    if (validate_lora(o, err, errlen)) return -1;
    if (o->report_to && opt_takes(o->cmd, TOPT_REPORT_TO)) {
        char ign[256];
        if (options_report_to(o->report_to, ign, sizeof ign, m, sizeof m) < 0) BAD(TOPT_REPORT_TO, "%s", m);
        if (ign[0]) opt_note(o, "%s: %s ignored: ppa writes TensorBoard files (tensorboard) and talks to no service",
                             opt_where(o, TOPT_REPORT_TO, w, sizeof w), ign);
    }
    if (validate_magnitudes(o, err, errlen)) return -1;
    if (o->zero < 0 || o->zero > 2) BAD(TOPT_ZERO, "must be 0, 1 or 2 (the ZeRO stage), found %d", o->zero);
    if (o->zero == 2 && o->device == DEVICE_CPU && opt_takes(o->cmd, TOPT_ZERO))
        BAD(TOPT_ZERO, "2 shards the GPU engine's gradients; the CPU keeps them whole: use --zero 1");
    if (o->zero == 2 && (o->lora_r > 0 || o->adapter) && opt_takes(o->cmd, TOPT_ZERO))
        BAD(TOPT_ZERO, "2 shards a full fine-tuning's gradients; an adapter's are small: use --zero 1");
    if (o->collective_timeout < 1 || o->collective_timeout > COLLECTIVE_TIMEOUT_MAX)
        BAD(TOPT_COLLECTIVE_TIMEOUT, "must be in 1..%d seconds (a week), found %ld", COLLECTIVE_TIMEOUT_MAX,
            o->collective_timeout);
    if (o->reward_index < 0 || o->reward_index >= 1 << 16)
        BAD(TOPT_REWARD_INDEX, "must be in 0..65535, found %d", o->reward_index);
    for (int id = TOPT_TAU; id <= TOPT_NORMALIZE && opt_takes(o->cmd, TOPT_OBJECTIVE); id++)
        if (o->origin[id].from != TRAIN_FROM_DEFAULT && !opt_objective_uses(o->objective, (TrainOptId)id))
            opt_note(o, "%s has no effect on objective %s", opt_where(o, (TrainOptId)id, w, sizeof w),
                 ppa_objective_name(o->objective));
#undef BAD
    return 0;
}

/* the handbook's per-device batch leaves out the GPU count */
static void note_handbook_batch(TrainOptions *o) {
    const TrainOrigin *gm = &o->origin[TOPT_MICRO_BATCH], *ga = &o->origin[TOPT_GRAD_ACCUM];
    if (o->origin[TOPT_BATCH_SIZE].from == TRAIN_FROM_DERIVED && o->batch_size != DEFAULT_BATCH &&
        ((gm->from == TRAIN_FROM_CONFIG && !strcmp(gm->key, "per_device_train_batch_size")) ||
         (ga->from == TRAIN_FROM_CONFIG && !strcmp(ga->key, "gradient_accumulation_steps"))))
        opt_note(o, "%s: batch size %d = per-device batch %d x gradient accumulation %d; the handbook also multiplies by "
                    "the number of GPUs (the paper: 128 lists per step), ppa runs one process: set batch_size: 128 (or "
                    "--batch-size 128) for the paper's batch",
                 o->config, o->batch_size, o->micro_batch, o->grad_accum);
}

static TrainOptionsStatus parse_all(OptCommand cmd, int argc, char **argv, TrainOptions *o, char *err, size_t errlen) {
    TrainOptionsStatus st = opt_cli_pass(cmd, argc, argv, o, PASS_SYNTAX, err, errlen);
    if (st != TRAIN_OPTIONS_OK) return st;
    int constant_line = 0;
    if (o->config && opt_apply_recipe(o, &constant_line, err, errlen)) return TRAIN_OPTIONS_ERROR;
    if ((st = opt_cli_pass(cmd, argc, argv, o, PASS_VALUES, err, errlen)) != TRAIN_OPTIONS_OK) return st;
    o->loss.beta = o->beta; /* ipo's beta is the implicit-reward beta */
    /* transformers' "constant" has no warm-up; ppa's constant warms up first */
    if (constant_line && o->origin[TOPT_SCHEDULE].from == TRAIN_FROM_CONFIG &&
        o->origin[TOPT_WARMUP_RATIO].from != TRAIN_FROM_CLI && o->warmup_ratio > 0) {
        opt_note(o, "%s:%d: lr_scheduler_type constant has no warm-up in transformers, so warmup_ratio %g is not used "
                    "(write constant_with_warmup to keep it)",
                 o->config, constant_line, o->warmup_ratio);
        o->warmup_ratio = 0;
        opt_set_origin(o, TOPT_WARMUP_RATIO, TRAIN_FROM_CONFIG, constant_line, "lr_scheduler_type");
    }
    if (opt_resolve_batch(o, err, errlen)) return TRAIN_OPTIONS_ERROR;
    note_handbook_batch(o);
    if (opt_validate(o, err, errlen)) return TRAIN_OPTIONS_ERROR;
    return TRAIN_OPTIONS_OK;
}

TrainOptionsStatus options_parse(OptCommand cmd, int argc, char **argv, TrainOptions *o, char *err, size_t errlen) {
    options_default(cmd, o);
    if (errlen) err[0] = 0;
    int saved_opterr = opterr;
    TrainOptionsStatus st = parse_all(cmd, argc, argv, o, err, errlen);
    opterr = saved_opterr; /* leave getopt as a caller expects it */
    optind = 1;
    return st;
}

TrainOptionsStatus train_options_parse(int argc, char **argv, TrainOptions *o, char *err, size_t errlen) {
    return options_parse(CMD_TRAIN, argc, argv, o, err, errlen);
}
