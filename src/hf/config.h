/* config.h: the config.json of a Hugging Face Llama-family folder (llama,
 * mistral, qwen2, qwen3) as a checked ModelConfig; RoPE inverse frequencies
 * (default, linear, llama3); the table of every tensor the checkpoint must
 * hold, in canonical order; a writer whose output transformers loads.
 *
 * Not here: safetensors I/O, parameter buffers, kernels. Library code: bad
 * input returns -1 with "<file>: <field> ..." in err, never exits.
 *
 * Defined in config.c (reading config.json), rope.c (its RoPE fields and
 * the inverse frequencies), tensors.c (the tensor table and counts) and
 * config_write.c (the writer, the comparison, the summary).
 *
 * Decisions where formats.md e.3 is silent:
 *   - a missing size (vocab_size, hidden_size, intermediate_size,
 *     num_hidden_layers, num_attention_heads) is an error; every other field
 *     takes the transformers class default of its model type;
 *   - rope_theta defaults to 10000.0 for all four types (LlamaConfig,
 *     MistralConfig, Qwen2Config and Qwen3Config all say so);
 *   - head_dim defaults to hidden/heads, except qwen3: 128 (Qwen3Config);
 *     num_key_value_heads defaults to heads for llama (LlamaConfig: None)
 *     but to 8 for mistral and 32 for qwen2/qwen3 (their class defaults,
 *     which is what transformers builds when the key is absent);
 *   - hidden_act "swish" is accepted as "silu" (transformers maps both to
 *     SiLU); anything else is refused;
 *   - rope_parameters (transformers v5) and rope_scaling + rope_theta (v4)
 *     may both appear only if they agree; a conflict is refused, because v4
 *     and v5 would then build different models from the same file;
 *   - mlp_bias (llama only) is supported: gate/up/down_proj.bias enter the
 *     tensor table; attention_bias or mlp_bias true on mistral, and mlp_bias
 *     true on qwen2/qwen3, are refused (transformers would silently ignore
 *     the flag and the bias tensors);
 *   - qwen2 always has q/k/v biases and no o_proj bias (attention_bias is
 *     ignored, as transformers does); qwen3 has per-head q_norm/k_norm and
 *     q/k/v/o biases only when attention_bias is true. qk_norm flags qwen3:
 *     the engine must implement those norms or refuse the model.
 *   - sliding_window is the window in effect in at least one layer, 0 for
 *     none (see ModelConfig.sliding_window);
 *   - quantization_config, partial_rotary_factor != 1, and duplicate keys
 *     are refused; other unknown keys are ignored. */
#ifndef PPA_MODEL_CONFIG_H
#define PPA_MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "hf/rope.h"

typedef enum { MODEL_LLAMA, MODEL_MISTRAL, MODEL_QWEN2, MODEL_QWEN3 } ModelType;

/* What sits on the final norm: the LM head (a causal LM), or a reward head of
 * num_labels rows, read at a sequence's last token: transformers'
 * <Type>ForSequenceClassification (score.weight [num_labels, H], num_labels
 * from id2label or num_labels, default 2 as PretrainedConfig), or ArmoRM's
 * LlamaForRewardModelWithGating objective heads (regression_layer.weight
 * [num_objectives, H], default 19 as its code; its gating network and
 * reward_transform_matrix are tolerated in the checkpoint and not used: the
 * gated score is not computed). */
typedef enum { HEAD_LM, HEAD_SCORE, HEAD_REGRESSION } ModelHead;

#define MODEL_MAX_EOS 8
#define MODEL_DTYPE_LEN 16
/* Sizes above these are refused as implausible; they keep every element
 * count and the parameter total far inside int64. */
#define MODEL_MAX_DIM (1 << 24)
#define MODEL_MAX_LAYERS 4096


