/* load.c: the commands' models loaded and checked (load.h). */
#include "cli/load.h"

#include "device/cuda.h"
#include "dist/dist.h"
#include "gpu/gpu_model.h"
#include "gpu/gpu_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/file.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "train/trainer.h"

/* ZeRO-2 without NCCL: a layer's gradients summed through the host (every rank gets the sum; its owner keeps it) */
static int host_reduce(void *ctx, float *host, size_t n, int root, char *err, size_t errlen) {
    (void)ctx, (void)root, (void)err, (void)errlen;
    dist_sum_f32(host, n);
    return 0;
}

/* Several processes training: NCCL's communicator when every rank has a GPU of its own and NCCL loads on every rank,
 * else the gradients go through the host (MPI). Every rank checks before any joins (joining is collective: a rank
 * that fails in it leaves the others waiting), the ranks agree on all or none, and rank 0 says which and why. A GPU
 * is known by its identity (its UUID), not its ordinal: with one GPU visible to each process every rank sees GPU 0. */
static void join_nccl(const TrainOptions *o, GpuTrain *t) {
    if (dist_size() < 2) return;
    const PcApi *pc = device_cuda_api();
    enum { ID = 64, WHY = 512 };
    int R = dist_size(), me = dist_rank();
    char uuid[ID] = {0}, why[WHY] = {0}, msg[WHY] = "", *uuids = NULL;
    size_t total = 0;
    if (pc->pc_device_uuid(uuid, sizeof uuid)) snprintf(uuid, sizeof uuid, "unknown (rank %d)", me);
    dist_gather_bytes(uuid, ID, &uuids, &total);
    for (int r = 0; r < R && !why[0]; r++)
        if (r != me && !strncmp(uuids + (size_t)r * ID, uuid, ID))
            snprintf(why, sizeof why, "ranks %d and %d share one GPU (%s)", r < me ? r : me, r < me ? me : r, uuid);
    free(uuids);
    if (!why[0] && pc->pc_nccl_load()) snprintf(why, sizeof why, "rank %d: %s", me, pc->pc_error());
    int no = dist_first_text(why, WHY, msg, sizeof msg) >= 0; /* every rank able, or the first that is not */
    char id[PC_NCCL_ID_BYTES + 1] = {0};
    if (!no && me == 0 && pc->pc_nccl_id(id)) snprintf(msg, sizeof msg, "rank 0: %s", pc->pc_error());
    id[PC_NCCL_ID_BYTES] = !no && !msg[0]; /* rank 0's id, and whether it has one */
    dist_bcast(id, sizeof id, 0);
    int joined = 0;
    if (id[PC_NCCL_ID_BYTES]) {
        char e[WHY] = "";
        why[0] = 0;
        if (gpu_train_nccl_join(t, id, me, R, e, sizeof e)) snprintf(why, sizeof why, "rank %d: %.*s", me, WHY - 32, e);
        else pc->pc_nccl_set_timeout(dist_timeout()); /* NCCL's waits bounded as the host's collectives are */
        joined = dist_first_text(why, WHY, msg, sizeof msg) < 0; /* every rank joined, or the first that did not */
    }
    if (!joined) gpu_train_nccl_leave(t);
    if (!joined && o->zero == 2) gpu_train_host_reduce(t, host_reduce, NULL);
    if (me == 0)
        fprintf(stderr, "ppa %s: the %d ranks' gradients are summed %s%s%s%s\n", options_command_name(o->cmd), R,
                o->zero == 2 ? "layer by layer onto the ranks that own them (ZeRO-2), " : "",
                joined ? "GPU to GPU (NCCL)" : "through the host (MPI)", !joined && msg[0] ? ": " : "",
                joined ? "" : msg);
}

/* why the GPU engine did not take the model: a shape it cannot run is a refused configuration (2), anything else a
 * device failure (1: its memory, the upload); m is freed */
static int device_status(Model *m) {
    char why[256];
    int refused = gpu_config_refusal(model_config(m), why, sizeof why) != NULL;
    model_free(m);
    return refused ? 2 : 1;
}

