/* jinja_eval.c: rendering a parsed chat template (jinja.h) with Jinja's
 * semantics as transformers runs them: Undefined for missing names and keys
 * (printing nothing, false, empty to iterate; an error to use further), a
 * new scope per loop iteration (a set inside a loop is lost after it;
 * namespace() carries values out), Python arithmetic and comparisons. The
 * message-text flags ride on the strings into the output. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "template/internal.h"

static JVal jj_getattr(Ctx *c, int line, JVal obj, JStr name);
static JList *jj_iter(Ctx *c, int line, JVal v);
static JVal jj_apply(Ctx *c, const JNode *at, BuiltinKind k, JStr name, JVal v, JVal *args, int nargs);

#define MAX_OUTPUT ((size_t)64 << 20) /* bytes rendered */

typedef struct Scope {
    struct Scope *up;
    JDict vars;
} Scope;

/* the output buffers of the {% set %} blocks being rendered, freed on failure */
typedef struct Pending {
    struct Pending *up;
    ByteBuf out, mask;
} Pending;

JVal jj_eval(Ctx *c, const JNode *n);

static void tick(Ctx *c, int line) {
    if (++c->steps > c->max_steps)
        jj_fail(c->ar, line, "the template runs too long: more than %ld steps for %d message%s of %ld bytes (with the "
                "template's variables; the bound: %ld + %ld a message + %ld a byte)", c->max_steps, c->n_messages,
                c->n_messages == 1 ? "" : "s",
                (c->max_steps - JINJA_STEPS_BASE - JINJA_STEPS_PER_MESSAGE * c->n_messages) / JINJA_STEPS_PER_BYTE,
                JINJA_STEPS_BASE, JINJA_STEPS_PER_MESSAGE, JINJA_STEPS_PER_BYTE);
}

static void put(Ctx *c, JStr s, int line) {
    if (c->out->n + s.n > MAX_OUTPUT) jj_fail(c->ar, line, "the template writes more than %zu MiB", MAX_OUTPUT >> 20);
    bytebuf_put(c->out, s.s, s.n);
    if (s.m) {
        bytebuf_put(c->mask, s.m, s.n);
        return;
    }
    static const unsigned char ZERO[256];
    for (size_t i = 0; i < s.n; i += sizeof ZERO) bytebuf_put(c->mask, ZERO, s.n - i < sizeof ZERO ? s.n - i : sizeof ZERO);
}

/* ---- names ---- */

static JVal lookup(Ctx *c, JStr name) {
    for (Scope *s = c->scope; s; s = s->up) {
        JVal *v = jd_get(&s->vars, name.s, name.n);
        if (v) return *v;
    }
    JVal *g = jd_get(c->globals, name.s, name.n);
    if (g) return *g;
    char msg[160];
    snprintf(msg, sizeof msg, "'%.*s' is undefined", (int)(name.n < 100 ? name.n : 100), name.s);
    return jv_undef(js_copy(c->ar, msg, NULL, strlen(msg)).s);
}

static void bind(Ctx *c, const JNode *t, JVal v) {
    if (t->kind == E_NAME) return jd_set(c->ar, &c->scope->vars, t->name, v);
    if (t->kind == E_NSREF) {
        JVal ns = lookup(c, t->name2);
        if (ns.t != V_NS)
            jj_fail(c->ar, t->line, "cannot assign attribute on a %s ('%.*s' is not a namespace)", jv_type(ns),
                    (int)t->name2.n, t->name2.s);
        return jd_set(c->ar, ns.d, t->name, v);
    }
    JList *items = jj_iter(c, t->line, v); /* a tuple target unpacks */
    if (items->n != (size_t)t->nargs)
        jj_fail(c->ar, t->line, "cannot unpack %zu values into %d names", items->n, t->nargs);
    for (int i = 0; i < t->nargs; i++) bind(c, t->args[i], items->v[i]);
}

/* ---- attributes, items, slices ---- */

static JVal undefined_attr(Ctx *c, JVal obj, JStr name) {
    char msg[160];
    snprintf(msg, sizeof msg, "'%s object' has no attribute '%.*s'", jv_type(obj), (int)(name.n < 80 ? name.n : 80), name.s);
    return jv_undef(js_copy(c->ar, msg, NULL, strlen(msg)).s);
}

