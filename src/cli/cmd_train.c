/* cmd_train.c: `ppa train` (listwise preference alignment end to end),
 * `ppa reward` (the same loop training a reward model on its own scores) and
 * `ppa score` (the reference cache alone). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/load.h"
#include "cli/model_card.h"
#include "cli/plan_check.h"
#include "cli/reference.h"
#include "cli/report.h"
#include "cli/setup.h"
#include "cli/run_folder.h"
#include "core/common.h"
#include "core/timer.h"
#include "core/hash.h"
#include "dist/dist.h"
#include "io/atomic.h"
#include "io/file.h"
#include "kernels/gemm.h"
#include "eval/metrics.h"
#include "hf/carry.h"
#include "options/options.h"
#include "train/trainer.h"


static const char *WHO = "train"; /* train_main's command, for messages */
static int ARGC;                  /* its arguments, for the model card's command line */
static char **ARGV;

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* "%016llx" of a folder's weights (hash64_folder); dies when they cannot be read */
static void add_folder_hash(cJSON *j, const char *key, const char *dir, const char *flag) {
    int ok;
    uint64_t h = hash64_folder(dir, &ok);
    if (!ok) ppa_die(2, "%s: %s %s: cannot read its weights to record them in the run's checkpoints", WHO, flag, dir);
    char t[32];
    snprintf(t, sizeof t, "%016llx", (unsigned long long)h);
    cJSON_AddStringToObject(j, key, t);
}

/* The options that must not change when a run is resumed, as one JSON object, with the run's identity: the weights
 * it started from (--model, --adapter) and its reference (the hash its cache is keyed by; NULL: none). */
/* a hash of a reference's values (what a cache file holds), "none" without one */
static void add_values_hash(cJSON *j, const char *name, const RefCache *c) {
    char h[32] = "none";
    if (c && c->offset) {
        size_t n = (size_t)c->offset[c->n_rows];
        uint64_t v = hash64(c->offset, sizeof(int) * (size_t)(c->n_rows + 1), 0);
        v = hash64_more(v, c->logp, sizeof(double) * n), v = hash64_more(v, c->n_scored, sizeof(int) * n);
        snprintf(h, sizeof h, "%016llx", (unsigned long long)v);
    }
    cJSON_AddStringToObject(j, name, h);
}

