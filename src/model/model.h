/* llama.h: the Llama / Mistral / Qwen2 causal LM in float32 on the CPU:
 * parameters and gradients in contiguous buffers laid out by the tensor
 * table of config.json, and forward / backward over batches of shared-prompt
 * rows (one prompt followed by K responses, each response attending to the
 * prompt and to its own earlier tokens, positions continuing from the prompt
 * length: the mathematics of K separate sequences, with the prompt computed
 * once). The unit of output is the summed log-probability of each response. */
#ifndef PPA_LLAMA_H
#define PPA_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "core/span.h"
#include "hf/config.h"
#include "kernels/matmul.h"

typedef struct Model Model;

/* Loads config.json and the safetensors of a model folder (F32/F16/BF16,
 * widened); the tensors must match the config exactly. NULL on error. */
Model *model_load(const char *dir, char *err, size_t errlen);
/* Precision of the matrix products (matmul.h). */
typedef enum { MODEL_FP32, MODEL_BF16 } ModelPrecision;
/* model_load with a precision. MODEL_BF16 and frozen (a model that is never
 * differentiated: scoring, sampling, a reference): the matrices are kept in
 * bf16 only (used where the file maps them: a BF16 checkpoint), the vectors in
 * float32, so a 7B model needs 2 bytes per parameter. MODEL_BF16 and not
 * frozen (training): float32 master weights and a bf16 copy for the products,
 * refreshed by model_bf16_refresh after every update. Refuses bf16 where
 * gemm_bf16_ready() does. */
Model *model_load_as(const char *dir, ModelPrecision prec, int frozen, char *err, size_t errlen);
/* A trainable reward model: a reward-model folder as model_load_as does, or
 * a causal-LM folder turned into <Type>ForSequenceClassification with one
 * label: its lm_head dropped, score.weight [1, H] drawn from N(0, 0.02^2)
 * (transformers' initializer_range) with a stream fixed by seed. */
Model *model_load_reward(const char *dir, ModelPrecision prec, uint64_t seed, char *err, size_t errlen);
/* Switches a trainable model's products to prec (allocating the bf16 copy). */
int model_set_precision(Model *m, ModelPrecision prec, char *err, size_t errlen);
/* Copies the float32 master weights into the bf16 copy (after an optimizer step). */
void model_bf16_refresh(Model *m);
ModelPrecision model_precision(const Model *m);
int model_frozen(const Model *m);
/* Gradient checkpointing: batches keep each layer's input only, and the
 * backward recomputes a layer's activations before differentiating it (the
 * same bytes as without; about one more forward of work). Batches of a model
 * without gradients always keep one layer (a forward needs no more). */
void model_gradient_checkpointing(Model *m, int on);
/* Low memory: the gradients are released instead of cleared (no memory in
 * the forward: they come back, zero, as the backward writes them), and the
 * backward frees each layer's activations once it is done with them and the
 * kept softmax at its end, so the step peaks where the forward ends, without
 * the gradients. The same bytes; the price is page faults on that memory in
 * every step (core/common.h's ppa_release). */
void model_low_memory(Model *m, int on);
/* The kernel families the products run on, for the state file and resume
 * checks: gemm_kernel(), or "<gemm_kernel()>+<gemm_bf16_kernel()>" for bf16. */
void model_kernel_name(const Model *m, char *buf, size_t n);
/* Where its passes compute (device/device.h); the trainers take the
 * optimizer step and the gradient norm from it too. */
const struct Device *model_device(const Model *m);
/* Folds every weight and the precision into a hash (the reference cache's key). */
uint64_t model_hash(const Model *m, uint64_t h);
/* A model from a config with the documented random init (checkpoint_init). */
Model *model_new(const ModelConfig *c, uint64_t seed, char *err, size_t errlen);
void model_free(Model *m);
const ModelConfig *model_config(const Model *m);
/* The trainable parameters: the model's, in tensor-table order, or once a
 * LoRA adapter is attached (lora.h) the adapter's alone (the base frozen). */
size_t model_n_params(const Model *m);
float *model_params(Model *m); /* [n_params] */
float *model_grads(Model *m);  /* [n_params], allocated and zeroed on first use */
void model_zero_grads(Model *m);
size_t model_n_base_params(const Model *m); /* the model's own, adapter or not */
/* Gradients under the Hugging Face names (tied embeddings include the LM
 * head's share), F32; an adapter's under PEFT's names. */
