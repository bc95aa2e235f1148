/* pretok.c: normalizers (NFC/NFD/NFKC/NFKD via utf8proc, Lowercase, Prepend,
 * Replace, Sequence) and pre-tokenizers (Split with PCRE2 regexes, ByteLevel,
 * Digits, Metaspace, Sequence) of tokenizer.json. Anything else is refused
 * by name when the file is loaded. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/common.h"
#include "tokenizer/internal.h"
#include "tokenizer/buffers.h"

/* GPT-2's split, used by ByteLevel with use_regex = true */
static const char GPT2_REGEX[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const char *type_of(const cJSON *j) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    return cJSON_IsString(t) ? t->valuestring : "";
}

static const char *string_field(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- normalizers ---- */

typedef enum { N_UNICODE, N_LOWER, N_PREPEND, N_REPLACE, N_SEQUENCE } NormKind;

struct Normalizer {
    NormKind kind;
    int utf8proc_options; /* N_UNICODE */
    char *a, *b;          /* prepend text; replace pattern and content */
    Normalizer **kids;
    int n_kids;
};

int normalizer_load(Normalizer **out, const cJSON *j, char *err, size_t errlen) {
    *out = NULL;
    if (!j || cJSON_IsNull(j)) return 0;
    Normalizer *n = xcalloc(1, sizeof *n);
    const char *t = type_of(j);
    const struct {
        const char *name;
        int options;
    } forms[] = {{"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
                 {"NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
                 {"NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
                 {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}};
    *out = n;
    for (size_t i = 0; i < PPA_ARRAY_LEN(forms); i++)
        if (!strcmp(t, forms[i].name)) {
            n->kind = N_UNICODE;
            n->utf8proc_options = forms[i].options;
            return 0;
        }
    if (!strcmp(t, "Lowercase")) {
        n->kind = N_LOWER;
    } else if (!strcmp(t, "Prepend") && string_field(j, "prepend")) {
        n->kind = N_PREPEND;
        n->a = strdup(string_field(j, "prepend"));
    } else if (!strcmp(t, "Replace")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(j, "pattern");
        const char *s = string_field(pat, "String"), *c = string_field(j, "content");
        if (!s || !c || !s[0]) {
            snprintf(err, errlen, "normalizer Replace with a %s pattern is not supported (only String)",
                     string_field(pat, "Regex") ? "Regex" : "missing");
            return -1;
        }
        n->kind = N_REPLACE;
        n->a = strdup(s);
        n->b = strdup(c);
    } else if (!strcmp(t, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "normalizers");
        n->kind = N_SEQUENCE;
        n->kids = xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(Normalizer *));
        for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it; it = it->next)
            if (normalizer_load(&n->kids[n->n_kids++], it, err, errlen)) return -1;
    } else {
        snprintf(err, errlen, "normalizer type '%s' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, "
                              "Prepend, Replace, Sequence)", t);
        return -1;
    }
    return 0;
}

void normalizer_free(Normalizer *n) {
    if (!n) return;
    for (int i = 0; i < n->n_kids; i++) normalizer_free(n->kids[i]);
    free(n->kids);
    free(n->a);
    free(n->b);
    free(n);
}

/* one step; -1 once the output passes limit bytes (checked as it grows: one Replace may multiply the text) */
static int apply_one(const Normalizer *n, const char *s, size_t len, ByteBuf *out, size_t limit) {
    out->n = 0;
    bytebuf_put(out, "", 0);
    switch (n->kind) {
    case N_UNICODE: {
        utf8proc_uint8_t *dst = NULL;
        utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst, n->utf8proc_options);
        if (m >= 0) bytebuf_put(out, dst, (size_t)m);
        else bytebuf_put(out, s, len); /* invalid UTF-8 is rejected before this point */
        free(dst);
        break;
    }
    case N_LOWER:
        for (size_t i = 0; i < len;) {
            uint32_t cp;
            int k = utf8_next((const unsigned char *)s + i, len - i, &cp);
            char c[4];
            bytebuf_put(out, c, utf8_put((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), c));
            i += (size_t)k;
        }
        break;
    case N_PREPEND:
        if (len) bytebuf_put(out, n->a, strlen(n->a)); /* as the reference: nothing for an empty segment */
        bytebuf_put(out, s, len);
        break;
    case N_REPLACE: {
        size_t lp = strlen(n->a), lc = strlen(n->b);
        for (size_t i = 0; i < len;) {
            if (i + lp <= len && !memcmp(s + i, n->a, lp)) {
                if (out->n + lc > limit) return -1;
                bytebuf_put(out, n->b, lc);
                i += lp;
            } else {
                bytebuf_put(out, s + i, 1);
                i++;
            }
        }
        break;
    }
    case N_SEQUENCE: break; /* handled by normalizer_apply */
    }
    return out->n > limit ? -1 : 0;
}

static int apply_limited(const Normalizer *n, const char *s, size_t len, ByteBuf *out, size_t limit) {
    if (!n) {
        out->n = 0;
        bytebuf_put(out, s, len);
        return 0;
    }
    if (n->kind != N_SEQUENCE) return apply_one(n, s, len, out, limit);
    ByteBuf tmp = {0};
    out->n = 0;
    bytebuf_put(out, s, len);
    int rc = 0;
    for (int i = 0; i < n->n_kids && !rc; i++) {
        rc = apply_limited(n->kids[i], out->s, out->n, &tmp, limit);
        ByteBuf swap = *out;
        *out = tmp;
        tmp = swap;
    }
    free(tmp.s);
    return rc;
}

int normalizer_apply(const Normalizer *n, const char *s, size_t len, ByteBuf *out) {
    return apply_limited(n, s, len, out, NORM_GROWTH * len + NORM_EXTRA);
}

/* ---- pre-tokenizers ---- */

typedef enum { P_SPLIT, P_BYTE_LEVEL, P_DIGITS, P_METASPACE, P_SEQUENCE } PreKind;
typedef enum { SPLIT_ISOLATED, SPLIT_REMOVED } SplitBehavior;

struct PreTokenizer {
    PreKind kind;
    pcre2_code *re;            /* Split, ByteLevel with use_regex */
    pcre2_match_data *match;
    pcre2_match_context *mctx; /* its match limit: set per attempt (the text's budget below) */
    SplitBehavior behavior;
    int add_prefix_space;      /* ByteLevel */
    int individual_digits;     /* Digits */
    char repl[8];              /* Metaspace replacement (UTF-8) */
    int prepend;               /* Metaspace: 0 never, 1 first, 2 always */
    int split;                 /* Metaspace: split on the replacement */
    PreTokenizer **kids;
    int n_kids;
};

/* The reference (Oniguruma) reads \s as the Unicode White_Space property;
 * PCRE2's \s also takes U+180E (a legacy \h member). Spell the property out. */
static char *white_space_property(const char *pattern) {
    ByteBuf b = {0};
    for (const char *c = pattern; *c; c++) {
        if (c[0] == '\\' && (c[1] == 's' || c[1] == 'S')) {
            bytebuf_put(&b, c[1] == 's' ? "\\p{White_Space}" : "\\P{White_Space}", 15);
            c++;
        } else if (c[0] == '\\' && c[1]) {
            bytebuf_put(&b, c, 2);
            c++;
        } else {
            bytebuf_put(&b, c, 1);
        }
    }
    return b.s ? b.s : calloc(1, 1);
}

static int compile_regex(PreTokenizer *p, const char *source, uint32_t extra, char *err, size_t errlen) {
    int code;
    PCRE2_SIZE off;
    char *pattern = extra & PCRE2_LITERAL ? strdup(source) : white_space_property(source);
    /* PCRE2_LITERAL refuses PCRE2_UCP ("invalid option bits"), and a literal has no classes for it to change */
    uint32_t ucp = extra & PCRE2_LITERAL ? 0 : PCRE2_UCP;
    p->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | ucp | extra, &code, &off, NULL);
    free(pattern);
    if (!p->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        snprintf(err, errlen, "pre-tokenizer regex does not compile at offset %zu: %s", (size_t)off, (char *)msg);
        return -1;
    }
    pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* optional: falls back to the interpreter */
    p->match = pcre2_match_data_create_from_pattern(p->re, NULL);
    p->mctx = pcre2_match_context_create(NULL);
    if (!p->match || !p->mctx) return snprintf(err, errlen, "out of memory"), -1;
    return 0;
}

