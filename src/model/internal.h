/* internal.h: what the files of src/model share, for them and the tests
 * only: the Model struct (model.c: buffers, loading, saving, precision;
 * llama.c: batches and passes; lora.c; decode.c) and the parameters by name
 * and by layer. Other modules use model.h. */
#ifndef PPA_MODEL_INTERNAL_H
#define PPA_MODEL_INTERNAL_H

#include "device/device.h"
#include "io/safetensors.h"
#include "kernels/matmul.h"
#include "model/lora.h"
#include "model/model.h"

/* One layer's tensors inside a buffer (params or grads); NULL where absent. */
#define LAYER_N_TENSORS 16
typedef struct {
    float *attn_norm, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *mlp_norm, *wg, *bg, *wu, *bu, *wd, *bd;
} LayerW;
/* their spec indices (-1: absent), in the same order */
typedef struct {
    int t[LAYER_N_TENSORS];
} LayerIx;

/* Views into the parameters (not copies): layer l's tensors; one tensor by
 * its Hugging Face name (NULL if absent); the LM head's [V, H] weights
 * (embed_tokens when tied). */
LayerW model_layer(const Model *m, int l);
float *model_tensor(const Model *m, const char *name);
float *model_lm_head(const Model *m);

/* The matrices of layer l as product operands (float32, bf16 or both:
 * matmul.h); a layer's matrix when Model trains in bf16 has both. The LM
 * head's (model_lm_weight) and the embedding rows (model_embed): model.h. */
typedef struct {
    Weight q, k, v, o, g, u, d;
} LayerM;
LayerM model_layer_mats(const Model *m, int l);
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
    const Device *dev;      /* where the passes compute (device/device.h): the CPU's table */
    ModelTensorSpec *specs; /* [n_specs] the tensor table */
    size_t *offset;         /* [n_specs] into params / grads, or NO_OFFSET */
    LayerIx *layer_ix;      /* [L] spec index of each layer's tensors (LayerW order), found once at load */
    int ix_embed, ix_norm, ix_head; /* spec index of embed_tokens, model.norm, and the LM head (or reward head) */
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
    ForwardEngine *engine;  /* another engine for model_forward_rows (a GPU's), or NULL */
    Batch *pass;            /* the CPU's batch between model_pass_forward and its backward, or NULL */
    char *dir;              /* the folder it was loaded from, or NULL (an adapter's base_model_name_or_path) */
};

/* the model keeps what a backward needs: it has gradients, or an adapter that is on and has them */
int model_trains(const Model *m);
void lora_free(Lora *a);

/* base + the tensor's offset (params or grads), NULL if absent or not float32 */
float *tensor_at(const Model *m, float *base, const char *name);
LayerW layer_view(const Model *m, float *base, int l);
float *lm_head(const Model *m, float *base);
float *final_norm(const Model *m, float *base);
float *embed_tokens(const Model *m, float *base);

#endif
