/* prep.c: data and reference cache loading shared by train, score and eval. */
#include "cli/prep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/common.h"
#include "dist/dist.h"
#include "core/hash.h"
#include "core/timer.h"
#include "io/atomic.h"
#include "io/file.h"
#include "io/jsonl.h"
#include "hf/adapter.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"

void prep_threads(int n) {
    if (n <= 0) return;
    gemm_set_threads(n);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

void prep_options(OptCommand cmd, const char *usage, int argc, char **argv, TrainOptions *o) {
    char err[4096];
    TrainOptionsStatus s = options_parse(cmd, argc, argv, o, err, sizeof err);
    if (s == TRAIN_OPTIONS_ERROR) {
        train_options_free(o);
        ppa_die(2, "%s: %s", options_command_name(cmd), err);
    }
    if (s == TRAIN_OPTIONS_HELP) {
        if (cmd == CMD_TRAIN) train_options_help(stdout);
        else fputs(usage, stdout), options_help(cmd, stdout);
    } else if (s == TRAIN_OPTIONS_LIST_OBJECTIVES) {
        for (int i = 0; i < PPA_N_OBJECTIVES; i++) puts(ppa_objective_name((PpaObjective)i));
    }
    if (s != TRAIN_OPTIONS_OK) {
        train_options_free(o);
        exit(0);
    }
    if (options_check_paths(o, err, sizeof err)) {
        train_options_free(o);
        ppa_die(2, "%s: %s", options_command_name(cmd), err);
    }
    prep_threads(o->threads);
    jsonl_set_max_line((size_t)o->max_line_bytes);
    if (options_takes(cmd, TOPT_COLLECTIVE_TIMEOUT)) dist_set_timeout((double)o->collective_timeout);
}

PrepArgs prep_args(const TrainOptions *o, const Model *m) {
    const ModelConfig *c = model_config(m);
    int len = o->max_length, plen = o->max_prompt_length, pos = c->max_position_embeddings;
    if (options_takes(o->cmd, TOPT_MAX_LENGTH) && pos >= 2 && len > pos) { /* rows never run past the positions: cut to them, the prompt's share kept */
        plen = (int)((long)plen * pos / len);
        plen = plen < 1 ? 1 : plen > pos - 1 ? pos - 1 : plen;
        fprintf(stderr, "ppa %s: note: --max-length %d is more than the model's %d positions: rows are cut to %d "
                        "tokens, prompts to %d\n", options_command_name(o->cmd), len, pos, pos, plen);
        len = pos;
    }
    return (PrepArgs){o->model, o->data, o->template_name, o->skip_invalid, len, plen, o->special_tokens_in_text,
                      c->vocab_size, c->n_eos ? c->eos_token_ids[0] : -1, o->bf16};
}

/* why M cannot serve (a causal LM's commands refuse a reward model, and the other way round; an index past the
   head), in BUF; 0 when it can */
static int head_problem(const Model *m, const char *dir, int reward, int index, const char *who, char *buf, size_t n) {
    const ModelConfig *c = model_config(m);
    if (reward && c->head == HEAD_LM)
        snprintf(buf, n, "%s: %s is a causal LM (%s), not a reward model: give a <Type>ForSequenceClassification "
                         "folder (`ppa reward` trains one)", who, dir, model_config_architecture(c));
    else if (!reward && c->head != HEAD_LM)
        snprintf(buf, n, "%s: %s is a reward model (%s) without a language-model head: it scores with `ppa judge "
                         "--reward-model` and trains with `ppa reward`", who, dir, model_config_architecture(c));
    else if (reward && index >= c->num_labels)
        snprintf(buf, n, "%s: --reward-index %d: %s has %d output%s (0..%d)", who, index, dir, c->num_labels,
                 c->num_labels == 1 ? "" : "s", c->num_labels - 1);
    else
        return 0;
    return 1;
}

void prep_need_head(const Model *m, const char *dir, int reward, const char *who) {
    char msg[4096];
    if (head_problem(m, dir, reward, 0, who, msg, sizeof msg)) ppa_die(2, "%s", msg);
}

int prep_lora_spec(const TrainOptions *o, LoraSpec *s) {
    char err[4096];
    const char *who = options_command_name(o->cmd);
    if (o->adapter) {
        if (adapter_read_spec(o->adapter, s, err, sizeof err)) ppa_die(2, "%s: --adapter: %s", who, err);
        return 1;
    }
    if (!options_takes(o->cmd, TOPT_LORA_R) || o->lora_r <= 0) return 0;
    *s = (LoraSpec){o->lora_r, o->lora_alpha, o->lora_dropout, o->use_rslora, LORA_ALL_TARGETS};
    if (o->lora_targets && lora_parse_targets(o->lora_targets, &s->targets, err, sizeof err))
        ppa_die(2, "%s: --lora-targets: %s", who, err);
    return 1;
}

/* adapter: the folder the policy's adapter comes from (a checkpoint), else --adapter's, else a new one when the
 * options ask; NULL policy: no adapter at all (a reference model) */
static Model *load_checked(const TrainOptions *o, const char *dir, int trainable, int reward, int policy,
                           const char *adapter) {
    char err[4096];
    const char *who = options_command_name(o->cmd);
    ModelPrecision prec = o->bf16 ? MODEL_BF16 : MODEL_FP32;
    LoraSpec ls;
    int lora = policy && o->cmd != CMD_REWARD && prep_lora_spec(o, &ls);
    Model *m = o->cmd == CMD_REWARD ? model_load_reward(dir, prec, o->seed, err, sizeof err)
                                    : model_load_as(dir, prec, !trainable || lora, err, sizeof err); /* a base is frozen */
    if (!m) ppa_die(2, "%s: %s", who, err);
    const char *from = adapter ? adapter : o->adapter;
    int bad = head_problem(m, dir, reward, o->reward_index, who, err, sizeof err);
    if (!bad && lora && from) {
        char msg[3072];
        if ((bad = lora_load(m, from, msg, sizeof msg))) snprintf(err, sizeof err, "%s: %s", who, msg);
    } else if (!bad && lora) {
        char msg[3072];
        if ((bad = model_lora_new(m, &ls, o->seed, msg, sizeof msg))) snprintf(err, sizeof err, "%s: %s", who, msg);
    }
    if (bad) {
        model_free(m); /* freed before the exit: a refusal is not a leak */
        ppa_die(2, "%s", err);
    }
    if (trainable) model_gradient_checkpointing(m, o->gradient_checkpointing), model_low_memory(m, o->low_memory);
    return m;
}

Model *prep_model(const TrainOptions *o, const char *dir, int trainable) {
    return load_checked(o, dir, trainable, o->cmd == CMD_REWARD, 1, NULL);
}

Model *prep_frozen(const TrainOptions *o, const char *dir) { return load_checked(o, dir, 0, 0, 0, NULL); }

Model *prep_policy(const TrainOptions *o) {
    if (!o->resume) return prep_model(o, o->model, 1);
    if (adapter_is_folder(o->resume)) /* a LoRA run's checkpoint: the adapter on the base */
        return load_checked(o, o->model, 1, o->cmd == CMD_REWARD, 1, o->resume);
    return prep_model(o, o->resume, 1);
}

Model *prep_judge_model(const TrainOptions *o, const char *dir, int reward) {
    return load_checked(o, dir, 0, reward, 1, NULL);
}

const char *prep_kernels(const Model *m) {
    static char line[1536];
    int at;
    if (model_precision(m) == MODEL_BF16)
        at = snprintf(line, sizeof line, "bf16 products: %s; float32 attention: %s", gemm_bf16_backend(), gemm_backend());
    else
        at = snprintf(line, sizeof line, "fp32 products: %s; forward rows: %s", gemm_backend(), gemm_rows_kernel());
    const LoraSpec *s = model_lora(m);
    if (s && at > 0 && (size_t)at < sizeof line) {
        char targets[96];
        lora_targets_text(s->targets, targets, sizeof targets);
        snprintf(line + at, sizeof line - (size_t)at, "; LoRA r %d, alpha %g%s, dropout %g on %s: %zu parameters train, "
                 "the base's %zu are frozen", s->r, s->alpha, s->rslora ? " (rslora)" : "", s->dropout, targets,
                 model_n_params(m), model_n_base_params(m));
    }
    return line;
}

DataOptions prep_data_options(Prepared *p, const PrepArgs *a, const char *who) {
    char err[4096];
    memset(p, 0, sizeof *p);
    p->tok = tokenizer_load_folder(a->model_dir, err, sizeof err);
    if (!p->tok && err[0]) ppa_die(2, "%s: %s", who, err);
    if (!(p->tpl = chat_template_open(a->template_name, a->model_dir, p->tok, err, sizeof err))) ppa_die(2, "%s: %s", who, err);
    snprintf(p->template_name, sizeof p->template_name, "%s", chat_template_name(p->tpl));
    return (DataOptions){p->tok, p->tpl, a->eos_id, a->vocab_size, a->skip_invalid, 0, a->special_in_text};
}

void prep_read(Prepared *p, const PrepArgs *a, const char *who) {
    char err[4096];
    DataOptions o = prep_data_options(p, a, who);
    int ok;
    if (file_check_regular(a->data, err, sizeof err)) /* hashed, then read: a pipe would be empty the second time */
        ppa_die(2, "%s: --data %s", who, err);
    p->data_hash = hash64_file(a->data, &ok);
    if (!ok) ppa_die(2, "%s: cannot read %s", who, a->data);
    if (data_read(&p->data, a->data, &o, err, sizeof err)) ppa_die(2, "%s", err);
    if (p->data.skipped && dist_rank() == 0) fprintf(stderr, "ppa %s: skipped %ld invalid lines of %s (--skip-invalid)\n", who, p->data.skipped, a->data);
}

void prep_load(Prepared *p, const PrepArgs *a, const char *who) {
    char err[4096];
    prep_read(p, a, who);
    if (data_prepare(&p->data, a->max_length, a->max_prompt_length, &p->stats, err, sizeof err)) {
        const char *use = !strncmp(who, "eval", 4) ? "evaluate" : !strcmp(who, "score") ? "score" : "train on";
        ppa_die(2, "%s: %s %s: nothing to %s", who, a->data, err, use);
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "ppa %s: ", who);
    if (dist_rank() == 0) prep_stats_print(stderr, &p->stats, prefix); /* once per job */
}

void prep_check_labels(const Prepared *p, PpaObjective obj, const char *path, const char *who) {
    for (int r = 0; r < p->data.n; r++) {
        const DataRow *x = &p->data.rows[r];
        for (int k = 0; k < x->n_resp; k++) {
            PpaStatus st = isnan(x->scores[k]) ? PPA_OK : ppa_label_check(obj, x->scores[k]);
            if (st != PPA_OK)
                ppa_die(2, "%s: %s:%ld: response %d: label %g: %s (objective %s)", who, path, x->line, k + 1,
                        x->scores[k], ppa_status_string(st), ppa_objective_name(obj));
        }
    }
}

void prep_free(Prepared *p) {
    data_free(&p->data);
    chat_template_free(p->tpl);
    tokenizer_free(p->tok);
}

RefKey prep_refkey(const Prepared *p, Model *ref, const PrepArgs *a) {
    RefKey k = {refkey_weights(ref), refkey_tokens(p->data.rows, p->data.n), p->data_hash, "", a->max_length,
                a->max_prompt_length};
    snprintf(k.template_name, sizeof k.template_name, "%s", p->template_name);
    return k;
}

static void progress(int done, int total, void *ctx) {
    double *t0 = ctx;
    if (isatty(2))
        fprintf(stderr, "\rppa: reference log-probs: %d/%d rows (%.0f s)%s", done, total, timer_now() - *t0,
                done == total ? "\n" : "");
}

typedef struct {
    const char *text;
    size_t n;
} Bytes;

static int write_bytes(FILE *f, const void *ctx) {
    const Bytes *b = ctx;
    return fwrite(b->text, 1, b->n, f) == b->n ? 0 : -1;
}

void prep_write_gathered(const char *mine, size_t n, const char *out, const char *who) {
    char *all, err[1024];
    size_t total;
    dist_gather_bytes(mine, n, &all, &total);
    Bytes b = {all, total};
    if (dist_rank() == 0 && out && atomic_write(out, write_bytes, &b, err, sizeof err)) ppa_die(1, "%s: %s", who, err);
    if (dist_rank() == 0 && !out && (write_bytes(stdout, &b) || fflush(stdout)))
        ppa_die(1, "%s: error writing the output", who);
    free(all);
}

void prep_reference_with(RefCache *c, const Prepared *p, const PrepArgs *a, Model *ref, const char *path, int verbose) {
    char err[4096], why[512];
    RefKey want = prep_refkey(p, ref, a);
    struct stat sb;
    int have = path && stat(path, &sb) == 0;
    dist_bcast(&have, sizeof have, 0); /* rank 0 decides: every rank takes the same path (the folder is shared) */
    if (have) {
        if (refcache_load(c, path, err, sizeof err)) ppa_die(2, "%s", err);
        if (refcache_check(c, &want, p->data.rows, p->data.n, why, sizeof why))
            ppa_die(2, "%s does not belong to this run: %s. Delete it, or give another --ref-cache", path, why);
        if (verbose && dist_rank() == 0) fprintf(stderr, "ppa: reference log-probs from %s\n", path);
        return;
    }
    double t0 = timer_now();
    int lead = dist_rank() == 0;
    refcache_compute_ranks(c, ref, p->data.rows, p->data.n, 4096, 0, lead ? progress : NULL, &t0);
    c->key = want;
    if (lead) fprintf(stderr, "ppa: reference log-probs of %d rows computed in %.1f s\n", p->data.n, timer_now() - t0);
    if (lead && path && refcache_save(c, path, err, sizeof err)) ppa_die(1, "%s", err);
    dist_barrier(); /* the cache is on disk before any rank goes on */
}

void prep_reference(RefCache *c, const Prepared *p, const PrepArgs *a, const char *ref_dir, const char *path, int verbose) {
    char err[4096];
    /* frozen: a bf16 reference keeps bf16 weights only, and computes what a bf16 policy of the same weights does */
    Model *ref = model_load_as(ref_dir, a->bf16 ? MODEL_BF16 : MODEL_FP32, 1, err, sizeof err);
    if (!ref) ppa_die(2, "reference: %s", err);
    prep_need_head(ref, ref_dir, 0, "reference");
    prep_reference_with(c, p, a, ref, path, verbose);
    model_free(ref);
}

/* the same folder, however it is written */
static int same_folder(const char *a, const char *b) {
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void prep_policy_reference(RefCache *c, const Prepared *p, const PrepArgs *a, Model *policy, const char *base,
                           const char *ref_dir, const char *path, int verbose) {
    if (policy && model_lora(policy) && (!ref_dir || same_folder(ref_dir, base))) {
        model_lora_enable(policy, 0); /* the base: no second copy of it (TRL's reference of a PEFT model) */
        prep_reference_with(c, p, a, policy, path, verbose);
        model_lora_enable(policy, 1);
        return;
    }
    prep_reference(c, p, a, ref_dir ? ref_dir : base, path, verbose);
}
