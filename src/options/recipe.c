/* recipe.c: alignment-handbook recipes (`ppa train --config
 * FILE.yaml`): which keys set which option, which are checked, ignored with
 * a note, or refused; the authors' and trl's loss_type names; and the pass
 * over a recipe's keys. options.h has the rules. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/text.h"
#include "io/yaml.h"
#include "options/internal.h"

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
    SP_BF16,       /* bf16: true|false -> precision */
    SP_TRUNCATION_MODE,
    SP_REFUSED, /* always an error saying `why` */
    SP_USE_PEFT,
    SP_LORA_TARGETS, /* lora_target_modules: a list, or one name / all-linear */
    SP_REPORT_TO,    /* report_to: a list, or one name (transformers takes both) */
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
    {"ddp_timeout", K_OPT, TOPT_COLLECTIVE_TIMEOUT, NULL}, /* transformers: seconds, for init_process_group */
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
    {"use_peft", K_SPECIAL, SP_USE_PEFT, NULL},
    {"lora_target_modules", K_SPECIAL, SP_LORA_TARGETS, NULL},
    {"report_to", K_SPECIAL, SP_REPORT_TO, NULL},
    {"lora_modules_to_save", K_SPECIAL, SP_FALSE_ONLY, "ppa trains the adapters only, no full modules"},
    {"use_dora", K_SPECIAL, SP_FALSE_ONLY, "DoRA is not implemented"},
    {"lora_task_type", K_IGNORED, 0, "ppa's adapters are CAUSAL_LM"},
    {"load_in_4bit", K_SPECIAL, SP_FALSE_ONLY, "ppa does not quantize"},
    {"load_in_8bit", K_SPECIAL, SP_FALSE_ONLY, "ppa does not quantize"},
    {"truncation_mode", K_SPECIAL, SP_TRUNCATION_MODE, NULL},
    {"chat_template", K_SPECIAL, SP_REFUSED,
     "ppa renders the model folder's own chat template (tokenizer_config.json or chat_template.jinja): put the "
     "template there, or set template (chatml, llama3, mistral, zephyr, llama2 or none)"},
    {"config", K_SPECIAL, SP_REFUSED, "a config file cannot name another config file"},
    /* no meaning for ppa */
    {"bf16", K_SPECIAL, SP_BF16, NULL},
    {"fp16", K_SPECIAL, SP_FALSE_ONLY, "ppa has no float16 mixed precision: use bf16: true"},
    {"tf32", K_IGNORED, 0, "it is for NVIDIA GPUs; ppa's float32 products are float32"},
    {"half_precision_backend", K_IGNORED, 0, "ppa's bf16 products run on oneDNN (precision / bf16 choose them)"},
    {"torch_dtype", K_IGNORED, 0,
     "ppa keeps float32 master weights (precision / bf16 choose the products); save_dtype chooses what is written"},
    {"use_flash_attention_2", K_IGNORED, 0, "ppa runs its own attention kernels"},
    {"attn_implementation", K_IGNORED, 0, "ppa runs its own attention kernels"},
    {"gradient_checkpointing_kwargs", K_IGNORED, 0, "ppa's checkpointing has no options (use_reentrant has no meaning)"},
    {"logging_steps", K_IGNORED, 0, "ppa logs every optimizer step (--log FILE)"},
    {"logging_strategy", K_IGNORED, 0, "ppa logs every optimizer step (--log FILE)"},
    {"logging_first_step", K_IGNORED, 0, "ppa logs every optimizer step (--log FILE)"},
    {"log_level", K_IGNORED, 0, "ppa prints its notes and errors to stderr"},
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
    {"precompute_ref_log_probs", K_IGNORED, 0,
     "ppa always computes the reference log-probs once before training (ref_cache keeps them)"},
    {"disable_dropout", K_IGNORED, 0, "ppa has no dropout"},
    {"generate_during_eval", K_IGNORED, 0, "ppa does not generate during training"},
    {"max_target_length", K_IGNORED, 0, "it is for encoder-decoder models"},
    {"data_seed", K_IGNORED, 0, "ppa derives the data order from seed"},
};

