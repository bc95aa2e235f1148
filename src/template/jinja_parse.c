/* jinja_parse.c: chat-template source to a syntax tree (template/internal.h).
 * The lexer follows Jinja's with transformers' environment: newlines
 * normalised and one trailing newline dropped, trim_blocks (the newline
 * after a block or comment tag goes), lstrip_blocks (blanks before a block
 * or comment tag alone on its line go), '-' and '+' at either end of a tag.
 * The parser is Jinja's grammar, precedence for precedence; whatever ppa's
 * renderer lacks is refused here, naming the construct and its line, so a
 * template is never rendered differently from Hugging Face's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "template/internal.h"

typedef enum { K_TEXT, K_VAR_BEGIN, K_VAR_END, K_BLOCK_BEGIN, K_BLOCK_END, K_NAME, K_STRING, K_INT, K_FLOAT, K_OP, K_EOF } TokKind;

typedef struct {
    uint8_t kind, op;
    int line;
    JStr s; /* text, name, string */
    int64_t i;
    double f;
} Tok;

typedef struct {
    Arena *ar;
    Tok *t;
    size_t n, cap, pos;
    int depth, loops;
} Parser;

#define MAX_DEPTH 200

/* ---- lexer ---- */

static void emit(Parser *p, Tok t) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        Tok *nt = ar_alloc(p->ar, sizeof(Tok) * cap);
        if (p->n) memcpy(nt, p->t, sizeof(Tok) * p->n);
        p->t = nt, p->cap = cap;
    }
    p->t[p->n++] = t;
}

static size_t count_nl(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += s[i] == '\n';
    return k;
}

/* bytes of Python whitespace starting at s[0..n) */
static size_t skip_space(const char *s, size_t n) {
    JStr x = {s, NULL, n};
    return js_strip(x, NULL, 1).s - s;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Python's unicode-escape on a string literal's body */
static JStr unescape(Parser *p, const char *s, size_t n, int line) {
    char *o = ar_alloc(p->ar, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) {
            o[k++] = s[i];
            continue;
        }
        char c = s[++i];
        const char *simple = strchr("\\'\"abfnrtv", c);
        if (simple && c) {
            o[k++] = "\\'\"\a\b\f\n\r\t\v"[simple - "\\'\"abfnrtv"];
        } else if (c == '\n') { /* a line continuation */
        } else if (c >= '0' && c <= '7') {
            int v = 0, d = 0;
            for (; d < 3 && i < n && s[i] >= '0' && s[i] <= '7'; d++) v = v * 8 + (s[i++] - '0');
            i--;
            char u[4];
            size_t m = utf8_put((uint32_t)v, u);
            memcpy(o + k, u, m), k += m;
        } else if (c == 'x' || c == 'u' || c == 'U') {
            int want = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int d = 0; d < want; d++) {
                int h = i + 1 + (size_t)d < n ? hexval(s[i + 1 + d]) : -1;
                if (h < 0) jj_fail(p->ar, line, "a string literal has a truncated \\%c escape", c);
                v = v * 16 + (uint32_t)h;
            }
            i += (size_t)want;
            if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
                jj_fail(p->ar, line, "a string literal escapes a code point that is not a character (\\%c)", c);
            char u[4];
            size_t m = utf8_put(v, u);
            memcpy(o + k, u, m), k += m;
        } else if (c == 'N') {
            jj_fail(p->ar, line, "\\N{...} escapes in string literals are not supported");
        } else { /* unknown escapes stay as written */
            o[k++] = '\\', o[k++] = c;
        }
    }
    return (JStr){o, NULL, k};
}

static const char *const OPS[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "[", "]",
                                  "(", ")", "{", "}", "<", ">", "=", ".", ":", "|", ",", ";"};
static const uint8_t OP_CODES[] = {O_FLOORDIV, O_POW, O_EQ, O_NE, O_LE, O_GE, O_ADD, O_SUB, O_MUL,
                                   O_DIV, O_MOD, O_TILDE, O_LBRACKET, O_RBRACKET, O_LPAREN, O_RPAREN, O_LBRACE, O_RBRACE,
                                   O_LT, O_GT, O_ASSIGN, O_DOT, O_COLON, O_PIPE, O_COMMA, O_SEMI};

