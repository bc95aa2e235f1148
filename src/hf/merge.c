/* merge.c: `ppa merge`: a base model folder with a LoRA adapter folded into
 * its matrices (W + s B A), written tensor by tensor from the mapped base, so
 * a 7B model merges in about one tensor of memory. */
#include "hf/merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/safetensors.h"
#include "hf/adapter.h"
#include "hf/checkpoint.h"

typedef struct {
    const StSet *st;
    const ModelTensorSpec *specs;
    const float *values;
    const size_t *where; /* [n specs] offset of the target's A in values, or (size_t)-1 */
    const int *target;   /* [n specs] its LORA_TARGETS index */
    const ModelConfig *c;
    const LoraSpec *s;
} Merge;

static void merged(const void *ctx, int i, float *out) {
    const Merge *g = ctx;
    st_to_f32(st_find(g->st, g->specs[i].name), out);
    if (g->where[i] == (size_t)-1) return;
    int o, in;
    lora_dims(g->c, g->target[i], &o, &in);
    const float *A = g->values + g->where[i];
    lora_merge_into(out, A, A + (size_t)g->s->r * in, o, in, g->s->r, lora_scale(g->s));
}

/* where each target's A starts in the adapter's values (lora.h's order) */
static void locate(const ModelConfig *c, const LoraSpec *s, const ModelTensorSpec *specs, int n, size_t *where,
                   int *target) {
    for (int i = 0; i < n; i++) where[i] = (size_t)-1;
    size_t at = 0;
    for (int l = 0; l < c->num_hidden_layers; l++)
        for (int k = 0; k < LORA_N_TARGETS; k++) {
            if (!(s->targets & 1u << k)) continue;
            char name[160];
            int out, in;
            lora_dims(c, k, &out, &in);
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, LORA_MODULES[k]);
            for (int i = 0; i < n; i++)
                if (!strcmp(specs[i].name, name)) where[i] = at, target[i] = k;
            at += (size_t)s->r * (size_t)(in + out);
        }
}

int adapter_merge_folder(const char *base, const char *adapter, const char *out, StDtype dtype, char *err,
                         size_t errlen) {
    ModelConfig c;
    if (model_config_load(&c, base, err, errlen)) return -1;
    if (c.head != HEAD_LM) return snprintf(err, errlen, "%s: ppa merges adapters into causal LMs only", base), -1;
    StSet st;
    if (st_open(&st, base, err, errlen)) return -1;
    char problems[4096];
    if (checkpoint_check(&c, &st, problems, sizeof problems)) {
        snprintf(err, errlen, "%s: the tensors do not match config.json:\n%s", base, problems);
        st_close(&st);
        return -1;
    }
    LoraSpec s;
    float *values;
    if (adapter_read(&c, adapter, &s, &values, err, errlen)) {
        st_close(&st);
        return -1;
    }
    ModelTensorSpec *specs;
    int n = model_tensor_table(&c, &specs);
    size_t *where = xmalloc(sizeof(size_t) * (size_t)n);
    int *target = xcalloc((size_t)n, sizeof(int));
    locate(&c, &s, specs, n, where, target);
    Merge g = {&st, specs, values, where, target, &c, &s};
    snprintf(c.dtype, sizeof c.dtype, "%s", dtype == ST_BF16 ? "bfloat16" : "float32");
    /* the base's tokenizer, template and generation files: the merged model is used as the base was */
    int rc = checkpoint_write_filled_folder(out, &c, specs, n, merged, &g, dtype, base, base, err, errlen);
    free(where), free(target), free(specs), free(values);
    st_close(&st);
    return rc;
}
