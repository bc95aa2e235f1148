/* jinja_value.c: the arena and the values of the chat-template interpreter
 * (template/internal.h), with Python's semantics where Jinja borrows them:
 * truth, ==, <, str(), repr of floats, json.dumps, str.isspace, and strings
 * indexed by code point. A string carries its message-text flags along. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "template/internal.h"

struct ArBlock {
    ArBlock *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *ar_alloc(Arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > a->limit || a->total > a->limit - n)
        jj_fail(a, 0, "the template needs more than %zu MiB of memory", a->limit >> 20);
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        ArBlock *b = xmalloc(sizeof *b + cap);
        b->next = a->head, b->used = 0, b->cap = cap;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

void ar_free(Arena *a) {
    for (ArBlock *b = a->head, *next; b; b = next) next = b->next, free(b);
    a->head = NULL, a->total = 0;
}

void jj_fail(Arena *a, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(a->err, a->errlen, "line %d: %s", line, msg);
    else snprintf(a->err, a->errlen, "%s", msg);
    longjmp(*a->jb, 1);
}

/* ---- constructors ---- */

JVal jv_undef(const char *why) { return (JVal){.t = V_UNDEF, .s = js_lit(why)}; }
JVal jv_none(void) { return (JVal){.t = V_NONE}; }
JVal jv_bool(int b) { return (JVal){.t = V_BOOL, .b = !!b}; }
JVal jv_int(int64_t i) { return (JVal){.t = V_INT, .i = i}; }
JVal jv_float(double f) { return (JVal){.t = V_FLOAT, .f = f}; }
JVal jv_str(JStr s) { return (JVal){.t = V_STR, .s = s}; }
JStr js_lit(const char *s) { return (JStr){s, NULL, strlen(s)}; }

JStr js_copy(Arena *a, const char *s, const unsigned char *m, size_t n) {
    char *p = ar_alloc(a, n + 1);
    memcpy(p, s, n);
    unsigned char *q = NULL;
    if (m && memchr(m, 1, n)) q = ar_alloc(a, n), memcpy(q, m, n);
    return (JStr){p, q, n};
}

JStr js_cat(Arena *a, JStr x, JStr y) {
    if (!y.n) return x;
    if (!x.n) return y;
    char *p = ar_alloc(a, x.n + y.n + 1);
    memcpy(p, x.s, x.n), memcpy(p + x.n, y.s, y.n);
    unsigned char *q = NULL;
    if (x.m || y.m) {
        q = ar_alloc(a, x.n + y.n);
        if (x.m) memcpy(q, x.m, x.n);
        if (y.m) memcpy(q + x.n, y.m, y.n);
    }
    return (JStr){p, q, x.n + y.n};
}

JList *jl_new(Arena *a, size_t cap) {
    JList *l = ar_alloc(a, sizeof *l);
    l->cap = cap ? cap : 4;
    l->v = ar_alloc(a, sizeof(JVal) * l->cap);
    return l;
}

void jl_push(Arena *a, JList *l, JVal v) {
    if (l->n == l->cap) {
        JVal *nv = ar_alloc(a, sizeof(JVal) * l->cap * 2);
        memcpy(nv, l->v, sizeof(JVal) * l->n);
        l->v = nv, l->cap *= 2;
    }
    l->v[l->n++] = v;
}

JDict *jd_new(Arena *a) { return ar_alloc(a, sizeof(JDict)); }

JVal *jd_get(const JDict *d, const char *k, size_t n) {
    for (size_t i = 0; d && i < d->n; i++)
        if (d->k[i].n == n && !memcmp(d->k[i].s, k, n)) return &d->v[i];
    return NULL;
}

void jd_set(Arena *a, JDict *d, JStr k, JVal v) {
    JVal *old = jd_get(d, k.s, k.n);
    if (old) {
        *old = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        JStr *nk = ar_alloc(a, sizeof(JStr) * cap);
        JVal *nv = ar_alloc(a, sizeof(JVal) * cap);
        if (d->n) memcpy(nk, d->k, sizeof(JStr) * d->n), memcpy(nv, d->v, sizeof(JVal) * d->n);
        d->k = nk, d->v = nv, d->cap = cap;
    }
    d->k[d->n] = k, d->v[d->n++] = v;
}

/* ---- code points ---- */