static char *fingerprint(const TrainOptions *o, const Prepared *p, const RefCache *ref, const RefCache *eref) {
    cJSON *j = cJSON_CreateObject();
    char h[32];
    snprintf(h, sizeof h, "%016llx", (unsigned long long)p->data_hash);
    cJSON_AddStringToObject(j, "data_hash", h);
    add_folder_hash(j, "model", o->model, "--model");
    if (o->adapter) add_folder_hash(j, "adapter", o->adapter, "--adapter");
    snprintf(h, sizeof h, "%016llx", ref ? (unsigned long long)ref->key.weights : 0ULL);
    cJSON_AddStringToObject(j, "reference", ref ? h : "none");
    add_values_hash(j, "reference_values", ref);   /* a resume reads the caches back: the same values, or refused */
    add_values_hash(j, "eval_reference_values", eref);
    cJSON_AddStringToObject(j, "objective", ppa_objective_name(o->objective));
    const PpaLossOptions *l = &o->loss;
    double nums[] = {o->beta, l->tau, l->alpha, l->k, l->gain, l->discount, l->sinkhorn, l->sinkhorn_iters, l->sinkhorn_tol,
                     l->ties, l->pairs, l->sigma, l->label_smoothing, l->gamma, l->normalize, o->list_size,
                     o->reference_free, o->epochs, (double)o->max_steps, o->lr, o->batch_size, o->micro_batch,
                     o->warmup_ratio, o->schedule, o->weight_decay, o->clip_grad, (double)o->seed, o->max_length,
                     o->max_prompt_length, o->bf16, o->reward_index};
    const char *names[] = {"beta", "tau", "alpha", "k", "gain", "discount", "sinkhorn", "sinkhorn_iters", "sinkhorn_tol",
                           "ties", "pairs", "sigma", "label_smoothing", "gamma", "normalize", "list_size",
                           "reference_free", "epochs", "max_steps", "lr", "batch_size", "micro_batch", "warmup_ratio",
                           "schedule", "weight_decay", "clip_grad", "seed", "max_length", "max_prompt_length",
                           "bf16", "reward_index"}; /* other products, other numbers; checkpointing changes none */
    for (size_t i = 0; i < PPA_ARRAY_LEN(names); i++) cJSON_AddNumberToObject(j, names[i], nums[i]);
    cJSON_AddStringToObject(j, "template", p->template_name);
    LoraSpec ls;
    char lora[256] = "none", targets[96];
    if (load_lora_spec(o, &ls)) { /* a new adapter's shape, or --adapter's */
        lora_targets_text(ls.targets, targets, sizeof targets);
        snprintf(lora, sizeof lora, "r %d, alpha %.17g, dropout %.17g, rslora %d, %s", ls.r, ls.alpha, ls.dropout,
                 ls.rslora, targets);
    }
    cJSON_AddStringToObject(j, "lora", lora);
    cJSON_AddStringToObject(j, "command", options_command_name(o->cmd)); /* a policy's checkpoint is no reward model's */
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* fresh: which reference values were computed by this run rather than read from a cache (1: the training one, 2:
 * the held-out one): those are not compared, since another device or kernel computes other roundings; a cache read
 * back must hold the values the checkpoint's run had */
static void check_resume_options(const char *dir, const char *saved, const char *now, int fresh) {
    cJSON *a = cJSON_Parse(saved), *b = cJSON_Parse(now);
    char msg[1024] = "";
    for (cJSON *x = b ? b->child : NULL; x && !msg[0]; x = x->next) {
        if (((fresh & 1) && !strcmp(x->string, "reference_values")) ||
            ((fresh & 2) && !strcmp(x->string, "eval_reference_values")))
            continue;
        cJSON *y = cJSON_GetObjectItemCaseSensitive(a, x->string);
        if (y && cJSON_Compare(x, y, 1)) continue;
        static const char *const WHAT[][2] = {{"model", "started from other weights than this --model"},
                                              {"adapter", "started from another --adapter"},
                                              {"reference", "has another reference model (--ref, or --model as the reference)"},
                                              {"reference_values", "had other reference log-probs (its reference.cache, or "
                                               "--ref-cache, was replaced or changed)"},
                                              {"eval_reference_values", "had other held-out reference log-probs (its "
                                               "reference.eval.cache was replaced or changed)"},
                                              {"data_hash", "read another --data file"}};
        const char *what = NULL;
        for (size_t i = 0; i < PPA_ARRAY_LEN(WHAT); i++)
            if (!strcmp(x->string, WHAT[i][0])) what = WHAT[i][1];
        if (what && !y && strcmp(x->string, "data_hash")) { /* written before ppa recorded it: nothing to compare */
            fprintf(stderr, "ppa %s: note: --resume %s: the checkpoint does not record its %s; it is not checked\n", WHO,
                    dir, x->string);
            continue;
        }
        char *vx = cJSON_PrintUnformatted(x), *vy = y ? cJSON_PrintUnformatted(y) : strdup("(absent)");
        if (what)
            snprintf(msg, sizeof msg, "--resume %s: the checkpoint's run %s (%s %s, this run %s); resume with the "
                     "files the run started with", dir, what, x->string, vy, vx);
        else
            snprintf(msg, sizeof msg, "--resume %s: the checkpoint was made with %s = %s, this run has %s; an exact "
                     "resume needs the same options and data", dir, x->string, vy, vx);
        free(vx), free(vy);
    }
    cJSON_Delete(a), cJSON_Delete(b);
    if (msg[0]) ppa_die(2, "%s: %s", WHO, msg);
}

/* the state's step, epoch and cursor must be one position of this run: a hand-edited or foreign state is refused */
static void check_resume_position(const char *dir, const TrainState *st, const TrainPlan *pl, long lists) {
    long per_epoch = (lists + pl->batch_size - 1) / pl->batch_size; /* steps; an epoch's last one may be smaller */
    long want = st->epoch * per_epoch + (st->cursor + pl->batch_size - 1) / pl->batch_size;
    if (st->step > pl->total_steps || st->cursor % pl->batch_size || st->step != want)
        ppa_die(2, "%s: --resume %s: step %ld, epoch %ld and list %ld are not a position of this run (%ld lists, %ld "
                   "per step, %ld steps): the state was edited or belongs to another run", WHO, dir, st->step, st->epoch,
                st->cursor, lists, pl->batch_size, pl->total_steps);
}

/* a checkpoint the resumed run would write again is refused now, not at its step */
static void check_resume_saves(const char *out, const TrainState *st, const TrainPlan *pl) {
    if (pl->save_every <= 0) return;
    for (long step = (st->step / pl->save_every + 1) * pl->save_every; step < pl->total_steps; step += pl->save_every) {
        char name[64];
        snprintf(name, sizeof name, "checkpoint-%ld", step);
        char *path = ppa_path_join(out, name);
        if (exists(path))
            ppa_die(2, "%s: --out %s already holds %s, which this run resumed at step %ld would write again: resume "
                       "from the latest checkpoint, or move the later ones away", WHO, out, name, st->step);
        free(path);
    }
}

/* The log, opened to append (a fresh run: created empty). A resumed run keeps the lines of steps <= step, whatever
 * their length, written to a new file renamed over the log (io/atomic.h): a kill at any moment leaves the old log or
 * the kept one, never a truncated one. A link in the log's place is refused, never followed. */
static FILE *open_log(const char *path, long step) {
    char err[PATH_MAX + 256];
    struct stat st;
    if (!lstat(path, &st) && S_ISLNK(st.st_mode))
        ppa_die(2, "%s: %s: is a symbolic link: ppa never writes through a link; remove it", WHO, path);
    if (step > 0 && !lstat(path, &st)) {
        FILE *in = file_open_regular(path, err, sizeof err);
        if (!in) ppa_die(2, "%s: cannot read the log to resume: %s", WHO, err);
        char *kept = NULL, *line = NULL;
        size_t n = 0, cap = 0;
        FILE *mem = open_memstream(&kept, &n);
        if (!mem) ppa_die(1, "%s: out of memory", WHO);
        for (ssize_t len; (len = getline(&line, &cap, in)) > 0;) {
            long s;
            if (sscanf(line, "{\"step\": %ld", &s) == 1 && s <= step) fwrite(line, 1, (size_t)len, mem);
        }
        int bad = ferror(in);
        fclose(in), free(line);
        if (bad) ppa_die(1, "%s: %s: read error", WHO, path);
        if (fclose(mem)) ppa_die(1, "%s: out of memory", WHO);
        if (atomic_write_bytes(path, kept, n, err, sizeof err)) ppa_die(1, "%s: cannot rewrite the log: %s", WHO, err);
        free(kept);
    }
    FILE *f = file_create(path, step > 0, err, sizeof err);
    if (!f) ppa_die(1, "%s: cannot write the log: %s", WHO, err);
    return f;
}

/* A reference cache in --out that this run did not name is used only by a resume, whose checkpoint records a hash
 * of its values (the fingerprint's reference_values: another cache is refused there); in a fresh run it is someone
 * else's file, refused unless the user names it (then checked against its key and checksum). */
static void own_cache_only(const TrainOptions *o, const char *path, const char *option) {
    struct stat st;
    if (o->resume || lstat(path, &st)) return;
    if (option)
        ppa_die(2, "%s: %s is in --out, but this run did not write it (it is not resuming): delete it, or use it with "
                "%s %s (then checked against this run's reference, data and settings)", WHO, path, option, path);
    ppa_die(2, "%s: %s is in --out, but this run did not write it (it is not resuming): delete it", WHO, path);
}

static void plan_of(TrainPlan *pl, const TrainOptions *o, long lists) {
    memset(pl, 0, sizeof *pl);
    int reward = o->cmd == CMD_REWARD;
    pl->score = (ScoreSpec){o->objective, o->loss, reward ? 1.0 : o->beta, o->reference_free || reward, reward,
                            o->reward_index, 0};
    plan_steps(o, lists, o->batch_size, &pl->total_steps, &pl->warmup_steps);
    pl->batch_size = o->batch_size, pl->micro_batch = o->micro_batch;
    pl->lr = o->lr, pl->weight_decay = o->weight_decay, pl->clip_grad = o->clip_grad, pl->schedule = o->schedule;
    pl->save_every = o->save_every, pl->log_lambdas = o->log_lambdas, pl->out = o->out;
    pl->progress = 1, pl->who = options_command_name(o->cmd);
}

/* held-out lists: rows, their reference log-probs, and how to score them */
typedef struct {
    Prepared p;
    RefCache ref;
    double beta;
    PpaLossOptions lo;
    int reward, index; /* a reward model: s = its output index, no reference */
    const char *who;
    const char *log_path;
    long batch_tokens; /* per forward batch */
} EvalSet;

/* one JSON line {"step": S, "eval": {...}} in the log, and a summary on stderr */
static void eval_hook(Model *policy, long step, FILE *log, void *ctx) {
    EvalSet *e = ctx;
    RefCache pol;
    refcache_compute_at(&pol, policy, e->p.data.rows, e->p.data.n, e->batch_tokens, e->index, NULL);
    EvalSums sums = {0};
    double *zero = xcalloc((size_t)pol.offset[e->p.data.n] + 1, sizeof(double)); /* a reward model's "reference" */
    for (int r = 0; r < e->p.data.n; r++)
        eval_add_list(&sums, &e->lo, e->beta, e->p.data.rows[r].n_resp, pol.logp + pol.offset[r],
                      e->reward ? zero : e->ref.logp + e->ref.offset[r], e->p.data.rows[r].scores);
    free(zero);
    refcache_free(&pol);
    if (log) {
        fprintf(log, "{\"step\": %ld, \"eval\": ", step);
        eval_print_json(log, &sums);
        fputs("}\n", log);
        if (fflush(log) || ferror(log)) ppa_die(1, "%s: step %ld: cannot write the log %s: %s", e->who, step, e->log_path,
                                                strerror(errno));
    }
    fprintf(stderr, "ppa %s: held-out at step %ld: ranking accuracy %.4f, ndcg %.4f, rank flips +%ld -%ld (%ld lists)\n",
            e->who, step, sums.lists_with_pairs ? sums.acc / (double)sums.lists_with_pairs : NAN,
            sums.lists ? sums.ndcg / (double)sums.lists : NAN, sums.gained, sums.lost, sums.lists);
}

/* "; N ranks" under MPI */
static const char *ranks_text(void) {
    static char t[48];
    if (dist_size() > 1) snprintf(t, sizeof t, "; %d ranks (MPI)", dist_size());
    return t;
}

static int write_options(FILE *f, const void *ctx) {
    train_options_print_json(ctx, f);
    return ferror(f) ? -1 : 0;
}

static int train_main(TrainOptions *o) {
    char err[4096];
    WHO = options_command_name(o->cmd);
    int lead = dist_rank() == 0; /* the one rank that writes files and reports (src/dist) */
    /* the data and the plan first: a run that would learn nothing is refused before the out folder, the models and
     * the reference (the data is read with the policy's config.json, as load_policy will load it) */
    ModelConfig mc;
    if (model_config_load(&mc, load_policy_dir(o), err, sizeof err)) ppa_die(2, "%s: %s", WHO, err);
    PrepArgs pa = dataset_args_config(o, &mc);
    Prepared p;
    const char *who = WHO;
    int reward = o->cmd == CMD_REWARD;
    dataset_load(&p, &pa, who);
    dataset_check_labels(&p, o->objective, o->data, who);
    TrainState st = {0};
    st.seed = o->seed;
    if (o->resume && state_read(o->resume, &st, err, sizeof err)) ppa_die(2, "%s: %s", WHO, err);
    TrainPlan plan;
    plan_of(&plan, o, p.data.n);
    if (o->resume) check_resume_position(o->resume, &st, &plan, p.data.n);
    plan_check(o, &(RunPlan){"list", p.data.n, plan.batch_size, plan.total_steps, plan.warmup_steps, st.step, o->lr,
                             o->schedule});
    /* the files the saves carry from --model, checked now: a run never ends in a refused save */
    if (carry_check(o->model, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
    TrainTally tally = {0};
    plan.tally = &tally;
    if (lead) run_folder_open(o->out, o->resume != NULL, WHO);
    if (lead && state_clean_partials(o->out, err, sizeof err)) ppa_die(1, "%s: %s", WHO, err); /* a killed save's leftovers */
    char *opath = ppa_path_join(o->out, "train_options.json"); /* the resolved options, and where each came from */
    if (lead && atomic_write(opath, write_options, o, err, sizeof err)) ppa_die(1, "%s: %s", WHO, err);
    free(opath);
    if (o->verbose && lead) train_options_print_json(o, stderr);
    Model *policy = load_policy(o);
    RefCache ref = {0};
    int need_ref = !reward && !o->reference_free && o->objective != PPA_SIMPO;
    char *cache = o->ref_cache ? strdup(o->ref_cache) : ppa_path_join(o->out, "reference.cache");
    if (need_ref && !o->ref_cache) own_cache_only(o, cache, "--ref-cache");
    struct stat cst;
    int fresh_ref = need_ref && lstat(cache, &cst) ? 1 : 0; /* no cache file: computed now (reference_with) */
    if (need_ref) reference_of_policy(&ref, &p, &pa, policy, o->model, o->ref, cache, o->verbose);
    EvalSet ev = {0};
    if (o->eval_data) { /* the reference of held-out lists is needed for rank flips even without a training reference */
        PrepArgs ea = pa;
        ea.data = o->eval_data;
        dataset_load(&ev.p, &ea, "eval data");
        dataset_check_labels(&ev.p, o->objective, o->eval_data, "eval data");
        char *ecache = ppa_path_join(o->out, "reference.eval.cache");
        if (!reward) own_cache_only(o, ecache, NULL);
        if (!reward && lstat(ecache, &cst)) fresh_ref |= 2;
        if (!reward) reference_of_policy(&ev.ref, &ev.p, &ea, policy, o->model, o->ref, ecache, o->verbose);
        free(ecache);
        ev.beta = reward ? 1.0 : o->beta, ev.lo = o->loss, ev.reward = reward, ev.index = o->reward_index, ev.who = who;
        ev.batch_tokens = setup_batch_tokens(o);
        if (lead) plan.eval = eval_hook, plan.eval_ctx = &ev, plan.eval_every = o->eval_every;
    }
    char *fp = fingerprint(o, &p, need_ref ? &ref : NULL, o->eval_data && !reward ? &ev.ref : NULL);
    plan.options_json = fp;
    plan.tokenizer_dir = o->model; /* its tokenizer and template files, whichever it has */
    AdamW opt;
    size_t zlo = 0, zhi = model_n_params(policy);
    plan.zero = dist_size() > 1 ? o->zero : 0;
    plan.score.vote = step_reduce_in_backward(policy, 1); /* the ranks' backwards then reduce: in step */
    if (plan.zero == 2 && !model_train_engine(policy)) /* --device auto found no GPU */
        ppa_die(2, "%s: --zero 2 shards the GPU engine's gradients, and this run trains on the CPU, which keeps them "
                   "whole: use --zero 1", WHO);
    if (plan.zero) trainer_zero_share(zhi, &zlo, &zhi);
    adamw_init(&opt, o->resume ? model_n_params(policy) : zhi - zlo);
    if (o->resume) {
        if (state_read_moments(o->resume, &opt, err, sizeof err)) ppa_die(2, "%s: %s", WHO, err);
        if (plan.zero) { /* the checkpoint holds all of the state: keep this rank's share */
            memmove(opt.m, opt.m + zlo, sizeof(float) * (zhi - zlo)), memmove(opt.v, opt.v + zlo, sizeof(float) * (zhi - zlo));
            opt.n = zhi - zlo;
            opt.m = xrealloc(opt.m, sizeof(float) * (opt.n ? opt.n : 1)), opt.v = xrealloc(opt.v, sizeof(float) * (opt.n ? opt.n : 1));
        }
        check_resume_options(o->resume, st.options, fp, fresh_ref);
        check_resume_saves(o->out, &st, &plan);
        char kern[48];
        model_kernel_name(policy, kern, sizeof kern);
        if (lead && st.ranks != dist_size())
            fprintf(stderr, "ppa %s: note: the checkpoint was written by %d rank%s, this run has %d: the gradients are "
                            "summed in another order, so results match to float rounding, not bit for bit\n", WHO,
                    st.ranks, st.ranks == 1 ? "" : "s", dist_size());
        if (lead && (strcmp(st.kernel, kern) || st.threads != gemm_threads()))
            fprintf(stderr, "ppa %s: note: the checkpoint was written with %s kernels on %d threads, this run uses %s "
                            "on %d: results may differ in the last bits\n", WHO, st.kernel, st.threads, kern, gemm_threads());
    }
    char *logp = o->log ? strdup(o->log) : ppa_path_join(o->out, "train_log.jsonl");
    Report *rep = NULL; /* the log's lines also as TensorBoard scalars (--report-to) and the card's final metrics */
    if (lead) {
        FILE *lines = open_log(logp, st.step);
        rep = report_open(o, WHO, st.step > 0 ? logp : NULL);
        plan.log = report_tee(rep, lines, 1);
    }
    plan.log_path = ev.log_path = logp;
    plan.progress = lead;
    TrainData *td = train_data_new(&p.data, o->list_size, o->seed);
    char scored[64];
    if (reward) snprintf(scored, sizeof scored, "s = reward output %d", o->reward_index);
    else snprintf(scored, sizeof scored, "beta %g", o->beta);
    if (lead)
        fprintf(stderr, "ppa %s: %d lists, %s, %s, list size %d; %ld steps of %ld lists (micro-batch %d), lr %g, "
                        "warm-up %ld; %s%s\n", who, p.data.n, ppa_objective_name(o->objective), scored, o->list_size,
                plan.total_steps, plan.batch_size, plan.micro_batch, o->lr, plan.warmup_steps, load_kernels(policy),
                ranks_text());
    if (lead && dist_size() > 1)
        fprintf(stderr, "ppa %s: AdamW state %.1f MB per rank (%s)\n", who, 8.0 * (double)(zhi - zlo) / 1e6,
                plan.zero == 2 ? "ZeRO-2: this rank's share, and of the gradients too"
                : plan.zero ? "ZeRO-1: this rank's share" : "every rank all of it; --zero 1 shares it");
    if (st.step && lead) fprintf(stderr, "ppa %s: resuming at step %ld (epoch %ld, list %ld)\n", who, st.step, st.epoch, st.cursor);
    /* the run failed while running (the device, a collective, writing a checkpoint or the log, a model that
     * diverged), or the weights as loaded give non-finite numbers */
    double t_run = timer_now();
    int rc = train_run(policy, td, need_ref ? &ref : NULL, &opt, &st, &plan, err, sizeof err);
    t_run = timer_now() - t_run;
    if (rc) ppa_die(rc == -2 ? 2 : 1, "%s: %s", who, err);
    char *tmp = ppa_path_join(o->out, ".final.partial");
    if (lead) {
        if (exists(tmp)) remove_tree(tmp);
        if ((model_lora(policy) ? lora_save(policy, tmp, plan.tokenizer_dir, err, sizeof err)
                               : model_save(policy, tmp, o->save_dtype == SAVE_BF16, plan.tokenizer_dir, err, sizeof err))) ppa_die(1, "%s", err);
        ModelCard card = {o, ARGC, ARGV, &p.data, o->eval_data ? &ev.p.data : NULL, report_last(rep), plan.total_steps,
                          load_kernels(policy)};
        if (model_card_write(tmp, &card, err, sizeof err)) ppa_die(1, "%s: %s", who, err);
        report_finish(rep, plan.log, tmp, t_run); /* the log's last line and summary.json */
        if (fclose(plan.log)) ppa_die(1, "%s: cannot write the log %s: %s", who, logp, strerror(errno));
        run_folder_publish(tmp, o->out, WHO);
        report_close(rep);
        char done[512];
        train_tally_text(&tally, done, sizeof done);
        fprintf(stderr, "ppa %s: wrote %s: %s; log %s\n", who, o->out, done, logp);
        if (!tally.changed)
            fprintf(stderr, "ppa %s: warning: no step of this run changed the weights: %s holds the weights it started "
                            "from (%s %s)\n", who, o->out, o->resume ? "--resume" : "--model", o->resume ? o->resume : o->model);
    }
    free(tmp), free(logp), free(cache), free(fp);
    train_data_free(td);
    if (o->eval_data) refcache_free(&ev.ref), dataset_free(&ev.p);
    state_free(&st);
    adamw_free(&opt);
    refcache_free(&ref);
    dataset_free(&p);
    model_free(policy);
    return 0;
}

int cmd_train(int argc, char **argv) {
    TrainOptions o;
    ARGC = argc, ARGV = argv;
    setup_options(CMD_TRAIN, NULL, argc, argv, &o);
    int rc = train_main(&o);
    train_options_free(&o);
    return rc;
}

static const char REWARD_USAGE[] =
    "usage: ppa reward --model DIR --data LISTS.jsonl --out RM_DIR [--objective NAME] [options]\n"
    "\n"
    "Trains a reward model on scored lists: the score of response k is the reward model's output\n"
    "r(x, y_k) (--reward-index of its head, read at the last token; no beta, no reference), under any\n"
    "objective of the library: Bradley-Terry over all pairs (dpo_all_pairs, -log sigmoid(r_w - r_l),\n"
    "TRL's RewardTrainer loss) by default, or a listwise one such as neural_ndcg. --model is a reward\n"
    "model folder, or a causal LM whose lm_head is dropped and given a one-output head score.weight drawn\n"
    "from N(0, 0.02^2) with --seed. The output is a <Type>ForSequenceClassification folder that\n"
    "transformers loads. The loop, logging, checkpoints and exact resume are `ppa train`'s; --eval-data\n"
    "logs the held-out ranking accuracy of the rewards.\n\n";

int cmd_reward(int argc, char **argv) {
    TrainOptions o;
    ARGC = argc, ARGV = argv;
    setup_options(CMD_REWARD, REWARD_USAGE, argc, argv, &o);
    int rc = train_main(&o);
    train_options_free(&o);
    return rc;
}

/* ---- ppa score ---- */

static const char SCORE_USAGE[] =
    "usage: ppa score --model REF --data FILE.jsonl --out CACHE [options]\n"
    "\n"
    "Computes the reference log-probs of every response once and writes them to CACHE, keyed by the\n"
    "reference weights, the token ids, the data file, the template and the truncation settings;\n"
    "`ppa train --ref-cache CACHE` (same data and settings) uses it and refuses one that does not match.\n\n";

int cmd_score(int argc, char **argv) {
    TrainOptions o;
    setup_options(CMD_SCORE, SCORE_USAGE, argc, argv, &o);
    if (exists(o.out)) ppa_die(2, "score: %s exists; delete it first (a cache is never overwritten)", o.out);
    Model *m = load_model(&o, o.model, 0); /* with --adapter, the adapted model */
    PrepArgs pa = dataset_args(&o, m);
    Prepared p;
    dataset_load(&p, &pa, "score");
    RefCache rc;
    reference_with(&rc, &p, &pa, m, o.out, 1);
    model_free(m);
    fprintf(stderr, "ppa score: wrote %s (%d rows, %d responses)\n", o.out, rc.n_rows, rc.offset[rc.n_rows]);
    refcache_free(&rc);
    dataset_free(&p);
    train_options_free(&o);
    return 0;
}
