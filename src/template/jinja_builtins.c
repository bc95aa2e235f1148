/* jinja_builtins.c: the filters, tests, string and dict methods and global
 * functions that ppa's chat-template renderer provides, each as Jinja 3 /
 * Python 3 define it (transformers' tojson; the sandbox's range limit).
 * (jinja_call.c binds their arguments.) A name missing here is refused when
 * the template is read (jinja_parse.c). Case mappings are Unicode's simple
 * ones (utf8proc): Python's full mappings differ for a few characters (ß
 * upper-cased is "SS" there). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "core/common.h"
#include "core/text.h"
#include "template/internal.h"

#define MAX_RANGE 100000 /* jinja2.sandbox.MAX_RANGE */

#define FN(name) static JVal name(Ctx *c, const JNode *at, JVal v, JVal **p, JVal *rest, int nrest)
#define UNUSED_ARGS (void)c, (void)at, (void)v, (void)p, (void)rest, (void)nrest
#define LINE (at->line)

static JStr want_str(Ctx *c, int line, JVal v, const char *what) {
    if (v.t != V_STR) jj_fail(c->ar, line, "%s must be a string, not %s", what, jv_type(v));
    return v.s;
}

static int64_t want_int(Ctx *c, int line, JVal v, const char *what) {
    if (v.t == V_INT) return v.i;
    if (v.t == V_BOOL) return v.b;
    jj_fail(c->ar, line, "%s must be an integer, not %s", what, jv_type(v));
}

static JVal list_val(JList *l) { return (JVal){.t = V_LIST, .l = l}; }

/* ---- case mappings, per code point, flags kept ---- */

typedef enum { C_UPPER, C_LOWER, C_TITLE, C_CAPITALIZE } CaseMap;

static int cased(uint32_t cp) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)cp);
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

/* Characters whose case Python maps with SpecialCasing.txt (ß -> SS, the
 * ligatures, Greek with ypogegrammeni ...) or by context (final sigma): the
 * simple mappings would differ, so these are refused instead. */
static int special_casing(uint32_t cp) {
    static const uint32_t R[][2] = {{0xDF, 0xDF}, {0x130, 0x130}, {0x149, 0x149}, {0x1F0, 0x1F0}, {0x390, 0x390},
                                    {0x3A3, 0x3A3}, {0x3B0, 0x3B0}, {0x587, 0x587}, {0x1E96, 0x1E9E}, {0x1F50, 0x1F56},
                                    {0x1F80, 0x1FFC}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}};
    for (size_t i = 0; i < PPA_ARRAY_LEN(R); i++)
        if (cp >= R[i][0] && cp <= R[i][1]) return 1;
    return 0;
}

static JStr map_case(Ctx *c, int line, JStr s, CaseMap how) {
    /* a simple mapping stays within 4 bytes and grows a character by at most half (2 -> 3 bytes) */
    char *o = ar_alloc(c->ar, s.n * 2 + 4);
    unsigned char *m = s.m ? ar_alloc(c->ar, s.n * 2 + 4) : NULL;
    size_t n = 0;
    int prev_cased = 0;
    for (size_t i = 0; i < s.n;) {
        uint32_t cp;
        size_t k = js_next(s, i, &cp);
        utf8proc_int32_t x = (utf8proc_int32_t)cp;
        if (special_casing(cp))
            jj_fail(c->ar, line, "changing the case of U+%04X as Python does (SpecialCasing) is not supported by ppa's "
                    "template renderer", (unsigned)cp);
        if (how == C_UPPER) x = utf8proc_toupper(x);
        else if (how == C_LOWER) x = utf8proc_tolower(x);
        else if (how == C_TITLE) x = prev_cased ? utf8proc_tolower(x) : utf8proc_totitle(x);
        else x = i == 0 ? utf8proc_totitle(x) : utf8proc_tolower(x);
        prev_cased = cased(cp); /* CPython's str.title looks at the character before its mapping */
        size_t w = utf8_put((uint32_t)x, o + n);
        if (m) memset(m + n, s.m[i], w);
        n += w, i += k;
    }
    return (JStr){o, m, n};
}

/* ---- filters ---- */

FN(f_abs) {
    UNUSED_ARGS;
    if (v.t == V_INT || v.t == V_BOOL) {
        int64_t i = v.t == V_INT ? v.i : v.b;
        if (i == INT64_MIN) jj_fail(c->ar, LINE, "an integer past 64 bits");
        return jv_int(i < 0 ? -i : i);
    }
    if (v.t == V_FLOAT) return jv_float(fabs(v.f));
    jj_fail(c->ar, LINE, "bad operand type for abs(): '%s'", jv_type(v));
}

FN(f_capitalize) { UNUSED_ARGS; return jv_str(map_case(c, LINE, jv_str_of(c->ar, LINE, v), C_CAPITALIZE)); }
FN(f_lower) { UNUSED_ARGS; return jv_str(map_case(c, LINE, jv_str_of(c->ar, LINE, v), C_LOWER)); }
FN(f_upper) { UNUSED_ARGS; return jv_str(map_case(c, LINE, jv_str_of(c->ar, LINE, v), C_UPPER)); }
/* Jinja's title filter is not str.title: words begin after runs of -, blanks, (, {, [ and <; each word's
   first character is upper-cased and the rest lower-cased */
