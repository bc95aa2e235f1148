/* config_internal.h: what the files of the config module share, for them
 * only (config.c reads config.json, rope.c its RoPE fields, config_write.c
 * writes it back): the type table, the RoPE type names, the error context
 * and the typed getters whose messages name the file and the field.
 * Not part of the public config.h; tensors.c needs none of it. */
#ifndef PPA_MODEL_CONFIG_INTERNAL_H
#define PPA_MODEL_CONFIG_INTERNAL_H

#include <stddef.h>

#include <cjson/cJSON.h>

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
extern const char *const CONFIG_ROPE_NAMES[ROPE_LLAMA3 + 1]; /* rope.c */

/* ---- error context and typed getters (config.c) ---- */

typedef struct {
    const char *name; /* file name for messages */
    char *err;
    size_t errlen;
} Ctx;

/* Writes "name: message" into err; returns -1 so callers can `return config_fail(...)`. */
int config_fail(const Ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The member, or NULL when it is absent or JSON null. */
const cJSON *config_member(const cJSON *obj, const char *key);
/* "missing field" or "null field" message; returns -1. */
int config_missing(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, const char *expect);
/* obj[key] into *out; absent or null: the default, or an error when
 * required. Return 1 if the value was present, 0 if not, -1 on error. */
int config_get_int(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, int required, int def,
                   long long lo, long long hi, int *out);
int config_get_double(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, int required,
                      double def, int positive, double *out);
int config_get_string(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, const char *expect,
                      const char **out);
/* Refuses an object that has a key twice (Python keeps the last, cJSON the first). */

/* "dir/config.json" when path is a folder, else a copy of path (malloc'd). */
char *config_path(const char *path);

/* ---- RoPE (rope.c) ---- */

/* c->rope from rope_theta + rope_scaling (v4) and rope_parameters (v5). */
int config_parse_rope(const Ctx *x, const cJSON *root, ModelConfig *c);

#endif