static JVal jj_getattr(Ctx *c, int line, JVal obj, JStr name) {
    if (obj.t == V_UNDEF) jj_fail(c->ar, line, "%s", obj.s.s);
    JVal m;
    if (obj.t != V_NS && jb_method_of(c->ar, obj, name, &m)) return m; /* getattr before the item, as Python */
    if (obj.t == V_DICT || obj.t == V_NS) {
        JVal *v = jd_get(obj.d, name.s, name.n);
        if (v) return *v;
    }
    return undefined_attr(c, obj, name);
}

static int64_t as_index(Ctx *c, int line, JVal v) {
    if (v.t == V_INT) return v.i;
    if (v.t == V_BOOL) return v.b;
    jj_fail(c->ar, line, "indices must be integers, not %s", jv_type(v));
}

static JVal getitem(Ctx *c, int line, JVal obj, JVal key) {
    if (obj.t == V_UNDEF) jj_fail(c->ar, line, "%s", obj.s.s);
    if ((obj.t == V_LIST || obj.t == V_STR) && (key.t == V_INT || key.t == V_BOOL)) {
        int64_t i = as_index(c, line, key), n = obj.t == V_LIST ? (int64_t)obj.l->n : (int64_t)js_len(obj.s);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return jv_undef("the index is out of range");
        if (obj.t == V_LIST) return obj.l->v[i];
        size_t at = js_offset(obj.s, (size_t)i);
        uint32_t cp;
        return jv_str(js_sub(obj.s, at, at + js_next(obj.s, at, &cp)));
    }
    if ((obj.t == V_DICT || obj.t == V_NS) && key.t == V_STR) {
        JVal *v = jd_get(obj.d, key.s.s, key.s.n);
        if (v) return *v;
    }
    if (key.t == V_STR && obj.t != V_NS) return jj_getattr(c, line, obj, key.s); /* then the attribute */
    return jv_undef("the item is undefined");
}

/* Python's slice of a sequence of n: the indices it picks */
static void slice_indices(Ctx *c, const JNode *n, int64_t len, int64_t *start, int64_t *step, int64_t *count) {
    JVal v[3] = {jv_none(), jv_none(), jv_none()};
    const JNode *parts[3] = {n->b, n->c, n->d};
    for (int k = 0; k < 3; k++) {
        if (parts[k]) v[k] = jj_eval(c, parts[k]);
        if (v[k].t != V_NONE && v[k].t != V_INT && v[k].t != V_BOOL)
            jj_fail(c->ar, n->line, "slice indices must be integers or None, not %s", jv_type(v[k]));
    }
    int64_t st = v[2].t == V_NONE ? 1 : as_index(c, n->line, v[2]);
    if (st == 0) jj_fail(c->ar, n->line, "slice step cannot be zero");
    int64_t lo = st < 0 ? -1 : 0, hi = st < 0 ? len - 1 : len;
    int64_t a = v[0].t == V_NONE ? (st < 0 ? hi : lo) : as_index(c, n->line, v[0]);
    int64_t b = v[1].t == V_NONE ? (st < 0 ? lo : hi) : as_index(c, n->line, v[1]);
    if (v[0].t != V_NONE) a = a < 0 ? (a + len < lo ? lo : a + len) : (a > hi ? hi : a);
    if (v[1].t != V_NONE) b = b < 0 ? (b + len < lo ? lo : b + len) : (b > hi ? hi : b);
    *start = a, *step = st;
    *count = st > 0 ? (b > a ? (b - a + st - 1) / st : 0) : (a > b ? (a - b - st - 1) / -st : 0);
}

