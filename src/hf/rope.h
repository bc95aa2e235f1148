/* rope.h: RoPE as config.json describes it: the scaling types (default,
 * linear, llama3), the v4 form (rope_theta + rope_scaling) and the v5 form
 * (rope_parameters), which must agree when both appear, and the inverse
 * frequencies they give. The cos/sin table and the rotation are the
 * kernels' (kernels/kernels.h: rope_table, rope_apply). */
#ifndef PPA_HF_ROPE_H
#define PPA_HF_ROPE_H

#include <cjson/cJSON.h>

#include "hf/config_get.h"

typedef enum { ROPE_DEFAULT, ROPE_LINEAR, ROPE_LLAMA3 } RopeType;

typedef struct {
    RopeType type;
    double theta;            /* rope_theta */
    double factor;           /* linear and llama3; 1 for default */
    double low_freq_factor;  /* llama3, else 0 */
    double high_freq_factor; /* llama3, else 0 */
    int original_max_position_embeddings; /* llama3, else 0 */
} RopeConfig;

/* "default", "linear", "llama3" ("?" for another value) */
const char *rope_type_name(RopeType t);
/* *r from the config's root object: rope_theta + rope_scaling (v4) and
 * rope_parameters (v5). 0, or -1 with the field named through x. */
int rope_parse(const Ctx *x, const cJSON *root, RopeConfig *r);
/* inv_freq [head_dim/2]: 1 / theta^(2j/HS), then linear (/ factor) or the
 * llama3 rule of formats.md e.3. In double; transformers computes the same
 * values in float32. */
void rope_inv_freq(const RopeConfig *r, int head_dim, double *inv_freq);

#endif
