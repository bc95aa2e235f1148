/* yaml.c: the recipe subset of YAML described in yaml.h.
 *
 * The text is split into logical lines (indentation, content, line number);
 * blank and comment lines are dropped. A recursive descent then reads block
 * nodes by indentation: a "- " line starts a sequence, a "key:" line a
 * mapping, anything else is a one-line value (plain, quoted or a flow
 * sequence). A "- key: value" item is read by treating the text after "- "
 * as a line indented to its own column. The first problem stops the parse
 * with FILE:LINE and a message. */
#include "io/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

#define YAML_MAX_BYTES (16L << 20) /* a recipe is a few kB */

typedef struct {
    int indent; /* leading spaces */
    char *s;    /* content after the indentation, trailing blanks removed */
    int line;   /* 1-based */
} Line;

typedef struct {
    const char *name;
    Line *lines;
    int n, i;
    char *err;
    size_t errlen;
    int failed;
} Parser;

typedef struct {
    char *p;
    size_t n, cap;
} Buf;

static void fail(Parser *P, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(Parser *P, int line, const char *fmt, ...) {
    if (P->failed) return; /* the first problem is the one to report */
    P->failed = 1;
    if (!P->errlen) return;
    int k = snprintf(P->err, P->errlen, "%s:%d: ", P->name, line);
    if (k < 0 || (size_t)k >= P->errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->err + k, P->errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

static void buf_putc(Buf *b, char c) {
    if (b->n + 2 > b->cap) {
        b->cap = b->cap ? 2 * b->cap : 32;
        b->p = xrealloc(b->p, b->cap);
    }
    b->p[b->n++] = c;
    b->p[b->n] = 0;
}

static char *buf_take(Buf *b) {
    if (!b->p) buf_putc(b, 0), b->n = 0; /* an empty string, not NULL */
    char *p = b->p;
    *b = (Buf){0};
    return p;
}

static void buf_utf8(Buf *b, unsigned long cp) {
    if (cp < 0x80) {
        buf_putc(b, (char)cp);
    } else if (cp < 0x800) {
        buf_putc(b, (char)(0xC0 | (cp >> 6)));
        buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        buf_putc(b, (char)(0xE0 | (cp >> 12)));
        buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else {
        buf_putc(b, (char)(0xF0 | (cp >> 18)));
        buf_putc(b, (char)(0x80 | ((cp >> 12) & 0x3F)));
        buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    }
}

static YamlNode *node_new(YamlKind kind, int line) {
    YamlNode *n = xcalloc(1, sizeof *n);
    n->kind = kind;
    n->line = line;
    return n;
}

void yaml_free(YamlNode *node) {
    if (!node) return;
    for (int i = 0; i < node->n; i++) {
        yaml_free(node->items[i]);
        if (node->keys) free(node->keys[i]);
    }
    free(node->items);
    free(node->keys);
    free(node->key_lines);
    free(node->str);
    free(node);
}

static void seq_push(YamlNode *seq, YamlNode *item) {
    seq->items = xrealloc(seq->items, sizeof(*seq->items) * (size_t)(seq->n + 1));
    seq->items[seq->n++] = item;
}

static void map_push(YamlNode *map, char *key, int key_line, YamlNode *value) {
    size_t n = (size_t)map->n + 1;
    map->items = xrealloc(map->items, sizeof(*map->items) * n);
    map->keys = xrealloc(map->keys, sizeof(*map->keys) * n);
    map->key_lines = xrealloc(map->key_lines, sizeof(*map->key_lines) * n);
    map->items[map->n] = value;
    map->keys[map->n] = key;
    map->key_lines[map->n] = key_line;
    map->n++;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }
static int ends_token(char c) { return c == 0 || is_blank(c); } /* a tab here is then reported as a tab */
static const char *skip_blanks(const char *s) {
    while (*s == ' ') s++;
    return s;
}

/* Tabs outside quotes: PyYAML (which reads the handbook's recipes) refuses them, so ppa does too. */
static void fail_tab(Parser *P, int line) {
    fail(P, line, "a tab character: YAML separates and indents with spaces (a tab may appear only inside quotes)");
}
static int is_seq_item(const char *s) { return s[0] == '-' && ends_token(s[1]); }

static int hex_value(const char *s, int digits, unsigned long *out) {
    unsigned long v = 0;
    for (int i = 0; i < digits; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + (unsigned long)d;
    }
    *out = v;
    return 0;
}

/* "..." starting at s; *end is set past the closing quote. */
static char *parse_double_quoted(Parser *P, int line, const char *s, const char **end) {
    Buf b = {0};
    const char *p = s + 1;
    for (;;) {
        char c = *p;
        if (c == 0) {
            fail(P, line, "a double-quoted string is not closed on its line (multi-line quoted values are not supported)");
            goto bad;
        }
        if (c == '"') break;
        if (c != '\\') {
            buf_putc(&b, c);
            p++;
            continue;
        }
        char e = p[1];
        int digits = 0;
        p += 2;
        switch (e) {
        case '\\': buf_putc(&b, '\\'); break;
        case '"': buf_putc(&b, '"'); break;
        case '/': buf_putc(&b, '/'); break;
        case ' ': buf_putc(&b, ' '); break;
        case '\t': buf_putc(&b, '\t'); break;
        case 't': buf_putc(&b, '\t'); break;
        case 'n': buf_putc(&b, '\n'); break;
        case 'r': buf_putc(&b, '\r'); break;
        case 'a': buf_putc(&b, '\a'); break;
        case 'b': buf_putc(&b, '\b'); break;
        case 'e': buf_putc(&b, 0x1B); break;
        case 'f': buf_putc(&b, '\f'); break;
        case 'v': buf_putc(&b, '\v'); break;
        case 'N': buf_utf8(&b, 0x85); break;
        case '_': buf_utf8(&b, 0xA0); break;
        case 'L': buf_utf8(&b, 0x2028); break;
        case 'P': buf_utf8(&b, 0x2029); break;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        case '0':
            fail(P, line, "the escape \\0 (a NUL character) is not supported in a string");
            goto bad;
        case 0:
            fail(P, line, "a double-quoted string ends in a lone backslash (multi-line quoted values are not supported)");
            goto bad;
        default:
            fail(P, line, "unknown escape '\\%c' in a double-quoted string (write '\\\\' for a backslash)", e);
            goto bad;
        }
        if (digits) {
            unsigned long cp;
            if (hex_value(p, digits, &cp)) {
                fail(P, line, "the escape '\\%c' needs %d hexadecimal digits", e, digits);
                goto bad;
            }
            if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                fail(P, line, "the escape '\\%c%.*s' is not a character ppa accepts (NUL, a surrogate or beyond U+10FFFF)",
                     e, digits, p);
                goto bad;
            }
            buf_utf8(&b, cp);
            p += digits;
        }
    }
    *end = p + 1;
    return buf_take(&b);
bad:
    free(b.p);
    return NULL;
}

/* '...' starting at s ('' is a quote). */
static char *parse_single_quoted(Parser *P, int line, const char *s, const char **end) {
    Buf b = {0};
    const char *p = s + 1;
    for (;;) {
        if (*p == 0) {
            free(b.p);
            fail(P, line, "a single-quoted string is not closed on its line (multi-line quoted values are not supported)");
            return NULL;
        }
        if (*p == '\'') {
            if (p[1] != '\'') break;
            p++;
        }
        buf_putc(&b, *p++);
    }
    *end = p + 1;
    return buf_take(&b);
}

/* A plain scalar: up to the end of the line or a " #" comment; inside a flow
 * sequence also up to ',' or ']'. A ": " inside it would start a mapping. */
static char *parse_plain(Parser *P, int line, const char *s, int flow, const char **end) {
    const char *p = s;
    if (flow && *s == ':') { /* PyYAML refuses it; YAML 1.2 would read a plain ":x" */
        fail(P, line, "a flow sequence item cannot start with ':': quote it");
        return NULL;
    }
    for (;; p++) {
        char c = *p;
        if (c == 0) break;
        if (c == '\t') {
            fail_tab(P, line);
            return NULL;
        }
        if (c == '#' && p > s && is_blank(p[-1])) break;
        if (c == ':' && (ends_token(p[1]) || (flow && (p[1] == ',' || p[1] == ']')))) {
            fail(P, line, "': ' inside the value '%.*s': a mapping cannot start here (quote the value if the colon "
                          "belongs to it)",
                 (int)(p - s), s);
            return NULL;
        }
        if (flow && (c == ',' || c == ']')) break;
        if (flow && (c == '[' || c == '{' || c == '}' || c == '?')) { /* PyYAML ends a flow item at '?' */
            fail(P, line, "'%c' inside a plain value of a flow sequence: quote the value", c);
            return NULL;
        }
    }
    const char *q = p;
    while (q > s && is_blank(q[-1])) q--;
    Buf b = {0};
    for (const char *t = s; t < q; t++) buf_putc(&b, *t);
    *end = q; /* before the blanks, so that a " #" comment is seen as one */
    return buf_take(&b);
}

static int is_null_text(const char *s) {
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static YamlNode *parse_value(Parser *P, int line, const char *s, int flow, const char **end);

static YamlNode *parse_flow_seq(Parser *P, int line, const char *s, const char **end) {
    YamlNode *seq = node_new(YAML_SEQ, line);
    const char *p = skip_blanks(s + 1);
    for (;;) {
        p = skip_blanks(p);
        if (*p == ']') break; /* empty, or after a trailing comma */
        if (*p == 0 || *p == '#') {
            fail(P, line, "a flow sequence '[' is not closed on its line (multi-line flow sequences are not supported)");
            goto bad;
        }
        if (*p == ',') {
            fail(P, line, "an empty item in a flow sequence (two commas, or a comma after '[')");
            goto bad;
        }
        YamlNode *item = parse_value(P, line, p, 1, &p);
        if (!item) goto bad;
        seq_push(seq, item);
        p = skip_blanks(p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ']') break;
        if (*p == 0 || *p == '#') {
            fail(P, line, "a flow sequence '[' is not closed on its line (multi-line flow sequences are not supported)");
            goto bad;
        }
        fail(P, line, "expected ',' or ']' in a flow sequence, found '%c'%s", *p,
             *p == ':' ? " (flow mappings are not supported)" : "");
        goto bad;
    }
    *end = p + 1;
    return seq;
bad:
    yaml_free(seq);
    return NULL;
}

/* One value starting at s (not blank): quoted, flow sequence or plain. */
static YamlNode *parse_value(Parser *P, int line, const char *s, int flow, const char **end) {
    char c = s[0];
    switch (c) {
    case '"':
    case '\'': {
        char *str = c == '"' ? parse_double_quoted(P, line, s, end) : parse_single_quoted(P, line, s, end);
        if (!str) return NULL;
        YamlNode *n = node_new(YAML_SCALAR, line);
        n->str = str;
        n->quoted = 1;
        return n;
    }
    case '[': return parse_flow_seq(P, line, s, end);
    case '{':
        fail(P, line, "flow mappings ({...}) are not supported: write one 'key: value' per line, indented under the key");
        return NULL;
    case '&': fail(P, line, "anchors (&name) are not supported: write the value out"); return NULL;
    case '*': fail(P, line, "aliases (*name) are not supported: write the value out"); return NULL;
    case '!': fail(P, line, "tags (!name) are not supported: write the plain value"); return NULL;
    case '|':
    case '>':
        fail(P, line, "block scalars ('%c') are not supported: write the value on one line (quoted if needed)", c);
        return NULL;
    case '%':
    case '@':
    case '`':
    case ',':
    case ']':
    case '}': fail(P, line, "a plain value cannot start with '%c': quote it", c); return NULL;
    default: break;
    }
    if ((c == '-' || c == '?') && ends_token(s[1])) {
        if (c == '?') fail(P, line, "complex keys ('? ') are not supported");
        else if (flow) fail(P, line, "'- ' inside a flow sequence: separate the items with commas");
        else fail(P, line, "a list cannot start on the line of its key: put each '- item' on its own line below");
        return NULL;
    }
    char *str = parse_plain(P, line, s, flow, end);
    if (!str) return NULL;
    YamlNode *n;
    if (is_null_text(str)) {
        n = node_new(YAML_NULL, line);
        free(str);
    } else {
        n = node_new(YAML_SCALAR, line);
        n->str = str;
    }
    return n;
}

/* A whole value that must fill the rest of the line (a comment may follow). */
static YamlNode *parse_inline(Parser *P, const Line *L, const char *s) {
    const char *end;
    YamlNode *v = parse_value(P, L->line, s, 0, &end);
    if (!v) return NULL;
    const char *p = skip_blanks(end);
    if (*p == '\t') {
        fail_tab(P, L->line);
        yaml_free(v);
        return NULL;
    }
    if (*p && !(*p == '#' && p > end)) {
        fail(P, L->line, "unexpected text after the value: '%s'%s", p,
             *p == ':' ? " (only plain or quoted scalars can be keys)" : "");
        yaml_free(v);
        return NULL;
    }
    return v;
}

/* Is s a "key: ..." entry? 1 with *key (malloc'd) and *rest (after the
 * colon), 0 if not, -1 after an error. */
static int find_key(Parser *P, int line, const char *s, char **key, const char **rest) {
    if (s[0] == '"' || s[0] == '\'') {
        const char *end;
        char *k = s[0] == '"' ? parse_double_quoted(P, line, s, &end) : parse_single_quoted(P, line, s, &end);
        if (!k) return -1;
        end = skip_blanks(end);
        if (end[0] == ':' && ends_token(end[1])) {
            *key = k;
            *rest = end + 1;
            return 1;
        }
        free(k);
        return 0;
    }
    if (s[0] == '?' && ends_token(s[1])) {
        fail(P, line, "complex keys ('? ') are not supported");
        return -1;
    }
    if (strchr("[{&*!|>%@`,]}", s[0]) || is_seq_item(s)) return 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\t') {
            fail_tab(P, line);
            return -1;
        }
        if (*p == '#' && p > s && is_blank(p[-1])) return 0;
        if (*p == ':' && ends_token(p[1])) {
            const char *q = p;
            while (q > s && is_blank(q[-1])) q--;
            if (q == s) {
                fail(P, line, "a mapping entry with an empty key");
                return -1;
            }
            Buf b = {0};
            for (const char *t = s; t < q; t++) buf_putc(&b, *t);
            *key = buf_take(&b);
            *rest = p + 1;
            return 1;
        }
    }
    return 0;
}

/* After a one-line value at block indentation `indent`: the next line must
 * not be indented deeper (that would be a multi-line value). */
static int check_continuation(Parser *P, int indent, int value_line) {
    if (P->i < P->n && P->lines[P->i].indent > indent) {
        fail(P, P->lines[P->i].line,
             "indented under line %d, which already has its value (multi-line values are not supported; a nested "
             "block needs 'key:' with nothing after the colon)",
             value_line);
        return 0;
    }
    return 1;
}

static YamlNode *parse_node(Parser *P, int indent);

static YamlNode *parse_seq(Parser *P, int indent) {
    YamlNode *seq = node_new(YAML_SEQ, P->lines[P->i].line);
    while (P->i < P->n) {
        Line *L = &P->lines[P->i];
        if (L->indent < indent) break;
        if (L->indent > indent) {
            fail(P, L->line, "unexpected indentation (the list above is indented by %d)", indent);
            goto bad;
        }
        if (!is_seq_item(L->s)) break;
        const char *rest = skip_blanks(L->s + 1);
        YamlNode *item;
        if (*rest == 0 || *rest == '#') {
            int line = L->line;
            P->i++;
            if (P->i < P->n && P->lines[P->i].indent > indent) item = parse_node(P, P->lines[P->i].indent);
            else item = node_new(YAML_NULL, line);
        } else {
            char *key = NULL;
            const char *after;
            int k = is_seq_item(rest) ? 1 : find_key(P, L->line, rest, &key, &after);
            free(key);
            if (k < 0) goto bad;
            if (k > 0) { /* "- key: value" or "- - item": a block at the column of rest */
                L->indent += (int)(rest - L->s);
                L->s = (char *)rest;
                item = parse_node(P, L->indent);
            } else {
                item = parse_inline(P, L, rest);
                if (item) {
                    P->i++;
                    if (!check_continuation(P, indent, L->line)) yaml_free(item), item = NULL;
                }
            }
        }
        if (!item) goto bad;
        seq_push(seq, item);
    }
    return seq;
bad:
    yaml_free(seq);
    return NULL;
}

static YamlNode *parse_map(Parser *P, int indent) {
    YamlNode *map = node_new(YAML_MAP, P->lines[P->i].line);
    while (P->i < P->n) {
        Line *L = &P->lines[P->i];
        if (L->indent < indent) break;
        if (L->indent > indent) {
            fail(P, L->line, "unexpected indentation (the mapping above is indented by %d)", indent);
            goto bad;
        }
        if (is_seq_item(L->s)) {
            fail(P, L->line, "a '- ' item among the keys of a mapping: a list must be the value of a key ('key:' alone "
                             "on the line above)");
            goto bad;
        }
        char *key;
        const char *rest;
        int k = find_key(P, L->line, L->s, &key, &rest);
        if (k < 0) goto bad;
        if (k == 0) {
            const char *colon = strchr(L->s, ':');
            fail(P, L->line, "expected 'key: value', found '%s'%s", L->s,
                 colon && colon[1] && !is_blank(colon[1]) ? " (YAML needs a space after the colon)" : "");
            goto bad;
        }
        int dup = yaml_find(map, key);
        if (dup >= 0) {
            fail(P, L->line, "duplicate key '%s' (first at line %d)", key, map->key_lines[dup]);
            free(key);
            goto bad;
        }
        int key_line = L->line;
        rest = skip_blanks(rest);
        YamlNode *v;
        if (*rest == 0 || *rest == '#') {
            P->i++;
            if (P->i < P->n && P->lines[P->i].indent > indent) v = parse_node(P, P->lines[P->i].indent);
            else if (P->i < P->n && P->lines[P->i].indent == indent && is_seq_item(P->lines[P->i].s))
                v = parse_seq(P, indent); /* "key:" then "- item" lines at the key's own indentation */
            else v = node_new(YAML_NULL, key_line);
        } else {
            v = parse_inline(P, L, rest);
            if (v) {
                P->i++;
                if (!check_continuation(P, indent, key_line)) yaml_free(v), v = NULL;
            }
        }
        if (!v) {
            free(key);
            goto bad;
        }
        map_push(map, key, key_line, v);
    }
    return map;
bad:
    yaml_free(map);
    return NULL;
}

static YamlNode *parse_node(Parser *P, int indent) {
    Line *L = &P->lines[P->i];
    if (is_seq_item(L->s)) return parse_seq(P, indent);
    char *key = NULL;
    const char *rest;
    int k = find_key(P, L->line, L->s, &key, &rest);
    free(key);
    if (k < 0) return NULL;
    if (k > 0) return parse_map(P, indent);
    YamlNode *v = parse_inline(P, L, L->s);
    if (!v) return NULL;
    P->i++;
    if (!check_continuation(P, indent, L->line)) {
        yaml_free(v);
        return NULL;
    }
    return v;
}

YamlNode *yaml_parse(const char *text, size_t len, const char *name, char *err, size_t errlen) {
    Parser P = {.name = name, .err = err, .errlen = errlen};
    if (errlen) err[0] = 0;
    const char *nul = memchr(text, 0, len);
    if (nul) {
        int line = 1;
        for (const char *p = text; p < nul; p++) line += *p == '\n';
        fail(&P, line, "a NUL byte: this is not a text file");
        return NULL;
    }
    char *buf = xmalloc(len + 1);
    memcpy(buf, text, len);
    buf[len] = 0;
    char *p = buf;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3; /* UTF-8 byte order mark */
    int cap = 0, line = 0, doc_start = 0, doc_end = 0;
    YamlNode *root = NULL;
    while (p) {
        line++;
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        char *next = nl ? nl + 1 : NULL;
        size_t n = strlen(p);
        if (n && p[n - 1] == '\r') p[--n] = 0;
        int indent = 0;
        while (p[indent] == ' ') indent++;
        char *c = p + indent;
        const char *first = c;
        while (is_blank(*first)) first++;
        if (*first == 0 || *first == '#') { /* blank or comment line */
            p = next;
            continue;
        }
        if (first != c) {
            fail(&P, line, "a tab in the indentation: YAML indents with spaces only");
            goto done;
        }
        while (n > (size_t)indent && p[n - 1] == ' ') p[--n] = 0;
        if (indent == 0 && !strncmp(c, "---", 3) && ends_token(c[3])) {
            const char *after = skip_blanks(c + 3);
            if (P.n > 0 || doc_start || doc_end) {
                fail(&P, line, "a second document starts here: ppa reads one YAML document per file");
                goto done;
            }
            if (*after && *after != '#') {
                fail(&P, line, "text after '---': put the content on the lines below the document start");
                goto done;
            }
            doc_start = line;
            p = next;
            continue;
        }
        if (indent == 0 && !strncmp(c, "...", 3) && ends_token(c[3])) {
            if (!doc_end) doc_end = line;
            p = next;
            continue;
        }
        if (doc_end) {
            fail(&P, line, "text after the document end marker '...' of line %d", doc_end);
            goto done;
        }
        if (indent == 0 && c[0] == '%') {
            fail(&P, line, "directives (%%YAML, %%TAG) are not supported: remove the line");
            goto done;
        }
        if (P.n == cap) {
            cap = cap ? 2 * cap : 64;
            P.lines = xrealloc(P.lines, sizeof(*P.lines) * (size_t)cap);
        }
        P.lines[P.n++] = (Line){indent, c, line};
        p = next;
    }
    if (P.n == 0) {
        root = node_new(YAML_NULL, 1);
        goto done;
    }
    root = parse_node(&P, P.lines[0].indent);
    if (root && P.i < P.n) {
        fail(&P, P.lines[P.i].line, "unexpected content: the document's top-level %s (line %d) has ended",
             yaml_kind_name(root), root->line);
        yaml_free(root);
        root = NULL;
    }
done:
    if (P.failed) yaml_free(root), root = NULL;
    free(P.lines);
    free(buf);
    return root;
}

YamlNode *yaml_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    Buf b = {0};
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.n + got > (size_t)YAML_MAX_BYTES) {
            snprintf(err, errlen, "%s: larger than %ld bytes: not a recipe file", path, YAML_MAX_BYTES);
            fclose(f);
            free(b.p);
            return NULL;
        }
        if (b.n + got + 1 > b.cap) {
            b.cap = (b.n + got + 1) * 2;
            b.p = xrealloc(b.p, b.cap);
        }
        memcpy(b.p + b.n, chunk, got);
        b.n += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        free(b.p);
        return NULL;
    }
    YamlNode *root = yaml_parse(b.p ? b.p : "", b.n, path, err, errlen);
    free(b.p);
    return root;
}