static size_t lex_number(Parser *p, const char *s, size_t n, int line) {
    size_t i = 0;
    Tok t = {.kind = K_INT, .line = line};
    if (n > 2 && s[0] == '0' && strchr("xXoObB", s[1])) {
        int base = strchr("xX", s[1]) ? 16 : strchr("oO", s[1]) ? 8 : 2;
        char digits[80];
        size_t k = 0;
        for (i = 2; i < n && (hexval(s[i]) >= 0 && hexval(s[i]) < base ? 1 : s[i] == '_'); i++)
            if (s[i] != '_' && k < sizeof digits - 1) digits[k++] = s[i];
        digits[k] = 0;
        errno = 0;
        t.i = (int64_t)strtoll(digits, NULL, base);
        if (!k || errno) jj_fail(p->ar, line, "the number '%.*s' is malformed or too large", (int)i, s);
        emit(p, t);
        return i;
    }
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_')) i++;
    if (i + 1 < n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
        t.kind = K_FLOAT;
        for (i++; i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_');) i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1 + (i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-'));
        if (j < n && s[j] >= '0' && s[j] <= '9') {
            t.kind = K_FLOAT;
            for (i = j; i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_');) i++;
        }
    }
    char text[80];
    size_t k = 0;
    for (size_t j = 0; j < i && k < sizeof text - 1; j++)
        if (s[j] != '_') text[k++] = s[j];
    text[k] = 0;
    if (t.kind == K_INT && k > 1 && text[0] == '0') jj_fail(p->ar, line, "the number '%s' has a leading zero", text);
    errno = 0;
    if (t.kind == K_FLOAT) t.f = strtod(text, NULL);
    else t.i = (int64_t)strtoll(text, NULL, 10);
    if (errno) jj_fail(p->ar, line, "the number '%s' is too large", text);
    emit(p, t);
    return i;
}

/* One tag's tokens, from after its opening to after its closing. */
static size_t lex_tag(Parser *p, const char *s, size_t n, size_t pos, int var, int *line, int *line_starting) {
    char stack[64];
    int depth = 0, open_line = *line;
    for (;;) {
        size_t w = skip_space(s + pos, n - pos);
        *line += (int)count_nl(s + pos, w);
        pos += w;
        if (pos >= n) jj_fail(p->ar, open_line, "the tag opened here is never closed");
        const char *c = s + pos;
        size_t left = n - pos, end = 0;
        if (!depth && var) {
            if (left >= 3 && !memcmp(c, "-}}", 3)) end = 3 + skip_space(c + 3, left - 3);
            else if (left >= 2 && !memcmp(c, "}}", 2)) end = 2;
        } else if (!depth) {
            if (left >= 3 && !memcmp(c, "+%}", 3)) end = 3;
            else if (left >= 3 && !memcmp(c, "-%}", 3)) end = 3 + skip_space(c + 3, left - 3);
            else if (left >= 2 && !memcmp(c, "%}", 2)) end = 2 + (left > 2 && c[2] == '\n'); /* trim_blocks */
        }
        if (end) {
            emit(p, (Tok){.kind = var ? K_VAR_END : K_BLOCK_END, .line = *line});
            *line += (int)count_nl(c, end);
            *line_starting = c[end - 1] == '\n';
            return pos + end;
        }
        if (*c >= '0' && *c <= '9') {
            pos += lex_number(p, c, left, *line);
        } else if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_') {
            size_t k = 1;
            while (k < left && ((c[k] >= 'a' && c[k] <= 'z') || (c[k] >= 'A' && c[k] <= 'Z') || c[k] == '_' ||
                                (c[k] >= '0' && c[k] <= '9')))
                k++;
            emit(p, (Tok){.kind = K_NAME, .line = *line, .s = {c, NULL, k}});
            pos += k;
        } else if (*c == '\'' || *c == '"') {
            size_t k = 1;
            while (k < left && c[k] != *c) k += c[k] == '\\' ? 2 : 1;
            if (k >= left) jj_fail(p->ar, *line, "a string literal is never closed");
            emit(p, (Tok){.kind = K_STRING, .line = *line, .s = unescape(p, c + 1, k - 1, *line)});
            *line += (int)count_nl(c, k);
            pos += k + 1;
        } else {
            size_t o = 0;
            while (o < PPA_ARRAY_LEN(OPS) && !(strlen(OPS[o]) <= left && !memcmp(c, OPS[o], strlen(OPS[o])))) o++;
            uint32_t cp;
            if (o == PPA_ARRAY_LEN(OPS))
                jj_fail(p->ar, *line, "unexpected character '%.*s'", (int)js_next((JStr){c, NULL, left}, 0, &cp), c);
            uint8_t op = OP_CODES[o];
            if (op == O_LPAREN || op == O_LBRACKET || op == O_LBRACE) {
                if (depth == (int)sizeof stack) jj_fail(p->ar, *line, "brackets nested too deeply");
                stack[depth++] = op == O_LPAREN ? ')' : op == O_LBRACKET ? ']' : '}';
            } else if (op == O_RPAREN || op == O_RBRACKET || op == O_RBRACE) {
                if (!depth || stack[depth - 1] != *c) jj_fail(p->ar, *line, "unexpected '%c'", *c);
                depth--;
            }
            emit(p, (Tok){.kind = K_OP, .op = op, .line = *line});
            pos += strlen(OPS[o]);
        }
    }
}