static int load_split(PreTokenizer *p, const cJSON *j, char *err, size_t errlen) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(j, "pattern");
    const char *re = string_field(pat, "Regex"), *lit = string_field(pat, "String");
    const char *behavior = string_field(j, "behavior");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "invert"))) {
        snprintf(err, errlen, "pre-tokenizer Split with invert = true is not supported");
        return -1;
    }
    if (!behavior || (strcmp(behavior, "Isolated") && strcmp(behavior, "Removed"))) {
        snprintf(err, errlen, "pre-tokenizer Split behavior '%s' is not supported (Isolated, Removed)",
                 behavior ? behavior : "?");
        return -1;
    }
    p->kind = P_SPLIT;
    p->behavior = strcmp(behavior, "Isolated") ? SPLIT_REMOVED : SPLIT_ISOLATED;
    if (re) return compile_regex(p, re, 0, err, errlen);
    if (lit && lit[0]) return compile_regex(p, lit, PCRE2_LITERAL, err, errlen);
    snprintf(err, errlen, "pre-tokenizer Split needs a Regex or String pattern");
    return -1;
}

static int load_metaspace(PreTokenizer *p, const cJSON *j, char *err, size_t errlen) {
    const char *r = string_field(j, "replacement"), *scheme = string_field(j, "prepend_scheme");
    if (!r || strlen(r) >= sizeof p->repl || !r[0]) {
        snprintf(err, errlen, "pre-tokenizer Metaspace needs a one-character replacement");
        return -1;
    }
    p->kind = P_METASPACE;
    strcpy(p->repl, r);
    const cJSON *aps = cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space"); /* older files */
    p->prepend = scheme ? (!strcmp(scheme, "first") ? 1 : !strcmp(scheme, "always") ? 2 : 0) : cJSON_IsTrue(aps) ? 2 : 0;
    if (scheme && strcmp(scheme, "first") && strcmp(scheme, "always") && strcmp(scheme, "never")) {
        snprintf(err, errlen, "Metaspace prepend_scheme '%s' is unknown", scheme);
        return -1;
    }
    const cJSON *split = cJSON_GetObjectItemCaseSensitive(j, "split");
    p->split = split ? cJSON_IsTrue(split) : 1;
    return 0;
}

