/* gpu_train.h: training on a GPU, a sibling of the CPU's passes and optimizer (model/llama.c's model_forward /
 * model_backward, optim.h's AdamW): host C code that chains the CUDA module's kernels (src/cuda, through a PcApi
 * table) to compute what the CPU engine computes, for the models it trains (Llama, Mistral, Qwen2 with biases, tied
 * heads, reward-model heads).
 *
 * A GpuTrain keeps on the device the float32 master weights, their gradients and the AdamW moments, each one buffer
 * in the host Model's layout (model_params, element for element: push and pull are copies, the decay spans are the
 * host's, a checkpoint is the same bytes whichever side wrote it), and with MODEL_BF16 a bf16 copy of the weights
 * in the same layout that the products read, refreshed by every AdamW step. The activations of one micro-batch
 * (gpu_backward.c), grown to the largest seen and reused; with checkpointing only every layer's input is kept and
 * each layer is recomputed in the backward, as the CPU's model_gradient_checkpointing.
 *
 * Precision: as gpu_model.h says for the forward, and in the backward at the CPU bf16 engine's rounding points
 * (gpu_backward.c lists them): float32 gradients everywhere, a gradient rounded to bf16 only as a product's
 * operand, where the CPU's bf16 products round it; one exception, the LM head's probabilities, which a training
 * forward keeps in bf16 for its backward (cuda/lmhead.h: one rounding more than the CPU's). MODEL_FP32: float32
 * throughout, the oracle mode.
 *
 * LoRA (a model with an adapter, lora.h): the base is uploaded frozen as gpu_model_new does (in the model's
 * precision), the trainable buffers are the adapter's (model_params: A and B of every target), whose terms run in
 * float32 as lora.c's, with lora.c's dropout masks (cuda/lora.h); the adapter's switch and the trainer's dropout
 * key are read from the model at every forward, so the reference of a LoRA run is the base with the adapter off.
 *
 * Not thread-safe: one host thread drives it. It refuses head sizes the module cannot run, a frozen model without
 * an adapter (no float32 weights to train), and an adapter on a reward model. */
#ifndef PPA_GPU_TRAIN_H
#define PPA_GPU_TRAIN_H

#include <stddef.h>

#include "device/pc_api.h"
#include "model/model.h"

typedef struct GpuTrain GpuTrain;

/* The device buffers for m (its layout, config and decay spans) and m's weights uploaded (gpu_train_push; the
 * moments start at 0). With an adapter m must outlive the engine (the model that holds it as its engine does).
 * checkpointing: keep every layer's input only, recompute each layer in the backward. share: NULL (one process), or
 * this rank of several: under ZeRO its [lo, hi) (trainer_zero_share), whose moments are kept alone and which AdamW
 * updates alone (stage 2: and whose gradients alone are kept). NULL with why in err: what it cannot train, or out of
 * GPU memory (the bytes asked and free). */
typedef struct {
    size_t lo, hi;    /* this rank's share of the parameters (step_zero_share: rank x chunk, chunk = ceil(n / ranks));
                         all of them at stage 0 */
    int ranks, rank;
    int stage;        /* ZeRO's: 0 (none), 1 (the moments sharded), 2 (the gradients too: no whole gradient buffer) */
} GpuShare;
/* ZeRO-2 without NCCL: host [n] summed over the ranks, the sum wanted on rank root (every rank calls it, in the same
 * order); 0, or -1 with why in err */
typedef int (*GpuHostReduce)(void *ctx, float *host, size_t n, int root, char *err, size_t errlen);
GpuTrain *gpu_train_new(const PcApi *pc, Model *m, ModelPrecision prec, int checkpointing, const GpuShare *share,
                        char *err, size_t errlen);
void gpu_train_free(GpuTrain *t);

/* host [n_params] buffers (model_params' layout) to the device and back; m, v: the AdamW moments ([hi - lo] with a
 * share), or NULL (push: leaves the device's; pull: not read back). push refreshes the bf16 copy. */
int gpu_train_push(GpuTrain *t, const float *params, const float *m, const float *v, char *err, size_t errlen);
int gpu_train_pull(GpuTrain *t, float *params, float *m, float *v, char *err, size_t errlen);
/* the gradients into host grads [n_params] (tests; several processes' sums), and host grads into the gradients */
int gpu_train_grads(GpuTrain *t, float *grads, char *err, size_t errlen);
int gpu_train_set_grads(GpuTrain *t, const float *grads, char *err, size_t errlen);

