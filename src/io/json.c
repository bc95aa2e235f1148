/* json.c: strict JSON texts (json.h): a scan for what cJSON lets through,
 * then cJSON. */
#include "io/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/file.h"

typedef struct {
    const char *p; /* the key as written, between its quotes */
    size_t len;
    long line;
} Key;

typedef struct {
    const char *text;
    size_t len;
    int multiline; /* prefix messages with "line N: " */
    Key *keys;     /* the keys of the open objects, innermost last */
    size_t n_keys, cap_keys;
    char *err;
    size_t errlen;
} Scan;

static int fail(Scan *S, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Scan *S, long line, const char *fmt, ...) {
    int k = S->multiline ? snprintf(S->err, S->errlen, "line %ld: ", line) : 0;
    if (k < 0 || (size_t)k >= S->errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S->err + k, S->errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

static int key_cmp(const void *a, const void *b) {
    const Key *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    int c = memcmp(x->p, y->p, x->len);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* the keys of one object, keys[first..n): none twice */
static int check_keys(Scan *S, size_t first) {
    size_t n = S->n_keys - first;
    if (n < 2) return S->n_keys = first, 0; /* also: no keys yet, keys may be NULL */
    Key *k = S->keys + first;
    qsort(k, n, sizeof *k, key_cmp);
    for (size_t i = 1; i < n; i++)
        if (k[i].len == k[i - 1].len && !memcmp(k[i].p, k[i - 1].p, k[i].len)) {
            int shown = k[i].len > 64 ? 64 : (int)k[i].len;
            if (S->multiline)
                return fail(S, k[i].line, "duplicate key \"%.*s\" (first at line %ld)", shown, k[i].p, k[i - 1].line);
            return fail(S, 1, "duplicate key \"%.*s\"", shown, k[i].p);
        }
    S->n_keys = first;
    return 0;
}

static void add_key(Scan *S, const char *p, size_t len, long line) {
    if (S->n_keys == S->cap_keys) {
        S->cap_keys = S->cap_keys ? 2 * S->cap_keys : 64;
        S->keys = xrealloc(S->keys, sizeof(Key) * S->cap_keys);
    }
    S->keys[S->n_keys++] = (Key){p, len, line};
}

/* A string from its opening quote at *i; *i ends on the closing quote (or len). */
static int scan_string(Scan *S, size_t *i, long *line, int is_key) {
    const char *t = S->text;
    size_t j = *i + 1;
    while (j < S->len && t[j] != '"') {
        if (t[j] == 0) return fail(S, *line, "a NUL byte in a string");
        if (t[j] == '\n') ++*line;
        if (t[j] == '\\' && j + 1 < S->len) {
            if (t[j + 1] == 'u' && j + 6 <= S->len && !memcmp(t + j + 2, "0000", 4))
                return fail(S, *line, "a string holds NUL (\\u0000)");
            j += 2;
            continue;
        }
        j++;
    }
    if (is_key && j < S->len) add_key(S, t + *i + 1, j - *i - 1, *line);
    *i = j;
    return 0;
}

static int scan(Scan *S) {
    char is_obj[JSON_MAX_DEPTH];
    size_t first[JSON_MAX_DEPTH];
    int depth = 0;
    long line = 1;
    char prev = 0; /* the last character outside strings that is not blank */
    for (size_t i = 0; i < S->len; i++) {
        char c = S->text[i];
        if (c == '\n') line++;
        else if (c == 0) return fail(S, line, "a NUL byte");
        else if (c == '"') {
            if (scan_string(S, &i, &line, depth > 0 && is_obj[depth - 1] && (prev == '{' || prev == ','))) return -1;
        } else if (c == '{' || c == '[') {
            if (depth == JSON_MAX_DEPTH) return fail(S, line, "nesting deeper than %d levels", JSON_MAX_DEPTH);
            is_obj[depth] = c == '{', first[depth] = S->n_keys, depth++;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
            if (is_obj[depth] && check_keys(S, first[depth])) return -1;
        }
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') prev = c;
    }
    return 0;
}

static long line_of(const char *text, const char *at) {
    long line = 1;
    for (const char *p = text; p < at; p++) line += *p == '\n';
    return line;
}

/* The length of the UTF-8 sequence at s (overlong forms, surrogates and code points past U+10FFFF refused), or 0. */
static int utf8_len(const unsigned char *s) {
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (!n || s[0] > 0xF4) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
    return n;
}

/* every string (keys too) valid UTF-8; a bad one named by its path and byte */
static int check_utf8(const cJSON *node, char *path, size_t at, char *err, size_t errlen) {
    int index = 0;
    for (const cJSON *it = node; it; it = it->next, index++) {
        size_t n = at;
        if (n < 200)
            n += it->string ? (size_t)snprintf(path + n, 256 - n, "%s\"%.40s\"", n ? "." : "", it->string)
                            : (size_t)snprintf(path + n, 256 - n, "[%d]", index);
        const char *strs[2] = {it->string, cJSON_IsString(it) ? it->valuestring : NULL};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; strs[k] && strs[k][i];) {
                int l = utf8_len((const unsigned char *)strs[k] + i);
                if (!l) {
                    snprintf(err, errlen, "%s%s: invalid UTF-8 at byte %zu%s", path[0] ? path : "the text",
                             k ? "" : " (its key)", i, k ? " of the string" : "");
                    return -1;
                }
                i += (size_t)l;
            }
        if (it->child && check_utf8(it->child, path, n, err, errlen)) return -1;
        path[at] = 0;
    }
    return 0;
}

cJSON *json_parse(const char *text, size_t len, char *err, size_t errlen) {
    size_t body = len;
    while (body > 0 && (text[body - 1] == '\n' || text[body - 1] == '\r' || text[body - 1] == ' ' || text[body - 1] == '\t'))
        body--;
    Scan S = {text, len, memchr(text, '\n', body) != NULL, NULL, 0, 0, err, errlen};
    int bad = scan(&S);
    free(S.keys);
    if (bad) return NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long line = at && at >= text && at <= text + len ? line_of(text, at) : 1;
        fail(&S, line, "invalid JSON");
        return NULL;
    }
    while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')) end++;
    if (end < text + len) {
        fail(&S, line_of(text, end), "content after the JSON value");
        cJSON_Delete(root);
        return NULL;
    }
    char path[256] = "";
    if (check_utf8(root->child, path, 0, err, errlen) ||
        (cJSON_IsString(root) && check_utf8(root, path, 0, err, errlen))) { /* named in the field, not in a rendered prompt */
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int json_whole(const cJSON *v, const char *field, double lo, double hi, long *out, char *err, size_t errlen) {
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(x >= lo && x <= hi) || x != floor(x)) {
        int huge = cJSON_IsNumber(v) && isinf(x); /* 1e400: cJSON holds inf and prints null */
        char *text = v && !huge ? cJSON_PrintUnformatted(v) : NULL;
        snprintf(err, errlen, "\"%s\" must be a whole number in [%.0f, %.0f], found %s", field, lo, hi,
                 huge ? "a number that overflows a double" : text ? text : "nothing");
        free(text);
        return -1;
    }
    *out = (long)x;
    return 0;
}

int json_bool(const cJSON *obj, const char *field, int *out, char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) {
        char *text = cJSON_PrintUnformatted(v);
        snprintf(err, errlen, "\"%s\" must be true or false, found %s", field, text ? text : "?");
        free(text);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

void json_number_text(double v, int is_float, char buf[40]) {
    for (int digits = is_float ? 6 : 15; digits <= 17; digits++) { /* 17 always reads back */
        snprintf(buf, 40, "%.*g", digits, v);
        double back = strtod(buf, NULL);
        if (is_float ? (float)back == (float)v : back == v) break;
    }
}

cJSON *json_number_exact(double v) {
    if (!isfinite(v)) return cJSON_CreateNull();
    char buf[40];
    json_number_text(v, 0, buf);
    return cJSON_CreateRaw(buf);
}

cJSON *json_load_file(const char *path, size_t max_bytes, char *err, size_t errlen) {
    FILE *f = file_open_regular(path, err, errlen);
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = xmalloc(cap + 1);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) {
            if (cap >= max_bytes) break;
            buf = xrealloc(buf, (cap *= 2) + 1);
        }
    int bad = ferror(f), big = n >= max_bytes;
    fclose(f);
    char msg[512];
    cJSON *j = NULL;
    if (bad)
        snprintf(err, errlen, "%s: read error", path);
    else if (big)
        snprintf(err, errlen, "%s: larger than %zu bytes", path, max_bytes);
    else if (!(j = json_parse(buf, n, msg, sizeof msg)))
        snprintf(err, errlen, "%s: %s", path, msg);
    free(buf);
    return j;
}
