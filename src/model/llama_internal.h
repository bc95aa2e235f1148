/* llama_internal.h: the model's parameters by name, for other modules of
 * src/model (the decoder) and for tests; not part of the public llama.h. */
#ifndef PPA_LLAMA_INTERNAL_H
#define PPA_LLAMA_INTERNAL_H

#include "model/model.h"
#include "kernels/matmul.h"

/* One layer's tensors inside a buffer (params or grads); NULL where absent. */
typedef struct {
    float *attn_norm, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *mlp_norm, *wg, *bg, *wu, *bu, *wd, *bd;
} LayerW;

/* Views into the parameters (not copies): layer l's tensors; one tensor by
 * its Hugging Face name (NULL if absent); the LM head's [V, H] weights
 * (embed_tokens when tied). */
LayerW model_layer(const Model *m, int l);
float *model_tensor(const Model *m, const char *name);
float *model_lm_head(const Model *m);

/* The matrices of layer l and the LM head as product operands (float32, bf16
 * or both: matmul.h); a layer's or the head's matrix when Model trains in bf16
 * has both. */
typedef struct {
    Weight q, k, v, o, g, u, d;
} LayerM;
LayerM model_layer_mats(const Model *m, int l);
Weight model_lm_weight(const Model *m);
/* x [T, H] = the embeddings of ids [T] (float32, widened from bf16 when frozen) */
void model_embed(const Model *m, const int *ids, int T, float *x);
/* A LoRA adapter's term of target k (LayerM order) of layer l, when the
 * model has one and it is on (lora.c): y[T, out] += s (x A^T) B^T; its
 * backward dx[T, in] += ..., and into the adapter's gradients. x as the base
 * product takes it, rows of length in. */
void lora_forward(Model *m, int l, int k, float *y, Act x, int T);
void lora_backward(Model *m, int l, int k, float *dx, const float *dy, Act x, int T);
/* 1 when target k of layer l has an adapter that is on */
int lora_active(const Model *m, int l, int k);
/* bf16 scratch of at least n elements, kept in the model */
bf16 *model_btmp(Model *m, size_t n);

#endif
