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

#include "model/model.h"
#include "model/lora.h"

/* 1 if dir holds adapter_config.json */
int adapter_is_folder(const char *dir);
/* Reads dir/adapter_config.json into s; 0 or -1 with "DIR/adapter_config.json: why". */
int adapter_read_spec(const char *dir, LoraSpec *s, char *err, size_t errlen);
/* Reads the folder for a model of config c: its spec, and the values of
 * every A and B in lora.h's order (*values, owned by the caller). */
int adapter_read(const ModelConfig *c, const char *dir, LoraSpec *s, float **values, char *err, size_t errlen);
/* Reads the folder and attaches the adapter to m (its shapes checked against m). */
int adapter_load(Model *m, const char *dir, char *err, size_t errlen);
/* Writes m's adapter as the folder dir (atomically: a temporary folder
 * renamed into place; an existing non-empty dir is refused), with the
 * tokenizer files of tokenizer_dir when it is not NULL. */
int adapter_save(const Model *m, const char *dir, const char *tokenizer_dir, char *err, size_t errlen);
/* The adapter's gradients under the same tensor names, one safetensors file. */
int adapter_save_grads(const Model *m, const char *path, char *err, size_t errlen);
/* PEFT's name of target k of layer l's A (b = 0) or B (b = 1) */
void adapter_tensor_name(char *buf, size_t n, int l, int k, int b);

#endif
