/* print.c: what the option layer writes: the JSON record of the
 * resolved options and where each came from, and every command's --help
 * lines, generated from the table with the command's own defaults. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "losses/objective_opts.h"
#include "options/internal.h"

/* an objective option's value as JSON */
static cJSON *loss_json(const PpaLossOptions *l, TrainOptId id) {
    switch (id) {
    case TOPT_TAU: return cJSON_CreateNumber(l->tau);
    case TOPT_ALPHA: return cJSON_CreateNumber(l->alpha);
    case TOPT_K: return cJSON_CreateNumber(l->k);
    case TOPT_GAIN: return cJSON_CreateString(GAIN_NAMES[l->gain]);
    case TOPT_DISCOUNT: return cJSON_CreateString(DISCOUNT_NAMES[l->discount]);
    case TOPT_SINKHORN: return cJSON_CreateBool(l->sinkhorn);
    case TOPT_SINKHORN_ITERS: return cJSON_CreateNumber(l->sinkhorn_iters);
    case TOPT_SINKHORN_TOL: return cJSON_CreateNumber(l->sinkhorn_tol);
    case TOPT_TIES: return cJSON_CreateString(TIES_NAMES[l->ties]);
    case TOPT_PAIRS: return cJSON_CreateString(PAIRS_NAMES[l->pairs]);
    case TOPT_SIGMA: return cJSON_CreateNumber(l->sigma);
    case TOPT_LABEL_SMOOTHING: return cJSON_CreateNumber(l->label_smoothing);
    case TOPT_GAMMA: return cJSON_CreateNumber(l->gamma);
    case TOPT_NORMALIZE: return cJSON_CreateBool(l->normalize);
    default: return cJSON_CreateNull();
    }
}

static cJSON *value_json(const TrainOptions *o, TrainOptId id) {
    const void *field = (const char *)o + OPT[id].off;
    char text[64];
    switch (OPT[id].type) {
    case T_STR: {
        const char *s = *(char *const *)field;
        return s ? cJSON_CreateString(s) : cJSON_CreateNull();
    }
    case T_STRS: {
        const OptStrings *l = field;
        return l->n ? cJSON_CreateStringArray((const char *const *)l->v, l->n) : cJSON_CreateArray();
    }
    case T_INT: return cJSON_CreateNumber(*(const int *)field);
    case T_LONG: return cJSON_CreateNumber((double)*(const long *)field);
    case T_U64: return cJSON_CreateRaw(opt_value_text(o, id, text, sizeof text)); /* exact beyond 2^53 */
    case T_DOUBLE: return cJSON_CreateNumber(*(const double *)field);
    case T_BOOL: return cJSON_CreateBool(*(const int *)field);
    case T_LOSS: return loss_json(&o->loss, id);
    default: return cJSON_CreateString(opt_value_text(o, id, text, sizeof text));
    }
}