int pretok_load(PreTokenizer **out, const cJSON *j, char *err, size_t errlen) {
    *out = NULL;
    if (!j || cJSON_IsNull(j)) return 0;
    PreTokenizer *p = xcalloc(1, sizeof *p);
    *out = p;
    const char *t = type_of(j);
    if (!strcmp(t, "Split")) return load_split(p, j, err, errlen);
    if (!strcmp(t, "Metaspace")) return load_metaspace(p, j, err, errlen);
    if (!strcmp(t, "ByteLevel")) {
        p->kind = P_BYTE_LEVEL;
        p->add_prefix_space = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space"));
        const cJSON *ur = cJSON_GetObjectItemCaseSensitive(j, "use_regex");
        return (!ur || cJSON_IsTrue(ur)) ? compile_regex(p, GPT2_REGEX, 0, err, errlen) : 0;
    }
    if (!strcmp(t, "Digits")) {
        p->kind = P_DIGITS;
        p->individual_digits = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "individual_digits"));
        return 0;
    }
    if (!strcmp(t, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers");
        p->kind = P_SEQUENCE;
        p->kids = xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(PreTokenizer *));
        for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it; it = it->next)
            if (pretok_load(&p->kids[p->n_kids++], it, err, errlen)) return -1;
        return 0;
    }
    snprintf(err, errlen, "pre-tokenizer type '%s' is not supported (supported: Split, ByteLevel, Digits, Metaspace, "
                          "Sequence)", t);
    return -1;
}

