/* adapter.h: PEFT's LoRA adapter folder, read and written as PEFT does:
 *   adapter_config.json   peft_type "LORA", r, lora_alpha, lora_dropout,
 *                         target_modules, use_rslora, bias "none",
 *                         task_type "CAUSAL_LM", base_model_name_or_path, ...
 *                         (keys sorted, indent 2, as PEFT's save_pretrained)
 *   adapter_model.safetensors
 *       base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight [r, in]
 *       base_model.model.model.layers.N.self_attn.q_proj.lora_B.weight [out, r]
 *       ... for every target of every layer (mlp.gate_proj, ...), float32.
 * What ppa does not compute is refused by name on reading, never ignored:
 * DoRA, biases, modules_to_save, per-module ranks or alphas
 * (rank_pattern, alpha_pattern), layers_to_transform, fan_in_fan_out, target
 * names outside the seven linear layers, a regular expression for
 * target_modules, a pickled adapter_model.bin. */
#ifndef PPA_ADAPTER_H
#define PPA_ADAPTER_H

#include <stddef.h>

#include "hf/config.h"

/* ---- the spec: PEFT's LoraConfig as ppa computes it (model/lora.h has the mathematics) ---- */

#define LORA_N_TARGETS 7
extern const char *const LORA_TARGETS[LORA_N_TARGETS]; /* q_proj ... down_proj, LayerM order */
extern const char *const LORA_MODULES[LORA_N_TARGETS]; /* their modules in a layer: self_attn.q_proj ... */
#define LORA_ALL_TARGETS ((1u << LORA_N_TARGETS) - 1)

typedef struct {
    int r;            /* rank >= 1 */
    double alpha;     /* lora_alpha */
    double dropout;   /* lora_dropout: the probability of zeroing an input element in training, [0, 1) */
    int rslora;       /* use_rslora: s = alpha / sqrt(r) */
    unsigned targets; /* bit k: LORA_TARGETS[k] */
    int task;         /* adapter_config.json's task_type: 0 not given, 1 CAUSAL_LM, 2 SEQ_CLS (checked against the model) */
} LoraSpec;

double lora_scale(const LoraSpec *s);
/* [out, in] of target k's base matrix in a model of config c */
void lora_dims(const ModelConfig *c, int k, int *out, int *in);
/* floats of an adapter of spec s on a model of config c */
size_t lora_size(const ModelConfig *c, const LoraSpec *s);
/* "all-linear", or a comma-separated list of LORA_TARGETS names (each at most once); 0 or -1 with err */
int lora_parse_targets(const char *list, unsigned *mask, char *err, size_t errlen);
/* the names of mask, comma-separated, in LORA_TARGETS order */
void lora_targets_text(unsigned mask, char *buf, size_t n);

/* W [out, in] += s B A (A [r, in], B [out, r]), each element summed in
 * double and rounded once: PEFT's merge, in float32. */
void lora_merge_into(float *W, const float *A, const float *B, int out, int in, int r, double s);

/* ---- the folder ---- */

/* 1 if dir holds adapter_config.json */
int adapter_is_folder(const char *dir);
/* Reads dir/adapter_config.json into s; 0 or -1 with "DIR/adapter_config.json: why". */
int adapter_read_spec(const char *dir, LoraSpec *s, char *err, size_t errlen);
/* Reads the folder for a model of config c: its spec, and the values of
 * every A and B in the adapter's order (lora_size: every layer, its targets in LORA_TARGETS order, A then B) (*values, owned by the caller). */
int adapter_read(const ModelConfig *c, const char *dir, LoraSpec *s, float **values, char *err, size_t errlen);
/* Writes dir as PEFT writes an adapter folder (atomically: a temporary
 * folder renamed into place; an existing non-empty dir is refused):
 * adapter_config.json of s with base_model_name_or_path = base (or null),
 * adapter_model.safetensors of values [lora_size(c, s)] in lora.h's order,
 * and the tokenizer and template files of tokenizer_dir when it is not
 * NULL (checkpoint_tokenizer_files); no generation_config.json, as PEFT. */
int adapter_write(const char *dir, const ModelConfig *c, const LoraSpec *s, const float *values, const char *base,
                  const char *tokenizer_dir, char *err, size_t errlen);
/* values [lora_size(c, s)] under the adapter's tensor names, one safetensors file (gradients) */
int adapter_write_tensors(const char *path, const ModelConfig *c, const LoraSpec *s, const float *values, char *err,
                          size_t errlen);
/* PEFT's name of target k of layer l's A (b = 0) or B (b = 1) */
void adapter_tensor_name(char *buf, size_t n, int l, int k, int b);

#endif