void train_options_print_json(const TrainOptions *o, FILE *f) {
    cJSON *j = cJSON_CreateObject(), *from = cJSON_CreateObject(), *notes = cJSON_CreateArray();
    for (int id = 0; id < TOPT_COUNT; id++) {
        if (!opt_takes(o->cmd, (TrainOptId)id)) continue;
        cJSON_AddItemToObject(j, OPT[id].name, value_json(o, (TrainOptId)id));
        char buf[1200];
        cJSON_AddStringToObject(from, OPT[id].name, train_option_origin(o, (TrainOptId)id, buf, sizeof buf));
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

/* ---- --help ---- */

static const char *const SECTION_TITLES[S_COUNT] = {
    "Inputs and outputs:", "The objective:", "Optimisation (AdamW: beta1 0.9, beta2 0.999, eps 1e-8):",
    "LoRA adapters (PEFT's format; the base model stays frozen):", "Generation:", "Checkpoints, logs and threads:"};

/* the metavar and text of option id in cmd's help */
static void help_words(OptCommand cmd, TrainOptId id, const char **mv, const char **text) {
    *mv = OPT[id].metavar, *text = OPT[id].help;
    if (OPT[id].type == T_LOSS || OPT[id].type == T_OBJECTIVE) {
        const ObjectiveOpt *p = &OBJECTIVE_OPTS[objective_opt_find(OPT[id].flag)];
        *mv = p->metavar, *text = p->help;
    }
    for (int i = 0; i < OPT_N_HELP_OVERRIDES; i++)
        if (OPT_HELP_OVERRIDES[i].id == id && (OPT_HELP_OVERRIDES[i].cmds & cmd))
            *mv = OPT_HELP_OVERRIDES[i].metavar, *text = OPT_HELP_OVERRIDES[i].help;
}

/* "  --flag METAVAR          text (default)   [recipe keys]", continuation lines under the text */
static void help_line(OptCommand cmd, const TrainOptions *d, TrainOptId id, FILE *f) {
    const char *mv, *text;
    help_words(cmd, id, &mv, &text);
    char head[96], def[128] = "", keys[256] = "", v[96];
    int k = snprintf(head, sizeof head, "--%s%s%s", OPT[id].flag, mv ? " " : "", mv ? mv : "");
    if (OPT[id].alias) k += snprintf(head + k, sizeof head - (size_t)k, ", --%s", OPT[id].alias);
    if (OPT[id].short_flag) snprintf(head + k, sizeof head - (size_t)k, ", -%c", OPT[id].short_flag);
    opt_value_text(d, id, v, sizeof v);
    int show = !(OPT[id].required & cmd) && OPT[id].type != T_LOSS && v[0] && OPT[id].type != T_BOOL;
    if (show) snprintf(def, sizeof def, " (%s)", v);
    if (cmd == CMD_TRAIN) snprintf(keys, sizeof keys, "   [%s]", opt_recipe_keys(id, v, sizeof v));
    fprintf(f, "  %-22s", head);
    if (strlen(head) > 22) fprintf(f, "\n%24s", "");
    for (const char *s = text;;) {
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        if (!nl) {
            fprintf(f, "  %.*s%s%s\n", len, s, def, keys);
            break;
        }
        fprintf(f, "  %.*s\n%24s", len, s, "");
        s = nl + 1;
    }
}

void options_help(OptCommand cmd, FILE *f) {
    TrainOptions d;
    options_default(cmd, &d);
    for (int sec = 0; sec < S_COUNT; sec++) {
        int any = 0;
        for (int id = 0; id < TOPT_COUNT; id++) {
            if (OPT[id].section != (OptSection)sec || !opt_takes(cmd, (TrainOptId)id)) continue;
            if (!any++) fprintf(f, "%s\n", SECTION_TITLES[sec]);
            help_line(cmd, &d, (TrainOptId)id, f);
        }
        if (sec == S_OBJECTIVE && opt_takes(cmd, TOPT_OBJECTIVE))
            fprintf(f, "  %-22s  %s\n", "--list-objectives", "print the objective names and exit");
    }
    if (cmd == CMD_TRAIN) fprintf(f, "  %-22s  %s\n", "--config FILE.yaml", "an alignment-handbook recipe (see below)");
    if (opt_takes(cmd, TOPT_DATA) || opt_takes(cmd, TOPT_PROMPTS))
        fputs("A FILE.jsonl may also be a JSON array or a Parquet file (told by its bytes), a folder of one split's\n"
              "shards, a quoted glob ('data/train-*.parquet') or a comma list (docs/commands.md, Data files).\n", f);
    fputs("On/off flags take an optional value: --verbose=false turns off a config's verbose: true.\n", f);
    train_options_free(&d);
}

static const char TRAIN_USAGE[] =
    "usage: ppa train --model DIR --data FILE.jsonl --out DIR [options]\n"
    "       ppa train --config RECIPE.yaml [options]\n"
    "\n"
    "Options (default) [recipe keys]. A flag wins over the config file wherever it stands.\n";

static const char TRAIN_RECIPES[] =
    "\n"
    "Batch: batch size = micro-batch x grad-accum; two of them fix the third. The command line's\n"
    "values come first, then the config's (batch size, micro-batch, grad-accum), then the defaults\n"
    "micro-batch 1 and batch size 128, each taken while they agree. Values from one source that\n"
    "disagree are an error; a config value that disagrees with the command line is dropped with a\n"
    "note. The handbook's per_device_train_batch_size x gradient_accumulation_steps leaves out the\n"
    "number of GPUs: the paper's 128 lists per step needs batch_size: 128 or --batch-size 128.\n"
    "\n"
    "Recipe keys with rules of their own: loss_type with pairwise_type (the objective), ablation_type\n"
    "none | no_power | top-4 | scale (gain, k, sinkhorn), lr_scheduler_type cosine | linear |\n"
    "constant_with_warmup | constant (no warm-up), max_steps -1 (= 0), warmup_steps 0,\n"
    "save_strategy steps | no, evaluation_strategy / eval_strategy steps | no, resume_from_checkpoint,\n"
    "dataset_mixer (one file, fraction 1.0).\n"
    "\n"
    "loss_type (the authors' trainer, trl, the paper): neural_ndcg | ppa, approx_ndcg, lipo | lambda,\n"
    "ranknet, dpo | sigmoid + pairwise_type all_pairs (dpo_all_pairs), best_with_others (dpo_bpr),\n"
    "best_with_worst (dpo_single_pair), others_vs_worst (dpo_ovw), list_mle (listmle); simpo and ipo\n"
    "+ pairwise_type (their pairs); hinge | slic; bpr, single_pair, all_pairs, others_vs_worst,\n"
    "listmle | list_mle | dpo_pl, listnet; any ppa objective name.\n"
    "\n"
    "use_peft: true trains a LoRA adapter with lora_r, lora_alpha, lora_dropout, lora_target_modules and\n"
    "use_rslora (TRL's defaults r 16, alpha 32, dropout 0.05); without it the lora_* keys are ignored.\n"
    "Config keys checked, not stored: optim (adamw_torch, adamw_torch_fused, adamw_hf), adam_beta1 0.9,\n"
    "adam_beta2 0.999, adam_epsilon 1e-8, warmup_steps 0, truncation_mode keep_end, use_dora /\n"
    "lora_modules_to_save / load_in_4bit / load_in_8bit / fp16 false; any other value is an error.\n"
    "Refused: chat_template (a recipe's template string: ppa renders the model's own template, or the one\n"
    "template names), config.\n"
    "Config keys ignored, one note each:\n";

void train_options_help(FILE *f) {
    fputs(TRAIN_USAGE, f);
    options_help(CMD_TRAIN, f);
    fputs(TRAIN_RECIPES, f);
    opt_recipe_help(f);
    fputs("Any other key is an error (FILE:LINE, with the nearest known key).\n", f);
}

/* ---- the model card's options ---- */

void options_print_markdown(const TrainOptions *o, FILE *f) {
    int lora = o->lora_r > 0 || o->adapter;
    for (int id = 0; id < TOPT_COUNT; id++) {
        OptSection s = OPT[id].section;
        if (!opt_takes(o->cmd, (TrainOptId)id) || (s != S_OBJECTIVE && s != S_OPTIM && !(s == S_LORA && lora)))
            continue;
        /* an objective's own options: those it reads (another objective's defaults say nothing) */
        if (OPT[id].type == T_LOSS && !opt_objective_uses(o->objective, (TrainOptId)id)) continue;
        if (id == TOPT_BETA && o->cmd == CMD_REWARD) continue;
        char v[1200], from[1200];
        opt_value_text(o, (TrainOptId)id, v, sizeof v);
        if (id == TOPT_ADAPTER && !o->adapter) continue;
        train_option_origin(o, (TrainOptId)id, from, sizeof from);
        fprintf(f, "- %s: %s%s%s%s\n", OPT[id].name, v[0] ? v : "(none)", strcmp(from, "default") ? " (" : "",
                strcmp(from, "default") ? from : "", strcmp(from, "default") ? ")" : "");
    }
}