void pretok_free(PreTokenizer *p) {
    if (!p) return;
    for (int i = 0; i < p->n_kids; i++) pretok_free(p->kids[i]);
    free(p->kids);
    if (p->match) pcre2_match_data_free(p->match);
    if (p->mctx) pcre2_match_context_free(p->mctx);
    if (p->re) pcre2_code_free(p->re);
    free(p);
}

int pretok_is_byte_level(const PreTokenizer *p) {
    if (!p) return 0;
    if (p->kind == P_BYTE_LEVEL) return 1;
    for (int i = 0; i < p->n_kids; i++)
        if (pretok_is_byte_level(p->kids[i])) return 1;
    return 0;
}

static void emit(ByteBuf *buf, IntVec *spans, const char *s, size_t len) {
    if (!len) return;
    intvec_push(spans, (int)buf->n);
    intvec_push(spans, (int)len);
    bytebuf_put(buf, s, len);
}

/* One match from at, within the text's budget of PCRE2 work (its match limit's units): an attempt starts with a small
 * limit and, when that is not enough, is retried with a limit four times larger, up to PCRE2's own per-match limit;
 * every limit granted is charged to the budget. What a match needs is at most 4/3 of what it is charged beyond the
 * first limit, so ordinary patterns (short pieces) cost PRETOK_FIRST_LIMIT a match, and a pattern that backtracks
 * exponentially meets the budget after a few matches instead of running for minutes. */
static int match_budgeted(const PreTokenizer *p, const char *s, size_t len, size_t at, double *budget) {
    for (uint32_t limit = PRETOK_FIRST_LIMIT;; limit *= 4) {
        if (*budget < limit) return PCRE2_ERROR_MATCHLIMIT;
        *budget -= limit;
        pcre2_set_match_limit(p->mctx, limit);
        int rc = pcre2_match(p->re, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, p->match, p->mctx);
        if (rc != PCRE2_ERROR_MATCHLIMIT || limit >= PRETOK_MATCH_LIMIT) return rc;
    }
}

/* Every match is a piece and so is the text between matches (Isolated), or
 * matches are dropped (Removed). */
static int split_regex(const PreTokenizer *p, const char *s, size_t len, ByteBuf *buf, IntVec *spans) {
    size_t at = 0;
    double budget = PRETOK_BUDGET_BASE + PRETOK_BUDGET_PER_BYTE * (double)len;
    while (at < len) {
        int rc = match_budgeted(p, s, len, at, &budget);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return -1; /* the budget or a limit: "no more matches" would drop or merge text */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->match);
        if (ov[1] == ov[0]) { /* an empty match: step over one character */
            uint32_t cp;
            size_t step = (size_t)utf8_next((const unsigned char *)s + ov[0], len - ov[0], &cp);
            emit(buf, spans, s + at, ov[0] + step - at);
            at = ov[0] + step;
            continue;
        }
        emit(buf, spans, s + at, ov[0] - at);
        if (p->behavior == SPLIT_ISOLATED) emit(buf, spans, s + ov[0], ov[1] - ov[0]);
        at = ov[1];
    }
    emit(buf, spans, s + at, len - at);
    return 0;
}

/* Rust's char::is_numeric: general categories Nd, Nl and No */
static int is_numeric(uint32_t cp) {
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

static void split_digits(const PreTokenizer *p, const char *s, size_t len, ByteBuf *buf, IntVec *spans) {
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = (size_t)utf8_next((const unsigned char *)s + i, len - i, &cp);
        int digit = is_numeric(cp);
        if (digit) {
            emit(buf, spans, s + start, i - start);
            size_t end = i + k;
            while (!p->individual_digits && end < len) { /* a run of digits is one piece */
                uint32_t c2;
                size_t k2 = (size_t)utf8_next((const unsigned char *)s + end, len - end, &c2);
                if (!is_numeric(c2)) break;
                end += k2;
            }
            emit(buf, spans, s + i, end - i);
            start = i = end;
        } else {
            i += k;
        }
    }
    emit(buf, spans, s + start, len - start);
}

