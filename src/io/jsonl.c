/* jsonl.c: line reader and cJSON getters. */
#include "io/jsonl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/common.h"

void jsonl_init(JsonlReader *r, FILE *f, const char *name) { *r = (JsonlReader){f, name, 0, NULL, 0}; }

int jsonl_next(JsonlReader *r, char **line) {
    for (;;) {
        errno = 0;
        ssize_t len = getline(&r->buf, &r->cap, r->f);
        if (len < 0) {
            if (ferror(r->f)) ppa_die(1, "%s:%ld: read error: %s", r->name, r->line + 1, strerror(errno));
            return 0;
        }
        r->line++;
        size_t i = 0;
        while (r->buf[i] == ' ' || r->buf[i] == '\t' || r->buf[i] == '\r' || r->buf[i] == '\n') i++;
        if (r->buf[i]) {
            *line = r->buf;
            return 1;
        }
    }
}

void jsonl_free(JsonlReader *r) {
    free(r->buf);
    r->buf = NULL;
}

int json_number_array(const cJSON *obj, const char *field, int allow_null, double **buf, int *cap, char *err,
                      size_t errlen) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!arr) {
        snprintf(err, errlen, "missing field \"%s\"", field);
        return -1;
    }
    if (!cJSON_IsArray(arr)) {
        snprintf(err, errlen, "\"%s\" must be an array of numbers", field);
        return -1;
    }
    int n = cJSON_GetArraySize(arr), i = 0;
    if (n > *cap) {
        *cap = n;
        *buf = xrealloc(*buf, sizeof(double) * (size_t)n);
    }
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        if (cJSON_IsNull(it) && allow_null) {
            (*buf)[i] = NAN;
            continue;
        }
        if (!cJSON_IsNumber(it)) {
            snprintf(err, errlen, "\"%s\"[%d] is not a number%s", field, i, allow_null ? " or null" : "");
            return -1;
        }
        if (!isfinite(it->valuedouble)) {
            snprintf(err, errlen, "\"%s\"[%d] is not a finite number", field, i);
            return -1;
        }
        (*buf)[i] = it->valuedouble;
    }
    return n;
}

void json_print_number(FILE *f, double x) {
    if (isfinite(x)) fprintf(f, "%.17g", x);
    else fputs("null", f);
}