typedef struct {
    ModelType type;
    int vocab_size;          /* V */
    int hidden_size;         /* H */
    int intermediate_size;   /* I */
    int num_hidden_layers;   /* L */
    int num_attention_heads; /* NH */
    int num_key_value_heads; /* NKV, divides NH; query head h uses kv head h / (NH/NKV) */
    int head_dim;            /* HS, even (RoPE pairs j with j + HS/2); NH*HS need not equal H */
    int max_position_embeddings;
    double rms_norm_eps;     /* > 0 */
    int tie_word_embeddings; /* 1: no lm_head.weight, the logits use embed_tokens */
    int qkv_bias;            /* q/k/v_proj.bias present */
    int o_bias;              /* o_proj.bias present */
    int mlp_bias;            /* gate/up/down_proj.bias present (llama mlp_bias) */
    int qk_norm;             /* qwen3: per-head RMSNorm q_norm/k_norm [HS] after the projections */
    int bos_token_id;        /* -1: none */
    int n_eos;               /* 0..MODEL_MAX_EOS */
    int eos_token_ids[MODEL_MAX_EOS];
    int pad_token_id;        /* -1: none (null, absent or negative) */
    char dtype[MODEL_DTYPE_LEN]; /* torch_dtype / dtype as written, "" if absent */
    RopeConfig rope;
    /* Sliding-window attention: a token attends to at most sliding_window
     * positions (itself included), so sequences of T <= sliding_window are
     * unaffected. ppa computes full causal attention and must refuse longer
     * sequences (model_config_check_seq_len). 0: no layer slides.
     * mistral: sliding_window when not null (absent = 4096, MistralConfig).
     * qwen2/qwen3: only with use_sliding_window true, and only if some layer
     * slides: layer i >= max_window_layers, or layer_types when given. */
    int sliding_window;
    int max_window_layers; /* qwen2/qwen3: first sliding layer (as written back), else 0 */
    ModelHead head;
    int num_labels;        /* reward heads: rows of the head; 0 for HEAD_LM */
} ModelConfig;

typedef enum {
    MODEL_TENSOR_MATRIX, /* 2-D weights incl. embeddings: random init, weight decay */
    MODEL_TENSOR_NORM,   /* RMSNorm weights: init 1, no decay */
    MODEL_TENSOR_BIAS,   /* biases: init 0, no decay */
} ModelTensorKind;

#define MODEL_TENSOR_NAME_LEN 64

typedef struct {
    char name[MODEL_TENSOR_NAME_LEN]; /* HF name, e.g. "model.layers.3.self_attn.q_proj.weight" */
    int ndim;                         /* 1 or 2 */
    int64_t shape[2];                 /* [out, in] for matrices; shape[1] = 0 when ndim = 1 */
    int64_t numel;
    ModelTensorKind kind;
    int layer;                        /* -1 for embed_tokens, model.norm, lm_head */
} ModelTensorSpec;

/* Parses config.json text; name is used in messages (usually the path).
 * Returns 0, or -1 with "name: field ... expected ..." in err. */
int model_config_parse(ModelConfig *c, const char *json_text, const char *name, char *err, size_t errlen);

/* path: a config.json file, or a model folder holding one. */
int model_config_load(ModelConfig *c, const char *path, char *err, size_t errlen);

/* Writes config.json (path: a file, or an existing folder) atomically:
 * temp file in the same folder, fflush, fsync, rename, fsync of the folder.
 * Keys in transformers' sorted order, only those the type's config class
 * reads, RoPE in the v4 form (rope_theta + rope_scaling, null for default),
 * floats as Python prints them. The text is parsed back before anything is
 * written: a hand-built config that breaks a parser rule or that config.json
 * cannot express (llama q/k/v bias without o bias, qk_norm off for qwen3,
 * ...) is refused, so model_config_load of the result always gives back c. */
int model_config_write(const ModelConfig *c, const char *path, char *err, size_t errlen);

/* Every tensor of the checkpoint, canonical order: embed_tokens; per layer
 * input_layernorm, q_proj.weight/.bias, k_proj.weight/.bias, v_proj.weight/
 * .bias, o_proj.weight/.bias, q_norm, k_norm, post_attention_layernorm,
 * gate_proj, up_proj, down_proj (each .weight then .bias); model.norm;
 * lm_head unless tied, or a reward model's head (model_head_tensor). Absent biases/norms are skipped. *out is malloc'd
 * (caller frees); returns the count. */
int model_tensor_table(const ModelConfig *c, ModelTensorSpec **out);

/* Number of tensors / parameters model_tensor_table lists. */
int model_tensor_count(const ModelConfig *c);
int64_t model_param_count(const ModelConfig *c);

/* 0 if a sequence of T tokens is computed exactly (T <= sliding_window or no
 * window), else -1 with a message. */
int model_config_check_seq_len(const ModelConfig *c, int T, char *err, size_t errlen);

/* The first field on which a and b differ, or NULL when they are equal
 * (field by field: struct padding is not part of the value). */
const char *model_config_difference(const ModelConfig *a, const ModelConfig *b);

/* One-paragraph summary (for `ppa inspect`), snprintf semantics: returns the
 * length the full text needs. */
int model_config_describe(const ModelConfig *c, char *buf, size_t len);

const char *model_type_name(ModelType t);         /* "llama" */
const char *model_architecture_name(ModelType t); /* "LlamaForCausalLM" */
/* The class config.json names: "LlamaForCausalLM", "Qwen2ForSequenceClassification", ... */
const char *model_config_architecture(const ModelConfig *c);
/* The head's tensor: "score.weight", "regression_layer.weight", or NULL for HEAD_LM */
const char *model_head_tensor(const ModelConfig *c);

#endif