int yaml_find(const YamlNode *map, const char *key) {
    if (!map || map->kind != YAML_MAP) return -1;
    for (int i = 0; i < map->n; i++)
        if (!strcmp(map->keys[i], key)) return i;
    return -1;
}

const YamlNode *yaml_get(const YamlNode *map, const char *key) {
    int i = yaml_find(map, key);
    return i < 0 ? NULL : map->items[i];
}

const char *yaml_kind_name(const YamlNode *node) {
    if (!node) return "nothing";
    switch (node->kind) {
    case YAML_NULL: return "null";
    case YAML_SCALAR: return "a scalar";
    case YAML_SEQ: return "a list";
    case YAML_MAP: return "a mapping";
    }
    return "?";
}

int yaml_as_bool(const YamlNode *node, int *out) {
    static const char *const YES[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *const NO[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    if (!node || node->kind != YAML_SCALAR || node->quoted) return -1;
    for (size_t i = 0; i < PPA_ARRAY_LEN(YES); i++) {
        if (!strcmp(node->str, YES[i])) return *out = 1, 0;
        if (!strcmp(node->str, NO[i])) return *out = 0, 0;
    }
    return -1;
}

int yaml_as_double(const YamlNode *node, double *out) {
    if (!node || node->kind != YAML_SCALAR) return -1;
    const char *s = node->str;
    if (!*s || is_blank(*s) || strpbrk(s, "xXpP")) return -1; /* no hexadecimal floats */
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

int yaml_as_long(const YamlNode *node, long *out) {
    if (!node || node->kind != YAML_SCALAR) return -1;
    const char *s = node->str;
    if (!*s || is_blank(*s)) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end != s && !*end && errno != ERANGE) return *out = v, 0;
    double x;
    if (yaml_as_double(node, &x) || x != floor(x) || fabs(x) > 9007199254740992.0) return -1;
    *out = (long)x;
    return 0;
}