static void metaspace(const PreTokenizer *p, const char *s, size_t len, int first, ByteBuf *buf, IntVec *spans) {
    ByteBuf t = {0};
    size_t lr = strlen(p->repl);
    /* prepend unless the text, spaces already replaced, starts with the replacement */
    int starts = (len && s[0] == ' ') || (len >= lr && !memcmp(s, p->repl, lr));
    if ((p->prepend == 2 || (p->prepend == 1 && first)) && !starts) bytebuf_put(&t, p->repl, lr);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') bytebuf_put(&t, p->repl, lr);
        else bytebuf_put(&t, s + i, 1);
    }
    size_t start = 0;
    for (size_t i = 0; p->split && i + lr <= t.n; i++)
        if (i > start && !memcmp(t.s + i, p->repl, lr)) { /* the replacement begins the next piece */
            emit(buf, spans, t.s + start, i - start);
            start = i;
        }
    emit(buf, spans, t.s + start, t.n - start);
    free(t.s);
}

/* Applies one pre-tokenizer to every piece of (in, in_spans); -1 when a Split pattern fails. */
static int apply_pretok(const PreTokenizer *p, const ByteBuf *in, const IntVec *in_spans, int first_segment,
                        ByteBuf *buf, IntVec *spans) {
    int rc = 0;
    for (size_t k = 0; k < in_spans->n && !rc; k += 2) {
        const char *s = in->s + in_spans->v[k];
        size_t len = (size_t)in_spans->v[k + 1];
        switch (p->kind) {
        case P_SPLIT: rc = split_regex(p, s, len, buf, spans); break;
        case P_DIGITS: split_digits(p, s, len, buf, spans); break;
        case P_METASPACE: metaspace(p, s, len, first_segment && k == 0, buf, spans); break;
        case P_BYTE_LEVEL: {
            ByteBuf t = {0};
            if (p->add_prefix_space && (len == 0 || s[0] != ' ')) bytebuf_put(&t, " ", 1);
            bytebuf_put(&t, s, len);
            if (p->re) rc = split_regex(p, t.s, t.n, buf, spans);
            else emit(buf, spans, t.s, t.n);
            free(t.s);
            break;
        }
        case P_SEQUENCE: break;
        }
    }
    return rc;
}

int pretok_split(const PreTokenizer *p, const char *s, size_t len, int first_segment, ByteBuf *buf, IntVec *spans) {
    buf->n = 0;
    spans->n = 0;
    if (!p) {
        emit(buf, spans, s, len);
        return 0;
    }
    int rc = 0;
    ByteBuf cur = {0};
    IntVec cur_spans = {0};
    emit(&cur, &cur_spans, s, len);
    int n = p->kind == P_SEQUENCE ? p->n_kids : 1;
    for (int i = 0; i < n && !rc; i++) {
        const PreTokenizer *q = p->kind == P_SEQUENCE ? p->kids[i] : p;
        buf->n = 0;
        spans->n = 0;
        if (q->kind == P_SEQUENCE) { /* nested sequences are rare: recurse piece by piece */
            for (size_t k = 0; k < cur_spans.n && !rc; k += 2) {
                ByteBuf b2 = {0};
                IntVec s2 = {0};
                rc = pretok_split(q, cur.s + cur_spans.v[k], (size_t)cur_spans.v[k + 1], first_segment && k == 0, &b2, &s2);
                for (size_t m = 0; m < s2.n; m += 2) emit(buf, spans, b2.s + s2.v[m], (size_t)s2.v[m + 1]);
                free(b2.s);
                free(s2.v);
            }
        } else {
            rc = apply_pretok(q, &cur, &cur_spans, first_segment, buf, spans);
        }
        ByteBuf tb = cur;
        cur = *buf;
        *buf = tb;
        IntVec ts = cur_spans;
        cur_spans = *spans;
        *spans = ts;
    }
    ByteBuf tb = cur;
    cur = *buf;
    *buf = tb;
    IntVec ts = cur_spans;
    cur_spans = *spans;
    *spans = ts;
    free(cur.s);
    free(cur_spans.v);
    return rc;
}