static JVal slice(Ctx *c, const JNode *n, JVal obj) {
    if (obj.t == V_UNDEF) jj_fail(c->ar, n->line, "%s", obj.s.s);
    if (obj.t != V_LIST && obj.t != V_STR) return jv_undef("the value cannot be sliced");
    int64_t len = obj.t == V_LIST ? (int64_t)obj.l->n : (int64_t)js_len(obj.s), start, step, count;
    slice_indices(c, n, len, &start, &step, &count);
    if (obj.t == V_LIST) {
        JList *l = jl_new(c->ar, (size_t)count);
        l->tuple = obj.l->tuple;
        for (int64_t k = 0; k < count; k++) jl_push(c->ar, l, obj.l->v[start + k * step]);
        return (JVal){.t = V_LIST, .l = l};
    }
    if (step == 1) { /* a plain substring keeps its flags as they are */
        size_t from = js_offset(obj.s, (size_t)start);
        return jv_str(js_sub(obj.s, from, count ? js_offset(obj.s, (size_t)(start + count)) : from));
    }
    JStr out = js_lit("");
    for (int64_t k = 0; k < count; k++) {
        size_t at = js_offset(obj.s, (size_t)(start + k * step));
        uint32_t cp;
        out = js_cat(c->ar, out, js_sub(obj.s, at, at + js_next(obj.s, at, &cp)));
    }
    return jv_str(out);
}

static JList *jj_iter(Ctx *c, int line, JVal v) {
    JList *l = jl_new(c->ar, 8);
    if (v.t == V_UNDEF) return l; /* Undefined iterates as empty */
    if (v.t == V_LIST) return v.l;
    if (v.t == V_DICT) {
        for (size_t i = 0; i < v.d->n; i++) jl_push(c->ar, l, jv_str(v.d->k[i]));
        return l;
    }
    if (v.t != V_STR) jj_fail(c->ar, line, "'%s' object is not iterable", jv_type(v));
    for (size_t i = 0; i < v.s.n;) {
        uint32_t cp;
        size_t k = js_next(v.s, i, &cp);
        jl_push(c->ar, l, jv_str(js_sub(v.s, i, i + k)));
        i += k;
    }
    return l;
}

/* ---- operators ---- */

static int is_num(JVal v) { return v.t == V_BOOL || v.t == V_INT || v.t == V_FLOAT; }
static double fnum(JVal v) { return v.t == V_FLOAT ? v.f : v.t == V_INT ? (double)v.i : v.b; }
static int64_t inum(JVal v) { return v.t == V_INT ? v.i : v.b; }

static _Noreturn void bad_operands(Ctx *c, int line, const char *op, JVal x, JVal y) {
    if (x.t == V_UNDEF || y.t == V_UNDEF) {
        JVal u = x.t == V_UNDEF ? x : y;
        jj_fail(c->ar, line, "%s", u.s.s);
    }
    jj_fail(c->ar, line, "unsupported operand type(s) for %s: '%s' and '%s'", op, jv_type(x), jv_type(y));
}

static JVal repeat(Ctx *c, int line, JVal seq, int64_t k) {
    size_t unit = seq.t == V_STR ? seq.s.n : seq.l->n;
    if (k > 0 && unit && (uint64_t)k > ((size_t)16 << 20) / unit) jj_fail(c->ar, line, "a repetition of more than 16 M items");
    if (seq.t == V_STR) {
        size_t n = k > 0 ? unit * (size_t)k : 0;
        char *o = ar_alloc(c->ar, n + 1);
        unsigned char *m = seq.s.m ? ar_alloc(c->ar, n + 1) : NULL;
        for (size_t i = 0; i < n; i += unit) {
            memcpy(o + i, seq.s.s, unit);
            if (m) memcpy(m + i, seq.s.m, unit);
        }
        return jv_str((JStr){o, m, n});
    }
    JList *l = jl_new(c->ar, 8);
    l->tuple = seq.l->tuple;
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq.l->n; j++) jl_push(c->ar, l, seq.l->v[j]);
    return (JVal){.t = V_LIST, .l = l};
}