static void lex(Parser *p, const char *src, size_t len) {
    char *s = ar_alloc(p->ar, len + 1); /* newlines normalised to \n; the last one dropped */
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        s[n++] = src[i] == '\r' ? '\n' : src[i];
        if (src[i] == '\r' && i + 1 < len && src[i + 1] == '\n') i++;
    }
    if (n && s[n - 1] == '\n') n--;
    int line = 1, line_starting = 1;
    for (size_t pos = 0; pos < n;) {
        size_t j = pos;
        while (j + 1 < n && !(s[j] == '{' && (s[j + 1] == '{' || s[j + 1] == '%' || s[j + 1] == '#'))) j++;
        if (j + 1 >= n) { /* the rest is text */
            emit(p, (Tok){.kind = K_TEXT, .line = line, .s = {s + pos, NULL, n - pos}});
            break;
        }
        char kind = s[j + 1], sign = j + 2 < n && (s[j + 2] == '-' || s[j + 2] == '+') ? s[j + 2] : 0;
        size_t after = j + 2 + (sign != 0), text_end = j;
        if (sign == '-') {
            text_end = pos + (size_t)(js_strip((JStr){s + pos, NULL, j - pos}, NULL, 2).n);
        } else if (sign != '+' && kind != '{') { /* lstrip_blocks */
            size_t l = j;
            while (l > pos && s[l - 1] != '\n') l--;
            if ((l > pos || line_starting) && l < j && skip_space(s + l, j - l) == j - l) text_end = l;
        }
        if (text_end > pos) emit(p, (Tok){.kind = K_TEXT, .line = line, .s = {s + pos, NULL, text_end - pos}});
        line += (int)count_nl(s + pos, j - pos);
        if (kind == '#') {
            size_t k = after, end = 0;
            for (; k < n && !end; k++) { /* the first of +#}, -#} (and blanks) or #} (and one newline) */
                if ((s[k] == '+' || s[k] == '-') && k + 2 < n && s[k + 1] == '#' && s[k + 2] == '}')
                    end = 3 + (s[k] == '-' ? skip_space(s + k + 3, n - k - 3) : 0);
                else if (k + 1 < n && s[k] == '#' && s[k + 1] == '}')
                    end = 2 + (k + 2 < n && s[k + 2] == '\n');
                if (end) break;
            }
            if (!end) jj_fail(p->ar, line, "a comment is never closed");
            line += (int)count_nl(s + after, k + end - after);
            line_starting = s[k + end - 1] == '\n';
            pos = k + end;
            continue;
        }
        if (kind == '%') { /* {% raw %}: the lexer's own special case in Jinja */
            size_t k = after + skip_space(s + after, n - after);
            char c = n - k > 3 ? s[k + 3] : ' ';
            if (n - k >= 3 && !memcmp(s + k, "raw", 3) && !(c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z')))
                jj_fail(p->ar, line, "{%% raw %%} blocks are not supported by ppa's template renderer");
        }
        emit(p, (Tok){.kind = kind == '{' ? K_VAR_BEGIN : K_BLOCK_BEGIN, .line = line});
        pos = lex_tag(p, s, n, after, kind == '{', &line, &line_starting);
    }
    emit(p, (Tok){.kind = K_EOF, .line = line});
}

/* ---- parser ---- */

static Tok *cur(Parser *p) { return &p->t[p->pos]; }
static Tok *next(Parser *p) { return &p->t[p->pos < p->n - 1 ? p->pos++ : p->pos]; }
static int is_op(Parser *p, int op) { return cur(p)->kind == K_OP && cur(p)->op == op; }
static int is_name(Parser *p, const char *w) {
    Tok *t = cur(p);
    return t->kind == K_NAME && t->s.n == strlen(w) && !memcmp(t->s.s, w, t->s.n);
}

static const char *describe(Tok *t) {
    static const char *const K[] = {"text", "'{{'", "'}}'", "'{%'", "'%}'", "a name", "a string", "a number",
                                    "a number", "an operator", "the end of the template"};
    return K[t->kind];
}

static void expect_op(Parser *p, int op, const char *what) {
    if (!is_op(p, op)) jj_fail(p->ar, cur(p)->line, "expected '%s', found %s", what, describe(cur(p)));
    next(p);
}

static void expect_end(Parser *p) {
    if (cur(p)->kind != K_BLOCK_END) jj_fail(p->ar, cur(p)->line, "expected '%%}', found %s", describe(cur(p)));
    next(p);
}

static JNode *node(Parser *p, int kind, int line) {
    JNode *n = ar_alloc(p->ar, sizeof *n);
    n->kind = (uint8_t)kind, n->line = line;
    return n;
}

static void push_arg(Parser *p, JNode *n, JNode *arg) {
    JNode **a = ar_alloc(p->ar, sizeof(JNode *) * (size_t)(n->nargs + 1));
    if (n->nargs) memcpy(a, n->args, sizeof(JNode *) * (size_t)n->nargs);
    a[n->nargs++] = arg;
    n->args = a;
}

static JNode *expr(Parser *p, int condexpr);
static JNode *tuple(Parser *p, int condexpr, int explicit_parens, const char *end_word);
static JNode *unary(Parser *p, int with_filter);

static void call_args(Parser *p, JNode *n) {
    expect_op(p, O_LPAREN, "(");
    while (!is_op(p, O_RPAREN)) {
        if (n->nargs || n->nkw) {
            expect_op(p, O_COMMA, ",");
            if (is_op(p, O_RPAREN)) break;
        }
        if (is_op(p, O_MUL) || is_op(p, O_POW))
            jj_fail(p->ar, cur(p)->line, "*args and **kwargs in calls are not supported by ppa's template renderer");
        if (cur(p)->kind == K_NAME && p->t[p->pos + 1].kind == K_OP && p->t[p->pos + 1].op == O_ASSIGN) {
            JStr key = next(p)->s;
            next(p);
            JStr *kn = ar_alloc(p->ar, sizeof(JStr) * (size_t)(n->nkw + 1));
            JNode **kv = ar_alloc(p->ar, sizeof(JNode *) * (size_t)(n->nkw + 1));
            if (n->nkw) memcpy(kn, n->kwn, sizeof(JStr) * (size_t)n->nkw), memcpy(kv, n->kwv, sizeof(JNode *) * (size_t)n->nkw);
            kn[n->nkw] = key, kv[n->nkw++] = expr(p, 1);
            n->kwn = kn, n->kwv = kv;
        } else {
            if (n->nkw) jj_fail(p->ar, cur(p)->line, "a positional argument follows a keyword argument");
            push_arg(p, n, expr(p, 1));
        }
    }
    next(p);
}

/* filter and test names are checked against ppa's builtins here */
static JNode *named_builtin(Parser *p, JNode *operand, int kind, BuiltinKind bk) {
    Tok *t = cur(p);
    if (t->kind != K_NAME) jj_fail(p->ar, t->line, "expected a %s name", bk == B_FILTER ? "filter" : "test");
    next(p);
    JNode *n = node(p, kind, t->line);
    n->a = operand, n->name = t->s;
    if (is_op(p, O_DOT)) jj_fail(p->ar, t->line, "dotted %s names are not supported", bk == B_FILTER ? "filter" : "test");
    if ((n->builtin = jb_find(bk, t->s.s, t->s.n)) < 0)
        jj_fail(p->ar, t->line, "the %s '%.*s' is not supported by ppa's template renderer", bk == B_FILTER ? "filter" : "test",
                (int)t->s.n, t->s.s);
    return n;
}

static JNode *test(Parser *p, JNode *operand) {
    int line = next(p)->line, negated = is_name(p, "not");
    if (negated) next(p);
    JNode *n = named_builtin(p, operand, E_TEST, B_TEST);
    Tok *t = cur(p);
    if (is_op(p, O_LPAREN)) call_args(p, n);
    else if ((t->kind == K_NAME || t->kind == K_STRING || t->kind == K_INT || t->kind == K_FLOAT || is_op(p, O_LBRACKET) ||
              is_op(p, O_LBRACE)) && !is_name(p, "else") && !is_name(p, "or") && !is_name(p, "and")) {
        if (is_name(p, "is")) jj_fail(p->ar, t->line, "tests cannot be chained with 'is'");
        push_arg(p, n, unary(p, 0)); /* Jinja: a primary and its postfix */
    }
    if (!negated) return n;
    JNode *x = node(p, E_NOT, line);
    x->a = n;
    return x;
}

static JNode *subscript(Parser *p, JNode *obj) {
    Tok *t = next(p);
    if (t->op == O_DOT) {
        Tok *a = next(p);
        JNode *n = node(p, a->kind == K_NAME ? E_ATTR : E_ITEM, t->line);
        n->a = obj;
        if (a->kind == K_NAME) n->name = a->s;
        else if (a->kind == K_INT) n->b = node(p, E_LIT, a->line), n->b->lit = jv_int(a->i);
        else jj_fail(p->ar, a->line, "expected a name or a number after '.'");
        return n;
    }
    JNode *parts[3] = {NULL, NULL, NULL};
    int k = 0, slice = 0;
    for (;;) { /* [a], [a:b], [a:b:c], each part optional in a slice */
        if (!is_op(p, O_COLON) && !is_op(p, O_RBRACKET)) parts[k] = expr(p, 1);
        if (is_op(p, O_COLON) && k < 2) next(p), k++, slice = 1;
        else break;
    }
    if (is_op(p, O_COMMA)) jj_fail(p->ar, cur(p)->line, "subscripts with several indices are not supported");
    expect_op(p, O_RBRACKET, "]");
    if (!slice && !parts[0]) jj_fail(p->ar, t->line, "an empty subscript");
    JNode *n = node(p, slice ? E_SLICE : E_ITEM, t->line);
    n->a = obj, n->b = parts[0], n->c = parts[1], n->d = parts[2];
    return n;
}

static JNode *call(Parser *p, JNode *callee) {
    JNode *n = node(p, E_CALL, cur(p)->line);
    n->a = callee;
    if (callee->kind == E_ATTR && jb_find(B_METHOD, callee->name.s, callee->name.n) < 0)
        jj_fail(p->ar, n->line, "the method '%.*s()' is not supported by ppa's template renderer", (int)callee->name.n,
                callee->name.s);
    if (callee->kind == E_NAME) {
        static const char *const NO[] = {"lipsum", "cycler", "joiner", "caller", "super", "self", "varargs", "kwargs"};
        for (size_t i = 0; i < PPA_ARRAY_LEN(NO); i++)
            if (callee->name.n == strlen(NO[i]) && !memcmp(callee->name.s, NO[i], callee->name.n))
                jj_fail(p->ar, n->line, "the function '%s()' is not supported by ppa's template renderer", NO[i]);
    }
    call_args(p, n);
    return n;
}

/* Jinja: subscripts and calls, then (with_filter) filters, tests and calls */
static JNode *postfix(Parser *p, JNode *n, int filters) {
    while (is_op(p, O_DOT) || is_op(p, O_LBRACKET) || is_op(p, O_LPAREN))
        n = is_op(p, O_LPAREN) ? call(p, n) : subscript(p, n);
    while (filters) {
        if (is_op(p, O_LPAREN)) n = call(p, n);
        else if (is_name(p, "is")) n = test(p, n);
        else if (is_op(p, O_PIPE)) {
            next(p);
            n = named_builtin(p, n, E_FILTER, B_FILTER);
            if (is_op(p, O_LPAREN)) call_args(p, n);
        } else break;
    }
    return n;
}

static JNode *primary(Parser *p) {
    Tok *t = cur(p);
    JNode *n = node(p, E_LIT, t->line);
    if (t->kind == K_NAME) {
        next(p);
        const char *w = t->s.s;
        size_t k = t->s.n;
        if ((k == 4 && (!memcmp(w, "true", 4) || !memcmp(w, "True", 4))) || (k == 5 && (!memcmp(w, "false", 5) || !memcmp(w, "False", 5))))
            n->lit = jv_bool(k == 4);
        else if (k == 4 && (!memcmp(w, "none", 4) || !memcmp(w, "None", 4))) n->lit = jv_none();
        else n->kind = E_NAME, n->name = t->s;
    } else if (t->kind == K_STRING) { /* adjacent literals join */
        JStr s = next(p)->s;
        while (cur(p)->kind == K_STRING) s = js_cat(p->ar, s, next(p)->s);
        n->lit = jv_str(s);
    } else if (t->kind == K_INT || t->kind == K_FLOAT) {
        next(p);
        n->lit = t->kind == K_INT ? jv_int(t->i) : jv_float(t->f);
    } else if (is_op(p, O_LPAREN)) {
        next(p);
        n = tuple(p, 1, 1, NULL);
        expect_op(p, O_RPAREN, ")");
    } else if (is_op(p, O_LBRACKET) || is_op(p, O_LBRACE)) {
        int dict = is_op(p, O_LBRACE), close = dict ? O_RBRACE : O_RBRACKET;
        n->kind = dict ? E_DICT : E_LIST;
        next(p);
        while (!is_op(p, close)) {
            if (n->nargs) {
                expect_op(p, O_COMMA, ",");
                if (is_op(p, close)) break;
            }
            push_arg(p, n, expr(p, 1));
            if (dict) expect_op(p, O_COLON, ":"), push_arg(p, n, expr(p, 1));
        }
        next(p);
    } else {
        jj_fail(p->ar, t->line, "unexpected %s", describe(t));
    }
    return n;
}

static JNode *unary(Parser *p, int with_filter) {
    if (++p->depth > MAX_DEPTH) jj_fail(p->ar, cur(p)->line, "the expression is nested too deeply");
    JNode *n;
    if (is_op(p, O_SUB) || is_op(p, O_ADD)) {
        n = node(p, is_op(p, O_SUB) ? E_NEG : E_POS, cur(p)->line);
        next(p);
        n->a = unary(p, 0);
    } else {
        n = primary(p);
    }
    n = postfix(p, n, with_filter);
    p->depth--;
    return n;
}

static JNode *binary(Parser *p, int kind, int op, JNode *a, JNode *b, int line) {
    JNode *n = node(p, kind, line);
    n->op = (uint8_t)op, n->a = a, n->b = b;
    return n;
}

/* precedence levels from the loosest: or, and, not, compare, + -, ~, * / // %, ** */
static JNode *level(Parser *p, int lv) {
    int line = cur(p)->line;
    if (lv == 2 && is_name(p, "not")) {
        next(p);
        JNode *n = node(p, E_NOT, line);
        if (++p->depth > MAX_DEPTH) jj_fail(p->ar, line, "the expression is nested too deeply");
        n->a = level(p, 2);
        p->depth--;
        return n;
    }
    if (lv == 8) return unary(p, 1);
    JNode *left = level(p, lv + 1), *chain = NULL;
    for (;;) {
        int op = 0, kind = E_BIN;
        Tok *t = cur(p);
        if (lv == 0 && is_name(p, "or")) kind = E_OR;
        else if (lv == 1 && is_name(p, "and")) kind = E_AND;
        else if (lv == 3 && t->kind == K_OP && t->op >= O_EQ && t->op <= O_GE) op = t->op;
        else if (lv == 3 && is_name(p, "in")) op = O_IN;
        else if (lv == 3 && is_name(p, "not") && p->t[p->pos + 1].kind == K_NAME && p->t[p->pos + 1].s.n == 2 &&
                 !memcmp(p->t[p->pos + 1].s.s, "in", 2))
            op = O_NOTIN, next(p);
        else if (lv == 4 && (is_op(p, O_ADD) || is_op(p, O_SUB))) op = t->op;
        else if (lv == 5 && is_op(p, O_TILDE)) op = O_TILDE;
        else if (lv == 6 && t->kind == K_OP && (t->op == O_MUL || t->op == O_DIV || t->op == O_FLOORDIV || t->op == O_MOD)) op = t->op;
        else if (lv == 7 && is_op(p, O_POW)) op = O_POW;
        else return left;
        next(p);
        JNode *right = level(p, lv + 1);
        if (lv == 3) { /* a chain: a < b < c (a parenthesised comparison starts a new one) */
            if (!chain) chain = node(p, E_CMP, line), chain->a = left, left = chain;
            push_arg(p, chain, right);
            uint8_t *ops = ar_alloc(p->ar, (size_t)chain->nargs);
            if (chain->nargs > 1) memcpy(ops, chain->ops, (size_t)chain->nargs - 1);
            ops[chain->nargs - 1] = (uint8_t)op;
            chain->ops = ops;
        } else {
            left = binary(p, kind, op, left, right, line);
        }
    }
}

static JNode *expr(Parser *p, int condexpr) {
    if (++p->depth > MAX_DEPTH) jj_fail(p->ar, cur(p)->line, "the expression is nested too deeply");
    JNode *n = level(p, 0);
    while (condexpr && is_name(p, "if")) { /* a if cond else b */
        JNode *c = node(p, E_COND, next(p)->line);
        c->a = n, c->b = level(p, 0);
        if (is_name(p, "else")) next(p), c->c = expr(p, 1);
        n = c;
    }
    p->depth--;
    return n;
}

static int tuple_end(Parser *p, const char *end_word) {
    Tok *t = cur(p);
    return t->kind == K_VAR_END || t->kind == K_BLOCK_END || is_op(p, O_RPAREN) || (end_word && is_name(p, end_word));
}

static JNode *tuple(Parser *p, int condexpr, int explicit_parens, const char *end_word) {
    int line = cur(p)->line, is_tuple = 0;
    JNode *t = node(p, E_TUPLE, line);
    for (;;) {
        if (t->nargs) expect_op(p, O_COMMA, ",");
        if (tuple_end(p, end_word)) break;
        push_arg(p, t, expr(p, condexpr));
        if (is_op(p, O_COMMA)) is_tuple = 1;
        else break;
    }
    if (!is_tuple && t->nargs) return t->args[0];
    if (!is_tuple && !explicit_parens) jj_fail(p->ar, line, "expected an expression, found %s", describe(cur(p)));
    return t;
}

/* assignment targets: names, tuples of names; with ns, also name.attr */
static JNode *targets(Parser *p, int ns, const char *end_word);

static JNode *target(Parser *p, int ns) {
    Tok *t = cur(p);
    if (is_op(p, O_LPAREN)) {
        next(p);
        JNode *x = targets(p, ns, NULL);
        expect_op(p, O_RPAREN, ")");
        return x;
    }
    if (t->kind != K_NAME) jj_fail(p->ar, t->line, "cannot assign to %s", describe(t));
    next(p);
    JNode *n = node(p, E_NAME, t->line);
    n->name = t->s;
    if (ns && is_op(p, O_DOT)) {
        next(p);
        if (cur(p)->kind != K_NAME) jj_fail(p->ar, t->line, "expected a name after '.'");
        n->kind = E_NSREF, n->name2 = t->s, n->name = next(p)->s;
    }
    return n;
}

static JNode *targets(Parser *p, int ns, const char *end_word) {
    JNode *t = node(p, E_TUPLE, cur(p)->line);
    int is_tuple = 0;
    for (;;) {
        if (t->nargs) {
            expect_op(p, O_COMMA, ",");
            if (tuple_end(p, end_word) || is_op(p, O_ASSIGN)) break;
        }
        push_arg(p, t, target(p, ns));
        if (is_op(p, O_COMMA)) is_tuple = 1;
        else break;
    }
    return is_tuple ? t : t->args[0];
}

static JNode *body(Parser *p, const char *const *ends, const char **found);

static const char *const UNSUPPORTED[] = {"macro", "call", "filter", "include", "import", "from", "extends", "block",
                                          "with", "autoescape", "raw", "do", "trans", "pluralize"};

static JNode *statement(Parser *p) {
    Tok *t = cur(p);
    int line = t->line;
    if (t->kind != K_NAME) jj_fail(p->ar, line, "expected a tag name, found %s", describe(t));
    for (size_t i = 0; i < PPA_ARRAY_LEN(UNSUPPORTED); i++)
        if (is_name(p, UNSUPPORTED[i]))
            jj_fail(p->ar, line, "{%% %s %%} is not supported by ppa's template renderer", UNSUPPORTED[i]);
    const char *found;
    JNode *n;
    if (is_name(p, "if")) {
        n = node(p, S_IF, line);
        next(p);
        n->a = tuple(p, 0, 0, NULL);
        expect_end(p);
        static const char *const ENDS[] = {"elif", "else", "endif", NULL};
        n->b = body(p, ENDS, &found);
        JNode *last = n;
        while (!strcmp(found, "elif")) { /* each elif is an if in the else branch */
            JNode *e = node(p, S_IF, cur(p)->line);
            e->a = tuple(p, 0, 0, NULL);
            expect_end(p);
            e->b = body(p, ENDS, &found);
            last->c = e, last = e;
        }
        if (!strcmp(found, "else")) {
            expect_end(p);
            static const char *const END[] = {"endif", NULL};
            last->c = body(p, END, &found);
        }
    } else if (is_name(p, "for")) {
        n = node(p, S_FOR, line);
        next(p);
        n->a = targets(p, 0, "in");
        if (!is_name(p, "in")) jj_fail(p->ar, cur(p)->line, "expected 'in' in a for loop");
        next(p);
        n->b = tuple(p, 0, 0, "recursive");
        if (is_name(p, "if")) next(p), n->e = expr(p, 1);
        if (is_name(p, "recursive")) jj_fail(p->ar, line, "recursive for loops are not supported by ppa's template renderer");
        expect_end(p);
        static const char *const ENDS[] = {"endfor", "else", NULL}, *const END[] = {"endfor", NULL};
        p->loops++;
        n->c = body(p, ENDS, &found);
        p->loops--;
        if (!strcmp(found, "else")) expect_end(p), n->d = body(p, END, &found);
    } else if (is_name(p, "set")) {
        next(p);
        JNode *tg = targets(p, 1, NULL);
        if (is_op(p, O_ASSIGN)) {
            next(p);
            n = node(p, S_SET, line);
            n->a = tg, n->b = tuple(p, 1, 0, NULL);
        } else {
            if (is_op(p, O_PIPE)) jj_fail(p->ar, line, "filters on {%% set %%} blocks are not supported");
            if (tg->kind != E_NAME && tg->kind != E_NSREF) jj_fail(p->ar, line, "a {%% set %%} block assigns one name");
            expect_end(p);
            static const char *const END[] = {"endset", NULL};
            n = node(p, S_SETBLOCK, line);
            n->a = tg, n->b = body(p, END, &found);
        }
    } else if (is_name(p, "break") || is_name(p, "continue")) {
        if (!p->loops) jj_fail(p->ar, line, "'%.*s' outside a for loop", (int)t->s.n, t->s.s);
        n = node(p, is_name(p, "break") ? S_BREAK : S_CONTINUE, line);
        next(p);
    } else if (is_name(p, "generation")) { /* transformers' assistant-mask block: its body as is */
        next(p);
        expect_end(p);
        static const char *const END[] = {"endgeneration", NULL};
        n = node(p, S_BODY, line);
        n->b = body(p, END, &found);
    } else if (is_name(p, "print")) {
        next(p);
        n = node(p, S_OUT, line);
        n->a = expr(p, 1);
        if (is_op(p, O_COMMA)) jj_fail(p->ar, line, "{%% print %%} of several values is not supported");
    } else {
        jj_fail(p->ar, line, "unknown tag '%.*s'", (int)t->s.n, t->s.s);
    }
    expect_end(p);
    return n;
}

/* Statements until one of ends (its name consumed into *found). */
static JNode *body(Parser *p, const char *const *ends, const char **found) {
    JNode *head = NULL, **tail = &head;
    int open_line = p->pos ? p->t[p->pos - 1].line : 1;
    if (++p->depth > MAX_DEPTH) jj_fail(p->ar, cur(p)->line, "blocks are nested too deeply");
    for (;;) {
        Tok *t = cur(p);
        JNode *n = NULL;
        if (t->kind == K_EOF) {
            if (!ends) break;
            int k = 0;
            while (ends[k + 1] && strncmp(ends[k], "end", 3)) k++;
            jj_fail(p->ar, open_line, "this block is never closed (expected {%% %s %%})", ends[k]);
        } else if (t->kind == K_TEXT) {
            n = node(p, S_TEXT, t->line);
            n->lit = jv_str(t->s);
            next(p);
        } else if (t->kind == K_VAR_BEGIN) {
            next(p);
            n = node(p, S_OUT, t->line);
            n->a = tuple(p, 1, 0, NULL);
            if (cur(p)->kind != K_VAR_END) jj_fail(p->ar, cur(p)->line, "expected '}}', found %s", describe(cur(p)));
            next(p);
        } else if (t->kind == K_BLOCK_BEGIN) {
            next(p);
            for (int i = 0; ends && ends[i]; i++)
                if (is_name(p, ends[i])) {
                    *found = ends[i];
                    next(p);
                    p->depth--;
                    return head;
                }
            n = statement(p);
        } else {
            jj_fail(p->ar, t->line, "unexpected %s", describe(t));
        }
        *tail = n, tail = &n->next;
    }
    p->depth--;
    return head;
}

JinjaTemplate *jinja_parse(const char *src, size_t len, char *err, size_t errlen) {
    JinjaTemplate *t = xcalloc(1, sizeof *t);
    jmp_buf jb;
    Parser *p = xcalloc(1, sizeof *p); /* on the heap: it changes after setjmp */
    t->arena = (Arena){.limit = (size_t)64 << 20, .jb = &jb, .err = err, .errlen = errlen};
    p->ar = &t->arena;
    if (setjmp(jb)) {
        free(p);
        jinja_free(t);
        return NULL;
    }
    for (size_t i = 0; i < len;) { /* the renderer steps through UTF-8 */
        uint32_t cp;
        int k = utf8_next((const unsigned char *)src + i, len - i, &cp);
        if (cp == 0xFFFD && !(len - i >= 3 && !memcmp(src + i, "\xEF\xBF\xBD", 3)))
            jj_fail(p->ar, 0, "the template is not valid UTF-8 (byte %zu)", i);
        if (!cp) jj_fail(p->ar, 0, "the template holds a NUL byte (byte %zu)", i);
        i += (size_t)k;
    }
    lex(p, src, len);
    t->body = body(p, NULL, NULL);
    free(p);
    return t;
}

void jinja_free(JinjaTemplate *t) {
    if (!t) return;
    ar_free(&t->arena);
    free(t);
}
