/* options.c: `ppa train` options: defaults, command line, YAML recipe, batch
 * arithmetic, validation, and the JSON record of where each value came from.
 * See options.h for the rules. The objective options are parsed by the code
 * `ppa loss` uses (cli/objective_opts.c and ppa_loss_option_set). */
#include "train/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/objective_opts.h"
#include "core/common.h"
#include "io/yaml.h"
#include "tokenizer/template.h"

/* the paper's global batch: 128 lists per optimizer step (ppa.tex "Training Details", tab_train_hyper) */
#define DEFAULT_BATCH 128
/* the paper's per-device batch: one list per forward/backward (objectives.md §2.5, every A config) */
#define DEFAULT_MICRO 1

typedef enum { T_STR, T_INT, T_LONG, T_U64, T_DOUBLE, T_BOOL, T_SCHEDULE, T_DTYPE, T_OBJECTIVE, T_LOSS } OptType;

static const struct {
    const char *name; /* ppa name = config key */
    const char *flag; /* command-line flag without "--"; NULL: one of objective_opts.c's */
    OptType type;
    size_t off;
} OPT[TOPT_COUNT] = {
#define F(id, name, flag, type, field) [id] = {name, flag, type, offsetof(TrainOptions, field)}
#define L(id, name) [id] = {name, NULL, T_LOSS, 0}
    F(TOPT_MODEL, "model", "model", T_STR, model),
    F(TOPT_DATA, "data", "data", T_STR, data),
    F(TOPT_OUT, "out", "out", T_STR, out),
    F(TOPT_OBJECTIVE, "objective", NULL, T_OBJECTIVE, objective),
    F(TOPT_BETA, "beta", NULL, T_DOUBLE, beta),
    F(TOPT_LIST_SIZE, "list_size", "list-size", T_INT, list_size),
    F(TOPT_EPOCHS, "epochs", "epochs", T_INT, epochs),
    F(TOPT_MAX_STEPS, "max_steps", "max-steps", T_LONG, max_steps),
    F(TOPT_LR, "lr", "lr", T_DOUBLE, lr),
    F(TOPT_BATCH_SIZE, "batch_size", "batch-size", T_INT, batch_size),
    F(TOPT_MICRO_BATCH, "micro_batch", "micro-batch", T_INT, micro_batch),
    F(TOPT_GRAD_ACCUM, "grad_accum", "grad-accum", T_INT, grad_accum),
    F(TOPT_WARMUP_RATIO, "warmup_ratio", "warmup-ratio", T_DOUBLE, warmup_ratio),
    F(TOPT_SCHEDULE, "schedule", "schedule", T_SCHEDULE, schedule),
    F(TOPT_WEIGHT_DECAY, "weight_decay", "weight-decay", T_DOUBLE, weight_decay),
    F(TOPT_CLIP_GRAD, "clip_grad", "clip-grad", T_DOUBLE, clip_grad),
    F(TOPT_SEED, "seed", "seed", T_U64, seed),
    F(TOPT_MAX_LENGTH, "max_length", "max-length", T_INT, max_length),
    F(TOPT_MAX_PROMPT_LENGTH, "max_prompt_length", "max-prompt-length", T_INT, max_prompt_length),
    F(TOPT_TEMPLATE, "template", "template", T_STR, template_name),
    F(TOPT_SKIP_INVALID, "skip_invalid", "skip-invalid", T_BOOL, skip_invalid),
    F(TOPT_REFERENCE_FREE, "reference_free", "reference-free", T_BOOL, reference_free),
    F(TOPT_REF, "ref", "ref", T_STR, ref),
    F(TOPT_REF_CACHE, "ref_cache", "ref-cache", T_STR, ref_cache),
    F(TOPT_SAVE_EVERY, "save_every", "save-every", T_LONG, save_every),
    F(TOPT_RESUME, "resume", "resume", T_STR, resume),
    F(TOPT_SAVE_DTYPE, "save_dtype", "save-dtype", T_DTYPE, save_dtype),
    F(TOPT_LOG, "log", "log", T_STR, log),
    F(TOPT_LOG_LAMBDAS, "log_lambdas", "log-lambdas", T_BOOL, log_lambdas),
    F(TOPT_EVAL_DATA, "eval_data", "eval-data", T_STR, eval_data),
    F(TOPT_EVAL_EVERY, "eval_every", "eval-every", T_LONG, eval_every),
    F(TOPT_THREADS, "threads", "threads", T_INT, threads),
    F(TOPT_VERBOSE, "verbose", "verbose", T_BOOL, verbose),
    L(TOPT_TAU, "tau"),
    L(TOPT_ALPHA, "alpha"),
    L(TOPT_K, "k"),
    L(TOPT_GAIN, "gain"),
    L(TOPT_DISCOUNT, "discount"),
    L(TOPT_SINKHORN, "sinkhorn"),
    L(TOPT_SINKHORN_ITERS, "sinkhorn_iters"),
    L(TOPT_SINKHORN_TOL, "sinkhorn_tol"),
    L(TOPT_TIES, "ties"),
    L(TOPT_PAIRS, "pairs"),
    L(TOPT_SIGMA, "sigma"),
    L(TOPT_LABEL_SMOOTHING, "label_smoothing"),
    L(TOPT_GAMMA, "gamma"),
    L(TOPT_NORMALIZE, "normalize"),
#undef F
#undef L
};

/* ---- config keys ---- */

typedef enum {
    K_OPT,     /* sets the option `id` */
    K_IGNORED, /* no meaning for ppa: one note with `why` */
    K_SPECIAL, /* handled by code: `id` is a Special */
} KeyKind;

typedef enum {
    SP_LOSS_TYPE,
    SP_PAIRWISE_TYPE,
    SP_ABLATION,
    SP_SCHEDULER,
    SP_MAX_STEPS,
    SP_WARMUP_STEPS,
    SP_SAVE_STRATEGY,
    SP_EVAL_STRATEGY,
    SP_RESUME,
    SP_DATASET_MIXER,
    SP_OPTIM,
    SP_ADAM_BETA1,
    SP_ADAM_BETA2,
    SP_ADAM_EPSILON,
    SP_FALSE_ONLY, /* accepted when false; true is an error saying `why` */
    SP_TRUNCATION_MODE,
    SP_REFUSED, /* always an error saying `why` */
} Special;

typedef struct {
    const char *key;
    KeyKind kind;
    int id;
    const char *why;
} ConfigKey;

