/* jsonl.c: line reader and cJSON getters. */
#include "io/jsonl.h"

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/common.h"

static size_t max_line = JSONL_MAX_LINE_DEFAULT;

void jsonl_set_max_line(size_t bytes) { max_line = bytes ? bytes : JSONL_MAX_LINE_DEFAULT; }

size_t jsonl_max_line(void) { return max_line; }

void json_put_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') fputc('\\', f), fputc(ch, f);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch == '\t') fputs("\\t", f);
        else if (ch == '\r') fputs("\\r", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

void jsonl_init(JsonlReader *r, FILE *f, const char *name) { *r = (JsonlReader){f, name, 0, 0, max_line, NULL, 0}; }

/* One line into r->buf (without its newline), at most r->max_line bytes; -1 at end of input. */
static long read_line(JsonlReader *r) {
    size_t n = 0;
    int c, any = 0;
    while ((c = getc_unlocked(r->f)) != EOF) {
        any = 1;
        if (c == '\n') break;
        if (n == r->max_line)
            ppa_die(2, "%s:%ld: a line longer than %zu bytes (raise the limit with --max-line-bytes)", r->name,
                    r->line + 1, r->max_line);
        if (n + 1 >= r->cap) {
            r->cap = r->cap ? 2 * r->cap : 4096;
            if (r->cap > r->max_line + 1) r->cap = r->max_line + 1;
            if (r->cap < n + 2) r->cap = n + 2;
            r->buf = xrealloc(r->buf, r->cap);
        }
        r->buf[n++] = (char)c;
    }
    if (ferror(r->f)) ppa_die(1, "%s:%ld: read error: %s", r->name, r->line + 1, strerror(errno));
    if (!any) return -1;
    if (!r->buf) r->buf = xmalloc(r->cap = 1);
    r->buf[n] = 0;
    return (long)n;
}

int jsonl_next(JsonlReader *r, char **line) {
    long len;
    while ((len = read_line(r)) >= 0) {
        r->line++;
        size_t i = 0;
        while (i < (size_t)len && (r->buf[i] == ' ' || r->buf[i] == '\t' || r->buf[i] == '\r')) i++;
        if (i < (size_t)len) {
            *line = r->buf, r->len = (size_t)len;
            return 1;
        }
    }
    return 0;
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