int model_save_grads(const Model *m, const char *path, char *err, size_t errlen);

/* The weights as the passes read them, for an engine beside them (src/gpu): views, not copies, valid while m
 * lives and its weights do not change. A tensor by its Hugging Face name as a product operand (kernels/matmul.h's
 * Weight: float32, bf16 or both; a frozen bf16 model's matrices are bf16 only, a float32 model's float32 only;
 * vectors, norms and biases, are float32 in every model), {NULL, NULL} when the model has no such tensor. The head on
 * the final norm: the LM head's [V, H] (embed_tokens when tied) or a reward model's [num_labels, H]. */
Weight model_weight(const Model *m, const char *name);
Weight model_lm_weight(const Model *m);
/* where a tensor starts in the flat buffer of model_params / model_grads (an engine that trains keeps the same
 * layout), or -1 when the model has no such tensor or no float32 copy of it (a frozen model's matrices); the head:
 * model_lm_offset (embed_tokens' when tied) */
long model_param_offset(const Model *m, const char *name);
long model_lm_offset(const Model *m);
/* x [T, H] = the embeddings of ids [T] (each in the vocabulary) as the forward reads them: float32 in every precision
 * (a frozen model's rows from its file, widened from bf16 exactly) */
void model_embed(const Model *m, const int *ids, int T, float *x);

/* Where weight decay applies: the matrices (embeddings included), not the
 * RMSNorm weights and biases (transformers' Trainer default); an adapter's
 * A and B (model_n_params' buffer). Free with spans_free. */
Spans model_decay(const Model *m);

/* Once the model has gradients (it trains), the forward keeps the LM head's
 * softmax [scored tokens, V] for the backward when it takes at most max_bytes
 * (default MODEL_KEEP_SOFTMAX, 2 GiB), which saves the backward a second
 * logits product; otherwise the backward recomputes the logits in chunks.
 * The two paths agree to float32 rounding (not bit for bit: the backward's
 * sums run in other chunks); a given model and batch always take the same.
 * A model whose LM head runs in bf16 keeps the softmax in bf16 (half the
 * bytes), and its recomputing backward rounds the same: the same bytes. */
#define MODEL_KEEP_SOFTMAX (2UL << 30)
void model_keep_softmax(Model *m, size_t max_bytes);

/* Writes the model as a Hugging Face folder (checkpoint_write_folder);
 * tokenizer_dir: a folder whose tokenizer and template files are carried
 * (hf/carry.h), or NULL; the generation_config.json of the folder the model
 * was loaded from is carried when it has one. A
 * model with an adapter writes PEFT's adapter folder instead (adapter.h;
 * bf16 ignored: adapters are written in float32). */
int model_save(const Model *m, const char *dir, int bf16, const char *tokenizer_dir, char *err, size_t errlen);

/* One row: a prompt and K responses (token ids). */
typedef struct {
    int prompt_len;
    const int *prompt;   /* [prompt_len], at least 1 token */
    int n_resp;          /* K >= 1 */
    const int *resp_len; /* [K], each >= 1 */
    const int *const *resp;
} Row;

typedef struct Batch Batch;

/* How a batch lays its rows out, token by token (batch_new's packing; the GPU engine, src/gpu, packs with the same
 * functions): each row's prompt once, then its K responses; positions 0 .. P-1 in the prompt and restarting at P in
 * every response; token t attends keys [pstart[t], pstart[t] + plen[t]) (its row's prompt: plen 0 in the prompt)
 * and [sstart[t], t] (its own segment): kernels.h's AttnShape. Target i (a response token) is scored by the logits
 * of token src[i] (the token before it: the prompt's last for a response's first) and belongs to response
 * tgt_resp[i]; last[g]: where a reward head reads response g (model_forward_rewards' rule). */
typedef struct {
    int n_rows, T, n_resp, n_tgt, n_pos; /* n_pos: the longest prompt + response (positions 0 .. n_pos - 1) */
    int *tokens, *pos, *pstart, *plen, *sstart; /* [T] */
    int *rows;                                  /* [n_rows + 1] each row's first token, then T */
    int *src, *tgt, *tgt_resp;                  /* [n_tgt] in row, response, token order */
    int *n_scored, *last;                       /* [n_resp] */
} BatchLayout;
/* Checks the rows as batch_new does (a prompt and responses of at least 1 token, every id in the vocabulary, every
 * prompt + response within model_config_check_seq_len) and sets the counts of lay (no arrays); 0, or -1 with the
 * first problem in err. */
