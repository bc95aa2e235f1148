/* internal.h: what config.c (config.json read) and config_write.c (written
 * back) share, for them only: the model types' table with their transformers
 * class defaults, and the file's path. Not part of the public config.h. */
#ifndef PPA_HF_INTERNAL_H
#define PPA_HF_INTERNAL_H

#include <stddef.h>

#include "hf/config.h"

/* ---- model types and their transformers class defaults (config.c) ---- */

typedef struct {
    const char *model_type, *architecture, *seqcls; /* the causal-LM and sequence-classification classes */
    int max_position_embeddings;
    int kv_heads;    /* 0: = num_attention_heads (LlamaConfig: None) */
    int head_dim;    /* 0: hidden_size / num_attention_heads */
    int bos, eos;    /* -1: None */
} TypeInfo;

/* sized, so that PPA_ARRAY_LEN works in every includer */
extern const TypeInfo CONFIG_TYPES[MODEL_QWEN3 + 1];

/* "dir/config.json" when path is a folder, else a copy of path (malloc'd). */
char *config_path(const char *path);

#endif