static const char *const ABLATIONS[] = {"none", "no_power", "top-4", "scale"};

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
    if (pairwise_type && (pw = text_choice(pairwise_type, PAIRWISE, 5)) < 0) {
        opt_fail(err, errlen,
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
            opt_fail(err, errlen, "loss_type %s with pairwise_type list_mle (ListMLE on %s rewards) has no ppa objective",
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
            opt_fail(err, errlen, "loss_type '%s' (trl) has no ppa objective; ppa has %s", loss_type, ALL);
            return -1;
        }
    TextClosest c = {0};
    for (int k = 0; k < PPA_N_OBJECTIVES; k++) text_closest_add(&c, loss_type, ppa_objective_name((PpaObjective)k));
    static const char *const MORE[] = {"dpo", "sigmoid", "simpo", "ipo", "lipo", "slic", "ppa"};
    for (size_t i = 0; i < PPA_ARRAY_LEN(MORE); i++) text_closest_add(&c, loss_type, MORE[i]);
    for (size_t i = 0; i < PPA_ARRAY_LEN(EXTRA); i++) text_closest_add(&c, loss_type, EXTRA[i].name);
    char hint[96] = "";
    if (c.best) snprintf(hint, sizeof hint, " (did you mean '%s'?)", c.best);
    opt_fail(err, errlen, "unknown loss_type '%s'%s; ppa has %s", loss_type, hint, ALL);
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
    const YamlNode *use_peft;
    int use_peft_line;
} Config;

static const ConfigKey *config_key(const char *key, ConfigKey *native) {
    for (size_t i = 0; i < PPA_ARRAY_LEN(KEYS); i++)
        if (!strcmp(KEYS[i].key, key)) return &KEYS[i];
    for (int i = 0; i < TOPT_COUNT; i++)
        if (opt_takes(CMD_TRAIN, (TrainOptId)i) && !strcmp(OPT[i].name, key)) {
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
    opt_set_origin(C->o, id, TRAIN_FROM_CONFIG, line, key);
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
    if (opt_set_text(C->o, id, text, msg, sizeof msg)) return config_fail(C, line, "%s: %s", key, msg);
    return config_claim(C, id, key, line);
}

static int is_no(const YamlNode *v) {
    int b;
    return (!yaml_as_bool(v, &b) && !b) || (v->kind == YAML_SCALAR && !strcmp(v->str, "no"));
}

/* a list of names joined with commas (lora_target_modules, report_to), or a single value */
static int config_list(Config *C, TrainOptId id, const char *key, int line, const YamlNode *v) {
    if (v->kind != YAML_SEQ) return config_set(C, id, key, line, v);
    size_t len = 1;
    for (int i = 0; i < v->n; i++) {
        if (v->items[i]->kind != YAML_SCALAR) return config_fail(C, line, "%s: expected a list of names", key);
        len += strlen(v->items[i]->str) + 1;
    }
    char *joined = xcalloc(len, 1), msg[320];
    for (int i = 0; i < v->n; i++) strcat(strcat(joined, i ? "," : ""), v->items[i]->str);
    int rc = opt_set_text(C->o, id, joined, msg, sizeof msg);
    free(joined);
    if (rc) return config_fail(C, line, "%s: %s", key, msg);
    return config_claim(C, id, key, line);
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
        if (text_long(s, &n) || n < 0) return config_fail(C, line, "warmup_steps: expected a whole number >= 0");
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
        o->data = opt_strdup(v->keys[0]);
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
    case SP_BF16:
        if (v->kind != YAML_SCALAR || yaml_as_bool(v, &b)) return config_fail(C, line, "%s: expected true or false", key);
        o->bf16 = b;
        return config_claim(C, TOPT_PRECISION, ck->key, line);
    case SP_TRUNCATION_MODE:
        if (!(s = config_scalar(C, key, line, v))) return -1;
        if (strcmp(s, "keep_end"))
            return config_fail(C, line, "truncation_mode '%s': ppa keeps the end of a long prompt (keep_end)", s);
        return 0;
    case SP_REFUSED: return config_fail(C, line, "%s: %s", key, ck->why);
    case SP_USE_PEFT:
        if (v->kind != YAML_NULL && (v->kind != YAML_SCALAR || yaml_as_bool(v, &b)))
            return config_fail(C, line, "%s: expected true or false", key);
        C->use_peft = v, C->use_peft_line = line;
        return 0;
    case SP_LORA_TARGETS: return config_list(C, TOPT_LORA_TARGETS, ck->key, line, v);
    case SP_REPORT_TO: return config_list(C, TOPT_REPORT_TO, ck->key, line, v);
    }
    return 0;
}

static int unknown_key(Config *C, const char *key, int line) {
    TextClosest c = {0};
    for (size_t i = 0; i < PPA_ARRAY_LEN(KEYS); i++) text_closest_add(&c, key, KEYS[i].key);
    for (int i = 0; i < TOPT_COUNT; i++)
        if (opt_takes(CMD_TRAIN, (TrainOptId)i)) text_closest_add(&c, key, OPT[i].name);
    if (c.best) return config_fail(C, line, "unknown key '%s' (did you mean '%s'?)", key, c.best);
    return config_fail(C, line, "unknown key '%s' (ppa train --help lists the keys it reads)", key);
}

/* use_peft: the recipe's lora_* keys count only with use_peft: true, whose defaults are TRL's (r 16, alpha 32,
 * dropout 0.05) */
static int config_peft(Config *C) {
    TrainOptions *o = C->o;
    int b = 0;
    if (C->use_peft && C->use_peft->kind == YAML_SCALAR) yaml_as_bool(C->use_peft, &b);
    o->use_peft = b;
    if (!b) {
        for (int id = TOPT_LORA_R; id <= TOPT_USE_RSLORA; id++)
            if (o->origin[id].from == TRAIN_FROM_CONFIG) {
                opt_note(o, "%s:%d: %s ignored: use_peft is not true (TRL's rule: then every parameter trains)", C->path,
                         o->origin[id].line, o->origin[id].key);
                opt_set_origin(o, (TrainOptId)id, TRAIN_FROM_DEFAULT, 0, NULL);
            }
        TrainOptions d;
        options_default(o->cmd, &d); /* the ignored values back to the defaults */
        o->lora_r = d.lora_r, o->lora_alpha = d.lora_alpha, o->lora_dropout = d.lora_dropout, o->use_rslora = d.use_rslora;
        free(o->lora_targets);
        o->lora_targets = NULL;
        return 0;
    }
    if (o->origin[TOPT_LORA_R].from != TRAIN_FROM_CONFIG) {
        o->lora_r = 16;
        opt_set_origin(o, TOPT_LORA_R, TRAIN_FROM_CONFIG, C->use_peft_line, "use_peft");
    }
    if (o->origin[TOPT_LORA_DROPOUT].from != TRAIN_FROM_CONFIG) {
        o->lora_dropout = 0.05;
        opt_set_origin(o, TOPT_LORA_DROPOUT, TRAIN_FROM_CONFIG, C->use_peft_line, "use_peft");
    }
    return 0;
}

/* loss_type + pairwise_type, ablation_type, save/eval strategies: after all keys are known */
static int config_finish(Config *C) {
    TrainOptions *o = C->o;
    if (config_peft(C)) return -1;
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
            opt_note(o, "%s:%d: pairwise_type %s ignored: loss_type %s does not use it (as in the authors' trainer)",
                 C->path, C->pairwise_type_line, pt, lt);
    }
    if (C->ablation) {
        const char *a = config_scalar(C, "ablation_type", C->ablation_line, C->ablation);
        if (!a) return -1;
        int k = text_choice(a, ABLATIONS, 4);
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
                opt_note(o, "%s:%d: save_steps %ld ignored: save_strategy is \"no\"", C->path,
                     o->origin[TOPT_SAVE_EVERY].line, o->save_every);
            o->save_every = 0;
            opt_set_origin(o, TOPT_SAVE_EVERY, TRAIN_FROM_CONFIG, line, "save_strategy");
        } else if (v->kind == YAML_SCALAR && !strcmp(v->str, "steps")) {
            if (o->origin[TOPT_SAVE_EVERY].from != TRAIN_FROM_CONFIG) { /* transformers' default save_steps */
                o->save_every = 500;
                opt_set_origin(o, TOPT_SAVE_EVERY, TRAIN_FROM_CONFIG, line, "save_strategy");
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
                opt_note(o, "%s:%d: eval_steps %ld ignored: %s is \"no\"", C->path, o->origin[TOPT_EVAL_EVERY].line,
                     o->eval_every, C->eval_strategy_key);
            o->eval_every = 0;
            opt_set_origin(o, TOPT_EVAL_EVERY, TRAIN_FROM_CONFIG, line, C->eval_strategy_key);
        } else if (v->kind == YAML_SCALAR && !strcmp(v->str, "steps")) {
            if (o->origin[TOPT_EVAL_EVERY].from != TRAIN_FROM_CONFIG)
                opt_note(o, "%s:%d: %s \"steps\" without eval_steps: ppa evaluates at the end only", C->path, line,
                     C->eval_strategy_key);
        } else {
            return config_fail(C, line, "%s %s: ppa evaluates every eval_steps steps (\"steps\") or at the end "
                                        "(\"no\")",
                               C->eval_strategy_key, v->kind == YAML_SCALAR ? v->str : yaml_kind_name(v));
        }
    }
    return 0;
}

