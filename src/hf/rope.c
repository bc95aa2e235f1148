/* rope.c: RoPE as config.json describes it and the frequencies it gives
 * (rope.h). Not here: the v4 form written back (config_write.c). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf/rope.h"

#include "core/common.h"

#define DEFAULT_ROPE_THETA 10000.0 /* every one of the four config classes */

static const char *const NAMES[] = {
    [ROPE_DEFAULT] = "default",
    [ROPE_LINEAR] = "linear",
    [ROPE_LLAMA3] = "llama3",
};

const char *rope_type_name(RopeType t) {
    return (unsigned)t < PPA_ARRAY_LEN(NAMES) ? NAMES[t] : "?";
}

/* ---- rope_scaling (v4) and rope_parameters (v5) --------------------------- */

static int rope_type_of(const Ctx *x, const cJSON *d, const char *key, int required, RopeType *t) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s.", key);
    const char *a, *b, *expect = "\"default\", \"linear\" or \"llama3\"";
    if (config_get_string(x, d, prefix, "rope_type", expect, &a) < 0 ||
        config_get_string(x, d, prefix, "type", expect, &b) < 0)
        return -1;
    if (a && b && strcmp(a, b))
        return config_fail(x, "%s.rope_type = \"%s\" and %s.type = \"%s\" disagree (expected one RoPE type)", key, a,
                           key, b);
    const char *name = a ? a : b;
    if (!name) {
        if (required) return config_missing(x, d, prefix, "rope_type", expect);
        name = "default";
    }
    for (size_t i = 0; i < PPA_ARRAY_LEN(NAMES); i++)
        if (!strcmp(name, NAMES[i])) {
            *t = (RopeType)i;
            return 0;
        }
    return config_fail(x, "%s.rope_type = \"%s\" is not supported (expected %s; ppa does not implement dynamic, yarn, "
                          "longrope or other scalings)", key, name, expect);
}

/* Reads one RoPE dict (v4 rope_scaling or v5 rope_parameters) into r;
 * *theta_set tells whether it carried rope_theta. */
static int parse_rope_dict(const Ctx *x, const cJSON *d, const char *key, RopeConfig *r, int *theta_set) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s.", key);
    if (!cJSON_IsObject(d)) return config_fail(x, "%s is not an object (expected an object or null)", key);
    for (const cJSON *it = d->child; it; it = it->next)
        if (cJSON_IsObject(it))
            return config_fail(x, "%s.%s: per-layer-type RoPE is not supported (expected one flat RoPE object)", key,
                               it->string);
    if (rope_type_of(x, d, key, !strcmp(key, "rope_scaling"), &r->type) < 0) return -1;
    double prf;
    if (config_get_double(x, d, prefix, "partial_rotary_factor", 0, 1.0, 1, &prf) < 0) return -1;
    if (prf != 1.0) return config_fail(x, "%s.partial_rotary_factor = %g is not supported (expected 1)", key, prf);
    if ((*theta_set = config_get_double(x, d, prefix, "rope_theta", 0, DEFAULT_ROPE_THETA, 1, &r->theta)) < 0)
        return -1;
    r->factor = 1.0;
    if (r->type == ROPE_DEFAULT) return 0;
    if (config_get_double(x, d, prefix, "factor", 1, 0, 1, &r->factor) < 0) return -1;
    if (r->type == ROPE_LINEAR) return 0;
    if (config_get_double(x, d, prefix, "low_freq_factor", 1, 0, 1, &r->low_freq_factor) < 0 ||
        config_get_double(x, d, prefix, "high_freq_factor", 1, 0, 1, &r->high_freq_factor) < 0 ||
        config_get_int(x, d, prefix, "original_max_position_embeddings", 1, 0, 1, INT_MAX,
                       &r->original_max_position_embeddings) < 0)
        return -1;
    if (!(r->high_freq_factor > r->low_freq_factor))
        return config_fail(x, "%s.high_freq_factor = %g is not above %s.low_freq_factor = %g (expected high > low)",
                           key, r->high_freq_factor, key, r->low_freq_factor);
    return 0;
}

