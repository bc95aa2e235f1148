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
 * PEFT's folder (adapter_config.json, adapter_model.safetensors under
 * base_model.model.<module>.lora_A.weight names) is read and written by
 * hf/adapter.c. */
#ifndef PPA_LORA_H
#define PPA_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

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
/* The views of target k of layer l in the adapter's parameters and
 * gradients: A [r, in], B [out, r]; NULL when k is not a target. */
typedef struct {
    float *A, *B, *dA, *dB;
    int r, in, out;
    float scale;
} LoraView;
LoraView model_lora_view(Model *m, int l, int k);
/* W [out, in] += s B A (A [r, in], B [out, r]), each element summed in
 * double and rounded once: PEFT's merge, in float32. */
void lora_merge_into(float *W, const float *A, const float *B, int out, int in, int r, double s);

#endif