int py_isspace(uint32_t c) {
    return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t js_next(JStr s, size_t i, uint32_t *cp) { return (size_t)utf8_next((const unsigned char *)s.s + i, s.n - i, cp); }

size_t js_len(JStr s) {
    size_t k = 0;
    for (size_t i = 0; i < s.n; k++) {
        unsigned char b = (unsigned char)s.s[i];
        i += b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; /* the strings are valid UTF-8 */
    }
    return k;
}

size_t js_offset(JStr s, size_t k) {
    size_t i = 0;
    for (; k && i < s.n; k--) {
        unsigned char b = (unsigned char)s.s[i];
        i += b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    }
    return i < s.n ? i : s.n;
}

JStr js_sub(JStr s, size_t from, size_t to) { return (JStr){s.s + from, s.m ? s.m + from : NULL, to - from}; }

static int in_chars(uint32_t cp, const JStr *chars) {
    if (!chars) return py_isspace(cp);
    for (size_t i = 0; i < chars->n;) {
        uint32_t c;
        i += js_next(*chars, i, &c);
        if (c == cp) return 1;
    }
    return 0;
}

JStr js_strip(JStr s, const JStr *chars, int which) {
    size_t from = 0, to = s.n;
    while ((which & 1) && from < to) {
        uint32_t cp;
        size_t k = js_next(s, from, &cp);
        if (!in_chars(cp, chars)) break;
        from += k;
    }
    while ((which & 2) && to > from) {
        size_t at = to - 1;
        while (at > from && ((unsigned char)s.s[at] & 0xC0) == 0x80) at--;
        uint32_t cp;
        js_next(s, at, &cp);
        if (!in_chars(cp, chars)) break;
        to = at;
    }
    return js_sub(s, from, to);
}

/* ---- Python semantics ---- */

const char *jv_type(JVal v) {
    static const char *const NAMES[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict",
                                        "Namespace", "function", "method"};
    return v.t == V_LIST && v.l->tuple ? "tuple" : NAMES[v.t];
}

int jv_truthy(JVal v) {
    switch (v.t) {
    case V_UNDEF:
    case V_NONE: return 0;
    case V_BOOL: return v.b;
    case V_INT: return v.i != 0;
    case V_FLOAT: return v.f != 0;
    case V_STR: return v.s.n > 0;
    case V_LIST: return v.l->n > 0;
    case V_DICT: return v.d->n > 0;
    default: return 1;
    }
}

static int is_num(JVal v) { return v.t == V_BOOL || v.t == V_INT || v.t == V_FLOAT; }
static double num(JVal v) { return v.t == V_FLOAT ? v.f : v.t == V_INT ? (double)v.i : v.b; }
static int64_t inum(JVal v) { return v.t == V_INT ? v.i : v.b; }

int jv_eq(JVal x, JVal y) {
    if (is_num(x) && is_num(y))
        return x.t == V_FLOAT || y.t == V_FLOAT ? num(x) == num(y) : inum(x) == inum(y);
    if (x.t != y.t) return 0;
    switch (x.t) {
    case V_UNDEF:
    case V_NONE: return 1;
    case V_STR: return x.s.n == y.s.n && !memcmp(x.s.s, y.s.s, x.s.n);
    case V_LIST:
        if (x.l->tuple != y.l->tuple || x.l->n != y.l->n) return 0;
        for (size_t i = 0; i < x.l->n; i++)
            if (!jv_eq(x.l->v[i], y.l->v[i])) return 0;
        return 1;
    case V_DICT:
        if (x.d->n != y.d->n) return 0;
        for (size_t i = 0; i < x.d->n; i++) {
            JVal *o = jd_get(y.d, x.d->k[i].s, x.d->k[i].n);
            if (!o || !jv_eq(x.d->v[i], *o)) return 0;
        }
        return 1;
    default: return x.d == y.d; /* the same namespace or function */
    }
}

int jv_less(Arena *a, int line, JVal x, JVal y) {
    if (is_num(x) && is_num(y))
        return x.t == V_FLOAT || y.t == V_FLOAT ? num(x) < num(y) : inum(x) < inum(y);
    if (x.t == V_STR && y.t == V_STR) { /* UTF-8 byte order is code point order */
        int c = memcmp(x.s.s, y.s.s, x.s.n < y.s.n ? x.s.n : y.s.n);
        return c < 0 || (c == 0 && x.s.n < y.s.n);
    }
    if (x.t == V_LIST && y.t == V_LIST && x.l->tuple == y.l->tuple) {
        for (size_t i = 0; i < x.l->n && i < y.l->n; i++)
            if (!jv_eq(x.l->v[i], y.l->v[i])) return jv_less(a, line, x.l->v[i], y.l->v[i]);
        return x.l->n < y.l->n;
    }
    if (x.t == V_UNDEF || y.t == V_UNDEF)
        jj_fail(a, line, "%s", (x.t == V_UNDEF ? x : y).s.s);
    jj_fail(a, line, "'<' not supported between instances of '%s' and '%s'", jv_type(x), jv_type(y));
}

void jv_float_repr(double f, char out[32]) {
    if (isnan(f)) return (void)strcpy(out, "nan");
    if (isinf(f)) return (void)strcpy(out, f < 0 ? "-inf" : "inf");
    char e[40];
    int prec = 0;
    for (prec = 0; prec < 17; prec++) { /* the shortest digits that read back as f */
        snprintf(e, sizeof e, "%.*e", prec, f);
        if (strtod(e, NULL) == f) break;
    }
    char digits[24] = "", *p = e, *q = digits;
    int neg = *p == '-';
    p += neg;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') *q++ = *p;
    *q = 0;
    int exp = atoi(p + 1), nd = (int)strlen(digits);
    char *o = out;
    if (neg) *o++ = '-';
    if (exp < -4 || exp >= 16) { /* d.ddde+XX */
        *o++ = digits[0];
        if (nd > 1) *o++ = '.', memcpy(o, digits + 1, (size_t)nd - 1), o += nd - 1;
        sprintf(o, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
    } else if (exp < 0) { /* 0.000ddd */
        o += sprintf(o, "0.");
        for (int i = -1; i > exp; i--) *o++ = '0';
        memcpy(o, digits, (size_t)nd), o[nd] = 0;
    } else { /* ddd.ddd, at least one digit after the point */
        for (int i = 0; i <= exp; i++) *o++ = i < nd ? digits[i] : '0';
        *o++ = '.';
        if (nd > exp + 1) memcpy(o, digits + exp + 1, (size_t)(nd - exp - 1)), o += nd - exp - 1;
        else *o++ = '0';
        *o = 0;
    }
}

JStr jv_str_of(Arena *a, int line, JVal v) {
    char buf[32];
    switch (v.t) {
    case V_UNDEF: return js_lit("");
    case V_NONE: return js_lit("None");
    case V_BOOL: return js_lit(v.b ? "True" : "False");
    case V_INT: snprintf(buf, sizeof buf, "%" PRId64, v.i); break;
    case V_FLOAT: jv_float_repr(v.f, buf); break;
    case V_STR: return v.s;
    default:
        jj_fail(a, line, "printing a %s (Python's repr) is not supported by ppa's template renderer", jv_type(v));
    }
    return js_copy(a, buf, NULL, strlen(buf));
}

/* ---- json.dumps(ensure_ascii=False) ---- */

typedef struct {
    ByteBuf b, m;
} Out;

static void out_put(Out *o, const char *s, size_t n, unsigned char flag) {
    bytebuf_put(&o->b, s, n);
    for (size_t i = 0; i < n; i++) bytebuf_put(&o->m, &flag, 1);
}

static void json_str(Out *o, JStr s) {
    out_put(o, "\"", 1, 0);
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.s[i], f = s.m ? s.m[i] : 0;
        char esc[8];
        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                      : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (!e && c < 0x20) snprintf(esc, sizeof esc, "\\u%04x", c), e = esc;
        if (e) out_put(o, e, strlen(e), f);
        else out_put(o, (const char *)&c, 1, f);
    }
    out_put(o, "\"", 1, 0);
}

static void json_val(Arena *a, int line, Out *o, JVal v, int indent, int depth) {
    char buf[40];
    if (depth > 100) jj_fail(a, line, "tojson: the value is nested too deeply");
    switch (v.t) {
    case V_NONE: return out_put(o, "null", 4, 0);
    case V_BOOL: return out_put(o, v.b ? "true" : "false", v.b ? 4 : 5, 0);
    case V_INT: snprintf(buf, sizeof buf, "%" PRId64, v.i); return out_put(o, buf, strlen(buf), 0);
    case V_FLOAT:
        if (isnan(v.f) || isinf(v.f)) strcpy(buf, isnan(v.f) ? "NaN" : v.f < 0 ? "-Infinity" : "Infinity");
        else jv_float_repr(v.f, buf);
        return out_put(o, buf, strlen(buf), 0);
    case V_STR: return json_str(o, v.s);
    case V_LIST:
    case V_DICT: {
        int dict = v.t == V_DICT;
        size_t n = dict ? v.d->n : v.l->n;
        out_put(o, dict ? "{" : "[", 1, 0);
        for (size_t i = 0; i < n; i++) {
            if (i) out_put(o, indent >= 0 ? "," : ", ", indent >= 0 ? 1 : 2, 0);
            if (indent >= 0) {
                out_put(o, "\n", 1, 0);
                for (int k = 0; k < indent * (depth + 1); k++) out_put(o, " ", 1, 0);
            }
            if (dict) json_str(o, v.d->k[i]), out_put(o, ": ", 2, 0);
            json_val(a, line, o, dict ? v.d->v[i] : v.l->v[i], indent, depth + 1);
        }
        if (indent >= 0 && n) {
            out_put(o, "\n", 1, 0);
            for (int k = 0; k < indent * depth; k++) out_put(o, " ", 1, 0);
        }
        return out_put(o, dict ? "}" : "]", 1, 0);
    }
    default: jj_fail(a, line, "tojson: Object of type %s is not JSON serializable", jv_type(v));
    }
}

JStr jv_tojson(Arena *a, int line, JVal v, int indent) {
    Out *o = xcalloc(1, sizeof *o); /* on the heap: it changes after setjmp */
    bytebuf_put(&o->b, "", 0);
    bytebuf_put(&o->m, "", 0);
    jmp_buf *outer = a->jb, here;
    if (setjmp(here)) { /* free the buffers, then fail on */
        free(o->b.s), free(o->m.s), free(o);
        a->jb = outer;
        longjmp(*outer, 1);
    }
    a->jb = &here;
    json_val(a, line, o, v, indent, 0);
    a->jb = outer;
    JStr s = js_copy(a, o->b.s, (const unsigned char *)o->m.s, o->b.n);
    free(o->b.s), free(o->m.s), free(o);
    return s;
}