int opt_apply_recipe(TrainOptions *o, int *constant_line, char *err, size_t errlen) {
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
        else if (ck->kind == K_IGNORED) opt_note(o, "%s:%d: %s ignored: %s", C.path, line, key, ck->why);
        else if (ck->kind == K_OPT) rc = config_set(&C, (TrainOptId)ck->id, ck->key, line, v);
        else rc = config_special(&C, ck, key, line, v);
    }
    if (!rc) rc = config_finish(&C);
    *constant_line = C.constant_line;
done:
    yaml_tree_free(root);
    return rc;
}

/* TRL / handbook names that users write as flags and that are no plain option of a recipe: the ppa flag each stands
 * for, and the hint (loss_type's comes from its value: loss_type_hint) */
static const struct {
    const char *key, *flag, *hint;
} FLAG_HINTS[] = {
    {"loss_type", "objective", NULL},
    {"bf16", "precision", "did you mean '--precision bf16'? bf16 is TRL's switch"},
    {"lora_target_modules", "lora-targets",
     "did you mean '--lora-targets'? lora_target_modules is TRL's name; ppa takes all-linear or a comma list such as "
     "q_proj,v_proj"},
};

/* --loss_type [VALUE]: ppa's objective for TRL's loss type where ppa has the same one, else the list */
static void loss_type_hint(const char *value, const char *command, char *hint, size_t len) {
    PpaObjective obj;
    PpaPairs pairs;
    int used;
    char why[1024];
    if (value && !train_loss_type_map(value, NULL, &obj, &pairs, &used, why, sizeof why)) {
        snprintf(hint, len, "did you mean '--objective %s'? loss_type %s is ppa's %s", ppa_objective_name(obj), value,
                 ppa_objective_name(obj));
        return;
    }
    static const char *const TRL[] = {"sigmoid", "hinge", "ipo"}; /* TRL's DPO losses that ppa has */
    char known[256] = "";
    for (size_t i = 0; i < PPA_ARRAY_LEN(TRL); i++)
        if (!train_loss_type_map(TRL[i], NULL, &obj, &pairs, &used, why, sizeof why))
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s -> %s", i ? ", " : "", TRL[i],
                     ppa_objective_name(obj));
    if (value)
        snprintf(hint, len, "did you mean '--objective'? ppa has no objective for loss_type %s; `ppa %s "
                 "--list-objectives` lists ppa's", value, command);
    else
        snprintf(hint, len, "did you mean '--objective'? TRL's loss types in ppa: %s; `ppa %s --list-objectives` lists "
                 "ppa's objectives", known, command);
}