static JVal arith(Ctx *c, int line, int op, JVal x, JVal y) {
    static const char *const SYM[] = {[O_ADD] = "+", [O_SUB] = "-", [O_MUL] = "*", [O_DIV] = "/", [O_FLOORDIV] = "//",
                                      [O_MOD] = "%", [O_POW] = "**"};
    int64_t r;
    if (op == O_ADD && x.t == V_STR && y.t == V_STR) return jv_str(js_cat(c->ar, x.s, y.s));
    if (op == O_ADD && x.t == V_LIST && y.t == V_LIST && x.l->tuple == y.l->tuple) {
        JList *l = jl_new(c->ar, x.l->n + y.l->n);
        l->tuple = x.l->tuple;
        for (size_t i = 0; i < x.l->n; i++) jl_push(c->ar, l, x.l->v[i]);
        for (size_t i = 0; i < y.l->n; i++) jl_push(c->ar, l, y.l->v[i]);
        return (JVal){.t = V_LIST, .l = l};
    }
    if (op == O_MUL && (x.t == V_STR || x.t == V_LIST) && (y.t == V_INT || y.t == V_BOOL)) return repeat(c, line, x, inum(y));
    if (op == O_MUL && (y.t == V_STR || y.t == V_LIST) && (x.t == V_INT || x.t == V_BOOL)) return repeat(c, line, y, inum(x));
    if (op == O_MOD && x.t == V_STR) jj_fail(c->ar, line, "%% string formatting is not supported by ppa's template renderer");
    if (!is_num(x) || !is_num(y)) bad_operands(c, line, SYM[op], x, y);
    int fl = x.t == V_FLOAT || y.t == V_FLOAT;
    if ((op == O_DIV || op == O_FLOORDIV || op == O_MOD) && fnum(y) == 0) jj_fail(c->ar, line, "division by zero");
    if (op == O_DIV) return jv_float(fnum(x) / fnum(y));
    if (fl || (op == O_POW && inum(y) < 0)) {
        double a = fnum(x), b = fnum(y);
        switch (op) {
        case O_ADD: return jv_float(a + b);
        case O_SUB: return jv_float(a - b);
        case O_MUL: return jv_float(a * b);
        case O_FLOORDIV: return jv_float(floor(a / b));
        case O_MOD: return jv_float(a - b * floor(a / b));
        default: return jv_float(pow(a, b));
        }
    }
    int64_t a = inum(x), b = inum(y);
    switch (op) {
    case O_ADD: if (__builtin_add_overflow(a, b, &r)) break; return jv_int(r);
    case O_SUB: if (__builtin_sub_overflow(a, b, &r)) break; return jv_int(r);
    case O_MUL: if (__builtin_mul_overflow(a, b, &r)) break; return jv_int(r);
    case O_FLOORDIV:
        if (a == INT64_MIN && b == -1) break;
        return jv_int(a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
    case O_MOD:
        if (b == -1) return jv_int(0);
        return jv_int(a % b + ((a % b != 0 && (a < 0) != (b < 0)) ? b : 0));
    default: /* ** */
        r = 1;
        for (int64_t k = 0; k < b; k++)
            if (__builtin_mul_overflow(r, a, &r)) jj_fail(c->ar, line, "an integer past 64 bits");
        return jv_int(r);
    }
    jj_fail(c->ar, line, "an integer past 64 bits");
}

static int contains(Ctx *c, int line, JVal needle, JVal hay) {
    if (hay.t == V_STR) {
        if (needle.t != V_STR) jj_fail(c->ar, line, "'in <string>' requires string as left operand, not %s", jv_type(needle));
        return !needle.s.n || memmem(hay.s.s, hay.s.n, needle.s.s, needle.s.n) != NULL;
    }
    if (hay.t == V_DICT) return needle.t == V_STR && jd_get(hay.d, needle.s.s, needle.s.n);
    if (hay.t == V_UNDEF) return 0;
    if (hay.t != V_LIST) jj_fail(c->ar, line, "argument of type '%s' is not iterable", jv_type(hay));
    for (size_t i = 0; i < hay.l->n; i++)
        if (jv_eq(needle, hay.l->v[i])) return 1;
    return 0;
}

static int compare(Ctx *c, int line, int op, JVal x, JVal y) {
    switch (op) {
    case O_EQ: return jv_eq(x, y);
    case O_NE: return !jv_eq(x, y);
    case O_LT: return jv_less(c->ar, line, x, y);
    case O_GT: return jv_less(c->ar, line, y, x);
    case O_LE: return !jv_less(c->ar, line, y, x);
    case O_GE: return !jv_less(c->ar, line, x, y);
    case O_IN: return contains(c, line, x, y);
    default: return !contains(c, line, x, y);
    }
}

/* ---- expressions ---- */

static JVal *eval_args(Ctx *c, JNode *const *nodes, int n) {
    JVal *v = ar_alloc(c->ar, sizeof(JVal) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) v[i] = jj_eval(c, nodes[i]);
    return v;
}

static JVal call_value(Ctx *c, const JNode *n, JVal f) {
    JVal *args = eval_args(c, n->args, n->nargs), *kw = eval_args(c, n->kwv, n->nkw);
    if (f.t == V_FUNC) return jb_call(c, n, f.fn, jv_undef(""), args, n->nargs, n->kwn, kw, n->nkw);
    if (f.t == V_METHOD) return jb_call(c, n, f.fn, *f.self, args, n->nargs, n->kwn, kw, n->nkw);
    if (f.t == V_UNDEF) jj_fail(c->ar, n->line, "%s", f.s.s);
    jj_fail(c->ar, n->line, "'%s' object is not callable", jv_type(f));
}

static JVal jj_apply(Ctx *c, const JNode *at, BuiltinKind k, JStr name, JVal v, JVal *args, int nargs) {
    int b = jb_find(k, name.s, name.n);
    if (b < 0) jj_fail(c->ar, at->line, "no %s named '%.*s'", k == B_TEST ? "test" : "filter", (int)name.n, name.s);
    return jb_call(c, at, b, v, args, nargs, NULL, NULL, 0);
}

JVal jj_eval(Ctx *c, const JNode *n) {
    tick(c, n->line);
    switch (n->kind) {
    case E_LIT: return n->lit;
    case E_NAME: return lookup(c, n->name);
    case E_ATTR: return jj_getattr(c, n->line, jj_eval(c, n->a), n->name);
    case E_ITEM: {
        JVal obj = jj_eval(c, n->a);
        return getitem(c, n->line, obj, jj_eval(c, n->b));
    }
    case E_SLICE: return slice(c, n, jj_eval(c, n->a));
    case E_CALL: return call_value(c, n, jj_eval(c, n->a));
    case E_FILTER:
    case E_TEST: {
        JVal v = jj_eval(c, n->a);
        return jb_call(c, n, n->builtin, v, eval_args(c, n->args, n->nargs), n->nargs, n->kwn, eval_args(c, n->kwv, n->nkw),
                       n->nkw);
    }
    case E_NOT: return jv_bool(!jv_truthy(jj_eval(c, n->a)));
    case E_NEG:
    case E_POS: {
        JVal v = jj_eval(c, n->a);
        if (!is_num(v)) bad_operands(c, n->line, n->kind == E_NEG ? "unary -" : "unary +", v, v);
        if (n->kind == E_POS) return v.t == V_BOOL ? jv_int(v.b) : v;
        if (v.t == V_FLOAT) return jv_float(-v.f);
        if (inum(v) == INT64_MIN) jj_fail(c->ar, n->line, "an integer past 64 bits");
        return jv_int(-inum(v));
    }
    case E_BIN: {
        JVal x = jj_eval(c, n->a), y = jj_eval(c, n->b);
        if (n->op == O_TILDE) return jv_str(js_cat(c->ar, jv_str_of(c->ar, n->line, x), jv_str_of(c->ar, n->line, y)));
        return arith(c, n->line, n->op, x, y);
    }
    case E_AND: {
        JVal x = jj_eval(c, n->a);
        return jv_truthy(x) ? jj_eval(c, n->b) : x;
    }
    case E_OR: {
        JVal x = jj_eval(c, n->a);
        return jv_truthy(x) ? x : jj_eval(c, n->b);
    }
    case E_CMP: {
        JVal x = jj_eval(c, n->a);
        for (int i = 0; i < n->nargs; i++) {
            JVal y = jj_eval(c, n->args[i]);
            if (!compare(c, n->line, n->ops[i], x, y)) return jv_bool(0);
            x = y;
        }
        return jv_bool(1);
    }
    case E_COND:
        if (jv_truthy(jj_eval(c, n->b))) return jj_eval(c, n->a);
        return n->c ? jj_eval(c, n->c) : jv_undef("the conditional expression has no else");
    case E_LIST:
    case E_TUPLE: {
        JList *l = jl_new(c->ar, (size_t)n->nargs);
        l->tuple = n->kind == E_TUPLE;
        for (int i = 0; i < n->nargs; i++) jl_push(c->ar, l, jj_eval(c, n->args[i]));
        return (JVal){.t = V_LIST, .l = l};
    }
    case E_DICT: {
        JDict *d = jd_new(c->ar);
        for (int i = 0; i + 1 < n->nargs; i += 2) {
            JVal k = jj_eval(c, n->args[i]);
            if (k.t != V_STR) jj_fail(c->ar, n->line, "dict keys other than strings are not supported (%s)", jv_type(k));
            jd_set(c->ar, d, k.s, jj_eval(c, n->args[i + 1]));
        }
        return (JVal){.t = V_DICT, .d = d};
    }
    default: jj_fail(c->ar, n->line, "internal: node %d is not an expression", n->kind);
    }
}

/* ---- statements ---- */

static void exec(Ctx *c, const JNode *n);

/* Jinja's loop object, one per loop and updated in place, as Python's LoopContext is */
static void loop_update(Ctx *c, JDict *d, const JList *items, size_t i) {
    int64_t len = (int64_t)items->n, k = (int64_t)i;
    jd_set(c->ar, d, js_lit("index"), jv_int(k + 1));
    jd_set(c->ar, d, js_lit("index0"), jv_int(k));
    jd_set(c->ar, d, js_lit("revindex"), jv_int(len - k));
    jd_set(c->ar, d, js_lit("revindex0"), jv_int(len - k - 1));
    jd_set(c->ar, d, js_lit("first"), jv_bool(k == 0));
    jd_set(c->ar, d, js_lit("last"), jv_bool(k == len - 1));
    jd_set(c->ar, d, js_lit("length"), jv_int(len));
    jd_set(c->ar, d, js_lit("depth"), jv_int(1));
    jd_set(c->ar, d, js_lit("depth0"), jv_int(0));
    jd_set(c->ar, d, js_lit("previtem"), k ? items->v[k - 1] : jv_undef("there is no previous item"));
    jd_set(c->ar, d, js_lit("nextitem"), k + 1 < len ? items->v[k + 1] : jv_undef("there is no next item"));
}

static void exec_for(Ctx *c, const JNode *n) {
    JList *all = jj_iter(c, n->line, jj_eval(c, n->b)), *items = all;
    Scope *outer = c->scope, s = {outer, {0}};
    if (n->e) { /* for x in xs if cond: the items the condition keeps */
        items = jl_new(c->ar, all->n);
        for (size_t i = 0; i < all->n; i++) {
            tick(c, n->line); /* every iteration is a step, its body empty or not */
            s.vars.n = 0;
            c->scope = &s;
            bind(c, n->a, all->v[i]);
            if (jv_truthy(jj_eval(c, n->e))) jl_push(c->ar, items, all->v[i]);
            c->scope = outer;
        }
    }
    if (!items->n) return exec(c, n->d);
    JDict *loop = jd_new(c->ar);
    for (size_t i = 0; i < items->n; i++) {
        tick(c, n->line); /* every iteration is a step: nested empty loops are bounded too */
        s.vars.n = 0; /* each iteration starts from the outer names (its storage reused) */
        c->scope = &s;
        bind(c, n->a, items->v[i]);
        loop_update(c, loop, items, i);
        jd_set(c->ar, &s.vars, js_lit("loop"), (JVal){.t = V_DICT, .d = loop});
        exec(c, n->c);
        c->scope = outer;
        if (c->ctl == 1) {
            c->ctl = 0;
            break;
        }
        c->ctl = 0;
    }
}

static void exec(Ctx *c, const JNode *n) {
    for (; n && !c->ctl; n = n->next) {
        tick(c, n->line);
        switch (n->kind) {
        case S_TEXT: put(c, n->lit.s, n->line); break;
        case S_OUT: put(c, jv_str_of(c->ar, n->line, jj_eval(c, n->a)), n->line); break;
        case S_IF: exec(c, jv_truthy(jj_eval(c, n->a)) ? n->b : n->c); break;
        case S_FOR: exec_for(c, n); break;
        case S_SET: bind(c, n->a, jj_eval(c, n->b)); break;
        case S_SETBLOCK: { /* the body rendered into a string */
            ByteBuf *out = c->out, *mask = c->mask;
            Pending *p = xcalloc(1, sizeof *p);
            p->up = c->pending, c->pending = p;
            bytebuf_put(&p->out, "", 0), bytebuf_put(&p->mask, "", 0);
            c->out = &p->out, c->mask = &p->mask;
            exec(c, n->b);
            c->out = out, c->mask = mask, c->pending = p->up;
            JStr s = js_copy(c->ar, p->out.s, (const unsigned char *)p->mask.s, p->out.n);
            free(p->out.s), free(p->mask.s), free(p);
            bind(c, n->a, jv_str(s));
            break;
        }
        case S_BREAK: c->ctl = 1; break;
        case S_CONTINUE: c->ctl = 2; break;
        case S_BODY: exec(c, n->b); break;
        default: jj_fail(c->ar, n->line, "internal: node %d is not a statement", n->kind);
        }
    }
}

int jinja_render(const JinjaTemplate *t, const JinjaChat *chat, ByteBuf *out, ByteBuf *mask, char *err, size_t errlen) {
    jmp_buf jb;
    static const EvalOps OPS = {jj_getattr, jj_apply, jj_iter};
    Ctx *c = xcalloc(1, sizeof *c); /* on the heap: it changes after setjmp */
    c->ev = &OPS;
    Arena *ar = xcalloc(1, sizeof *ar);
    *ar = (Arena){.limit = (size_t)256 << 20, .jb = &jb, .err = err, .errlen = errlen};
    Scope *root = xcalloc(1, sizeof *root);
    c->ar = ar, c->out = out, c->mask = mask, c->scope = root;
    int rc = 0;
    if (setjmp(jb)) {
        rc = -1;
        for (Pending *p = c->pending, *up; p; p = up) up = p->up, free(p->out.s), free(p->mask.s), free(p);
    } else {
        bytebuf_put(out, "", 0), bytebuf_put(mask, "", 0);
        c->globals = jd_new(ar);
        static const char *const FUNCS[] = {"raise_exception", "namespace", "range", "dict", "strftime_now"};
        for (size_t i = 0; i < PPA_ARRAY_LEN(FUNCS); i++)
            jd_set(ar, c->globals, js_lit(FUNCS[i]),
                   (JVal){.t = V_FUNC, .fn = (uint8_t)jb_find(B_FUNC, FUNCS[i], strlen(FUNCS[i]))});
        /* the step bound grows with the conversation: rendering a data set costs at most a fixed multiple of its size */
        long bytes = 0;
        for (int i = 0; i < chat->n_messages; i++) bytes += (long)strlen(chat->messages[i].content);
        for (int i = 0; i < chat->n_vars; i++) bytes += (long)strlen(chat->values[i]);
        c->n_messages = chat->n_messages;
        c->max_steps = JINJA_STEPS_BASE + JINJA_STEPS_PER_MESSAGE * chat->n_messages + JINJA_STEPS_PER_BYTE * bytes;
        JList *msgs = jl_new(ar, (size_t)chat->n_messages);
        for (int i = 0; i < chat->n_messages; i++) {
            JDict *m = jd_new(ar);
            const char *content = chat->messages[i].content;
            size_t len = strlen(content);
            unsigned char *flags = ar_alloc(ar, len + 1);
            memset(flags, 1, len); /* every byte of a message's content is message text */
            jd_set(ar, m, js_lit("role"), jv_str(js_lit(chat->messages[i].role)));
            jd_set(ar, m, js_lit("content"), jv_str((JStr){content, len ? flags : NULL, len}));
            jl_push(ar, msgs, (JVal){.t = V_DICT, .d = m});
        }
        jd_set(ar, &root->vars, js_lit("messages"), (JVal){.t = V_LIST, .l = msgs});
        jd_set(ar, &root->vars, js_lit("add_generation_prompt"), jv_bool(chat->add_generation_prompt));
        jd_set(ar, &root->vars, js_lit("tools"), jv_none()); /* transformers passes both, as None */
        jd_set(ar, &root->vars, js_lit("documents"), jv_none());
        for (int i = 0; i < chat->n_vars; i++) jd_set(ar, &root->vars, js_lit(chat->names[i]), jv_str(js_lit(chat->values[i])));
        exec(c, t->body);
        if (c->ctl) jj_fail(ar, 0, "internal: a loop control escaped its loop");
    }
    ar_free(ar);
    free(ar), free(root), free(c);
    return rc;
}