/* Keys other than ppa's own option names (OPT[].name, which are keys too). */
static const ConfigKey KEYS[] = {
    /* handbook / transformers / trl names of ppa options */
    {"model_name_or_path", K_OPT, TOPT_MODEL, NULL},
    {"ref_model", K_OPT, TOPT_REF, NULL},
    {"ref_model_name_or_path", K_OPT, TOPT_REF, NULL},
    {"output_dir", K_OPT, TOPT_OUT, NULL},
    {"train_file", K_OPT, TOPT_DATA, NULL},
    {"dataset_name", K_OPT, TOPT_DATA, NULL},
    {"validation_file", K_OPT, TOPT_EVAL_DATA, NULL},
    {"learning_rate", K_OPT, TOPT_LR, NULL},
    {"num_train_epochs", K_OPT, TOPT_EPOCHS, NULL},
    {"per_device_train_batch_size", K_OPT, TOPT_MICRO_BATCH, NULL},
    {"gradient_accumulation_steps", K_OPT, TOPT_GRAD_ACCUM, NULL},
    {"max_grad_norm", K_OPT, TOPT_CLIP_GRAD, NULL},
    {"save_steps", K_OPT, TOPT_SAVE_EVERY, NULL},
    {"eval_steps", K_OPT, TOPT_EVAL_EVERY, NULL},
    /* handled by code */
    {"loss_type", K_SPECIAL, SP_LOSS_TYPE, NULL},
    {"pairwise_type", K_SPECIAL, SP_PAIRWISE_TYPE, NULL},
    {"ablation_type", K_SPECIAL, SP_ABLATION, NULL},
    {"lr_scheduler_type", K_SPECIAL, SP_SCHEDULER, NULL},
    {"max_steps", K_SPECIAL, SP_MAX_STEPS, NULL},
    {"warmup_steps", K_SPECIAL, SP_WARMUP_STEPS, NULL},
    {"save_strategy", K_SPECIAL, SP_SAVE_STRATEGY, NULL},
    {"evaluation_strategy", K_SPECIAL, SP_EVAL_STRATEGY, NULL},
    {"eval_strategy", K_SPECIAL, SP_EVAL_STRATEGY, NULL},
    {"resume_from_checkpoint", K_SPECIAL, SP_RESUME, NULL},
    {"dataset_mixer", K_SPECIAL, SP_DATASET_MIXER, NULL},
    {"optim", K_SPECIAL, SP_OPTIM, NULL},
    {"adam_beta1", K_SPECIAL, SP_ADAM_BETA1, NULL},
    {"adam_beta2", K_SPECIAL, SP_ADAM_BETA2, NULL},
    {"adam_epsilon", K_SPECIAL, SP_ADAM_EPSILON, NULL},
    {"use_peft", K_SPECIAL, SP_FALSE_ONLY, "ppa trains every parameter (no LoRA / PEFT)"},
    {"load_in_4bit", K_SPECIAL, SP_FALSE_ONLY, "ppa does not quantize"},
    {"load_in_8bit", K_SPECIAL, SP_FALSE_ONLY, "ppa does not quantize"},
    {"truncation_mode", K_SPECIAL, SP_TRUNCATION_MODE, NULL},
    {"chat_template", K_SPECIAL, SP_REFUSED,
     "ppa runs no Jinja: set template (chatml, llama3, mistral, zephyr, llama2 or none), or leave it to detection"},
    {"config", K_SPECIAL, SP_REFUSED, "a config file cannot name another config file"},
    /* no meaning for ppa */
    {"bf16", K_IGNORED, 0, "ppa trains in float32"},
    {"fp16", K_IGNORED, 0, "ppa trains in float32"},
    {"tf32", K_IGNORED, 0, "ppa trains in float32"},
    {"half_precision_backend", K_IGNORED, 0, "ppa trains in float32"},
    {"torch_dtype", K_IGNORED, 0,
     "ppa computes in float32 (F16 and BF16 weights are widened when loaded); save_dtype chooses what is written"},
    {"use_flash_attention_2", K_IGNORED, 0, "ppa runs its own attention kernels"},
    {"attn_implementation", K_IGNORED, 0, "ppa runs its own attention kernels"},
    {"gradient_checkpointing", K_IGNORED, 0, "ppa's engine has no checkpointing switch; micro_batch bounds the memory"},
    {"gradient_checkpointing_kwargs", K_IGNORED, 0,
     "ppa's engine has no checkpointing switch; micro_batch bounds the memory"},
    {"logging_steps", K_IGNORED, 0, "ppa logs every optimizer step (--log FILE)"},
    {"logging_strategy", K_IGNORED, 0, "ppa logs every optimizer step (--log FILE)"},
    {"logging_first_step", K_IGNORED, 0, "ppa logs every optimizer step (--log FILE)"},
    {"log_level", K_IGNORED, 0, "ppa prints its notes and errors to stderr"},
    {"report_to", K_IGNORED, 0, "ppa writes metrics to stderr and --log FILE only"},
    {"run_name", K_IGNORED, 0, "ppa does not name runs"},
    {"hub_model_id", K_IGNORED, 0, "ppa never uploads"},
    {"hub_strategy", K_IGNORED, 0, "ppa never uploads"},
    {"hub_private_repo", K_IGNORED, 0, "ppa never uploads"},
    {"push_to_hub", K_IGNORED, 0, "ppa never uploads"},
    {"do_train", K_IGNORED, 0, "ppa train always trains"},
    {"do_eval", K_IGNORED, 0, "ppa evaluates when eval_data is given"},
    {"per_device_eval_batch_size", K_IGNORED, 0, "ppa has no separate evaluation batch size"},
    {"save_total_limit", K_IGNORED, 0, "ppa does not delete checkpoints"},
    {"overwrite_output_dir", K_IGNORED, 0, "ppa decides about an existing output folder itself"},
    {"preprocessing_num_workers", K_IGNORED, 0, "ppa prepares the data in-process (threads sets compute threads)"},
    {"dataloader_num_workers", K_IGNORED, 0, "ppa prepares the data in-process (threads sets compute threads)"},
    {"dataset_splits", K_IGNORED, 0, "ppa trains on the whole data file; held-out lists come from eval_data"},
    {"dataset_configs", K_IGNORED, 0, "ppa trains on the whole data file; held-out lists come from eval_data"},
    {"is_qwen2", K_IGNORED, 0, "ppa reads the architecture from the model's config.json"},
    {"model_revision", K_IGNORED, 0, "ppa reads a local model folder"},
    {"trust_remote_code", K_IGNORED, 0, "ppa runs no code from model folders"},
    {"truncation_side", K_IGNORED, 0, "ppa keeps the end of a long prompt and the start of a long response"},
    {"remove_unused_columns", K_IGNORED, 0, "ppa has no dataset columns to prune"},
    {"ddp_timeout", K_IGNORED, 0, "ppa runs one process"},
    {"precompute_ref_log_probs", K_IGNORED, 0,
     "ppa always computes the reference log-probs once before training (ref_cache keeps them)"},
    {"disable_dropout", K_IGNORED, 0, "ppa has no dropout"},
    {"generate_during_eval", K_IGNORED, 0, "ppa does not generate during training"},
    {"max_target_length", K_IGNORED, 0, "it is for encoder-decoder models"},
    {"data_seed", K_IGNORED, 0, "ppa derives the data order from seed"},
};

static const char *const ABLATIONS[] = {"none", "no_power", "top-4", "scale"};
static const char *const GAIN_NAMES[] = {"pow2", "linear"};
static const char *const DISCOUNT_NAMES[] = {"log2", "inv", "inv_sqrt", "inv_sq"};
static const char *const TIES_NAMES[] = {"exclude", "include"};
static const char *const PAIRS_NAMES[] = {"all_pairs", "best_with_worst", "best_with_others", "others_vs_worst"};
static const char *const SCHEDULE_NAMES[] = {"cosine", "linear", "constant"};

/* ---- small helpers ---- */

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