int batch_layout_count(const ModelConfig *c, const Row *rows, int n_rows, BatchLayout *lay, char *err,
                       size_t errlen);
/* Allocates and fills the arrays of a counted layout (the rows as counted); batch_layout_free frees them. */
void batch_layout_fill(const ModelConfig *c, const Row *rows, int n_rows, BatchLayout *lay);
void batch_layout_free(BatchLayout *lay);

/* Packs rows for a forward / backward pass; checks token ids and lengths
 * (and the sliding window). NULL on error. Its activations live in the
 * model, so one batch per model at a time. */
Batch *batch_new(Model *m, const Row *rows, int n_rows, char *err, size_t errlen);
void batch_free(Batch *b);
int batch_n_responses(const Batch *b);
int batch_n_tokens(const Batch *b); /* packed tokens, the prompt counted once per row */
size_t batch_activation_bytes(const Batch *b); /* what the forward keeps for the backward (and the layers' work) */

/* logps: [n_responses] summed log-probabilities of each response, in row
 * order; n_scored: [n_responses] (may be NULL). Caches activations in b. */
void model_forward(Model *m, Batch *b, double *logps, int *n_scored);
/* dlogps: [n_responses] d loss / d logp; adds d loss / d params into the
 * gradients. Needs the forward of the same batch just before. */
void model_backward(Model *m, Batch *b, const double *dlogps);

/* Another engine that computes this model's forward (the GPU's, src/gpu), attached by the command that chose it
 * (cli/load.c): model_forward_rows and model_forward_rows_rewards then run there. free (may be NULL) releases ctx
 * with the model; name says where, for the log. The CPU passes (model_forward, model_backward) are unchanged.
 *
 * An engine that trains (train_forward set) keeps its own copy of the parameters, their gradients and the AdamW
 * moments, in the host's layout (the flat buffer of model_params, element for element); the training passes
 * (model_pass_*), the gradient norm and the optimizer step then run there, and push / pull exchange the copy with
 * the host's buffers (m, v: the moments, NULL to leave them). Each returns 0, or -1 with why in err. */
