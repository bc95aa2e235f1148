/* config_get.c: the typed getters of config.json's fields (config_get.h). */
#include "hf/config_get.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Writes "name: message" into err; returns -1 so callers can `return config_fail(...)`. */
int config_fail(const Ctx *x, const char *fmt, ...) {
    if (!x->errlen) return -1;
    int n = snprintf(x->err, x->errlen, "%s: ", x->name);
    if (n >= 0 && (size_t)n < x->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A JSON value as it reads in the file, cut to fit messages. */
void config_show(const cJSON *it, char *buf, size_t n) {
    if (cJSON_IsNumber(it) && !isfinite(it->valuedouble)) { /* cJSON reads 1e400 as inf and prints it as null */
        snprintf(buf, n, "a number that overflows a double");
        return;
    }
    char *s = cJSON_PrintUnformatted(it);
    if (!s) {
        snprintf(buf, n, "?");
        return;
    }
    if (strlen(s) > 40) snprintf(buf, n, "%.37s...", s);
    else snprintf(buf, n, "%s", s);
    cJSON_free(s);
}

/* The member, or NULL when it is absent or JSON null: for every optional
 * field, null means "not set", as it does for transformers. */
const cJSON *config_member(const cJSON *obj, const char *key) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return it && !cJSON_IsNull(it) ? it : NULL;
}

int config_missing(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, const char *expect) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return config_fail(x, "%s \"%s%s\" (expected %s)", it ? "null field" : "missing field", prefix, key, expect);
}

/* *out = obj[key], an integer in [lo, hi]. Absent or null: *out = def, or an
 * error when required. Returns 1 if the value was present, 0 if not, -1. */
int config_get_int(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, int required, int def,
                          long long lo, long long hi, int *out) {
    char expect[64], v[48];
    if (lo == 1) snprintf(expect, sizeof expect, "a positive integer, at most %lld", hi);
    else snprintf(expect, sizeof expect, "an integer in %lld..%lld", lo, hi);
    const cJSON *it = config_member(obj, key);
    if (!it) {
        if (required) return config_missing(x, obj, prefix, key, expect);
        *out = def;
        return 0;
    }
    config_show(it, v, sizeof v);
    if (!cJSON_IsNumber(it)) return config_fail(x, "%s%s = %s is not a number (expected %s)", prefix, key, v, expect);
    double d = it->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi)
        return config_fail(x, "%s%s = %s (expected %s)", prefix, key, v, expect);
    *out = (int)d;
    return 1;
}

/* *out = obj[key], a finite number, > 0 when positive. Same returns as get_int. */
int config_get_double(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, int required, double def,
                             int positive, double *out) {
    const char *expect = positive ? "a number > 0" : "a finite number";
    char v[48];
    const cJSON *it = config_member(obj, key);
    if (!it) {
        if (required) return config_missing(x, obj, prefix, key, expect);
        *out = def;
        return 0;
    }
    config_show(it, v, sizeof v);
    if (!cJSON_IsNumber(it)) return config_fail(x, "%s%s = %s is not a number (expected %s)", prefix, key, v, expect);
    double d = it->valuedouble;
    if (!isfinite(d) || (positive && !(d > 0)))
        return config_fail(x, "%s%s = %s (expected %s)", prefix, key, v, expect);
    *out = d;
    return 1;
}

int config_get_bool(const Ctx *x, const cJSON *obj, const char *key, int def, int *out) {
    const cJSON *it = config_member(obj, key);
    if (!it) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(it)) {
        char v[48];
        config_show(it, v, sizeof v);
        return config_fail(x, "%s = %s (expected true or false)", key, v);
    }
    *out = cJSON_IsTrue(it);
    return 1;
}

/* *out = obj[key] as a string, or NULL when absent or null. */
int config_get_string(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, const char *expect,
                             const char **out) {
    const cJSON *it = config_member(obj, key);
    *out = NULL;
    if (!it) return 0;
    if (!cJSON_IsString(it)) {
        char v[48];
        config_show(it, v, sizeof v);
        return config_fail(x, "%s%s = %s is not a string (expected %s)", prefix, key, v, expect);
    }
    *out = it->valuestring;
    return 1;
}
