/* llama_internal.h: the model's parameters by name, for other modules of
 * src/model (the decoder) and for tests; not part of the public llama.h. */
#ifndef PPA_LLAMA_INTERNAL_H
#define PPA_LLAMA_INTERNAL_H

#include "model/llama.h"

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

#endif