static void train_on_device(const TrainOptions *o, Model *m, int trains) {
    if (o->device != DEVICE_CUDA) return;
    char err[4096];
    /* the ranks; under ZeRO this rank's moments alone (train_run's share), and at stage 2 its gradients */
    int zero = trains && options_takes(o->cmd, TOPT_ZERO) && o->zero && dist_size() > 1;
    GpuShare share = {0, model_n_params(m), dist_size(), dist_rank(), zero ? o->zero : 0};
    if (zero) trainer_zero_share(model_n_params(m), &share.lo, &share.hi);
    GpuTrain *t = gpu_train_new(device_cuda_api(), m, model_precision(m), o->gradient_checkpointing,
                                trains && dist_size() > 1 ? &share : NULL, err, sizeof err);
    if (!t) {
        ppa_die(device_status(m), "%s: --device cuda: %s", options_command_name(o->cmd), err);
    }
    if (trains) join_nccl(o, t);
    ForwardEngine e = gpu_train_engine(t, device_cuda_name());
    model_set_forward_engine(m, &e);
}

void load_on_device(const TrainOptions *o, Model *m) {
    if (o->device != DEVICE_CUDA) return;
    /* sampling from an adapter: merged into its base on the device (the decoder runs a GpuModel) */
    int merged = o->cmd == CMD_GENERATE && model_lora(m) && model_lora_enabled(m);
    if (model_lora(m) && !merged) { /* the base frozen, its adapter on top: the training engine's forward runs it */
        train_on_device(o, m, 0);
        return;
    }
    char err[4096];
    GpuModel *g = merged ? gpu_model_merged(device_cuda_api(), m, model_precision(m), err, sizeof err)
                         : gpu_model_new(device_cuda_api(), m, model_precision(m), err, sizeof err);
    if (!g) {
        ppa_die(device_status(m), "%s: --device cuda: %s", options_command_name(o->cmd), err);
    }
    ForwardEngine e = gpu_model_engine(g, device_cuda_name());
    model_set_forward_engine(m, &e);
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

void load_need_head(const Model *m, const char *dir, int reward, const char *who) {
    char msg[4096];
    if (head_problem(m, dir, reward, 0, who, msg, sizeof msg)) ppa_die(2, "%s", msg);
}

int load_lora_spec(const TrainOptions *o, LoraSpec *s) {
    char err[4096];
    const char *who = options_command_name(o->cmd);
    if (o->adapter) {
        if (file_refuse_hub_id(o->adapter, err, sizeof err) || adapter_read_spec(o->adapter, s, err, sizeof err))
            ppa_die(2, "%s: --adapter: %s", who, err);
        return 1;
    }
    if (!options_takes(o->cmd, TOPT_LORA_R) || o->lora_r <= 0) return 0;
    *s = (LoraSpec){o->lora_r, o->lora_alpha, o->lora_dropout, o->use_rslora, LORA_ALL_TARGETS, 0};
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
    int lora = policy && o->cmd != CMD_REWARD && load_lora_spec(o, &ls);
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
    if (trainable) {
        model_gradient_checkpointing(m, o->gradient_checkpointing), model_low_memory(m, o->low_memory);
        train_on_device(o, m, 1);
    } else {
        load_on_device(o, m);
    }
    return m;
}

Model *load_model(const TrainOptions *o, const char *dir, int trainable) {
    return load_checked(o, dir, trainable, o->cmd == CMD_REWARD, 1, NULL);
}

Model *load_frozen(const TrainOptions *o, const char *dir) { return load_checked(o, dir, 0, 0, 0, NULL); }

const char *load_policy_dir(const TrainOptions *o) {
    return o->resume && !adapter_is_folder(o->resume) ? o->resume : o->model;
}

Model *load_policy(const TrainOptions *o) {
    if (!o->resume) return load_model(o, o->model, 1);
    if (adapter_is_folder(o->resume)) /* a LoRA run's checkpoint: the adapter on the base */
        return load_checked(o, o->model, 1, o->cmd == CMD_REWARD, 1, o->resume);
    return load_model(o, o->resume, 1);
}

Model *load_judge_model(const TrainOptions *o, const char *dir, int reward) {
    return load_checked(o, dir, 0, reward, 1, NULL);
}

const char *load_kernels(const Model *m) {
    static char line[1536];
    int at;
    const ForwardEngine *e = model_forward_engine(m);
    if (e)
        at = snprintf(line, sizeof line, "%s products on the GPU (%s): cuBLASLt, ppa's fused attention",
                      model_precision(m) == MODEL_BF16 ? "bf16" : "fp32", e->name);
    else if (model_precision(m) == MODEL_BF16)
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
