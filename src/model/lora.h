/* lora.h: LoRA adapters as PEFT defines them, on a model's seven linear
 * layers (q, k, v, o, gate, up, down). On a target W [out, in]:
 *     y = x W^T + s (dropout(x) A^T) B^T,   A [r, in], B [out, r],
 *     s = alpha / r, or alpha / sqrt(r) with use_rslora.
 * The base is frozen: once an adapter is attached, the model's trainable
 * parameters (model_params, model_grads, model_n_params, AdamW) are the
 * adapter's, every A then B of layer 0's targets in LayerM order, then layer
 * 1's, ...; the base weights get no gradient. Switched off, the model is its
 * base, bit for bit (the reference of a LoRA run, as TRL's DPO uses it).
 * The adapter's products run in float32 (r is small: they cost ~r/in of the
 * base product), from the bf16-rounded input in a bf16 model.
 * The spec (LoraSpec, targets, dims) and PEFT's folder (adapter_config.json,
 * adapter_model.safetensors under base_model.model.<module>.lora_A.weight
 * names) are the format's: hf/adapter.h. */
#ifndef PPA_LORA_H
#define PPA_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "hf/adapter.h"
#include "model/model.h"

/* A new adapter as PEFT initialises it: A ~ U(-1/sqrt(in), 1/sqrt(in))
 * (Kaiming-uniform with a = sqrt(5)) from a stream fixed by seed, B = 0, so
 * the adapted model computes exactly what its base does. -1 with err when
 * the spec does not fit the model, or the model has an adapter. */
int model_lora_new(Model *m, const LoraSpec *s, uint64_t seed, char *err, size_t errlen);
/* An adapter with the given values: A and B of every target in the order
 * above ([r, in] then [out, r] each), copied. */
int model_lora_attach(Model *m, const LoraSpec *s, const float *values, char *err, size_t errlen);
/* NULL when the model has no adapter */
const LoraSpec *model_lora(const Model *m);
/* Off: the base alone (the adapter kept); on again: adapted. */
void model_lora_enable(Model *m, int on);
int model_lora_enabled(const Model *m);
/* Training-time dropout: on with a key that fixes every mask (the same key,
 * the same masks: a recomputing backward and a resumed run draw the same);
 * off (the default) for scoring, evaluation and sampling. */
void model_lora_dropout(Model *m, int on, uint64_t key);
/* 1 with its key when dropout is on and drops (lora_dropout > 0): what an engine beside the passes reads */
int model_lora_dropping(const Model *m, uint64_t *key);
/* The views of target k of layer l in the adapter's parameters and
 * gradients: A [r, in], B [out, r]; NULL when k is not a target. */
typedef struct {
    float *A, *B, *dA, *dB;
    int r, in, out;
    float scale;
} LoraView;
LoraView model_lora_view(Model *m, int l, int k);
/* PEFT's folder (hf/adapter.h) and the model's adapter: dir read and
 * attached to m (its shapes checked against m); m's adapter written as the
 * folder dir (atomically; an existing non-empty dir is refused) with the
 * tokenizer and template files of tokenizer_dir (hf/carry.h) when not NULL
 * and, as PEFT, no generation_config.json; its gradients under the
 * same tensor names, one safetensors file. A model with an adapter is saved
 * with these, never model_save: the caller chooses. 0 or -1 with err. */
int lora_load(Model *m, const char *dir, char *err, size_t errlen);
int lora_save(const Model *m, const char *dir, const char *tokenizer_dir, char *err, size_t errlen);
int lora_save_grads(const Model *m, const char *path, char *err, size_t errlen);

#endif
