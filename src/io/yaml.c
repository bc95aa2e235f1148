/* yaml.c: the recipe reader of yaml.h on libyaml's event parser.
 *
 * libyaml turns the text into events (scalar, alias, start and end of a
 * list or mapping); one loop attaches each node where the event says, with
 * the open lists and mappings on an explicit stack of YAML_MAX_DEPTH
 * frames, so hostile nesting ends in a message, never a stack overflow.
 * A new list or mapping is attached to its parent when it starts, so the
 * partial tree always hangs from one root and one yaml_tree_free cleans up.
 * Anchors and the keys of every mapping (duplicates) are found through one
 * hash table. The first problem stops the parse with FILE:LINE and a
 * message. */
#include "io/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h> /* libyaml's, from /usr/include: angle brackets skip src/io/ */

#include "core/common.h"
#include "io/file.h"
#include "core/hash.h"

#define YAML_MAX_BYTES (16L << 20) /* a recipe is a few kB */

typedef struct {
    char *name;
    YamlNode *node;
    int open;  /* a list or mapping still being read: an alias to it would contain itself */
    int owned; /* the anchor of a key: the node lives here, not in the tree */
} Anchor;

/* key NULL = empty. owner: the mapping of a key, or NULL for an anchor name */
typedef struct {
    uint64_t h;
    const void *owner;
    const char *key;
    int val; /* the key's index in its mapping, or the anchor's index */
} Slot;

typedef struct {
    YamlNode *node;  /* an open list or mapping */
    char *key;       /* YAML_MAP: the key waiting for its value, or NULL */
    int key_line;
    int anchor;      /* its anchor's index, or -1 */
} Frame;

typedef struct {
    const char *name, *text;
    size_t len;
    char *err;
    size_t errlen;
    int failed, docs, depth;
    YamlNode *root;
    Frame stack[YAML_MAX_DEPTH];
    Anchor *anchors;
    int n_anchors;
    Slot *slots;
    size_t n_slots, cap_slots;
    long nodes;
    long bytes;
} Parser;