int opt_flag_hint(const char *name, const char *value, const char *command, char *flag, size_t flaglen, char *hint,
                  size_t hintlen) {
    char key[128];
    snprintf(key, sizeof key, "%s", name);
    for (char *k = key; *k; k++)
        if (*k == '-') *k = '_';
    for (size_t i = 0; i < PPA_ARRAY_LEN(FLAG_HINTS); i++) {
        if (strcmp(key, FLAG_HINTS[i].key)) continue;
        snprintf(flag, flaglen, "%s", FLAG_HINTS[i].flag);
        if (FLAG_HINTS[i].hint) snprintf(hint, hintlen, "%s", FLAG_HINTS[i].hint);
        else loss_type_hint(value, command, hint, hintlen);
        return 1;
    }
    ConfigKey native;
    const ConfigKey *ck = config_key(key, &native);
    if (!ck || ck->kind != K_OPT) return 0;
    char buf[64];
    opt_flag((TrainOptId)ck->id, buf, sizeof buf);
    snprintf(flag, flaglen, "%s", buf + 2);
    snprintf(hint, hintlen, "did you mean '%s'? %s is a config-file key", buf, key);
    return 1;
}

const char *opt_recipe_keys(TrainOptId id, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < PPA_ARRAY_LEN(KEYS) && n < len; i++)
        if (KEYS[i].kind == K_OPT && KEYS[i].id == (int)id)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", KEYS[i].key);
    if (n < len) snprintf(buf + n, len - n, "%s%s", n ? ", " : "", OPT[id].name);
    return buf;
}

void opt_recipe_help(FILE *f) {
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
}