typedef struct {
    void *ctx;
    int (*logps)(void *ctx, const Row *rows, int n_rows, double *logps, int *n_scored, char *err, size_t errlen);
    int (*rewards)(void *ctx, const Row *rows, int n_rows, double *rewards, char *err, size_t errlen);
    void (*free)(void *ctx);
    size_t (*bytes)(void *ctx); /* the device memory it holds now (may be NULL) */
    char name[160];
    /* training (NULL: the engine scores only); out / dout as model_pass_forward's */
    int (*train_forward)(void *ctx, const Row *rows, int n_rows, double *out, int *n_scored, char *err, size_t errlen);
    int (*train_backward)(void *ctx, const double *dout, char *err, size_t errlen);
    int (*zero_grads)(void *ctx, char *err, size_t errlen);
    int (*grad_norm)(void *ctx, int shard, double *norm, char *err, size_t errlen); /* shard: this rank's share's */
    /* torch.optim.AdamW's step t on the whole buffer (optim.h's adamw_step: the gradient scaled by grad_scale,
     * decay on the model's model_decay spans), the products' copy of the weights refreshed */
    int (*adamw)(void *ctx, long t, float grad_scale, double lr, double beta1, double beta2, double eps,
                 double weight_decay, char *err, size_t errlen);
    int (*push)(void *ctx, const float *params, const float *m, const float *v, char *err, size_t errlen);
    int (*pull)(void *ctx, float *params, float *m, float *v, char *err, size_t errlen);
    size_t (*peak)(void *ctx); /* the most device memory held so far (may be NULL) */
    /* the gradients to host grads [n] (to_device 0) or back (1): several processes add theirs up on the host */
    int (*grads)(void *ctx, float *grads, int to_device, char *err, size_t errlen);
    /* the processes' gradients summed device to device (NCCL): 0, -1 with err, or 1 when it cannot (NULL too):
     * then through the host with grads. Under ZeRO (the engine's share) only this rank's share of the sum may be
     * summed: *sharded = 1 then (a reduce-scatter, or the backward's buckets) */
    int (*sum_grads)(void *ctx, int *sharded, char *err, size_t errlen);
    /* ZeRO: every rank's updated share (step_zero_share) of the weights gathered device to device (NCCL): 0, -1 with
     * err, or 1 when it cannot (NULL too): then through the host with pull and push */
    int (*zero_gather)(void *ctx, char *err, size_t errlen);
    /* Several ranks: whether the coming backward is its step's last (last) is told before each; the answer is 1
     * when that backward reduces the ranks' gradients itself, layer by layer as it finishes them (NCCL's buckets;
     * ZeRO-2's every backward), and 0 when the caller sums them after the step (NULL: 0). A rank without lists for
     * a micro-step then runs train_idle: the reductions of a backward without its computation (NULL: none). */
    int (*reduce_in_backward)(void *ctx, int last);
    int (*train_idle)(void *ctx, char *err, size_t errlen);
    /* incremental decoding (NULL: decode.h's decoder on the CPU): decode.c delegates its slots' computations and
     * keeps their bookkeeping and checks; prefill takes np prompts at once (seq[i] gets ids[i] [n[i]]); fork
     * starts slots as the first len positions of slot src; logits NULL keeps them where they are, tok NULL feeds
     * the tokens dec_sample drew there (gpu/gpu_decode.h) */
    void *(*dec_new)(void *ctx, int n_seq, int max_len, char *err, size_t errlen);
    void (*dec_free)(void *dec);
    int (*dec_prefill)(void *dec, const int *seq, const int *const *ids, const int *n, int np, float *logits,
                       char *err, size_t errlen);
    int (*dec_fork)(void *dec, int src, int dst, int count, int len, char *err, size_t errlen);
    int (*dec_drop)(void *dec, int seq, char *err, size_t errlen);
    int (*dec_step)(void *dec, const int *tok, const int *seq, const int *pos, int n, float *logits, char *err,
                    size_t errlen);
    int (*dec_sampler)(void *dec, double temperature, int top_k, double top_p, const int *banned, int n_banned,
                       char *err, size_t errlen);
    int (*dec_sample)(void *dec, const int *seq, const uint64_t *keys, const int *steps, const float *temps, int n,
                      int *ids, char *err, size_t errlen);
} ForwardEngine;
void model_set_forward_engine(Model *m, const ForwardEngine *e);
/* the attached engine, or NULL (the CPU) */
const ForwardEngine *model_forward_engine(const Model *m);
/* The forward of rows without a backward (scoring): logps [n_responses] and n_scored (may be NULL) of a causal LM,
 * or rewards [n_responses, num_labels] of a reward model, on the attached engine, else on the CPU (batch_new, then
 * model_forward or model_forward_rewards). 0, or -1 with why in err (what batch_new refuses; the engine's errors). */
int model_forward_rows(Model *m, const Row *rows, int n_rows, double *logps, int *n_scored, char *err, size_t errlen);
int model_forward_rows_rewards(Model *m, const Row *rows, int n_rows, double *rewards, char *err, size_t errlen);

/* One micro-batch of training through the model: on its engine when the engine trains, else on the CPU passes
 * (batch_new, model_forward or model_forward_rewards, then the backward). out: [n_responses] the log-probs of a
 * causal LM, or [n_responses, num_labels] the rewards of a reward model; n_scored (may be NULL) as model_forward's.
 * What the backward needs is kept until model_pass_backward (dout: d loss / d out, the shape of out; adds into the
 * gradients) or model_pass_end, one of which ends every pass (the model does not free a pass left open). 0, or -1
 * with why in err (what batch_new refuses; the engine's errors). */
int model_pass_forward(Model *m, const Row *rows, int n_rows, double *out, int *n_scored, char *err, size_t errlen);
int model_pass_backward(Model *m, const double *dout, char *err, size_t errlen);
void model_pass_end(Model *m);
/* the engine that trains the model, or NULL (the CPU passes) */
const ForwardEngine *model_train_engine(const Model *m);

/* Reward models (config head != HEAD_LM; the two calls above are for causal
 * LMs only). rewards: [n_responses, num_labels], the head applied in double
 * to the final-norm hidden state of each response's last token (of prompt +
 * response; the rightmost that is not pad_token_id when it ends in pads, as
 * transformers reads it). The prompt is computed once for its responses. */
void model_forward_rewards(Model *m, Batch *b, double *rewards);
/* drewards: [n_responses, num_labels] d loss / d reward; adds into the gradients. */
void model_backward_rewards(Model *m, Batch *b, const double *drewards);

#endif