static void fail(Parser *P, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(Parser *P, int line, const char *fmt, ...) {
    if (P->failed) return; /* the first problem is the one to report */
    P->failed = 1;
    if (!P->errlen) return;
    int k = line > 0 ? snprintf(P->err, P->errlen, "%s:%d: ", P->name, line)
                     : snprintf(P->err, P->errlen, "%s: ", P->name);
    if (k < 0 || (size_t)k >= P->errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->err + k, P->errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

static char *dup_text(const char *s, size_t n) {
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static char *dup_str(const char *s) { return dup_text(s, strlen(s)); }

/* ---- the tree ---- */

static YamlNode *node_new(YamlKind kind, int line) {
    YamlNode *n = xcalloc(1, sizeof *n);
    n->kind = kind;
    n->line = line;
    return n;
}

/* Recursive, but a tree is never deeper than YAML_MAX_DEPTH. */
void yaml_tree_free(YamlNode *node) {
    if (!node) return;
    for (int i = 0; i < node->n; i++) {
        yaml_tree_free(node->items[i]);
        if (node->keys) free(node->keys[i]);
    }
    free(node->items);
    free(node->keys);
    free(node->key_lines);
    free(node->str);
    free(node);
}

/* Room for one more entry: capacities double (4, 8, 16, ...), so huge flow
 * lists cost amortised O(1) per item; the capacity follows from n alone. */
static void grow(YamlNode *c) {
    if (c->n != 0 && (c->n < 4 || (c->n & (c->n - 1)))) return;
    size_t cap = c->n ? 2 * (size_t)c->n : 4;
    c->items = xrealloc(c->items, cap * sizeof *c->items);
    if (c->kind != YAML_MAP) return;
    c->keys = xrealloc(c->keys, cap * sizeof *c->keys);
    c->key_lines = xrealloc(c->key_lines, cap * sizeof *c->key_lines);
}

/* Appends an entry to a list (key unused) or a mapping. */
static void push(YamlNode *c, char *key, int key_line, YamlNode *item) {
    grow(c);
    if (c->kind == YAML_MAP) c->keys[c->n] = key, c->key_lines[c->n] = key_line;
    c->items[c->n++] = item;
}

/* Counts a new node and its text against the limits; -1 after an error. */
static int budget(Parser *P, int line, size_t bytes) {
    P->bytes += (long)bytes;
    if (++P->nodes > YAML_MAX_NODES) {
        fail(P, line, "more than %d nodes: too large for a recipe (aliases count as copies)", YAML_MAX_NODES);
        return -1;
    }
    if (P->bytes > YAML_MAX_TEXT) {
        fail(P, line, "more than %ld MiB of text: too large for a recipe (aliases count as copies)",
             YAML_MAX_TEXT >> 20);
        return -1;
    }
    return 0;
}

/* A deep copy of `src` under `depth` open lists and mappings (an alias). */
static YamlNode *copy_tree(Parser *P, const YamlNode *src, int depth, int line) {
    int nested = src->kind == YAML_SEQ || src->kind == YAML_MAP;
    if (nested && depth >= YAML_MAX_DEPTH) {
        fail(P, line, "nesting deeper than %d levels (through an alias)", YAML_MAX_DEPTH);
        return NULL;
    }
    if (budget(P, line, src->str ? strlen(src->str) : 0)) return NULL;
    YamlNode *n = node_new(src->kind, src->line);
    n->quoted = src->quoted;
    if (src->str) n->str = dup_str(src->str);
    for (int i = 0; i < src->n; i++) {
        YamlNode *item = copy_tree(P, src->items[i], depth + 1, line);
        if (!item || (src->keys && budget(P, line, strlen(src->keys[i])))) {
            yaml_tree_free(item);
            yaml_tree_free(n); /* holds items [0, i) */
            return NULL;
        }
        push(n, src->keys ? dup_str(src->keys[i]) : NULL, src->keys ? src->key_lines[i] : 0, item);
    }
    return n;
}

/* ---- one table for anchors and for the keys of every mapping ---- */

/* The slot of (owner, key): the entry, or the empty slot to fill. */
static Slot *slot_find(Parser *P, const void *owner, const char *key) {
    if (2 * (P->n_slots + 1) > P->cap_slots) { /* keep it at most half full */
        size_t cap = P->cap_slots ? 2 * P->cap_slots : 64;
        Slot *s = xcalloc(cap, sizeof *s);
        for (size_t i = 0; i < P->cap_slots; i++) {
            if (!P->slots[i].key) continue;
            size_t j = P->slots[i].h & (cap - 1);
            while (s[j].key) j = (j + 1) & (cap - 1);
            s[j] = P->slots[i];
        }
        free(P->slots);
        P->slots = s;
        P->cap_slots = cap;
    }
    uint64_t h = hash64(key, strlen(key), (uint64_t)(uintptr_t)owner);
    size_t j = h & (P->cap_slots - 1);
    while (P->slots[j].key && !(P->slots[j].h == h && P->slots[j].owner == owner && !strcmp(P->slots[j].key, key)))
        j = (j + 1) & (P->cap_slots - 1);
    if (!P->slots[j].key) P->slots[j].h = h; /* the caller fills owner, key, val */
    return &P->slots[j];
}

static void slot_fill(Parser *P, Slot *s, const void *owner, const char *key, int val) {
    if (!s->key) P->n_slots++;
    s->owner = owner;
    s->key = key;
    s->val = val;
}

/* Registers an anchor (a later one of the same name replaces it, as in YAML). */
static int anchor_add(Parser *P, const unsigned char *name, YamlNode *node, int open, int owned) {
    if (!name) return -1;
    if (!(P->n_anchors & (P->n_anchors - 1)))
        P->anchors = xrealloc(P->anchors, (size_t)(P->n_anchors ? 2 * P->n_anchors : 1) * sizeof *P->anchors);
    Anchor *a = &P->anchors[P->n_anchors];
    *a = (Anchor){dup_str((const char *)name), node, open, owned};
    slot_fill(P, slot_find(P, NULL, a->name), NULL, a->name, P->n_anchors);
    return P->n_anchors++;
}

static const Anchor *anchor_get(Parser *P, const char *name, int line) {
    Slot *s = slot_find(P, NULL, name);
    if (!s->key) {
        fail(P, line, "found undefined alias '*%s' (no '&%s' before it)", name, name);
        return NULL;
    }
    const Anchor *a = &P->anchors[s->val];
    if (a->open) fail(P, line, "the alias '*%s' is inside the node it names (a recursive alias)", name);
    return a->open ? NULL : a;
}

/* ---- events to nodes ---- */

static int refuse_tag(Parser *P, const unsigned char *tag, int line) {
    if (!tag) return 0;
    fail(P, line, "tags are not supported (found '%s'): write the plain value", (const char *)tag);
    return -1;
}

static int is_null_text(const char *s) {
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static YamlNode *scalar_node(Parser *P, const yaml_event_t *ev) {
    int line = (int)ev->start_mark.line + 1;
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    if (refuse_tag(P, ev->data.scalar.tag, line)) return NULL;
    if (memchr(s, 0, n)) {
        fail(P, line, "a NUL character (the escape \\0 or \\x00) in a string is not supported");
        return NULL;
    }
    if (budget(P, line, n)) return NULL;
    int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (plain && is_null_text(s)) return node_new(YAML_NULL, line);
    YamlNode *node = node_new(YAML_SCALAR, line);
    node->str = dup_text(s, n);
    node->quoted = !plain;
    return node;
}

/* Hangs a finished or just-started node under the open list or mapping. */
static void attach(Parser *P, YamlNode *node) {
    if (!P->depth) {
        P->root = node; /* one root: a second document was refused at its start */
        return;
    }
    Frame *f = &P->stack[P->depth - 1];
    push(f->node, f->key, f->key_line, node); /* a mapping's key was read before */
    f->key = NULL;
}

/* The key of the next entry of the mapping in frame f, from a scalar or an alias. */
static void on_key(Parser *P, Frame *f, const yaml_event_t *ev) {
    int line = (int)ev->start_mark.line + 1;
    char *key = NULL;
    if (ev->type == YAML_SCALAR_EVENT) {
        YamlNode *k = scalar_node(P, ev); /* checks tag and NUL, counts it */
        if (!k) return;
        if (k->kind == YAML_NULL && !ev->data.scalar.length) {
            fail(P, line, "a mapping entry with an empty key");
            yaml_tree_free(k);
            return;
        }
        key = dup_text((const char *)ev->data.scalar.value, ev->data.scalar.length); /* "null: 1" keeps its text */
        if (ev->data.scalar.anchor) anchor_add(P, ev->data.scalar.anchor, k, 0, 1);
        else yaml_tree_free(k);
    } else {
        const Anchor *a = anchor_get(P, (const char *)ev->data.alias.anchor, line);
        if (!a) return;
        if (a->node->kind != YAML_SCALAR) {
            fail(P, line, "the key '*%s' is %s: keys are plain or quoted text", a->name, yaml_kind_name(a->node));
            return;
        }
        if (budget(P, line, strlen(a->node->str))) return; /* a long anchored text, reused as many keys */
        key = dup_str(a->node->str);
    }
    Slot *s = slot_find(P, f->node, key);
    if (s->key) {
        fail(P, line, "duplicate key '%s' (first at line %d)", key, f->node->key_lines[s->val]);
        free(key);
        return;
    }
    slot_fill(P, s, f->node, key, f->node->n); /* the index the entry will have */
    f->key = key;
    f->key_line = line;
}

static void on_start(Parser *P, const yaml_event_t *ev) {
    int line = (int)ev->start_mark.line + 1;
    int map = ev->type == YAML_MAPPING_START_EVENT;
    if (refuse_tag(P, map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag, line)) return;
    if (P->depth == YAML_MAX_DEPTH) {
        fail(P, line, "nesting deeper than %d levels", YAML_MAX_DEPTH);
        return;
    }
    if (budget(P, line, 0)) return;
    YamlNode *node = node_new(map ? YAML_MAP : YAML_SEQ, line);
    attach(P, node);
    const unsigned char *anchor = map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
    P->stack[P->depth++] = (Frame){node, NULL, 0, anchor_add(P, anchor, node, 1, 0)};
}

/* One event; returns 1 at the end of the stream. */
static int on_event(Parser *P, const yaml_event_t *ev) {
    int line = (int)ev->start_mark.line + 1;
    Frame *top = P->depth ? &P->stack[P->depth - 1] : NULL;
    int want_key = top && top->node->kind == YAML_MAP && !top->key;
    YamlNode *node = NULL;
    switch (ev->type) {
    case YAML_STREAM_END_EVENT: return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (P->docs++) fail(P, line, "a second document starts here: ppa reads one YAML document per file");
        return 0;
    case YAML_SCALAR_EVENT:
    case YAML_ALIAS_EVENT:
        if (want_key) {
            on_key(P, top, ev);
            return 0;
        }
        if (ev->type == YAML_SCALAR_EVENT) {
            node = scalar_node(P, ev);
            if (node && ev->data.scalar.anchor) anchor_add(P, ev->data.scalar.anchor, node, 0, 0);
        } else {
            const Anchor *a = anchor_get(P, (const char *)ev->data.alias.anchor, line);
            node = a ? copy_tree(P, a->node, P->depth, line) : NULL;
        }
        if (node) attach(P, node);
        return 0;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (want_key) fail(P, line, "a %s as a key (complex key): keys are plain or quoted text",
                           ev->type == YAML_MAPPING_START_EVENT ? "mapping" : "list");
        else on_start(P, ev);
        return 0;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (top->anchor >= 0) P->anchors[top->anchor].open = 0;
        P->depth--;
        return 0;
    default: return 0; /* stream start, document end */
    }
}

/* ---- libyaml's errors, with YAML's lines ---- */

/* Length of the line break at p (CRLF, CR, LF, NEL, LS, PS), 0 if none. */
static size_t break_len(const unsigned char *p, const unsigned char *end) {
    if (*p == '\r') return p + 1 < end && p[1] == '\n' ? 2 : 1;
    if (*p == '\n') return 1;
    if (*p == 0xC2 && p + 1 < end && p[1] == 0x85) return 2;
    if (*p == 0xE2 && p + 2 < end && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) return 3;
    return 0;
}

/* The 1-based line of byte offset `off`, counted as libyaml counts. */
static int line_at(const char *text, size_t off) {
    const unsigned char *p = (const unsigned char *)text, *end = p + off;
    int line = 1;
    while (p < end) {
        size_t b = break_len(p, end);
        line += b > 0;
        p += b ? b : 1;
    }
    return line;
}

/* The last line that holds text: libyaml puts errors at the end of the
 * stream on the line after it. */
static int last_line(const Parser *P) {
    const unsigned char *t = (const unsigned char *)P->text;
    size_t n = P->len;
    int ends_in_break = n && (t[n - 1] == '\n' || t[n - 1] == '\r' ||
                              (n >= 2 && t[n - 2] == 0xC2 && t[n - 1] == 0x85) ||                          /* NEL */
                              (n >= 3 && t[n - 3] == 0xE2 && t[n - 2] == 0x80 && (t[n - 1] | 1) == 0xA9)); /* LS, PS */
    int lines = line_at(P->text, n) - ends_in_break;
    return lines > 1 ? lines : 1;
}

/* The byte at libyaml's mark (0-based line, column in characters), or -1. */
static int byte_at_mark(const Parser *P, const yaml_mark_t *m) {
    const unsigned char *p = (const unsigned char *)P->text, *end = p + P->len;
    if (P->len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3; /* libyaml's marks skip the byte order mark */
    for (size_t line = 0; line < m->line && p < end; p++) {
        size_t b = break_len(p, end);
        if (b) line++, p += b - 1;
    }
    for (size_t col = 0; p < end; p++) /* UTF-8 continuation bytes are not characters */
        if ((*p & 0xC0) != 0x80 && col++ == m->column) return *p;
    return -1;
}

static void fail_libyaml(Parser *P, const yaml_parser_t *yp) {
    int last = last_line(P);
    if (yp->error == YAML_MEMORY_ERROR) {
        fail(P, 0, "libyaml ran out of memory");
    } else if (yp->error == YAML_READER_ERROR) { /* bad encoding: a byte offset, no mark */
        char val[32] = "";
        if (yp->problem_value >= 0) snprintf(val, sizeof val, " (0x%X)", (unsigned)yp->problem_value);
        int line = line_at(P->text, yp->problem_offset < P->len ? yp->problem_offset : P->len);
        fail(P, line < last ? line : last, "%s%s", yp->problem, val);
    } else {
        char ctx[160] = "";
        if (yp->context)
            snprintf(ctx, sizeof ctx, " (%s at line %d)", yp->context,
                     (int)yp->context_mark.line + 1 < last ? (int)yp->context_mark.line + 1 : last);
        int tab = yp->encoding == YAML_UTF8_ENCODING && yp->problem && !strstr(yp->problem, "tab") &&
                  byte_at_mark(P, &yp->problem_mark) == '\t'; /* libyaml's text rarely says why */
        int line = (int)yp->problem_mark.line + 1;
        fail(P, line < last ? line : last, "%s%s%s", yp->problem ? yp->problem : "unknown libyaml error", ctx,
             tab ? "; a tab in the indentation: YAML indents with spaces only" : "");
    }
}

/* ---- parse and load ---- */

static void parser_free(Parser *P) {
    for (int i = 0; i < P->depth; i++) free(P->stack[i].key);
    for (int i = 0; i < P->n_anchors; i++) {
        if (P->anchors[i].owned) yaml_tree_free(P->anchors[i].node);
        free(P->anchors[i].name);
    }
    free(P->anchors);
    free(P->slots);
}

YamlNode *yaml_parse(const char *text, size_t len, const char *name, char *err, size_t errlen) {
    if (!len) text = ""; /* no arithmetic on a NULL pointer below */
    Parser P = {.name = name, .text = text, .len = len, .err = err, .errlen = errlen};
    if (errlen) err[0] = 0;
    const char *nul = memchr(text, 0, len);
    if (nul) { /* libyaml would stop there too, with a vaguer message */
        fail(&P, line_at(text, (size_t)(nul - text)), "a NUL byte: this is not a text file");
        return NULL;
    }
    yaml_parser_t yp;
    if (!yaml_parser_initialize(&yp)) {
        fail(&P, 0, "libyaml ran out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
    for (int done = 0; !done && !P.failed;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&yp, &ev)) {
            fail_libyaml(&P, &yp);
            break;
        }
        done = on_event(&P, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&yp);
    parser_free(&P);
    if (P.failed) {
        yaml_tree_free(P.root);
        return NULL;
    }
    return P.root ? P.root : node_new(YAML_NULL, 1); /* no document, or only comments */
}

YamlNode *yaml_load(const char *path, char *err, size_t errlen) {
    FILE *f = file_open_regular(path, err, errlen);
    if (!f) return NULL;
    /* grown as needed: a recipe is a few kB, and a 16 MB buffer per load
     * made the fuzzer (and any caller in a loop) page-fault its time away */
    size_t cap = 1 << 16, n = 0, got;
    char *buf = xmalloc(cap);
    while (n <= (size_t)YAML_MAX_BYTES && (got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) buf = xrealloc(buf, cap *= 2);
    int bad = ferror(f);
    fclose(f);
    YamlNode *root = NULL;
    if (bad) snprintf(err, errlen, "%s: read error", path);
    else if (n > (size_t)YAML_MAX_BYTES)
        snprintf(err, errlen, "%s: larger than %ld bytes: not a recipe file", path, YAML_MAX_BYTES);
    else root = yaml_parse(buf, n, path, err, errlen);
    free(buf);
    return root;
}

/* ---- lookups and typed views ---- */

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

static int is_blank(char c) { return c == ' ' || c == '\t'; }

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