static void note(TrainOptions *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(TrainOptions *o, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ppa: note: %s\n", buf);
    o->notes = xrealloc(o->notes, sizeof(*o->notes) * (size_t)(o->n_notes + 1));
    o->notes[o->n_notes++] = xstrdup(buf);
}

static void fmt_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fmt_err(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Optimal string alignment distance, case-insensitive; words up to 63 bytes. */
static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 1000;
    int d[64][64];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

/* The closest candidate when it is close enough to be a likely typo. */
typedef struct {
    const char *best;
    int dist;
} Closest;

static void closest_add(Closest *c, const char *word, const char *cand) {
    int dist = edit_distance(word, cand);
    int len = (int)strlen(word), limit = len / 3 > 2 ? len / 3 : 2;
    if (dist <= limit && (!c->best || dist < c->dist)) c->best = cand, c->dist = dist;
}

/* ---- text to values ---- */

static int parse_long_text(const char *s, long *out) {
    if (!*s || isspace((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end != s && !*end && errno != ERANGE) return *out = v, 0;
    if (strpbrk(s, "xXpP")) return -1;
    double x = strtod(s, &end); /* 1.0, 1e3: whole numbers written as floats */
    if (end == s || *end || !isfinite(x) || x != floor(x) || fabs(x) > 9007199254740992.0) return -1;
    *out = (long)x;
    return 0;
}

static int parse_double_text(const char *s, double *out) {
    if (!*s || isspace((unsigned char)*s) || strpbrk(s, "xXpP")) return -1;
    char *end;
    double x = strtod(s, &end);
    if (end == s || *end || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

static int parse_bool_text(const char *s, int *out) {
    static const char *const YES[] = {"true", "yes", "on", "1"}, *const NO[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, YES[i])) return *out = 1, 0;
        if (!strcasecmp(s, NO[i])) return *out = 0, 0;
    }
    return -1;
}

static int choice_index(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Sets option `id` from text; on failure a message without the option name. */
static int set_text(TrainOptions *o, TrainOptId id, const char *s, char *msg, size_t msglen) {
    void *field = (char *)o + OPT[id].off;
    long v;
    double x;
    int b;
    switch (OPT[id].type) {
    case T_STR:
        free(*(char **)field);
        *(char **)field = xstrdup(s);
        return 0;
    case T_INT:
    case T_LONG:
        if (parse_long_text(s, &v) || (OPT[id].type == T_INT && (v < INT_MIN || v > INT_MAX))) {
            fmt_err(msg, msglen, "cannot use '%s': expected a whole number%s", s,
                    id == TOPT_EPOCHS ? " (ppa trains whole epochs; max_steps stops earlier)" : "");
            return -1;
        }
        if (OPT[id].type == T_INT) *(int *)field = (int)v;
        else *(long *)field = v;
        return 0;
    case T_U64: {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(s, &end, 10);
        if (!isdigit((unsigned char)*s) || *end || errno == ERANGE) {
            fmt_err(msg, msglen, "cannot use '%s': expected a whole number >= 0", s);
            return -1;
        }
        *(unsigned long long *)field = u;
        return 0;
    }
    case T_DOUBLE:
        if (parse_double_text(s, &x)) {
            fmt_err(msg, msglen, "cannot use '%s': expected a finite number", s);
            return -1;
        }
        *(double *)field = x;
        return 0;
    case T_BOOL:
        if (parse_bool_text(s, &b)) {
            fmt_err(msg, msglen, "cannot use '%s': expected true or false", s);
            return -1;
        }
        *(int *)field = b;
        return 0;
    case T_SCHEDULE:
        if (schedule_parse(s, (Schedule *)field)) {
            fmt_err(msg, msglen, "cannot use '%s': expected cosine, linear or constant", s);
            return -1;
        }
        return 0;
    case T_DTYPE:
        if (!strcmp(s, "f32") || !strcmp(s, "float32")) *(SaveDtype *)field = SAVE_F32;
        else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) *(SaveDtype *)field = SAVE_BF16;
        else {
            fmt_err(msg, msglen, "cannot use '%s': expected f32 or bf16", s);
            return -1;
        }
        return 0;
    case T_OBJECTIVE:
        if (ppa_objective_parse(s, (PpaObjective *)field)) {
            fmt_err(msg, msglen, "unknown objective '%s' (see --list-objectives)", s);
            return -1;
        }
        return 0;
    case T_LOSS:
        return ppa_loss_option_set(&o->loss, OPT[id].name, s, msg, msglen) == PPA_OK ? 0 : -1;
    }
    return -1;
}

static void set_origin(TrainOptions *o, TrainOptId id, TrainSource from, int line, const char *key) {
    o->origin[id] = (TrainOrigin){from, line, key};
}

const char *train_option_name(TrainOptId id) { return id >= 0 && id < TOPT_COUNT ? OPT[id].name : "?"; }

/* the flag of an option, with "--" */
static const char *flag_of(TrainOptId id, char *buf, size_t len) {
    snprintf(buf, len, "--%s", OPT[id].flag ? OPT[id].flag : OPT[id].name);
    for (char *c = buf + 2; *c; c++)
        if (*c == '_') *c = '-';
    if (id == TOPT_SINKHORN) snprintf(buf, len, "--no-sinkhorn");
    return buf;
}

const char *train_option_origin(const TrainOptions *o, TrainOptId id, char *buf, size_t len) {
    const TrainOrigin *g = &o->origin[id];
    switch (g->from) {
    case TRAIN_FROM_DEFAULT: snprintf(buf, len, "default"); break;
    case TRAIN_FROM_DERIVED: snprintf(buf, len, "derived"); break;
    case TRAIN_FROM_CLI: flag_of(id, buf, len); break;
    case TRAIN_FROM_CONFIG: snprintf(buf, len, "%s:%d %s", o->config ? o->config : "?", g->line, g->key); break;
    }
    return buf;
}

/* "--lr" or "recipe.yaml:29: learning_rate": the start of a message about a value */
static const char *where(const TrainOptions *o, TrainOptId id, char *buf, size_t len) {
    const TrainOrigin *g = &o->origin[id];
    if (g->from == TRAIN_FROM_CONFIG) snprintf(buf, len, "%s:%d: %s", o->config, g->line, g->key);
    else if (g->from == TRAIN_FROM_CLI) flag_of(id, buf, len);
    else snprintf(buf, len, "%s (%s)", OPT[id].name, g->from == TRAIN_FROM_DERIVED ? "derived" : "default");
    return buf;
}

void train_options_default(TrainOptions *o) {
    memset(o, 0, sizeof *o);
    o->objective = PPA_NEURAL_NDCG;
    ppa_loss_options_default(&o->loss);
    o->beta = 0.1;
    o->loss.beta = o->beta;
    o->list_size = 8;
    o->epochs = 1;
    o->lr = 5e-7;
    o->batch_size = DEFAULT_BATCH;
    o->micro_batch = DEFAULT_MICRO;
    o->grad_accum = DEFAULT_BATCH / DEFAULT_MICRO;
    o->warmup_ratio = 0.1;
    o->schedule = SCHEDULE_COSINE;
    o->weight_decay = 0.0;
    o->clip_grad = 1.0;
    o->seed = 42;
    o->max_length = 1024;
    o->max_prompt_length = 512;
    o->save_dtype = SAVE_F32;
    for (int i = 0; i < TOPT_COUNT; i++) o->origin[i] = (TrainOrigin){TRAIN_FROM_DEFAULT, 0, NULL};
}

void train_options_free(TrainOptions *o) {
    char **strs[] = {&o->model, &o->data, &o->out, &o->ref, &o->ref_cache, &o->resume, &o->log, &o->eval_data,
                     &o->template_name, &o->config};
    for (size_t i = 0; i < PPA_ARRAY_LEN(strs); i++) free(*strs[i]), *strs[i] = NULL;
    for (int i = 0; i < o->n_notes; i++) free(o->notes[i]);
    free(o->notes);
    o->notes = NULL;
    o->n_notes = 0;
}

/* ---- loss_type ---- */

int train_loss_type_map(const char *loss_type, const char *pairwise_type, PpaObjective *obj, PpaPairs *pairs,
                        int *pairwise_used, char *err, size_t errlen) {
    static const char *const PAIRWISE[] = {"all_pairs", "best_with_worst", "best_with_others", "others_vs_worst",
                                           "list_mle"};
    static const PpaObjective DPO_BY_PAIRWISE[] = {PPA_DPO_ALL_PAIRS, PPA_DPO_SINGLE_PAIR, PPA_DPO_BPR, PPA_DPO_OVW,
                                                   PPA_LISTMLE};
    /* paper and trl names beyond ppa's own names and aliases (ppa_objective_parse) */
    static const struct {
        const char *name;
        PpaObjective obj;
    } EXTRA[] = {
        {"sigmoid", PPA_DPO_ALL_PAIRS}, /* trl's DPO; the pairing comes from pairwise_type */
        {"bpr", PPA_DPO_BPR},
        {"best_with_others", PPA_DPO_BPR},
        {"single_pair", PPA_DPO_SINGLE_PAIR},
        {"best_with_worst", PPA_DPO_SINGLE_PAIR},
        {"all_pairs", PPA_DPO_ALL_PAIRS},
        {"others_vs_worst", PPA_DPO_OVW},
        {"ovw", PPA_DPO_OVW},
        {"list_mle", PPA_LISTMLE},
    };
    static const char *const TRL_ONLY[] = {"robust", "exo_pair", "nca_pair", "bco_pair", "sppo_hard", "aot",
                                           "aot_pair", "apo_zero", "apo_down", "discopop", "kto_pair", "orpo"};
    static const char ALL[] = "neural_ndcg (ppa), approx_ndcg, lipo (lambda), ranknet, dpo or sigmoid (with "
                              "pairwise_type), bpr, single_pair, all_pairs, others_vs_worst, hinge (slic), listmle, "
                              "listnet, ipo, simpo";
    *pairwise_used = 0;
    int pw = 0; /* all_pairs, the authors' default */
    if (pairwise_type && (pw = choice_index(pairwise_type, PAIRWISE, 5)) < 0) {
        fmt_err(err, errlen,
                "pairwise_type '%s' is not one of all_pairs, best_with_others, best_with_worst, list_mle, "
                "others_vs_worst",
                pairwise_type);
        return -1;
    }
    if (!strcmp(loss_type, "dpo") || !strcmp(loss_type, "sigmoid")) {
        *obj = DPO_BY_PAIRWISE[pw];
        *pairwise_used = pairwise_type != NULL;
        return 0;
    }
    if (!strcmp(loss_type, "simpo") || !strcmp(loss_type, "ipo")) {
        if (pw == 4) {
            fmt_err(err, errlen, "loss_type %s with pairwise_type list_mle (ListMLE on %s rewards) has no ppa objective",
                    loss_type, loss_type);
            return -1;
        }
        *obj = !strcmp(loss_type, "simpo") ? PPA_SIMPO : PPA_IPO;
        if (pairwise_type) *pairs = (PpaPairs)pw, *pairwise_used = 1; /* PAIRWISE[0..3] are in PpaPairs order */
        return 0;
    }
    if (!ppa_objective_parse(loss_type, obj)) return 0;
    for (size_t i = 0; i < PPA_ARRAY_LEN(EXTRA); i++)
        if (!strcmp(loss_type, EXTRA[i].name)) return *obj = EXTRA[i].obj, 0;
    for (size_t i = 0; i < PPA_ARRAY_LEN(TRL_ONLY); i++)
        if (!strcmp(loss_type, TRL_ONLY[i])) {
            fmt_err(err, errlen, "loss_type '%s' (trl) has no ppa objective; ppa has %s", loss_type, ALL);
            return -1;
        }
    Closest c = {0};
    for (int k = 0; k < PPA_N_OBJECTIVES; k++) closest_add(&c, loss_type, ppa_objective_name((PpaObjective)k));
    static const char *const MORE[] = {"dpo", "sigmoid", "simpo", "ipo", "lipo", "slic", "ppa"};
    for (size_t i = 0; i < PPA_ARRAY_LEN(MORE); i++) closest_add(&c, loss_type, MORE[i]);
    for (size_t i = 0; i < PPA_ARRAY_LEN(EXTRA); i++) closest_add(&c, loss_type, EXTRA[i].name);
    char hint[96] = "";
    if (c.best) snprintf(hint, sizeof hint, " (did you mean '%s'?)", c.best);
    fmt_err(err, errlen, "unknown loss_type '%s'%s; ppa has %s", loss_type, hint, ALL);
    return -1;
}

/* ---- the config file ---- */

typedef struct {
    TrainOptions *o;
    const char *path;
    char *err;
    size_t errlen;
    const YamlNode *loss_type, *pairwise_type, *ablation, *save_strategy, *eval_strategy;
    int loss_type_line, pairwise_type_line, ablation_line, save_strategy_line, eval_strategy_line;
    const char *eval_strategy_key;
    int constant_line; /* lr_scheduler_type: constant (transformers: no warm-up) */
} Config;

static const ConfigKey *config_key(const char *key, ConfigKey *native) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(KEYS); i++)
        if (!strcmp(KEYS[i].key, key)) return &KEYS[i];
    for (int i = 0; i < TOPT_COUNT; i++)
        if (!strcmp(OPT[i].name, key)) {
            *native = (ConfigKey){OPT[i].name, K_OPT, i, NULL};
            return native;
        }
    return NULL;
}

static int config_fail(Config *C, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int config_fail(Config *C, int line, const char *fmt, ...) {
    int k = snprintf(C->err, C->errlen, "%s:%d: ", C->path, line);
    if (k >= 0 && (size_t)k < C->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(C->err + k, C->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Marks `id` as set by `key` at `line`; two keys of one file for one option are an error. */
static int config_claim(Config *C, TrainOptId id, const char *key, int line) {
    TrainOrigin *g = &C->o->origin[id];
    if (g->from == TRAIN_FROM_CONFIG) {
        if (!strcmp(g->key, key))
            return config_fail(C, line, "%s is set twice (line %d)", key, g->line); /* cannot happen: yaml refuses */
        return config_fail(C, line, "%s sets the same option (%s) as %s on line %d: keep one", key, OPT[id].name,
                           g->key, g->line);
    }
    set_origin(C->o, id, TRAIN_FROM_CONFIG, line, key);
    return 0;
}

/* The text of a one-value node; NULL with an error for lists and mappings. */
static const char *config_scalar(Config *C, const char *key, int line, const YamlNode *v) {
    if (v->kind == YAML_SCALAR) return v->str;
    if (v->kind == YAML_NULL) config_fail(C, line, "%s needs a value (found null)", key);
    else config_fail(C, line, "%s: expected a single value, found %s", key, yaml_kind_name(v));
    return NULL;
}

static int config_set(Config *C, TrainOptId id, const char *key, int line, const YamlNode *v) {
    char msg[320];
    if (v->kind == YAML_NULL && OPT[id].type == T_STR) { /* null path = not given */
        char **field = (char **)((char *)C->o + OPT[id].off);
        free(*field);
        *field = NULL;
        return config_claim(C, id, key, line);
    }
    const char *text = config_scalar(C, key, line, v);
    if (!text) return -1;
    if (OPT[id].type == T_BOOL || id == TOPT_SINKHORN || id == TOPT_NORMALIZE) {
        int b;
        if (yaml_as_bool(v, &b))
            return config_fail(C, line, "%s: expected true or false, found %s'%s'", key, v->quoted ? "the string " : "",
                               text);
        text = b ? "true" : "false";
    }
    if (set_text(C->o, id, text, msg, sizeof msg)) return config_fail(C, line, "%s: %s", key, msg);
    return config_claim(C, id, key, line);
}

static int is_no(const YamlNode *v) {
    int b;
    return (!yaml_as_bool(v, &b) && !b) || (v->kind == YAML_SCALAR && !strcmp(v->str, "no"));
}

static int config_special(Config *C, const ConfigKey *ck, const char *key, int line, const YamlNode *v) {
    TrainOptions *o = C->o;
    const char *s;
    double x;
    int b;
    switch ((Special)ck->id) {
    case SP_LOSS_TYPE: C->loss_type = v, C->loss_type_line = line; return 0;
    case SP_PAIRWISE_TYPE: C->pairwise_type = v, C->pairwise_type_line = line; return 0;
    case SP_ABLATION: C->ablation = v, C->ablation_line = line; return 0;
    case SP_SAVE_STRATEGY: C->save_strategy = v, C->save_strategy_line = line; return 0;
    case SP_EVAL_STRATEGY:
        if (C->eval_strategy)
            return config_fail(C, line, "%s repeats %s of line %d: keep one", key, C->eval_strategy_key,
                               C->eval_strategy_line);
        C->eval_strategy = v, C->eval_strategy_line = line, C->eval_strategy_key = ck->key;
        return 0;
    case SP_SCHEDULER:
        if (!(s = config_scalar(C, key, line, v))) return -1;
        if (!strcmp(s, "cosine")) o->schedule = SCHEDULE_COSINE;
        else if (!strcmp(s, "linear")) o->schedule = SCHEDULE_LINEAR;
        else if (!strcmp(s, "constant_with_warmup")) o->schedule = SCHEDULE_CONSTANT;
        else if (!strcmp(s, "constant")) o->schedule = SCHEDULE_CONSTANT, C->constant_line = line;
        else
            return config_fail(C, line,
                               "lr_scheduler_type '%s' is not implemented by ppa (cosine, linear, constant, "
                               "constant_with_warmup)",
                               s);
        return config_claim(C, TOPT_SCHEDULE, ck->key, line);
    case SP_MAX_STEPS:
        if (config_set(C, TOPT_MAX_STEPS, ck->key, line, v)) return -1;
        if (o->max_steps == -1) o->max_steps = 0; /* transformers: -1 = from the epochs */
        return 0;
    case SP_WARMUP_STEPS: {
        long n;
        if (!(s = config_scalar(C, key, line, v))) return -1;
        if (parse_long_text(s, &n) || n < 0) return config_fail(C, line, "warmup_steps: expected a whole number >= 0");
        if (n > 0)
            return config_fail(C, line,
                               "warmup_steps %ld: ppa sets the warm-up as a share of the steps: use warmup_ratio", n);
        return 0;
    }
    case SP_RESUME:
        if (v->kind == YAML_NULL || (!yaml_as_bool(v, &b) && !b)) return 0;
        if (!yaml_as_bool(v, &b))
            return config_fail(C, line, "resume_from_checkpoint: true: ppa needs the checkpoint folder "
                                        "(resume_from_checkpoint: DIR, or --resume DIR)");
        return config_set(C, TOPT_RESUME, ck->key, line, v);
    case SP_DATASET_MIXER:
        if (v->kind != YAML_MAP)
            return config_fail(C, line, "dataset_mixer: expected a mapping of data file to fraction, found %s",
                               yaml_kind_name(v));
        if (v->n != 1)
            return config_fail(C, line, "dataset_mixer lists %d datasets: ppa trains on one data file (merge them "
                                        "into one JSON Lines file)",
                               v->n);
        if (yaml_as_double(v->items[0], &x) || x != 1.0)
            return config_fail(C, v->key_lines[0], "dataset_mixer: fraction %s of '%s': ppa uses the whole file "
                                                   "(fraction 1.0); cut the file instead",
                               v->items[0]->str ? v->items[0]->str : yaml_kind_name(v->items[0]), v->keys[0]);
        free(o->data);
        o->data = xstrdup(v->keys[0]);
        return config_claim(C, TOPT_DATA, ck->key, line);
    case SP_OPTIM:
        if (!(s = config_scalar(C, key, line, v))) return -1;
        if (strcmp(s, "adamw_torch") && strcmp(s, "adamw_torch_fused") && strcmp(s, "adamw_hf"))
            return config_fail(C, line, "optim '%s': ppa has one optimizer, AdamW (adamw_torch)", s);
        return 0;
    case SP_ADAM_BETA1:
    case SP_ADAM_BETA2:
    case SP_ADAM_EPSILON: {
        double want = ck->id == SP_ADAM_BETA1 ? 0.9 : ck->id == SP_ADAM_BETA2 ? 0.999 : 1e-8;
        if (yaml_as_double(v, &x)) return config_fail(C, line, "%s: expected a number", key);
        if (fabs(x - want) > 1e-12 * want)
            return config_fail(C, line, "%s %g: ppa's AdamW uses %s %g (torch's default), fixed", key, x, key, want);
        return 0;
    }
    case SP_FALSE_ONLY:
        if (v->kind == YAML_NULL || (!yaml_as_bool(v, &b) && !b)) return 0;
        return config_fail(C, line, "%s: %s", key, ck->why);
    case SP_TRUNCATION_MODE:
        if (!(s = config_scalar(C, key, line, v))) return -1;
        if (strcmp(s, "keep_end"))
            return config_fail(C, line, "truncation_mode '%s': ppa keeps the end of a long prompt (keep_end)", s);
        return 0;
    case SP_REFUSED: return config_fail(C, line, "%s: %s", key, ck->why);
    }
    return 0;
}

static int unknown_key(Config *C, const char *key, int line) {
    Closest c = {0};
    for (size_t i = 0; i < PPA_ARRAY_LEN(KEYS); i++) closest_add(&c, key, KEYS[i].key);
    for (int i = 0; i < TOPT_COUNT; i++) closest_add(&c, key, OPT[i].name);
    if (c.best) return config_fail(C, line, "unknown key '%s' (did you mean '%s'?)", key, c.best);
    return config_fail(C, line, "unknown key '%s' (ppa train --help lists the keys it reads)", key);
}

/* loss_type + pairwise_type, ablation_type, save/eval strategies: after all keys are known */
static int config_finish(Config *C) {
    TrainOptions *o = C->o;
    char msg[512];
    const char *pt = NULL;
    if (C->pairwise_type) {
        if (!(pt = config_scalar(C, "pairwise_type", C->pairwise_type_line, C->pairwise_type))) return -1;
        if (!C->loss_type)
            return config_fail(C, C->pairwise_type_line,
                               "pairwise_type needs loss_type in the same file (or use ppa's keys: objective, pairs)");
    }
    if (C->loss_type) {
        const char *lt = config_scalar(C, "loss_type", C->loss_type_line, C->loss_type);
        if (!lt) return -1;
        PpaObjective obj;
        PpaPairs pairs = o->loss.pairs;
        int used;
        if (train_loss_type_map(lt, pt, &obj, &pairs, &used, msg, sizeof msg))
            return config_fail(C, !strncmp(msg, "pairwise_type", 13) ? C->pairwise_type_line : C->loss_type_line,
                               "%s", msg);
        if (config_claim(C, TOPT_OBJECTIVE, "loss_type", C->loss_type_line)) return -1;
        o->objective = obj;
        if (pt && used && (obj == PPA_SIMPO || obj == PPA_IPO)) {
            if (config_claim(C, TOPT_PAIRS, "pairwise_type", C->pairwise_type_line)) return -1;
            o->loss.pairs = pairs;
        }
        if (pt && !used)
            note(o, "%s:%d: pairwise_type %s ignored: loss_type %s does not use it (as in the authors' trainer)",
                 C->path, C->pairwise_type_line, pt, lt);
    }
    if (C->ablation) {
        const char *a = config_scalar(C, "ablation_type", C->ablation_line, C->ablation);
        if (!a) return -1;
        int k = choice_index(a, ABLATIONS, 4);
        if (k < 0)
            return config_fail(C, C->ablation_line, "ablation_type '%s' is not one of none, no_power, top-4, scale", a);
        /* the authors' NeuralNDCG ablations (objectives.md §3.1.5) */
        TrainOptId id = k == 1 ? TOPT_GAIN : k == 2 ? TOPT_K : TOPT_SINKHORN;
        if (k > 0) {
            if (config_claim(C, id, "ablation_type", C->ablation_line)) return -1;
            if (k == 1) o->loss.gain = PPA_GAIN_LINEAR;
            if (k == 2) o->loss.k = 4;
            if (k == 3) o->loss.sinkhorn = 0;
        }
    }
    if (C->save_strategy) {
        const YamlNode *v = C->save_strategy;
        int line = C->save_strategy_line;
        if (is_no(v)) {
            if (o->origin[TOPT_SAVE_EVERY].from == TRAIN_FROM_CONFIG)
                note(o, "%s:%d: save_steps %ld ignored: save_strategy is \"no\"", C->path,
                     o->origin[TOPT_SAVE_EVERY].line, o->save_every);
            o->save_every = 0;
            set_origin(o, TOPT_SAVE_EVERY, TRAIN_FROM_CONFIG, line, "save_strategy");
        } else if (v->kind == YAML_SCALAR && !strcmp(v->str, "steps")) {
            if (o->origin[TOPT_SAVE_EVERY].from != TRAIN_FROM_CONFIG) { /* transformers' default save_steps */
                o->save_every = 500;
                set_origin(o, TOPT_SAVE_EVERY, TRAIN_FROM_CONFIG, line, "save_strategy");
            }
        } else {
            return config_fail(C, line, "save_strategy %s: ppa saves every save_steps steps (\"steps\") or not at all "
                                        "(\"no\")",
                               v->kind == YAML_SCALAR ? v->str : yaml_kind_name(v));
        }
    }
    if (C->eval_strategy) {
        const YamlNode *v = C->eval_strategy;
        int line = C->eval_strategy_line;
        if (is_no(v)) {
            if (o->origin[TOPT_EVAL_EVERY].from == TRAIN_FROM_CONFIG)
                note(o, "%s:%d: eval_steps %ld ignored: %s is \"no\"", C->path, o->origin[TOPT_EVAL_EVERY].line,
                     o->eval_every, C->eval_strategy_key);
            o->eval_every = 0;
            set_origin(o, TOPT_EVAL_EVERY, TRAIN_FROM_CONFIG, line, C->eval_strategy_key);
        } else if (v->kind == YAML_SCALAR && !strcmp(v->str, "steps")) {
            if (o->origin[TOPT_EVAL_EVERY].from != TRAIN_FROM_CONFIG)
                note(o, "%s:%d: %s \"steps\" without eval_steps: ppa evaluates at the end only", C->path, line,
                     C->eval_strategy_key);
        } else {
            return config_fail(C, line, "%s %s: ppa evaluates every eval_steps steps (\"steps\") or at the end "
                                        "(\"no\")",
                               C->eval_strategy_key, v->kind == YAML_SCALAR ? v->str : yaml_kind_name(v));
        }
    }
    return 0;
}

static int apply_config(TrainOptions *o, int *constant_line, char *err, size_t errlen) {
    YamlNode *root = yaml_load(o->config, err, errlen);
    if (!root) return -1;
    Config C = {.o = o, .path = o->config, .err = err, .errlen = errlen};
    int rc = 0;
    if (root->kind != YAML_MAP && root->kind != YAML_NULL) {
        rc = config_fail(&C, root->line, "a config file is a mapping of 'key: value' lines, found %s",
                         yaml_kind_name(root));
        goto done;
    }
    for (int i = 0; i < root->n && !rc; i++) {
        const char *key = root->keys[i];
        int line = root->key_lines[i];
        const YamlNode *v = root->items[i];
        ConfigKey native;
        const ConfigKey *ck = config_key(key, &native);
        if (!ck) rc = unknown_key(&C, key, line);
        else if (ck->kind == K_IGNORED) note(o, "%s:%d: %s ignored: %s", C.path, line, key, ck->why);
        else if (ck->kind == K_OPT) rc = config_set(&C, (TrainOptId)ck->id, ck->key, line, v);
        else rc = config_special(&C, ck, key, line, v);
    }
    if (!rc) rc = config_finish(&C);
    *constant_line = C.constant_line;
done:
    yaml_tree_free(root);
    return rc;
}

/* ---- the command line ---- */

/* getopt codes: 1 is getopt's own code for a non-option argument (optstring "-") */
enum { C_CONFIG = 2, C_HELP, C_OPT_BASE = 100 }; /* C_OPT_BASE + TrainOptId; objective options from OBJ_OPT_BASE */

static int build_table(struct option *t) {
    int n = 0;
    t[n++] = (struct option){"config", required_argument, NULL, C_CONFIG};
    t[n++] = (struct option){"help", no_argument, NULL, C_HELP};
    for (int i = 0; i < TOPT_COUNT; i++)
        if (OPT[i].flag)
            t[n++] = (struct option){OPT[i].flag, OPT[i].type == T_BOOL ? optional_argument : required_argument, NULL,
                                     C_OPT_BASE + i};
    return objective_opts_append(t, n);
}

/* the TrainOptId of a getopt code, or -1 (config, help, list-objectives) */
static int code_option(const struct option *t, int code) {
    if (code >= C_OPT_BASE && code < C_OPT_BASE + TOPT_COUNT) return code - C_OPT_BASE;
    if (code < OBJ_OPT_BASE) return -1;
    for (const struct option *p = t; p->name; p++)
        if (p->val == code) {
            if (!strcmp(p->name, "no-sinkhorn")) return TOPT_SINKHORN;
            char name[64];
            snprintf(name, sizeof name, "%s", p->name);
            for (char *c = name; *c; c++)
                if (*c == '-') *c = '_';
            for (int i = 0; i < TOPT_COUNT; i++)
                if (!strcmp(OPT[i].name, name)) return i;
            return -1;
        }
    return -1;
}

static void cli_bad_option(const struct option *t, const char *arg, int missing_value, char *err, size_t errlen) {
    if (arg[0] != '-' || arg[1] != '-') {
        fmt_err(err, errlen, "unknown option '%s' (ppa uses long options only, such as --lr)", arg);
        return;
    }
    char name[128];
    snprintf(name, sizeof name, "%s", arg + 2);
    char *eq = strchr(name, '=');
    if (eq) *eq = 0;
    const struct option *exact = NULL;
    int n_prefix = 0;
    char prefixes[256] = "";
    for (const struct option *p = t; p->name; p++) {
        if (!strcmp(p->name, name)) exact = p;
        if (!strncmp(p->name, name, strlen(name)) && strlen(prefixes) < 200) {
            n_prefix++;
            snprintf(prefixes + strlen(prefixes), sizeof prefixes - strlen(prefixes), "%s--%s", n_prefix > 1 ? ", " : "",
                     p->name);
        }
    }
    if (missing_value) {
        fmt_err(err, errlen, "%s needs a value", arg);
    } else if (exact && exact->has_arg == no_argument && eq) {
        fmt_err(err, errlen, "--%s takes no value", name);
    } else if (n_prefix > 1) {
        fmt_err(err, errlen, "ambiguous option '--%s': %s", name, prefixes);
    } else {
        Closest c = {0};
        for (const struct option *p = t; p->name; p++) closest_add(&c, name, p->name);
        /* a config-file name given as a flag: --learning-rate */
        char key[128];
        snprintf(key, sizeof key, "%s", name);
        for (char *k = key; *k; k++)
            if (*k == '-') *k = '_';
        ConfigKey native;
        const ConfigKey *ck = config_key(key, &native);
        char buf[64];
        if (ck && ck->kind == K_OPT)
            fmt_err(err, errlen, "unknown option '--%s' (did you mean '%s'? %s is a config-file key)", name,
                    flag_of((TrainOptId)ck->id, buf, sizeof buf), key);
        else if (c.best) fmt_err(err, errlen, "unknown option '--%s' (did you mean '--%s'?)", name, c.best);
        else fmt_err(err, errlen, "unknown option '--%s' (see ppa train --help)", name);
    }
}

/* One pass over argv. pass 1: syntax, --help, --list-objectives, --config;
 * pass 2: every value, on top of the config. */
static TrainOptionsStatus cli_pass(int argc, char **argv, TrainOptions *o, const struct option *t, int pass, char *err,
                                   size_t errlen) {
    optind = 0; /* glibc: full reinitialisation */
    opterr = 0;
    int c, at = 1;
    char msg[384], buf[64];
    while ((c = getopt_long(argc, argv, "-:", t, NULL)) != -1) {
        int this_at = at; /* the argument this option started in */
        at = optind;
        if (c == 1) {
            fmt_err(err, errlen, "unexpected argument '%s' (every input is given by a --flag)", optarg);
            return TRAIN_OPTIONS_ERROR;
        }
        if (c == '?' || c == ':') {
            cli_bad_option(t, argv[this_at < argc ? this_at : argc - 1], c == ':', err, errlen);
            return TRAIN_OPTIONS_ERROR;
        }
        if (c == C_HELP) return TRAIN_OPTIONS_HELP;
        if (c == objective_opts_code("list-objectives")) return TRAIN_OPTIONS_LIST_OBJECTIVES;
        if (pass == 1) {
            if (c == C_CONFIG) {
                if (o->config) {
                    fmt_err(err, errlen, "--config given twice ('%s' and '%s'): give one file", o->config, optarg);
                    return TRAIN_OPTIONS_ERROR;
                }
                o->config = xstrdup(optarg);
            }
            continue;
        }
        if (c == C_CONFIG) continue;
        int id = code_option(t, c);
        if (id < 0) continue;
        if (c >= OBJ_OPT_BASE && id != TOPT_BETA) {
            int r = objective_opts_apply(c, optarg, &o->objective, &o->loss, err, errlen);
            if (r < 0) return TRAIN_OPTIONS_ERROR;
        } else {
            const char *text = optarg;
            if (OPT[id].type == T_BOOL && !text) text = "true";
            if (set_text(o, (TrainOptId)id, text, msg, sizeof msg)) {
                fmt_err(err, errlen, "%s: %s", flag_of((TrainOptId)id, buf, sizeof buf), msg);
                return TRAIN_OPTIONS_ERROR;
            }
        }
        set_origin(o, (TrainOptId)id, TRAIN_FROM_CLI, 0, NULL);
    }
    if (optind < argc) {
        fmt_err(err, errlen, "unexpected argument '%s' (every input is given by a --flag)", argv[optind]);
        return TRAIN_OPTIONS_ERROR;
    }
    return TRAIN_OPTIONS_OK;
}

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
    else if (g->from == TRAIN_FROM_CLI) snprintf(buf, len, "%s %ld", flag_of(BATCH_IDS[k], f, sizeof f), value);
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

static int resolve_batch(TrainOptions *o, char *err, size_t errlen) {
    char buf[512], msg[600];
    for (int k = 0; k < 3; k++) {
        TrainOptId id = BATCH_IDS[k];
        if (o->origin[id].from != TRAIN_FROM_DEFAULT && *batch_field(o, k) < 1) {
            fmt_err(err, errlen, "%s must be >= 1, found %d", where(o, id, buf, sizeof buf), *batch_field(o, k));
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
            if (sources[s] == TRAIN_FROM_CONFIG) fmt_err(err, errlen, "%s:%d: %s", o->config, line, msg);
            else fmt_err(err, errlen, "%s", msg);
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
                note(o, "%s:%d: %s %ld not used: it contradicts the command line's batch options", o->config, g->line,
                     g->key, t[k]);
                set_origin(o, BATCH_IDS[k], TRAIN_FROM_DERIVED, 0, NULL);
                continue;
            }
            v[k] = t[k];
        }
    /* defaults: one list per micro-batch, then 128 lists per step */
    if (batch_known(v) < 2 && !v[1]) {
        v[1] = DEFAULT_MICRO;
        set_origin(o, TOPT_MICRO_BATCH, TRAIN_FROM_DEFAULT, 0, NULL);
    }
    if (batch_known(v) < 2 && !v[0]) {
        if (DEFAULT_BATCH % v[1]) {
            const TrainOrigin *g = &o->origin[TOPT_MICRO_BATCH];
            if (g->from == TRAIN_FROM_CONFIG) snprintf(buf, sizeof buf, "%s:%d: %s", o->config, g->line, g->key);
            else flag_of(TOPT_MICRO_BATCH, buf, sizeof buf);
            fmt_err(err, errlen, "%s %ld does not divide the default batch size %d: give the batch size (or "
                                 "grad-accum) too",
                    buf, v[1], DEFAULT_BATCH);
            return -1;
        }
        v[0] = DEFAULT_BATCH;
        set_origin(o, TOPT_BATCH_SIZE, TRAIN_FROM_DEFAULT, 0, NULL);
    }
    for (int k = 0; k < 3; k++)
        if (!v[k]) {
            v[k] = k == 0 ? v[1] * v[2] : v[0] / v[3 - k];
            set_origin(o, BATCH_IDS[k], TRAIN_FROM_DERIVED, 0, NULL);
        }
    if (v[0] > 1000000) {
        fmt_err(err, errlen, "a batch of %ld lists per step is more than ppa allows (1000000)", v[0]);
        return -1;
    }
    for (int k = 0; k < 3; k++) *batch_field(o, k) = (int)v[k];
    return 0;
}

/* ---- validation ---- */

static int objective_uses(PpaObjective obj, TrainOptId id) {
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

static int path_exists(const char *p) { return access(p, F_OK) == 0; }

static int validate(TrainOptions *o, char *err, size_t errlen) {
    char w[512];
#define BAD(id, ...)                                                                                                   \
    do {                                                                                                               \
        char m_[256];                                                                                                  \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                                          \
        fmt_err(err, errlen, "%s %s", where(o, id, w, sizeof w), m_);                                                  \
        return -1;                                                                                                     \
    } while (0)
    static const struct {
        TrainOptId id;
        const char *flag, *key;
    } REQUIRED[] = {{TOPT_MODEL, "--model DIR", "model_name_or_path"},
                    {TOPT_DATA, "--data FILE.jsonl", "dataset_mixer, train_file or data"},
                    {TOPT_OUT, "--out DIR", "output_dir"}};
    for (size_t i = 0; i < PPA_ARRAY_LEN(REQUIRED); i++) {
        char **field = (char **)((char *)o + OPT[REQUIRED[i].id].off);
        if (!*field || !**field) {
            fmt_err(err, errlen, "%s is required (or %s in the --config file)", REQUIRED[i].flag, REQUIRED[i].key);
            return -1;
        }
    }
    /* Hub names in a recipe: ppa reads local files only */
    const TrainOrigin *gd = &o->origin[TOPT_DATA], *gm = &o->origin[TOPT_MODEL];
    if (gd->from == TRAIN_FROM_CONFIG && !path_exists(o->data))
        BAD(TOPT_DATA, "names '%s', which is not a local file: ppa reads a JSON Lines file (formats.md a); download the "
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
    if (o->threads < 0 || o->threads > 4096) BAD(TOPT_THREADS, "must be in 0..4096 (0: all cores), found %d", o->threads);
    TemplateKind tk;
    if (o->template_name && template_parse(o->template_name, &tk))
        BAD(TOPT_TEMPLATE, "'%s' is not a template: chatml, llama3, mistral, zephyr, llama2 or none", o->template_name);
    if (o->reference_free && (o->ref || o->ref_cache))
        BAD(TOPT_REFERENCE_FREE, "uses no reference model: drop %s", o->ref ? "the reference model (--ref)" : "--ref-cache");
    char m[256];
    if (ppa_loss_options_check(&o->loss, m, sizeof m) != PPA_OK) {
        fmt_err(err, errlen, "objective options: %s", m);
        return -1;
    }
    if (o->eval_every > 0 && !o->eval_data) {
        if (o->origin[TOPT_EVAL_EVERY].from == TRAIN_FROM_CLI) {
            fmt_err(err, errlen, "--eval-every needs --eval-data FILE");
            return -1;
        }
        note(o, "%s %ld has no effect without eval_data (--eval-data FILE)", where(o, TOPT_EVAL_EVERY, w, sizeof w),
             o->eval_every);
    }
    if (o->objective == PPA_SIMPO && (o->ref || o->ref_cache))
        note(o, "simpo uses no reference model: %s is not used", o->ref ? "the reference model (--ref)" : "--ref-cache");
    for (int id = TOPT_TAU; id < TOPT_COUNT; id++)
        if (o->origin[id].from != TRAIN_FROM_DEFAULT && !objective_uses(o->objective, (TrainOptId)id))
            note(o, "%s has no effect on objective %s", where(o, (TrainOptId)id, w, sizeof w),
                 ppa_objective_name(o->objective));
#undef BAD
    return 0;
}

static TrainOptionsStatus parse_all(int argc, char **argv, TrainOptions *o, char *err, size_t errlen) {
    struct option table[TOPT_COUNT + OBJ_OPT_COUNT + 4];
    build_table(table);
    TrainOptionsStatus st = cli_pass(argc, argv, o, table, 1, err, errlen);
    if (st != TRAIN_OPTIONS_OK) return st;
    int constant_line = 0;
    if (o->config && apply_config(o, &constant_line, err, errlen)) return TRAIN_OPTIONS_ERROR;
    if ((st = cli_pass(argc, argv, o, table, 2, err, errlen)) != TRAIN_OPTIONS_OK) return st;
    o->loss.beta = o->beta; /* ipo's beta is the implicit-reward beta */
    /* transformers' "constant" has no warm-up; ppa's constant warms up first */
    if (constant_line && o->origin[TOPT_SCHEDULE].from == TRAIN_FROM_CONFIG &&
        o->origin[TOPT_WARMUP_RATIO].from != TRAIN_FROM_CLI && o->warmup_ratio > 0) {
        note(o, "%s:%d: lr_scheduler_type constant has no warm-up in transformers, so warmup_ratio %g is not used "
                "(write constant_with_warmup to keep it)",
             o->config, constant_line, o->warmup_ratio);
        o->warmup_ratio = 0;
        set_origin(o, TOPT_WARMUP_RATIO, TRAIN_FROM_CONFIG, constant_line, "lr_scheduler_type");
    }
    if (resolve_batch(o, err, errlen)) return TRAIN_OPTIONS_ERROR;
    const TrainOrigin *gm = &o->origin[TOPT_MICRO_BATCH], *ga = &o->origin[TOPT_GRAD_ACCUM];
    if (o->origin[TOPT_BATCH_SIZE].from == TRAIN_FROM_DERIVED && o->batch_size != DEFAULT_BATCH &&
        ((gm->from == TRAIN_FROM_CONFIG && !strcmp(gm->key, "per_device_train_batch_size")) ||
         (ga->from == TRAIN_FROM_CONFIG && !strcmp(ga->key, "gradient_accumulation_steps"))))
        note(o, "%s: batch size %d = per-device batch %d x gradient accumulation %d; the handbook also multiplies by "
                "the number of GPUs (the paper: 128 lists per step), ppa runs one process: set batch_size: 128 (or "
                "--batch-size 128) for the paper's batch",
             o->config, o->batch_size, o->micro_batch, o->grad_accum);
    if (validate(o, err, errlen)) return TRAIN_OPTIONS_ERROR;
    return TRAIN_OPTIONS_OK;
}

TrainOptionsStatus train_options_parse(int argc, char **argv, TrainOptions *o, char *err, size_t errlen) {
    train_options_default(o);
    if (errlen) err[0] = 0;
    int saved_opterr = opterr;
    TrainOptionsStatus st = parse_all(argc, argv, o, err, errlen);
    opterr = saved_opterr; /* leave getopt as a caller expects it */
    optind = 1;
    return st;
}

/* ---- output ---- */

void train_options_print_json(const TrainOptions *o, FILE *f) {
    cJSON *j = cJSON_CreateObject(), *from = cJSON_CreateObject(), *notes = cJSON_CreateArray();
    for (int id = 0; id < TOPT_COUNT; id++) {
        const char *name = OPT[id].name;
        const void *field = (const char *)o + OPT[id].off;
        char raw[32];
        switch (id) {
        case TOPT_TAU: cJSON_AddNumberToObject(j, name, o->loss.tau); break;
        case TOPT_ALPHA: cJSON_AddNumberToObject(j, name, o->loss.alpha); break;
        case TOPT_K: cJSON_AddNumberToObject(j, name, o->loss.k); break;
        case TOPT_GAIN: cJSON_AddStringToObject(j, name, GAIN_NAMES[o->loss.gain]); break;
        case TOPT_DISCOUNT: cJSON_AddStringToObject(j, name, DISCOUNT_NAMES[o->loss.discount]); break;
        case TOPT_SINKHORN: cJSON_AddBoolToObject(j, name, o->loss.sinkhorn); break;
        case TOPT_SINKHORN_ITERS: cJSON_AddNumberToObject(j, name, o->loss.sinkhorn_iters); break;
        case TOPT_SINKHORN_TOL: cJSON_AddNumberToObject(j, name, o->loss.sinkhorn_tol); break;
        case TOPT_TIES: cJSON_AddStringToObject(j, name, TIES_NAMES[o->loss.ties]); break;
        case TOPT_PAIRS: cJSON_AddStringToObject(j, name, PAIRS_NAMES[o->loss.pairs]); break;
        case TOPT_SIGMA: cJSON_AddNumberToObject(j, name, o->loss.sigma); break;
        case TOPT_LABEL_SMOOTHING: cJSON_AddNumberToObject(j, name, o->loss.label_smoothing); break;
        case TOPT_GAMMA: cJSON_AddNumberToObject(j, name, o->loss.gamma); break;
        case TOPT_NORMALIZE: cJSON_AddBoolToObject(j, name, o->loss.normalize); break;
        default:
            switch (OPT[id].type) {
            case T_STR: {
                const char *s = *(char *const *)field;
                cJSON_AddItemToObject(j, name, s ? cJSON_CreateString(s) : cJSON_CreateNull());
                break;
            }
            case T_INT: cJSON_AddNumberToObject(j, name, *(const int *)field); break;
            case T_LONG: cJSON_AddNumberToObject(j, name, (double)*(const long *)field); break;
            case T_U64:
                snprintf(raw, sizeof raw, "%llu", *(const unsigned long long *)field); /* exact beyond 2^53 */
                cJSON_AddRawToObject(j, name, raw);
                break;
            case T_DOUBLE: cJSON_AddNumberToObject(j, name, *(const double *)field); break;
            case T_BOOL: cJSON_AddBoolToObject(j, name, *(const int *)field); break;
            case T_SCHEDULE: cJSON_AddStringToObject(j, name, SCHEDULE_NAMES[o->schedule]); break;
            case T_DTYPE: cJSON_AddStringToObject(j, name, o->save_dtype == SAVE_BF16 ? "bf16" : "f32"); break;
            case T_OBJECTIVE: cJSON_AddStringToObject(j, name, ppa_objective_name(o->objective)); break;
            case T_LOSS: break;
            }
        }
        char buf[1200];
        cJSON_AddStringToObject(from, name, train_option_origin(o, (TrainOptId)id, buf, sizeof buf));
    }
    cJSON_AddItemToObject(j, "config", o->config ? cJSON_CreateString(o->config) : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "from", from);
    for (int i = 0; i < o->n_notes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(o->notes[i]));
    cJSON_AddItemToObject(j, "notes", notes);
    char *s = cJSON_PrintUnformatted(j);
    if (s) fprintf(f, "%s\n", s);
    free(s);
    cJSON_Delete(j);
}

static const char HELP_TEXT[] =
    "usage: ppa train --model DIR --data FILE.jsonl --out DIR [options]\n"
    "       ppa train --config RECIPE.yaml [options]\n"
    "\n"
    "Options (default; [config-file keys]). A flag wins over the config file wherever it stands.\n"
    "Inputs and outputs:\n"
    "  --model DIR             policy to train, a Hugging Face folder   [model_name_or_path, model]\n"
    "  --data FILE.jsonl       training lists      [dataset_mixer (one file, fraction 1.0), train_file,\n"
    "                                               dataset_name, data]\n"
    "  --out DIR               the trained model folder                 [output_dir, out]\n"
    "  --ref DIR               reference model (the initial --model)    [ref_model, ref_model_name_or_path, ref]\n"
    "  --ref-cache FILE        reference log-probs, written once, reused [ref_cache]\n"
    "  --reference-free        s = beta log pi, no reference model      [reference_free]\n"
    "  --template NAME         chatml | llama3 | mistral | zephyr | llama2 | none (detected) [template]\n"
    "  --max-length N          prompt + response tokens (1024)          [max_length]\n"
    "  --max-prompt-length N   prompt tokens (512); responses get the rest [max_prompt_length]\n"
    "  --skip-invalid          report and skip malformed rows           [skip_invalid]\n"
    "  --eval-data FILE.jsonl  held-out lists                           [validation_file, eval_data]\n"
    "  --eval-every N          evaluate every N steps (0: at the end)   [eval_steps, evaluation_strategy]\n"
    "The objective:\n"
    "  --objective NAME        (neural_ndcg)      [loss_type with pairwise_type, objective]\n"
    "  --beta B                implicit-reward beta, also ipo's (0.1)  [beta]\n"
    "  --list-size K           responses per list (8)                   [list_size]\n"
    "  and the objective options below                                 [tau, alpha, k, gain, discount,\n"
    "                          sinkhorn, sinkhorn_iters, sinkhorn_tol, ties, pairs, sigma, label_smoothing,\n"
    "                          gamma, normalize; ablation_type none | no_power | top-4 | scale]\n"
    "Optimisation (AdamW: beta1 0.9, beta2 0.999, eps 1e-8):\n"
    "  --epochs N              passes over the data (1)                 [num_train_epochs, epochs]\n"
    "  --max-steps N           optimizer steps; 0: from the epochs (0)  [max_steps; -1 = 0]\n"
    "  --lr X                  peak learning rate (5e-7)                [learning_rate, lr]\n"
    "  --batch-size N          lists per optimizer step (128)           [batch_size]\n"
    "  --micro-batch N         lists per forward/backward (1)           [per_device_train_batch_size]\n"
    "  --grad-accum N          micro-batches per step (batch / micro)   [gradient_accumulation_steps]\n"
    "  --warmup-ratio X        share of steps warming up linearly (0.1) [warmup_ratio]\n"
    "  --schedule S            cosine | linear | constant (cosine)      [lr_scheduler_type: cosine, linear,\n"
    "                          constant_with_warmup; constant = constant without warm-up]\n"
    "  --weight-decay X        decoupled, matrices only (0)             [weight_decay]\n"
    "  --clip-grad X           global L2 norm, 0: off (1.0)             [max_grad_norm]\n"
    "  --seed N                (42)                                     [seed]\n"
    "Checkpoints and logs:\n"
    "  --save-every N          checkpoint every N steps, 0: final only  [save_steps, save_strategy]\n"
    "  --resume DIR            continue from a checkpoint               [resume_from_checkpoint]\n"
    "  --save-dtype D          f32 | bf16 (f32)                         [save_dtype]\n"
    "  --log FILE              JSON Lines metrics                       [log]\n"
    "  --log-lambdas           log d loss / d s of every list           [log_lambdas]\n"
    "  --threads N             compute threads, 0: all cores (0)        [threads]\n"
    "  --verbose                                                        [verbose]\n"
    "  --config FILE.yaml      an alignment-handbook recipe (see below)\n"
    "  --list-objectives       print the objective names\n"
    "On/off flags take an optional value: --verbose=false turns off a config's verbose: true.\n"
    "\n"
    "Batch: batch size = micro-batch x grad-accum; two of them fix the third. The command line's\n"
    "values come first, then the config's (batch size, micro-batch, grad-accum), then the defaults\n"
    "micro-batch 1 and batch size 128, each taken while they agree. Values from one source that\n"
    "disagree are an error; a config value that disagrees with the command line is dropped with a\n"
    "note. The handbook's per_device_train_batch_size x gradient_accumulation_steps leaves out the\n"
    "number of GPUs: the paper's 128 lists per step needs batch_size: 128 or --batch-size 128.\n"
    "\n"
    "loss_type (the authors' trainer, trl, the paper): neural_ndcg | ppa, approx_ndcg, lipo | lambda,\n"
    "ranknet, dpo | sigmoid + pairwise_type all_pairs (dpo_all_pairs), best_with_others (dpo_bpr),\n"
    "best_with_worst (dpo_single_pair), others_vs_worst (dpo_ovw), list_mle (listmle); simpo and ipo\n"
    "+ pairwise_type (their pairs); hinge | slic; bpr, single_pair, all_pairs, others_vs_worst,\n"
    "listmle | list_mle | dpo_pl, listnet; any ppa objective name.\n"
    "\n"
    "Config keys checked, not stored: optim (adamw_torch, adamw_torch_fused, adamw_hf), adam_beta1 0.9,\n"
    "adam_beta2 0.999, adam_epsilon 1e-8, warmup_steps 0, truncation_mode keep_end, use_peft / load_in_4bit\n"
    "/ load_in_8bit false; any other value is an error. Refused: chat_template, config.\n"
    "Config keys ignored, one note each:\n";

void train_options_help(FILE *f) {
    fputs(HELP_TEXT, f);
    const char *last_why = NULL;
    for (size_t i = 0; i < PPA_ARRAY_LEN(KEYS); i++) {
        if (KEYS[i].kind != K_IGNORED) continue;
        if (!last_why || strcmp(last_why, KEYS[i].why)) {
            if (last_why) fprintf(f, ": %s\n", last_why);
            fprintf(f, "  %s", KEYS[i].key);
        } else {
            fprintf(f, ", %s", KEYS[i].key);
        }
        last_why = KEYS[i].why;
    }
    if (last_why) fprintf(f, ": %s\n", last_why);
    fputs("Any other key is an error (FILE:LINE, with the nearest known key).\n\n", f);
    fputs(OBJECTIVE_OPTS_HELP, f);
}
