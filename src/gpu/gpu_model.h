/* gpu_model.h: the forward of the Llama / Mistral / Qwen2 engine on a GPU, a sibling of the CPU passes
 * (model/llama.c), as llm.c keeps train_gpt2.cu beside train_gpt2.c: host C code that chains the CUDA module's
 * kernels (src/cuda, reached only through a PcApi table: device/pc_api.h) to compute what model_forward and
 * model_forward_rewards compute, on the same shared-prompt rows (model.h's Row) and with the same refusals.
 *
 * A GpuModel holds a loaded host Model's weights on the device (uploaded once, one allocation), the RoPE table and
 * the activations of one batch (one allocation, grown to the largest batch seen and reused). It is not
 * thread-safe: one host thread drives it, as the module asks. The host Model may be freed after gpu_model_new.
 *
 * Precision. MODEL_BF16 (the GPU's default): bf16 matrices with float32 accumulation, the residual stream, norms'
 * statistics, softmaxes and log-prob sums in float32 (and the per-response sums in double), rounded to bf16 at the
 * CPU bf16 engine's points (gpu_forward.c says where), so that the CPU bf16 engine is a close oracle. MODEL_FP32:
 * float32 throughout (the oracle mode, against the CPU float32 engine).
 *
 * What it refuses: a model the module cannot run (head_dim other than 64 or 128: the fused attention's sizes), an
 * adapter switched on (the GPU runs the base model), and at each forward what batch_new refuses (ids outside the
 * vocabulary, sequences longer than the positions or the sliding window, empty prompts or responses). */
#ifndef PPA_GPU_MODEL_H
#define PPA_GPU_MODEL_H

#include <stddef.h>

#include "device/pc_api.h"
#include "model/model.h"

typedef struct GpuModel GpuModel;

/* why the GPU engine cannot run a model of config c (head sizes other than 64 and 128: the fused attention's; a
 * hidden size over 8192: the RMSNorm's), in buf; NULL when it can */
const char *gpu_config_refusal(const ModelConfig *c, char *buf, size_t n);

/* Uploads m's weights as prec asks: MODEL_BF16 takes m's own bf16 matrices when it has them (a frozen bf16 model,
 * or a model training in bf16) and rounds its float32 ones to nearest even otherwise (as model_set_precision
 * would); MODEL_FP32 takes float32 matrices, widening a frozen bf16 model's exactly. The embedding is kept as the
 * CPU forward reads its rows (model_embed: in bf16 when every value is a bf16, else in float32). pc: the module's
 * functions (device_cuda_api() after device_cuda_open, or a test's table), initialised (pc_init done); it must
 * outlive the GpuModel. NULL on error, with why in err: a model it cannot run, or out of GPU memory (the module's
 * message: the bytes asked and free). */
GpuModel *gpu_model_new(const PcApi *pc, const Model *m, ModelPrecision prec, char *err, size_t errlen);
/* gpu_model_new for sampling from a model whose LoRA adapter is on: each target matrix uploaded as W + s B A, merged
 * in float32 as PEFT's merge_and_unload and `ppa merge` do, then in prec (bf16: one rounding of the merged value).
 * Its logits are those of the merged model: they differ from the adapter's unmerged products (the training
 * engine's) by that rounding. */
GpuModel *gpu_model_merged(const PcApi *pc, const Model *m, ModelPrecision prec, char *err, size_t errlen);
/* Frees the device memory (weights, activations, table) and the struct; NULL is fine. */
void gpu_model_free(GpuModel *g);

const ModelConfig *gpu_model_config(const GpuModel *g);
ModelPrecision gpu_model_precision(const GpuModel *g);
/* bytes of device memory held: the weights (with the RoPE table), and the current activations */
size_t gpu_model_weight_bytes(const GpuModel *g);
size_t gpu_model_activation_bytes(const GpuModel *g);

/* model_forward on the GPU, for a causal LM (head LM): logps [n_responses] (double) the summed log-probabilities
 * of each response given its prompt, in row order (row 0's responses, then row 1's, ...); n_scored [n_responses]
 * the tokens scored (each response's length; may be NULL). A row is a prompt and its K responses, the prompt
 * computed once (each response attends to the prompt and to itself: the mathematics of K separate sequences). 0,
 * or -1 with why in err: what batch_new refuses (the same message), a reward model, or a failed kernel or
 * allocation ("... out of GPU memory: N bytes asked, M free of T"); outputs are then unspecified. Rows may be
 * freed on return. */
int gpu_forward_logps(GpuModel *g, const Row *rows, int n_rows, double *logps, int *n_scored, char *err,
                      size_t errlen);
/* model_forward_rewards on the GPU, for a reward model (head not LM): rewards [n_responses, num_labels] (double),
 * the head applied in double on the host to the final-norm hidden state of each response's last token (the
 * rightmost that is not pad_token_id when it ends in pads: BatchLayout's last). 0, or -1 as above. */
int gpu_forward_rewards(GpuModel *g, const Row *rows, int n_rows, double *rewards, char *err, size_t errlen);

/* g as a model's engine (model.h's ForwardEngine: its scoring calls, and decoding through gpu_decode.h), named
 * name for the log; model_set_forward_engine hands g to the model, which frees it with itself (gpu_engine.c) */
ForwardEngine gpu_model_engine(GpuModel *g, const char *name);

#endif