int gpu_train_zero_grads(GpuTrain *t, char *err, size_t errlen);
/* Several processes: joins NCCL's communicator id (cuda/nccl.h, PC_NCCL_ID_BYTES) as rank of size; from then on
 * gpu_train_sum_grads adds the ranks' gradients up GPU to GPU (1 before a join: the caller sums through the host) */
int gpu_train_nccl_join(GpuTrain *t, const void *id, int rank, int size, char *err, size_t errlen);
void gpu_train_nccl_leave(GpuTrain *t); /* back to the host's sums */
/* ZeRO-2 without NCCL (ranks sharing a GPU): the backward's bucket reductions go through the host with reduce */
void gpu_train_host_reduce(GpuTrain *t, GpuHostReduce reduce, void *ctx);
/* The ranks' gradients summed (gpu_zero.c), unless the last backward's buckets did it: all of them (an all-reduce),
 * or under ZeRO this rank's share alone, *sharded = 1 (a reduce-scatter). 1 (nothing done) when the gradients must
 * go through the host (no NCCL, below stage 2). */
int gpu_train_sum_grads(GpuTrain *t, int *sharded, char *err, size_t errlen);
/* Several ranks joined by NCCL: the backward of the step's last micro-step (last 1) reduces each layer's gradients
 * as soon as it is done, on NCCL's own stream while the backward goes on (an all-reduce; ZeRO-1: onto the ranks that
 * own them), and gpu_train_sum_grads then has nothing left to do; ZeRO-2 reduces in every backward. 1 when the
 * coming backward reduces, 0 when the gradients are summed after the step (no NCCL, an adapter's). */
int gpu_train_reduce_in_backward(GpuTrain *t, int last);
/* a micro-step's reductions without its backward, for a rank that has no lists for it (ZeRO-2: of zero gradients;
 * else of what it has accumulated); nothing when the coming backward does not reduce */
int gpu_train_idle(GpuTrain *t, char *err, size_t errlen);
/* ZeRO after the step: each rank updated its share (its chunk [lo, hi)) of the weights; every rank's gathered into
 * every rank's weights through NCCL in place (float32, the bf16 copy refreshed from them: the host path's bytes).
 * 1 before a join (the caller gathers through the host) */
int gpu_train_zero_gather(GpuTrain *t, char *err, size_t errlen);
/* the global L2 norm of the gradients (cuda/global_norm.h's fixed order: the same bits on every rerun); shard: of
 * this rank's share alone (after a sharded sum) */
int gpu_train_grad_norm(GpuTrain *t, int shard, double *norm, char *err, size_t errlen);
/* AdamW step t >= 1 on every parameter of the share (optim.h's adamw_step element for element), the bf16 copy
 * refreshed there */
int gpu_train_adamw(GpuTrain *t, long step, float grad_scale, double lr, double beta1, double beta2, double eps,
                    double weight_decay, char *err, size_t errlen);

/* model_pass_forward on the device: out [n_responses] log-probs (causal LM) or [n_responses, num_labels] rewards
 * (reward model), n_scored [n_responses] (may be NULL); keep: keep what gpu_train_backward needs (else the
 * activations of one layer, a scoring forward). 0, or -1 with why in err (batch_new's refusals, the same
 * messages; a failed kernel; out of GPU memory with the sizes). */
int gpu_train_forward(GpuTrain *t, const Row *rows, int n_rows, int keep, double *out, int *n_scored, char *err,
                      size_t errlen);
/* dout: d loss / d out of the last kept forward; adds d loss / d params into the gradients */
int gpu_train_backward(GpuTrain *t, const double *dout, char *err, size_t errlen);

/* device bytes held now (weights, gradients, moments, activations) and the most held at once so far */
size_t gpu_train_bytes(const GpuTrain *t);
size_t gpu_train_peak(const GpuTrain *t);

/* t as a model's engine (model.h's ForwardEngine, every training call set; its scoring calls run t's forward on
 * the weights being trained), named name for the log; model_set_forward_engine hands t to the model, which frees
 * it with itself */
ForwardEngine gpu_train_engine(GpuTrain *t, const char *name);

#endif