FN(f_title) {
    UNUSED_ARGS;
    JStr s = jv_str_of(c->ar, LINE, v), out = js_lit("");
    for (size_t i = 0; i < s.n;) {
        size_t j = i, w;
        uint32_t cp = 0;
        int sep = (w = js_next(s, i, &cp), cp == '-' || py_isspace(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<');
        while (j < s.n) {
            w = js_next(s, j, &cp);
            if ((cp == '-' || py_isspace(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<') != sep) break;
            j += w;
        }
        if (sep) out = js_cat(c->ar, out, js_sub(s, i, j));
        else {
            size_t k = js_next(s, i, &cp);
            out = js_cat(c->ar, out, map_case(c, LINE, js_sub(s, i, i + k), C_UPPER));
            out = js_cat(c->ar, out, map_case(c, LINE, js_sub(s, i + k, j), C_LOWER));
        }
        i = j;
    }
    return jv_str(out);
}

FN(f_default) {
    UNUSED_ARGS;
    int boolean = p[1] && jv_truthy(*p[1]);
    if (v.t == V_UNDEF || (boolean && !jv_truthy(v))) return p[0] ? *p[0] : jv_str(js_lit(""));
    return v;
}

FN(f_length) {
    UNUSED_ARGS;
    switch (v.t) {
    case V_UNDEF: return jv_int(0);
    case V_STR: return jv_int((int64_t)js_len(v.s));
    case V_LIST: return jv_int((int64_t)v.l->n);
    case V_DICT: return jv_int((int64_t)v.d->n);
    default: jj_fail(c->ar, LINE, "object of type '%s' has no len()", jv_type(v));
    }
}

FN(f_first) {
    UNUSED_ARGS;
    JList *l = c->ev->iter(c, LINE, v);
    return l->n ? l->v[0] : jv_undef("No first item, sequence was empty.");
}

FN(f_last) {
    UNUSED_ARGS;
    JList *l = c->ev->iter(c, LINE, v);
    return l->n ? l->v[l->n - 1] : jv_undef("No last item, sequence was empty.");
}

FN(f_list) {
    UNUSED_ARGS;
    JList *src = c->ev->iter(c, LINE, v), *l = jl_new(c->ar, src->n);
    for (size_t i = 0; i < src->n; i++) jl_push(c->ar, l, src->v[i]);
    return list_val(l);
}

FN(f_reverse) {
    UNUSED_ARGS;
    JList *src = c->ev->iter(c, LINE, v), *l = jl_new(c->ar, src->n);
    for (size_t i = src->n; i-- > 0;) jl_push(c->ar, l, src->v[i]);
    if (v.t != V_STR) return list_val(l);
    JStr out = js_lit("");
    for (size_t i = 0; i < l->n; i++) out = js_cat(c->ar, out, l->v[i].s);
    return jv_str(out);
}

FN(f_items) {
    UNUSED_ARGS;
    JList *l = jl_new(c->ar, 8);
    if (v.t == V_UNDEF) return list_val(l);
    if (v.t != V_DICT) jj_fail(c->ar, LINE, "Can only get item pairs from a mapping.");
    for (size_t i = 0; i < v.d->n; i++) {
        JList *pair = jl_new(c->ar, 2);
        pair->tuple = 1;
        jl_push(c->ar, pair, jv_str(v.d->k[i]));
        jl_push(c->ar, pair, v.d->v[i]);
        jl_push(c->ar, l, list_val(pair));
    }
    return list_val(l);
}

FN(f_string) { UNUSED_ARGS; return jv_str(jv_str_of(c->ar, LINE, v)); }
FN(f_safe) { UNUSED_ARGS; return v.t == V_STR ? v : jv_str(jv_str_of(c->ar, LINE, v)); }

FN(f_trim) {
    UNUSED_ARGS;
    JStr s = jv_str_of(c->ar, LINE, v), chars;
    int given = p[0] && p[0]->t != V_NONE;
    if (given) chars = want_str(c, LINE, *p[0], "trim's chars");
    return jv_str(js_strip(s, given ? &chars : NULL, 3));
}

/* transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
FN(f_tojson) {
    UNUSED_ARGS;
    if ((p[0] && jv_truthy(*p[0])) || (p[2] && p[2]->t != V_NONE) || (p[3] && jv_truthy(*p[3])))
        jj_fail(c->ar, LINE, "tojson with ensure_ascii, separators or sort_keys is not supported by ppa's template renderer");
    int indent = -1;
    if (p[1] && p[1]->t != V_NONE) indent = (int)want_int(c, LINE, *p[1], "tojson's indent");
    if (indent > 64) jj_fail(c->ar, LINE, "tojson's indent is more than 64");
    return jv_str(jv_tojson(c->ar, LINE, v, indent < 0 ? -1 : indent));
}

/* Python's int(str): blanks around, one sign, digits with single underscores */
static int parse_int(JStr s, int64_t *out) {
    JStr t = js_strip(s, NULL, 3);
    char buf[64];
    size_t k = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (t.s[i] == '_' && i > 0 && i + 1 < t.n && t.s[i - 1] >= '0' && t.s[i - 1] <= '9') continue;
        if (k + 1 >= sizeof buf) return -1;
        buf[k++] = t.s[i];
    }
    buf[k] = 0;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (!k || *end || errno || !(buf[k - 1] >= '0' && buf[k - 1] <= '9') || strchr(buf, ' ')) return -1;
    return *out = v, 0;
}

static int parse_float(JStr s, double *out) {
    JStr t = js_strip(s, NULL, 3);
    char buf[128];
    if (!t.n || t.n >= sizeof buf || memchr(t.s, 'x', t.n) || memchr(t.s, 'X', t.n)) return -1; /* strtod reads hex */
    memcpy(buf, t.s, t.n), buf[t.n] = 0;
    char *end;
    *out = strtod(buf, &end);
    return *end ? -1 : 0;
}

FN(f_int) {
    UNUSED_ARGS;
    int64_t i;
    double f = NAN;
    if (p[1] && want_int(c, LINE, *p[1], "int's base") != 10) jj_fail(c->ar, LINE, "int with a base other than 10 is not supported");
    if (v.t == V_INT || v.t == V_BOOL) return jv_int(v.t == V_INT ? v.i : v.b);
    if (v.t == V_STR && !parse_int(v.s, &i)) return jv_int(i);
    if (v.t == V_FLOAT) f = v.f;
    else if (v.t == V_STR && parse_float(v.s, &f)) f = NAN;
    if (isfinite(f) && fabs(f) < 9.2e18) return jv_int((int64_t)f); /* int(float(value)) truncates */
    return p[0] ? *p[0] : jv_int(0);
}

FN(f_float) {
    UNUSED_ARGS;
    double f;
    if (v.t == V_FLOAT) return v;
    if (v.t == V_INT || v.t == V_BOOL) return jv_float(v.t == V_INT ? (double)v.i : v.b);
    if (v.t == V_STR && !parse_float(v.s, &f)) return jv_float(f);
    return p[0] ? *p[0] : jv_float(0.0);
}

static JStr joined(Ctx *c, int line, JList *items, JStr sep) {
    JStr out = js_lit("");
    for (size_t i = 0; i < items->n; i++) {
        if (i) out = js_cat(c->ar, out, sep);
        out = js_cat(c->ar, out, jv_str_of(c->ar, line, items->v[i]));
    }
    return out;
}

/* Jinja's attribute getter: "a.b.0", each part an item, then an attribute */
static JVal attr_path(Ctx *c, int line, JVal item, JStr path) {
    for (size_t i = 0; i <= path.n;) {
        size_t j = i;
        while (j < path.n && path.s[j] != '.') j++;
        JStr part = js_sub(path, i, j);
        int digits = part.n > 0;
        for (size_t k = 0; k < part.n; k++) digits &= part.s[k] >= '0' && part.s[k] <= '9';
        if (digits && item.t == V_LIST) {
            int64_t idx = strtoll(js_copy(c->ar, part.s, NULL, part.n).s, NULL, 10);
            item = idx < (int64_t)item.l->n ? item.l->v[idx] : jv_undef("index out of range");
        } else if (item.t == V_DICT && jd_get(item.d, part.s, part.n)) {
            item = *jd_get(item.d, part.s, part.n);
        } else {
            item = c->ev->getattr(c, line, item, part);
        }
        i = j + 1;
    }
    return item;
}

FN(f_join) {
    UNUSED_ARGS;
    JList *items = c->ev->iter(c, LINE, v);
    if (p[1] && p[1]->t != V_NONE) {
        JStr path = jv_str_of(c->ar, LINE, *p[1]);
        JList *l = jl_new(c->ar, items->n);
        for (size_t i = 0; i < items->n; i++) jl_push(c->ar, l, attr_path(c, LINE, items->v[i], path));
        items = l;
    }
    return jv_str(joined(c, LINE, items, p[0] ? jv_str_of(c->ar, LINE, *p[0]) : js_lit("")));
}

FN(f_replace) {
    UNUSED_ARGS;
    JStr s = jv_str_of(c->ar, LINE, v), old = jv_str_of(c->ar, LINE, *p[0]), with = jv_str_of(c->ar, LINE, *p[1]);
    int64_t count = p[2] && p[2]->t != V_NONE ? want_int(c, LINE, *p[2], "replace's count") : -1;
    JStr out = js_lit("");
    size_t i = 0, from = 0;
    if (!old.n) { /* Python inserts the new text around every character */
        for (int64_t k = 0; count < 0 || k < count; k++) {
            out = js_cat(c->ar, out, with);
            if (i >= s.n) return jv_str(out);
            uint32_t cp;
            size_t w = js_next(s, i, &cp);
            out = js_cat(c->ar, out, js_sub(s, i, i + w));
            i += w;
        }
        return jv_str(js_cat(c->ar, out, js_sub(s, i, s.n)));
    }
    for (int64_t k = 0; (count < 0 || k < count) && i + old.n <= s.n;) {
        const char *hit = memmem(s.s + i, s.n - i, old.s, old.n);
        if (!hit) break;
        size_t at = (size_t)(hit - s.s);
        out = js_cat(c->ar, js_cat(c->ar, out, js_sub(s, from, at)), with);
        i = from = at + old.n, k++;
    }
    return jv_str(js_cat(c->ar, out, js_sub(s, from, s.n)));
}

static JStr splitlines_join(Ctx *c, JStr s, JStr indent, int blank) {
    JStr out = js_lit("");
    int first = 1;
    for (size_t i = 0; i < s.n;) { /* Python's splitlines boundaries */
        size_t j = i, nl = 0;
        while (j < s.n) {
            uint32_t cp;
            size_t w = js_next(s, j, &cp);
            if (cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 ||
                cp == 0x2028 || cp == 0x2029) {
                nl = w + (cp == '\r' && j + 1 < s.n && s.s[j + 1] == '\n');
                break;
            }
            j += w;
        }
        JStr line = js_sub(s, i, j);
        if (!first) out = js_cat(c->ar, out, js_lit("\n"));
        if (!first && (blank || line.n)) out = js_cat(c->ar, out, indent);
        out = js_cat(c->ar, out, line);
        first = 0;
        i = j + nl;
    }
    return out;
}

FN(f_indent) {
    UNUSED_ARGS;
    JStr s = want_str(c, LINE, v, "indent's value"), ind;
    if (p[0] && p[0]->t == V_STR) ind = p[0]->s;
    else {
        int64_t w = p[0] ? want_int(c, LINE, *p[0], "indent's width") : 4;
        if (w > 256) jj_fail(c->ar, LINE, "indent's width is more than 256");
        char *sp = ar_alloc(c->ar, (size_t)(w > 0 ? w : 0) + 1);
        memset(sp, ' ', (size_t)(w > 0 ? w : 0));
        ind = js_lit(sp);
    }
    JStr rv = splitlines_join(c, js_cat(c->ar, s, js_lit("\n")), ind, p[2] && jv_truthy(*p[2]));
    return jv_str(p[1] && jv_truthy(*p[1]) ? js_cat(c->ar, ind, rv) : rv);
}

FN(f_map) {
    UNUSED_ARGS;
    JList *items = c->ev->iter(c, LINE, v), *out = jl_new(c->ar, items->n);
    if (p[1] && !p[0]) { /* map(attribute="x", default=...) */
        JStr path = jv_str_of(c->ar, LINE, *p[1]);
        for (size_t i = 0; i < items->n; i++) {
            JVal x = attr_path(c, LINE, items->v[i], path);
            jl_push(c->ar, out, x.t == V_UNDEF && p[2] ? *p[2] : x);
        }
        return list_val(out);
    }
    if (!p[0]) jj_fail(c->ar, LINE, "map needs a filter name or attribute=");
    JStr name = want_str(c, LINE, *p[0], "map's filter name");
    for (size_t i = 0; i < items->n; i++) jl_push(c->ar, out, c->ev->apply(c, at, B_FILTER, name, items->v[i], rest, nrest));
    return list_val(out);
}

/* select / reject / selectattr / rejectattr */
static JVal select_items(Ctx *c, const JNode *at, JVal v, JVal *attr, JVal *test, JVal *rest, int nrest, int keep) {
    JList *items = c->ev->iter(c, LINE, v), *out = jl_new(c->ar, items->n);
    JStr path = attr ? jv_str_of(c->ar, LINE, *attr) : js_lit("");
    for (size_t i = 0; i < items->n; i++) {
        JVal x = attr ? attr_path(c, LINE, items->v[i], path) : items->v[i];
        int ok = test ? jv_truthy(c->ev->apply(c, at, B_TEST, want_str(c, LINE, *test, "the test name"), x, rest, nrest)) : jv_truthy(x);
        if (ok == keep) jl_push(c->ar, out, items->v[i]);
    }
    return list_val(out);
}

FN(f_select) { UNUSED_ARGS; return select_items(c, at, v, NULL, p[0], rest, nrest, 1); }
FN(f_reject) { UNUSED_ARGS; return select_items(c, at, v, NULL, p[0], rest, nrest, 0); }
FN(f_selectattr) { UNUSED_ARGS; return select_items(c, at, v, p[0], p[1], rest, nrest, 1); }
FN(f_rejectattr) { UNUSED_ARGS; return select_items(c, at, v, p[0], p[1], rest, nrest, 0); }

/* ---- tests ---- */

static int has_case(Ctx *c, JStr s, int upper) { /* str.islower / str.isupper */
    int any = 0;
    for (size_t i = 0; i < s.n;) {
        uint32_t cp;
        i += js_next(s, i, &cp);
        utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)cp);
        if (k == UTF8PROC_CATEGORY_LT || k == (upper ? UTF8PROC_CATEGORY_LL : UTF8PROC_CATEGORY_LU)) return 0;
        any |= k == (upper ? UTF8PROC_CATEGORY_LU : UTF8PROC_CATEGORY_LL);
    }
    (void)c;
    return any;
}

FN(t_defined) { UNUSED_ARGS; return jv_bool(v.t != V_UNDEF); }
FN(t_undefined) { UNUSED_ARGS; return jv_bool(v.t == V_UNDEF); }
FN(t_none) { UNUSED_ARGS; return jv_bool(v.t == V_NONE); }
FN(t_boolean) { UNUSED_ARGS; return jv_bool(v.t == V_BOOL); }
FN(t_false) { UNUSED_ARGS; return jv_bool(v.t == V_BOOL && !v.b); }
FN(t_true) { UNUSED_ARGS; return jv_bool(v.t == V_BOOL && v.b); }
FN(t_integer) { UNUSED_ARGS; return jv_bool(v.t == V_INT); }
FN(t_float) { UNUSED_ARGS; return jv_bool(v.t == V_FLOAT); }
FN(t_number) { UNUSED_ARGS; return jv_bool(v.t == V_INT || v.t == V_FLOAT || v.t == V_BOOL); }
FN(t_string) { UNUSED_ARGS; return jv_bool(v.t == V_STR); }
FN(t_mapping) { UNUSED_ARGS; return jv_bool(v.t == V_DICT); }
FN(t_iterable) { UNUSED_ARGS; return jv_bool(v.t == V_LIST || v.t == V_STR || v.t == V_DICT || v.t == V_UNDEF); }
FN(t_sequence) { UNUSED_ARGS; return jv_bool(v.t == V_LIST || v.t == V_STR || v.t == V_DICT); }
FN(t_callable) { UNUSED_ARGS; return jv_bool(v.t == V_FUNC || v.t == V_METHOD); }
FN(t_lower) { UNUSED_ARGS; return jv_bool(has_case(c, jv_str_of(c->ar, LINE, v), 0)); }
FN(t_upper) { UNUSED_ARGS; return jv_bool(has_case(c, jv_str_of(c->ar, LINE, v), 1)); }

static JVal modulo(Ctx *c, const JNode *at, JVal v, int64_t by) {
    if (v.t != V_INT && v.t != V_BOOL) jj_fail(c->ar, LINE, "the value must be an integer, not %s", jv_type(v));
    if (!by) jj_fail(c->ar, LINE, "division by zero");
    int64_t x = v.t == V_INT ? v.i : v.b, r = by == -1 ? 0 : x % by;
    return jv_int(r != 0 && (r < 0) != (by < 0) ? r + by : r);
}

FN(t_odd) { UNUSED_ARGS; return jv_bool(modulo(c, at, v, 2).i == 1); }
FN(t_even) { UNUSED_ARGS; return jv_bool(modulo(c, at, v, 2).i == 0); }
FN(t_divisibleby) { UNUSED_ARGS; return jv_bool(modulo(c, at, v, want_int(c, LINE, *p[0], "divisibleby's number")).i == 0); }
FN(t_eq) { UNUSED_ARGS; return jv_bool(jv_eq(v, *p[0])); }
FN(t_ne) { UNUSED_ARGS; return jv_bool(!jv_eq(v, *p[0])); }
FN(t_lt) { UNUSED_ARGS; return jv_bool(jv_less(c->ar, LINE, v, *p[0])); }
FN(t_gt) { UNUSED_ARGS; return jv_bool(jv_less(c->ar, LINE, *p[0], v)); }
FN(t_le) { UNUSED_ARGS; return jv_bool(!jv_less(c->ar, LINE, *p[0], v)); }
FN(t_ge) { UNUSED_ARGS; return jv_bool(!jv_less(c->ar, LINE, v, *p[0])); }

FN(t_in) {
    UNUSED_ARGS;
    JVal hay = *p[0];
    if (hay.t == V_STR) {
        JStr needle = want_str(c, LINE, v, "the left operand of 'in <string>'");
        return jv_bool(!needle.n || memmem(hay.s.s, hay.s.n, needle.s, needle.n));
    }
    if (hay.t == V_DICT) return jv_bool(v.t == V_STR && jd_get(hay.d, v.s.s, v.s.n));
    JList *l = c->ev->iter(c, LINE, hay);
    for (size_t i = 0; i < l->n; i++)
        if (jv_eq(v, l->v[i])) return jv_bool(1);
    return jv_bool(0);
}

/* ---- string methods ---- */

static JStr chars_arg(Ctx *c, int line, JVal **p, int *given) {
    *given = p[0] && p[0]->t != V_NONE;
    return *given ? want_str(c, line, *p[0], "the characters to strip") : js_lit("");
}

FN(m_strip) { UNUSED_ARGS; int g; JStr ch = chars_arg(c, LINE, p, &g); return jv_str(js_strip(v.s, g ? &ch : NULL, 3)); }
FN(m_lstrip) { UNUSED_ARGS; int g; JStr ch = chars_arg(c, LINE, p, &g); return jv_str(js_strip(v.s, g ? &ch : NULL, 1)); }
FN(m_rstrip) { UNUSED_ARGS; int g; JStr ch = chars_arg(c, LINE, p, &g); return jv_str(js_strip(v.s, g ? &ch : NULL, 2)); }
FN(m_upper) { UNUSED_ARGS; return jv_str(map_case(c, LINE, v.s, C_UPPER)); }
FN(m_lower) { UNUSED_ARGS; return jv_str(map_case(c, LINE, v.s, C_LOWER)); }
FN(m_title) { UNUSED_ARGS; return jv_str(map_case(c, LINE, v.s, C_TITLE)); }
FN(m_capitalize) { UNUSED_ARGS; return jv_str(map_case(c, LINE, v.s, C_CAPITALIZE)); }

/* str.split and str.rsplit (from the right when right) */
static JVal split(Ctx *c, const JNode *at, JStr s, JVal **p, int right) {
    int64_t max = p[1] ? want_int(c, LINE, *p[1], "maxsplit") : -1;
    JList *parts = jl_new(c->ar, 8);
    if (p[0] && p[0]->t != V_NONE) {
        JStr sep = want_str(c, LINE, *p[0], "the separator");
        if (!sep.n) jj_fail(c->ar, LINE, "empty separator");
        size_t end = s.n, from = 0;
        for (int64_t k = 0; max < 0 || k < max; k++) {
            const char *hit = NULL;
            if (!right) hit = from + sep.n <= s.n ? memmem(s.s + from, s.n - from, sep.s, sep.n) : NULL;
            else
                for (size_t i = end >= sep.n ? end - sep.n + 1 : 0; i-- > 0 && !hit;)
                    if (!memcmp(s.s + i, sep.s, sep.n)) hit = s.s + i;
            if (!hit) break;
            size_t at_ = (size_t)(hit - s.s);
            if (!right) jl_push(c->ar, parts, jv_str(js_sub(s, from, at_))), from = at_ + sep.n;
            else jl_push(c->ar, parts, jv_str(js_sub(s, at_ + sep.n, end))), end = at_;
        }
        jl_push(c->ar, parts, jv_str(right ? js_sub(s, 0, end) : js_sub(s, from, s.n)));
    } else { /* runs of whitespace, no empty parts */
        JStr rest = js_strip(s, NULL, right ? 2 : 1);
        for (int64_t k = 0; rest.n; k++) {
            if (max >= 0 && k == max) {
                jl_push(c->ar, parts, jv_str(js_strip(rest, NULL, right ? 2 : 1)));
                break;
            }
            size_t i = right ? rest.n : 0, w;
            uint32_t cp = 0;
            if (!right)
                while (i < rest.n && !(w = js_next(rest, i, &cp), py_isspace(cp))) i += w;
            else
                for (size_t at_; i > 0; i = at_) {
                    at_ = i - 1;
                    while (at_ > 0 && ((unsigned char)rest.s[at_] & 0xC0) == 0x80) at_--;
                    js_next(rest, at_, &cp);
                    if (py_isspace(cp)) break;
                }
            jl_push(c->ar, parts, jv_str(right ? js_sub(rest, i, rest.n) : js_sub(rest, 0, i)));
            rest = js_strip(right ? js_sub(rest, 0, i) : js_sub(rest, i, rest.n), NULL, right ? 2 : 1);
        }
    }
    if (right) /* collected from the right */
        for (size_t i = 0; i < parts->n / 2; i++) {
            JVal t = parts->v[i];
            parts->v[i] = parts->v[parts->n - 1 - i], parts->v[parts->n - 1 - i] = t;
        }
    return list_val(parts);
}

FN(m_split) { UNUSED_ARGS; return split(c, at, v.s, p, 0); }
FN(m_rsplit) { UNUSED_ARGS; return split(c, at, v.s, p, 1); }

static JVal affix(Ctx *c, const JNode *at, JStr s, JVal arg, int end) {
    if (arg.t == V_LIST && arg.l->tuple) {
        for (size_t i = 0; i < arg.l->n; i++)
            if (jv_truthy(affix(c, at, s, arg.l->v[i], end))) return jv_bool(1);
        return jv_bool(0);
    }
    JStr x = want_str(c, LINE, arg, end ? "endswith's suffix" : "startswith's prefix");
    return jv_bool(x.n <= s.n && !memcmp(s.s + (end ? s.n - x.n : 0), x.s, x.n));
}

FN(m_startswith) { UNUSED_ARGS; return affix(c, at, v.s, *p[0], 0); }
FN(m_endswith) { UNUSED_ARGS; return affix(c, at, v.s, *p[0], 1); }

FN(m_replace) {
    UNUSED_ARGS;
    JVal *q[3] = {p[0], p[1], p[2]};
    want_str(c, LINE, *p[0], "replace's old"), want_str(c, LINE, *p[1], "replace's new");
    return f_replace(c, at, v, q, rest, nrest);
}

FN(m_join) { UNUSED_ARGS; return jv_str(joined(c, LINE, c->ev->iter(c, LINE, *p[0]), v.s)); }

static JVal find_or_count(Ctx *c, const JNode *at, JStr s, JVal arg, int count) {
    JStr x = want_str(c, LINE, arg, "the substring");
    int64_t k = 0;
    for (size_t i = 0; i + x.n <= s.n;) {
        const char *hit = memmem(s.s + i, s.n - i, x.s, x.n);
        if (!hit) break;
        if (!count) return jv_int((int64_t)js_len(js_sub(s, 0, (size_t)(hit - s.s))));
        k++, i = (size_t)(hit - s.s) + (x.n ? x.n : 1);
    }
    return jv_int(count ? (x.n ? k : (int64_t)js_len(s) + 1) : -1);
}

FN(m_find) { UNUSED_ARGS; return find_or_count(c, at, v.s, *p[0], 0); }
FN(m_count) { UNUSED_ARGS; return find_or_count(c, at, v.s, *p[0], 1); }

/* ---- dict methods ---- */

FN(m_items) { UNUSED_ARGS; return f_items(c, at, v, p, rest, nrest); }

static JVal dict_part(Ctx *c, JVal v, int values) {
    JList *l = jl_new(c->ar, v.d->n);
    for (size_t i = 0; i < v.d->n; i++) jl_push(c->ar, l, values ? v.d->v[i] : jv_str(v.d->k[i]));
    return list_val(l);
}

FN(m_keys) { UNUSED_ARGS; return dict_part(c, v, 0); }
FN(m_values) { UNUSED_ARGS; return dict_part(c, v, 1); }

FN(m_get) {
    UNUSED_ARGS;
    JVal *x = p[0]->t == V_STR ? jd_get(v.d, p[0]->s.s, p[0]->s.n) : NULL;
    return x ? *x : p[1] ? *p[1] : jv_none();
}

/* ---- global functions ---- */

FN(g_raise_exception) {
    UNUSED_ARGS;
    JStr m = jv_str_of(c->ar, LINE, *p[0]);
    jj_fail(c->ar, LINE, "the template raised an exception: %.*s", (int)(m.n < 300 ? m.n : 300), m.s);
}

FN(g_namespace) { /* namespace(**kw); a positional dict first, as Jinja's does */
    UNUSED_ARGS;
    JDict *d = jd_new(c->ar);
    if (p[0]) {
        if (p[0]->t != V_DICT) jj_fail(c->ar, LINE, "namespace() takes a dict or keywords");
        for (size_t i = 0; i < p[0]->d->n; i++) jd_set(c->ar, d, p[0]->d->k[i], p[0]->d->v[i]);
    }
    for (int i = 0; i < at->nkw; i++) jd_set(c->ar, d, at->kwn[i], rest[i]);
    return (JVal){.t = V_NS, .d = d};
}

FN(g_dict) {
    UNUSED_ARGS;
    JVal ns = g_namespace(c, at, v, p, rest, nrest);
    return (JVal){.t = V_DICT, .d = ns.d};
}

FN(g_range) {
    UNUSED_ARGS;
    int64_t a = want_int(c, LINE, *p[0], "range's argument"), b = 0, st = 1;
    if (p[1]) b = want_int(c, LINE, *p[1], "range's stop");
    else b = a, a = 0;
    if (p[2]) st = want_int(c, LINE, *p[2], "range's step");
    if (!st) jj_fail(c->ar, LINE, "range() arg 3 must not be zero");
    double n = st > 0 ? ceil(((double)b - (double)a) / (double)st) : ceil(((double)a - (double)b) / (double)-st);
    if (n > MAX_RANGE) jj_fail(c->ar, LINE, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", MAX_RANGE);
    JList *l = jl_new(c->ar, n > 0 ? (size_t)n : 1);
    for (int64_t i = a; st > 0 ? i < b : i > b; i += st) jl_push(c->ar, l, jv_int(i));
    return list_val(l);
}

/* transformers: datetime.now().strftime(format). ppa renders a fixed day instead, so that a row gives the same
 * tokens on every day (reference caches, resumes, byte-identical reruns): SOURCE_DATE_EPOCH (UTC) when set, else
 * 26 Jul 2024, the day Llama 3.1's template falls back to where strftime_now is not defined
 * (SOURCE_DATE_EPOCH=$(date +%s) gives transformers' today). */
#define FIXED_DAY 1721952000 /* 2024-07-26T00:00:00Z */
#define SOURCE_DATE_MAX 253402300799LL /* 9999-12-31T23:59:59Z: a four-digit year */

int jinja_source_date(long long *out, char *err, size_t errlen) {
    const char *e = getenv("SOURCE_DATE_EPOCH");
    long long v = 0;
    if (!e || !*e) v = FIXED_DAY;
    else { /* as the reproducible-builds specification writes it: decimal digits, what `date +%s` prints */
        const char *q = e;
        while (*q >= '0' && *q <= '9' && v <= SOURCE_DATE_MAX) v = v * 10 + (*q++ - '0');
        if (*q || v > SOURCE_DATE_MAX) {
            char shown[128];
            text_printable(shown, sizeof shown, e, strnlen(e, 40));
            return snprintf(err, errlen, "SOURCE_DATE_EPOCH=%s%s: expected whole seconds since 1970-01-01 UTC, from 0 to "
                            "%lld (9999-12-31), as `date +%%s` prints (the date strftime_now renders in chat templates)",
                            shown, strlen(e) > 40 ? "..." : "", SOURCE_DATE_MAX), -1;
        }
    }
    if (out) *out = v;
    return 0;
}

/* the format's text, whole: strftime's output grows into a larger buffer until it fits (an empty result is the
 * format's own only when a buffer far larger than any conversion gives nothing) */
FN(g_strftime_now) {
    UNUSED_ARGS;
    JStr f = want_str(c, LINE, *p[0], "strftime_now's format");
    char why[512];
    long long when;
    if (jinja_source_date(&when, why, sizeof why)) jj_fail(c->ar, LINE, "%s", why);
    time_t now = (time_t)when;
    struct tm tm;
    if (!gmtime_r(&now, &tm)) jj_fail(c->ar, LINE, "SOURCE_DATE_EPOCH=%lld: not a date", when);
    const char *fmt = js_copy(c->ar, f.s, NULL, f.n).s;
    size_t cap = 256, limit = 64 * f.n + 256, n = 0;
    char *buf = NULL;
    for (;; cap *= 2) {
        buf = xrealloc(buf, cap);
        if ((n = strftime(buf, cap, fmt, &tm)) > 0 || cap >= limit || !f.n) break;
    }
    JStr s = js_copy(c->ar, buf, NULL, n);
    free(buf);
    return jv_str(s);
}

/* ---- the table ---- */

const Builtin JB_TABLE[] = {
    {B_FILTER, 0, "abs", "", 0, f_abs},
    {B_FILTER, 0, "capitalize", "", 0, f_capitalize},
    {B_FILTER, 0, "count", "", 0, f_length},
    {B_FILTER, 0, "d", "default_value,boolean", 0, f_default},
    {B_FILTER, 0, "default", "default_value,boolean", 0, f_default},
    {B_FILTER, 0, "first", "", 0, f_first},
    {B_FILTER, 0, "float", "default", 0, f_float},
    {B_FILTER, 0, "indent", "width,first,blank", 0, f_indent},
    {B_FILTER, 0, "int", "default,base", 0, f_int},
    {B_FILTER, 0, "items", "", 0, f_items},
    {B_FILTER, 0, "join", "d,attribute", 0, f_join},
    {B_FILTER, 0, "last", "", 0, f_last},
    {B_FILTER, 0, "length", "", 0, f_length},
    {B_FILTER, 0, "list", "", 0, f_list},
    {B_FILTER, 0, "lower", "", 0, f_lower},
    {B_FILTER, 0, "map", "name,*,attribute,default", 0, f_map},
    {B_FILTER, 0, "reject", "test,*", 0, f_reject},
    {B_FILTER, 0, "rejectattr", "attr,test,*", 1, f_rejectattr},
    {B_FILTER, 0, "replace", "old,new,count", 2, f_replace},
    {B_FILTER, 0, "reverse", "", 0, f_reverse},
    {B_FILTER, 0, "safe", "", 0, f_safe},
    {B_FILTER, 0, "select", "test,*", 0, f_select},
    {B_FILTER, 0, "selectattr", "attr,test,*", 1, f_selectattr},
    {B_FILTER, 0, "string", "", 0, f_string},
    {B_FILTER, 0, "title", "", 0, f_title},
    {B_FILTER, 0, "tojson", "ensure_ascii,indent,separators,sort_keys", 0, f_tojson},
    {B_FILTER, 0, "trim", "chars", 0, f_trim},
    {B_FILTER, 0, "upper", "", 0, f_upper},
    {B_TEST, 0, "defined", "", 0, t_defined},
    {B_TEST, 0, "undefined", "", 0, t_undefined},
    {B_TEST, 0, "none", "", 0, t_none},
    {B_TEST, 0, "boolean", "", 0, t_boolean},
    {B_TEST, 0, "false", "", 0, t_false},
    {B_TEST, 0, "true", "", 0, t_true},
    {B_TEST, 0, "integer", "", 0, t_integer},
    {B_TEST, 0, "float", "", 0, t_float},
    {B_TEST, 0, "number", "", 0, t_number},
    {B_TEST, 0, "string", "", 0, t_string},
    {B_TEST, 0, "mapping", "", 0, t_mapping},
    {B_TEST, 0, "iterable", "", 0, t_iterable},
    {B_TEST, 0, "sequence", "", 0, t_sequence},
    {B_TEST, 0, "callable", "", 0, t_callable},
    {B_TEST, 0, "lower", "", 0, t_lower},
    {B_TEST, 0, "upper", "", 0, t_upper},
    {B_TEST, 0, "odd", "", 0, t_odd},
    {B_TEST, 0, "even", "", 0, t_even},
    {B_TEST, 0, "divisibleby", "num", 1, t_divisibleby},
    {B_TEST, 0, "eq", "other", 1, t_eq},
    {B_TEST, 0, "equalto", "other", 1, t_eq},
    {B_TEST, 0, "==", "other", 1, t_eq},
    {B_TEST, 0, "ne", "other", 1, t_ne},
    {B_TEST, 0, "!=", "other", 1, t_ne},
    {B_TEST, 0, "lt", "other", 1, t_lt},
    {B_TEST, 0, "lessthan", "other", 1, t_lt},
    {B_TEST, 0, "<", "other", 1, t_lt},
    {B_TEST, 0, "le", "other", 1, t_le},
    {B_TEST, 0, "<=", "other", 1, t_le},
    {B_TEST, 0, "gt", "other", 1, t_gt},
    {B_TEST, 0, "greaterthan", "other", 1, t_gt},
    {B_TEST, 0, ">", "other", 1, t_gt},
    {B_TEST, 0, "ge", "other", 1, t_ge},
    {B_TEST, 0, ">=", "other", 1, t_ge},
    {B_TEST, 0, "in", "seq", 1, t_in},
    {B_METHOD, V_STR, "strip", "chars", 0, m_strip},
    {B_METHOD, V_STR, "lstrip", "chars", 0, m_lstrip},
    {B_METHOD, V_STR, "rstrip", "chars", 0, m_rstrip},
    {B_METHOD, V_STR, "split", "sep,maxsplit", 0, m_split},
    {B_METHOD, V_STR, "rsplit", "sep,maxsplit", 0, m_rsplit},
    {B_METHOD, V_STR, "startswith", "prefix", 1, m_startswith},
    {B_METHOD, V_STR, "endswith", "suffix", 1, m_endswith},
    {B_METHOD, V_STR, "upper", "", 0, m_upper},
    {B_METHOD, V_STR, "lower", "", 0, m_lower},
    {B_METHOD, V_STR, "title", "", 0, m_title},
    {B_METHOD, V_STR, "capitalize", "", 0, m_capitalize},
    {B_METHOD, V_STR, "replace", "old,new,count", 2, m_replace},
    {B_METHOD, V_STR, "join", "iterable", 1, m_join},
    {B_METHOD, V_STR, "find", "sub", 1, m_find},
    {B_METHOD, V_STR, "count", "sub", 1, m_count},
    {B_METHOD, V_DICT, "items", "", 0, m_items},
    {B_METHOD, V_DICT, "keys", "", 0, m_keys},
    {B_METHOD, V_DICT, "values", "", 0, m_values},
    {B_METHOD, V_DICT, "get", "key,default", 1, m_get},
    {B_FUNC, 0, "raise_exception", "message", 1, g_raise_exception},
    {B_FUNC, 0, "namespace", "mapping,**", 0, g_namespace},
    {B_FUNC, 0, "range", "start,stop,step", 1, g_range},
    {B_FUNC, 0, "dict", "**", 0, g_dict},
    {B_FUNC, 0, "strftime_now", "format", 1, g_strftime_now},
};

const size_t JB_N = PPA_ARRAY_LEN(JB_TABLE);
