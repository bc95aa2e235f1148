/* config_get.h: the typed getters of config.json's fields, whose messages
 * name the file and the field ("config.json: rope_theta = -1 (expected a
 * number > 0)"). Below both config.c (the whole file) and rope.c (its RoPE
 * fields), so that neither needs the other's internals. */
#ifndef PPA_HF_CONFIG_GET_H
#define PPA_HF_CONFIG_GET_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct {
    const char *name; /* file name for messages */
    char *err;
    size_t errlen;
} Ctx;

/* Writes "name: message" into err; returns -1 so callers can `return config_fail(...)`. */
int config_fail(const Ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON value as it reads in the file, cut to fit messages (buf [n]). */
void config_show(const cJSON *it, char *buf, size_t n);

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
int config_get_bool(const Ctx *x, const cJSON *obj, const char *key, int def, int *out);
int config_get_string(const Ctx *x, const cJSON *obj, const char *prefix, const char *key, const char *expect,
                      const char **out);

#endif
