/* model_internal.h: the Model struct, shared by model.c (buffers, loading,
 * saving, precision) and llama.c (batches and passes); not for other modules. */
#ifndef PPA_MODEL_INTERNAL_H
#define PPA_MODEL_INTERNAL_H

#include "io/safetensors.h"
#include "model/llama_internal.h"
#include "model/lora.h"

#define NO_OFFSET ((size_t)-1) /* a tensor with no float32 copy (frozen bf16 matrices) */

/* A LoRA adapter (lora.h): its parameters in one buffer, target k of layer l
 * at off[7 l + k] (A [r, in], then B [out, r]), NO_OFFSET when not a target */
typedef struct {
    LoraSpec s;
    float scale;
    size_t n;
    float *params, *grads; /* [n]; grads allocated on first use */
    size_t *off;           /* [L * 7] */
    int enabled, drop_on;
    uint64_t drop_key;
    float *work; /* the input as it enters A, u = x A^T and its gradient, kept between calls */
    size_t work_n;
} Lora;

struct Model {
    ModelConfig c;
    ModelTensorSpec *specs; /* [n_specs] the tensor table */
    size_t *offset;         /* [n_specs] into params / grads, or NO_OFFSET */
    int *mat_spec;          /* [L * 7] spec index of each layer's q, k, v, o, gate, up, down (LayerM order) */
    int n_specs;
    size_t n_params;        /* parameters of the model */
    size_t n_f32;           /* floats in params: n_params, or the vectors alone when frozen */
    float *params, *grads;
    int bf16;               /* products in bf16 (matmul.h) */
    int frozen;             /* bf16 weights only: no float32 matrices, no gradients */
    int gc;                 /* gradient checkpointing: batches keep one layer's activations */
    int low_memory;         /* model_low_memory: gradients released, activations freed in the backward */
    bf16 **wb;              /* [n_specs] bf16 copy of each matrix (NULL for vectors), or NULL */
    bf16 *wbuf;             /* owned storage behind wb (what is not mapped from st) */
    StSet st;               /* a frozen model's checkpoint, kept mapped: wb and embed point into it */
    const StTensor *embed;  /* a frozen model's embed_tokens in st (rows read by model_embed) */
    double *inv_freq;       /* [HS / 2] */
    float *arena;           /* activations of the current batch, kept between batches: */
    size_t arena_n;         /* fresh buffers every step would cost page faults */
    float *scratch;         /* the backward's buffers, kept likewise */
    size_t scratch_n;
    float *lmwork;          /* the LM head's chunk buffers, kept likewise */
    size_t lmwork_n;
    float *lmkeep;          /* the forward's softmax for the backward (lmhead_forward; bf16 in bf16 models) */
    size_t lmkeep_n;        /* floats */
    size_t lmkeep_max;      /* bytes: the limit set by model_keep_softmax */
    bf16 *btmp;             /* bf16 scratch of the products */
    size_t btmp_n;
    Lora *lora;             /* the adapter, or NULL; with one, the base is frozen */
    char *dir;              /* the folder it was loaded from, or NULL (an adapter's base_model_name_or_path) */
};

/* the model keeps what a backward needs: it has gradients, or an adapter that is on and has them */
int model_trains(const Model *m);
void lora_free(Lora *a);

/* base + the tensor's offset (params or grads), NULL if absent or not float32 */
float *tensor_at(const Model *m, float *base, const char *name);
LayerW layer_view(const Model *m, float *base, int l);
float *lm_head(const Model *m, float *base);

#endif
