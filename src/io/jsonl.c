/* jsonl.c: line reader and cJSON getters. */
#include "io/jsonl.h"

#include <errno.h>
#include <stdio.h>
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

int jsonl_read_all(const char *path, size_t size, JsonlParseFn parse, void (*free_item)(void *), void *ctx,
                   int skip_invalid, void **items, int *n, long *skipped, char *err, size_t errlen) {
    *items = NULL, *n = 0, *skipped = 0;
    FILE *f = fopen(path, "r");
    if (!f) return snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)), -1;
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line, msg[1024];
    int cap = 0, rc = 0;
    while (jsonl_next(&rd, &line)) {
        if (*n == cap) *items = xrealloc(*items, size * (size_t)(cap = cap ? 2 * cap : 64));
        char *item = (char *)*items + size * (size_t)*n;
        memset(item, 0, size);
        if (!parse(line, rd.line, item, ctx, msg, sizeof msg)) {
            (*n)++;
            continue;
        }
        free_item(item);
        if (!skip_invalid) {
            snprintf(err, errlen, "%s:%ld: %s", path, rd.line, msg);
            rc = -1;
            break;
        }
        fprintf(stderr, "ppa: %s:%ld: skipped: %s\n", path, rd.line, msg);
        (*skipped)++;
    }
    jsonl_free(&rd);
    fclose(f);
    if (rc) {
        for (int i = 0; i < *n; i++) free_item((char *)*items + size * (size_t)i);
        free(*items), *items = NULL, *n = 0;
    }
    return rc;
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