/* The first field on which two RoPE dicts differ (theta aside), or NULL. */
static const char *rope_difference(const RopeConfig *a, const RopeConfig *b, char *va, char *vb, size_t n) {
    if (a->type != b->type) {
        snprintf(va, n, "\"%s\"", NAMES[a->type]);
        snprintf(vb, n, "\"%s\"", NAMES[b->type]);
        return "rope_type";
    }
    const struct {
        const char *name;
        double x, y;
    } f[] = {{"factor", a->factor, b->factor},
             {"low_freq_factor", a->low_freq_factor, b->low_freq_factor},
             {"high_freq_factor", a->high_freq_factor, b->high_freq_factor},
             {"original_max_position_embeddings", a->original_max_position_embeddings,
              b->original_max_position_embeddings}};
    for (size_t i = 0; i < PPA_ARRAY_LEN(f); i++)
        if (f[i].x != f[i].y) {
            snprintf(va, n, "%.17g", f[i].x);
            snprintf(vb, n, "%.17g", f[i].y);
            return f[i].name;
        }
    return NULL;
}

/* rope_theta + rope_scaling (v4) and rope_parameters (v5): either, or both
 * when they agree. */
int rope_parse(const Ctx *x, const cJSON *root, RopeConfig *out) {
    double top_theta, prf;
    int top_set, v5_theta_set = 0, v4_theta_set = 0;
    if ((top_set = config_get_double(x, root, "", "rope_theta", 0, DEFAULT_ROPE_THETA, 1, &top_theta)) < 0) return -1;
    if (config_get_double(x, root, "", "partial_rotary_factor", 0, 1.0, 1, &prf) < 0) return -1;
    if (prf != 1.0)
        return config_fail(x, "partial_rotary_factor = %g is not supported (expected 1: RoPE on every dim)", prf);
    const cJSON *v4 = config_member(root, "rope_scaling"), *v5 = config_member(root, "rope_parameters");
    RopeConfig r4 = {ROPE_DEFAULT, DEFAULT_ROPE_THETA, 1.0, 0, 0, 0}, r5 = r4;
    if (v4 && parse_rope_dict(x, v4, "rope_scaling", &r4, &v4_theta_set) < 0) return -1;
    if (v5 && parse_rope_dict(x, v5, "rope_parameters", &r5, &v5_theta_set) < 0) return -1;
    char a[32], b[32];
    const char *diff = v4 && v5 ? rope_difference(&r5, &r4, a, b, sizeof a) : NULL;
    if (diff)
        return config_fail(x, "rope_parameters.%s = %s and rope_scaling.%s = %s disagree (expected one of the two "
                              "dicts, or the same values in both)", diff, a, diff, b);
    if (v5_theta_set && top_set && r5.theta != top_theta)
        return config_fail(x, "rope_parameters.rope_theta = %.17g and rope_theta = %.17g disagree (expected one value)",
                           r5.theta, top_theta);
    *out = v5 ? r5 : r4;
    out->theta = v5_theta_set ? r5.theta : top_theta;
    /* not a v4 key, but v5 reads rope_scaling as rope_parameters */
    if (v4 && v4_theta_set && r4.theta != out->theta)
        return config_fail(x, "rope_scaling.rope_theta = %.17g and rope_theta = %.17g disagree (expected one value)",
                           r4.theta, out->theta);
    return 0;
}

/* ---- RoPE inverse frequencies --------------------------------------------------- */

void rope_inv_freq(const RopeConfig *r, int hd, double *inv_freq /* [hd/2] */) {
    for (int j = 0; j < hd / 2; j++) {
        double f = 1.0 / pow(r->theta, (double)(2 * j) / hd); /* transformers: 1 / base^(arange(0, hd, 2)/hd) */
        if (r->type == ROPE_LINEAR) f /= r->factor;
        if (r->type == ROPE_LLAMA3) {
            const double orig = r->original_max_position_embeddings, lo = r->low_freq_factor, hi = r->high_freq_factor;
            const double wavelen = 2 * M_PI / f;
            if (wavelen > orig / lo) f /= r->factor;                /* low frequencies: interpolate */
            else if (!(wavelen < orig / hi)) {                      /* the band between: blend */
                const double smooth = (orig / wavelen - lo) / (hi - lo);
                f = (1 - smooth) * f / r->factor + smooth * f;
            }                                                       /* high frequencies: unchanged */
        }
        inv_freq[j] = f;
    }
}
