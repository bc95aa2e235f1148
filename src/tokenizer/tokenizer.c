/* tokenizer.c: loading tokenizer.json, and the encode / decode pipelines:
 * added tokens are split out of the raw text first (leftmost, longest), each
 * segment between them is normalised and pre-tokenised on its own, pieces go
 * through BPE, and the post-processor adds BOS when asked. Decoding maps ids
 * to token strings and runs the decoder chain. */
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "io/file.h"
#include "io/json.h"
#include "tokenizer/internal.h"

typedef struct {
    char *content;
    size_t len;
    int id, special, lstrip, rstrip;
} AddedToken;

typedef enum { D_BYTE_LEVEL, D_REPLACE, D_BYTE_FALLBACK, D_FUSE, D_STRIP, D_METASPACE } DecKind;

typedef struct {
    DecKind kind;
    char *a, *b;     /* Replace pattern and content; Strip and Metaspace character */
    int start, stop; /* Strip counts; Metaspace: 1 = strip the first leading space */
} DecStep;

struct Tokenizer {
    Bpe bpe;
    Normalizer *norm;
    PreTokenizer *pre;
    AddedToken *added; /* sorted by length, longest first */
    int n_added;
    unsigned char added_first[256]; /* 1 if some added token starts with this byte */
    int *post;                      /* ids the post-processor puts around $A; -1 marks $A */
    int n_post;
    DecStep *dec;
    int n_dec;
    int cleanup; /* tokenizer_config.json clean_up_tokenization_spaces (a transformers option) */
    const char **id_str; /* [size] token strings (into the maps' storage) */
    size_t *id_len;
    unsigned char *id_special;
    int size;
    /* scratch reused between calls */
    ByteBuf norm_buf, piece_buf;
    IntVec spans;
};

static const char *jtype(const cJSON *j) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    return cJSON_IsString(t) ? t->valuestring : "";
}

/* ---- loading ---- */

static int cmp_added(const void *x, const void *y) {
    const AddedToken *a = x, *b = y;
    return (a->len < b->len) - (a->len > b->len);
}

static int load_added(Tokenizer *t, const cJSON *list, char *err, size_t errlen) {
    t->added = xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(AddedToken));
    for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it; it = it->next) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content"), *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        char msg[256];
        long idv;
        int single = 0, normalized = 0, special = 0, lstrip = 0, rstrip = 0;
        if (!cJSON_IsString(c) || !c->valuestring[0] || !id) {
            snprintf(err, errlen, "added_tokens: entry %d lacks a content string or an id", t->n_added);
            return -1;
        }
        if (json_whole(id, "id", 0, TOKENIZER_MAX_ID - 1, &idv, msg, sizeof msg) || json_bool(it, "single_word", &single, msg, sizeof msg) ||
            json_bool(it, "normalized", &normalized, msg, sizeof msg) || json_bool(it, "special", &special, msg, sizeof msg) ||
            json_bool(it, "lstrip", &lstrip, msg, sizeof msg) || json_bool(it, "rstrip", &rstrip, msg, sizeof msg)) {
            snprintf(err, errlen, "added token \"%s\": %s", c->valuestring, msg);
            return -1;
        }
        if (single) {
            snprintf(err, errlen, "added token \"%s\": single_word = true is not supported", c->valuestring);
            return -1;
        }
        if (normalized && t->norm) {
            snprintf(err, errlen, "added token \"%s\": normalized = true with a normalizer is not supported",
                     c->valuestring);
            return -1;
        }
        AddedToken *a = &t->added[t->n_added++];
        a->content = strdup(c->valuestring);
        a->len = strlen(a->content);
        a->id = (int)idv;
        a->special = special, a->lstrip = lstrip, a->rstrip = rstrip;
        t->added_first[(unsigned char)a->content[0]] = 1;
    }
    qsort(t->added, (size_t)t->n_added, sizeof(AddedToken), cmp_added);
    return 0;
}

/* TemplateProcessing "single" (and ByteLevel, a no-op for ids) */
static int load_post(Tokenizer *t, const cJSON *j, char *err, size_t errlen) {
    if (!j || cJSON_IsNull(j)) return 0;
    const char *type = jtype(j);
    if (!strcmp(type, "ByteLevel")) return 0;
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "processors");
        for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it; it = it->next)
            if (load_post(t, it, err, errlen)) return -1;
        return 0;
    }
    if (strcmp(type, "TemplateProcessing")) {
        snprintf(err, errlen, "post_processor type '%s' is not supported (TemplateProcessing, ByteLevel, Sequence)",
                 type);
        return -1;
    }
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(j, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(j, "special_tokens");
    free(t->post);
    t->post = NULL;
    t->n_post = 0;
    for (const cJSON *it = cJSON_IsArray(single) ? single->child : NULL; it; it = it->next) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(it, "Sequence")) {
            t->post = xrealloc(t->post, sizeof(int) * (size_t)(t->n_post + 1));
            t->post[t->n_post++] = -1;
            continue;
        }
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(sp, "id");
        const cJSON *entry = cJSON_IsString(name) ? cJSON_GetObjectItemCaseSensitive(specials, name->valuestring) : NULL;
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(entry, "ids");
        if (!cJSON_IsArray(ids)) {
            snprintf(err, errlen, "post_processor: special token %s has no ids",
                     cJSON_IsString(name) ? name->valuestring : "?");
            return -1;
        }
        for (const cJSON *v = ids->child; v; v = v->next) {
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < TOKENIZER_MAX_ID) ||
                v->valuedouble != (int)v->valuedouble) { /* -1 marks the sequence in t->post */
                snprintf(err, errlen, "post_processor: special token %s has an id that is not a token id",
                         name->valuestring);
                return -1;
            }
            t->post = xrealloc(t->post, sizeof(int) * (size_t)(t->n_post + 1));
            t->post[t->n_post++] = v->valueint;
        }
    }
    return 0;
}

static int load_decoder(Tokenizer *t, const cJSON *j, char *err, size_t errlen) {
    if (!j || cJSON_IsNull(j)) return 0;
    const char *type = jtype(j);
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "decoders");
        for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it; it = it->next)
            if (load_decoder(t, it, err, errlen)) return -1;
        return 0;
    }
    DecStep d = {0};
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(j, "content");
    if (!strcmp(type, "ByteLevel")) {
        d.kind = D_BYTE_LEVEL;
    } else if (!strcmp(type, "ByteFallback")) {
        d.kind = D_BYTE_FALLBACK;
    } else if (!strcmp(type, "Fuse")) {
        d.kind = D_FUSE;
    } else if (!strcmp(type, "Replace")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "pattern"), "String");
        if (!cJSON_IsString(pat) || !pat->valuestring[0] || !cJSON_IsString(content)) {
            snprintf(err, errlen, "decoder Replace needs a String pattern and content");
            return -1;
        }
        d.kind = D_REPLACE;
        d.a = strdup(pat->valuestring);
        d.b = strdup(content->valuestring);
    } else if (!strcmp(type, "Strip") && cJSON_IsString(content) && content->valuestring[0]) { /* "" strips nothing */
        d.kind = D_STRIP;
        d.a = strdup(content->valuestring);
        d.start = cJSON_GetObjectItemCaseSensitive(j, "start") ? cJSON_GetObjectItemCaseSensitive(j, "start")->valueint : 0;
        d.stop = cJSON_GetObjectItemCaseSensitive(j, "stop") ? cJSON_GetObjectItemCaseSensitive(j, "stop")->valueint : 0;
    } else if (!strcmp(type, "Metaspace")) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "replacement");
        const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(j, "prepend_scheme");
        if (cJSON_IsString(r) && !r->valuestring[0]) { /* replace_in would never advance past "" */
            snprintf(err, errlen, "decoder Metaspace needs a non-empty replacement");
            return -1;
        }
        d.kind = D_METASPACE;
        d.a = strdup(cJSON_IsString(r) ? r->valuestring : "\xe2\x96\x81");
        d.start = cJSON_IsString(scheme) ? strcmp(scheme->valuestring, "never") != 0
                                         : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space"));
    } else {
        snprintf(err, errlen, "decoder type '%s' is not supported (ByteLevel, Replace, ByteFallback, Fuse, Strip, "
                              "Metaspace, Sequence)", type);
        return -1;
    }
    t->dec = xrealloc(t->dec, sizeof(DecStep) * (size_t)(t->n_dec + 1));
    t->dec[t->n_dec++] = d;
    return 0;
}

/* id -> string table over the vocabulary and the added tokens. One id, one
 * string: where tokenizer.json disagrees with itself, Hugging Face's loader
 * keeps ids of its own (a warning at most: the vocabulary's id for an added
 * token's string, a fresh id for a new string, an arbitrary one of two
 * strings for a shared vocabulary id), so ppa's ids would not be the model's.
 * An added token that repeats a vocabulary entry (same string, same id) is
 * the usual case and fine; so is an exact repeat of an added token. */
static int build_id_table(Tokenizer *t, char *err, size_t errlen) {
    int size = 0;
    for (size_t e = 0; e < t->bpe.vocab.count; e++) size = t->bpe.vocab.values[e] + 1 > size ? t->bpe.vocab.values[e] + 1 : size;
    for (int i = 0; i < t->n_added; i++) size = t->added[i].id + 1 > size ? t->added[i].id + 1 : size;
    t->size = size;
    t->id_str = xcalloc((size_t)size + 1, sizeof(char *));
    t->id_len = xcalloc((size_t)size + 1, sizeof(size_t));
    t->id_special = xcalloc((size_t)size + 1, 1);
    for (size_t e = 0; e < t->bpe.vocab.count; e++) {
        int id = t->bpe.vocab.values[e];
        if (t->id_str[id]) {
            snprintf(err, errlen, "model.vocab gives id %d to both \"%s\" and \"%s\"", id, t->id_str[id], t->bpe.vocab.keys[e]);
            return -1;
        }
        t->id_str[id] = t->bpe.vocab.keys[e];
        t->id_len[id] = t->bpe.vocab.lens[e];
    }
    StrMap seen = {0}; /* added token string -> index in t->added */
    int rc = 0;
    for (int i = 0; i < t->n_added && !rc; i++) {
        const AddedToken *a = &t->added[i];
        int vid = strmap_get(&t->bpe.vocab, a->content, a->len);
        long prev = strmap_index(&seen, a->content, a->len);
        const AddedToken *p = prev >= 0 ? &t->added[seen.values[prev]] : NULL;
        if (vid >= 0 && vid != a->id)
            rc = snprintf(err, errlen, "added token \"%s\" has id %d, but model.vocab gives \"%s\" id %d", a->content,
                          a->id, a->content, vid);
        else if (p && (p->id != a->id || p->special != a->special || p->lstrip != a->lstrip || p->rstrip != a->rstrip))
            rc = snprintf(err, errlen, "added token \"%s\" is listed twice, with ids %d and %d%s", a->content, p->id, a->id,
                          p->id == a->id ? " and different flags" : "");
        else if (t->id_str[a->id] && !p && vid < 0)
            rc = snprintf(err, errlen, "id %d is given to both \"%s\" and added token \"%s\"", a->id, t->id_str[a->id],
                          a->content);
        if (rc) break;
        strmap_put(&seen, a->content, a->len, i);
        t->id_str[a->id] = a->content;
        t->id_len[a->id] = a->len;
        t->id_special[a->id] = (unsigned char)a->special;
    }
    strmap_free(&seen);
    return rc ? -1 : 0;
}

static int load_json(Tokenizer *t, const cJSON *root, char *err, size_t errlen) {
    if (normalizer_load(&t->norm, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), err, errlen) ||
        pretok_load(&t->pre, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), err, errlen) ||
        load_added(t, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), err, errlen) ||
        load_post(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), err, errlen) ||
        load_decoder(t, cJSON_GetObjectItemCaseSensitive(root, "decoder"), err, errlen))
        return -1;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) {
        snprintf(err, errlen, "missing \"model\"");
        return -1;
    }
    if (bpe_load(&t->bpe, model, pretok_is_byte_level(t->pre), err, errlen) || build_id_table(t, err, errlen)) return -1;
    for (int i = 0; i < t->n_post; i++) /* encode's ids must all be tokens */
        if (t->post[i] >= 0 && (t->post[i] >= t->size || !t->id_str[t->post[i]])) {
            snprintf(err, errlen, "post_processor: id %d is in neither the vocabulary nor added_tokens", t->post[i]);
            return -1;
        }
    return 0;
}

/* Options of tokenizer_config.json beside the tokenizer.json, when present. */
/* tokenizer_config.json beside the tokenizer, when there is one: read as
 * strictly as the rest (a malformed one is an error, not a lost setting) */
static int load_config(Tokenizer *t, const char *file, char *err, size_t errlen) {
    char cfg[4200];
    const char *slash = strrchr(file, '/');
    snprintf(cfg, sizeof cfg, "%.*stokenizer_config.json", slash ? (int)(slash - file + 1) : 0, file);
    struct stat st;
    if (stat(cfg, &st) && errno == ENOENT) return 0;
    size_t len;
    char msg[512], *text = file_read_all(cfg, &len, msg, sizeof msg);
    if (!text) return snprintf(err, errlen, "%s", msg), -1; /* msg names the file */
    cJSON *root = json_parse(text, len, msg, sizeof msg);
    free(text);
    int rc = root ? json_bool(root, "clean_up_tokenization_spaces", &t->cleanup, msg, sizeof msg) : -1;
    if (!rc && !cJSON_IsObject(root)) rc = -1, snprintf(msg, sizeof msg, "not a JSON object");
    cJSON_Delete(root);
    if (rc) snprintf(err, errlen, "%s: %s", cfg, msg);
    return rc;
}

Tokenizer *tokenizer_load_folder(const char *dir, char *err, size_t errlen) {
    char file[4096];
    struct stat st;
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    if (errlen) err[0] = 0;
    if (file_refuse_hub_id(dir, err, errlen)) return NULL;
    if (stat(file, &st) && errno == ENOENT) return NULL;
    return tokenizer_load(dir, err, errlen);
}

Tokenizer *tokenizer_load(const char *path, char *err, size_t errlen) {
    char file[4096];
    struct stat st;
    if (file_refuse_hub_id(path, err, errlen)) return NULL;
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) snprintf(file, sizeof file, "%s/tokenizer.json", path);
    else snprintf(file, sizeof file, "%s", path);
    size_t len;
    char *text = file_read_all(file, &len, err, errlen);
    if (!text) return NULL;
    char why[512];
    cJSON *root = json_parse(text, len, why, sizeof why);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s: %s", file, why);
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: not a JSON object", file);
        cJSON_Delete(root);
        return NULL;
    }
    Tokenizer *t = xcalloc(1, sizeof *t);
    char msg[512];
    int rc = load_json(t, root, msg, sizeof msg);
    cJSON_Delete(root);
    if (rc) {
        snprintf(err, errlen, "%s: %s", file, msg);
        tokenizer_free(t);
        return NULL;
    }
    if (load_config(t, file, err, errlen)) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    bpe_free(&t->bpe);
    normalizer_free(t->norm);
    pretok_free(t->pre);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
    free(t->post);
    for (int i = 0; i < t->n_dec; i++) free(t->dec[i].a), free(t->dec[i].b);
    free(t->dec);
    free(t->id_str);
    free(t->id_len);
    free(t->id_special);
    free(t->norm_buf.s);
    free(t->piece_buf.s);
    free(t->spans.v);
    free(t);
}

/* ---- encoding ---- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Leftmost, longest added token in s[from..len); returns its index or -1.
 * With a mask, a special token never matches over a byte marked 1 (message
 * text): what Hugging Face's split_special_tokens does for that text. */
static int find_added(const Tokenizer *t, const char *s, const unsigned char *mask, size_t len, size_t from,
                      size_t *at) {
    for (size_t i = from; i < len; i++) {
        if (!t->added_first[(unsigned char)s[i]]) continue;
        for (int k = 0; k < t->n_added; k++) /* longest first */
            if (t->added[k].len <= len - i && !memcmp(s + i, t->added[k].content, t->added[k].len) &&
                !(mask && t->added[k].special && memchr(mask + i, 1, t->added[k].len))) {
                *at = i;
                return k;
            }
    }
    return -1;
}

static int encode_segment(Tokenizer *t, const char *s, size_t len, int first, IntVec *out) {
    if (!len) return 0;
    if (normalizer_apply(t->norm, s, len, &t->norm_buf)) return -2;
    if (pretok_split(t->pre, t->norm_buf.s, t->norm_buf.n, first, &t->piece_buf, &t->spans)) return -1;
    for (size_t k = 0; k < t->spans.n; k += 2)
        bpe_encode_piece(&t->bpe, t->piece_buf.s + t->spans.v[k], (size_t)t->spans.v[k + 1], out);
    return 0;
}

long tokenizer_encode(Tokenizer *t, const char *text, size_t len, int add_special, int **ids, char *err,
                      size_t errlen) {
    return tokenizer_encode_masked(t, text, NULL, len, add_special, ids, err, errlen);
}

long tokenizer_encode_masked(Tokenizer *t, const char *text, const unsigned char *mask, size_t len, int add_special,
                             int **ids, char *err, size_t errlen) {
    *ids = NULL;
    for (size_t i = 0; i < len;) { /* PCRE2 and the normalizers need valid UTF-8 */
        uint32_t cp;
        int n = utf8_next((const unsigned char *)text + i, len - i, &cp);
        if (cp == 0xFFFD && !(len - i >= 3 && !memcmp(text + i, "\xEF\xBF\xBD", 3))) {
            snprintf(err, errlen, "invalid UTF-8 at byte %zu", i);
            return -1;
        }
        i += (size_t)n;
    }
    IntVec body = {0}, out = {0};
    size_t pos = 0;
    while (pos <= len) {
        size_t at = len;
        int k = find_added(t, text, mask, len, pos, &at);
        size_t seg_end = at, next = k >= 0 ? at + t->added[k].len : len + 1;
        if (k >= 0 && t->added[k].lstrip)
            while (seg_end > pos && is_space(text[seg_end - 1])) seg_end--;
        int seg = encode_segment(t, text + pos, seg_end - pos, pos == 0, &body);
        if (seg == -2) {
            free(body.v);
            snprintf(err, errlen, "the tokenizer's normalizer makes this text (bytes %zu to %zu) longer than its bound "
                     "(%d x its length + %d bytes: Replace steps that multiply the text); refusing to tokenize it",
                     pos, seg_end, NORM_GROWTH, NORM_EXTRA);
            return -1;
        }
        if (seg) {
            free(body.v);
            snprintf(err, errlen, "the pre-tokenizer's Split pattern needs more work on this text (bytes %zu to %zu) than "
                     "its bound (%.0f + %.0f per byte match steps: a pattern that backtracks without end); refusing to "
                     "tokenize it rather than drop or merge text", pos, seg_end, PRETOK_BUDGET_BASE, PRETOK_BUDGET_PER_BYTE);
            return -1;
        }
        if (k < 0) break;
        intvec_push(&body, t->added[k].id);
        if (t->added[k].rstrip)
            while (next < len && is_space(text[next])) next++;
        pos = next;
    }
    if (add_special && t->n_post) {
        for (int i = 0; i < t->n_post; i++) {
            if (t->post[i] >= 0) intvec_push(&out, t->post[i]);
            else
                for (size_t j = 0; j < body.n; j++) intvec_push(&out, body.v[j]);
        }
        free(body.v);
    } else {
        out = body;
    }
    *ids = out.v ? out.v : xmalloc(sizeof(int));
    return (long)out.n;
}

/* ---- decoding ---- */

typedef struct {
    ByteBuf *tok; /* [n] token strings */
    size_t n;
} Tokens;

static void fuse_all(Tokens *t) {
    for (size_t i = 1; i < t->n; i++) {
        bytebuf_put(&t->tok[0], t->tok[i].s, t->tok[i].n);
        free(t->tok[i].s);
    }
    if (t->n) t->n = 1;
}

static void dec_byte_level(Tokens *t) {
    fuse_all(t);
    if (!t->n) return;
    ByteBuf raw = {0}, out = {0};
    const char *s = t->tok[0].s;
    for (size_t i = 0; i < t->tok[0].n;) {
        uint32_t cp;
        int n = utf8_next((const unsigned char *)s + i, t->tok[0].n - i, &cp);
        int b = byte_level_byte(cp);
        if (b >= 0) {
            char c = (char)b;
            bytebuf_put(&raw, &c, 1);
        } else {
            bytebuf_put(&raw, s + i, (size_t)n);
        }
        i += (size_t)n;
    }
    utf8_put_lossy(&out, raw.s ? raw.s : "", raw.n); /* Rust's from_utf8_lossy */
    free(raw.s);
    free(t->tok[0].s);
    t->tok[0] = out;
}

static int hex_byte(const ByteBuf *b) {
    unsigned v;
    if (b->n != 6 || memcmp(b->s, "<0x", 3) || b->s[5] != '>' || sscanf(b->s + 3, "%2X", &v) != 1) return -1;
    return (int)v;
}

/* Runs of <0xXX> tokens become their UTF-8 text, or one U+FFFD per byte when
 * invalid: Hugging Face's ByteFallback decoder does that, not from_utf8_lossy. */
static void dec_byte_fallback(Tokens *t) {
    Tokens out = {xcalloc(t->n + 1, sizeof(ByteBuf)), 0};
    for (size_t i = 0; i < t->n;) {
        if (hex_byte(&t->tok[i]) < 0) {
            out.tok[out.n++] = t->tok[i++];
            continue;
        }
        ByteBuf bytes = {0}, text = {0};
        size_t j = i;
        for (; j < t->n && hex_byte(&t->tok[j]) >= 0; j++) {
            char c = (char)hex_byte(&t->tok[j]);
            bytebuf_put(&bytes, &c, 1);
            free(t->tok[j].s);
        }
        utf8_put_lossy(&text, bytes.s, bytes.n);
        int valid = text.n == bytes.n && !memcmp(text.s, bytes.s, bytes.n);
        if (valid) {
            out.tok[out.n++] = text;
        } else {
            for (size_t k = i; k < j; k++) {
                ByteBuf r = {0};
                bytebuf_put(&r, "\xEF\xBF\xBD", 3);
                out.tok[out.n++] = r;
            }
            free(text.s);
        }
        free(bytes.s);
        i = j;
    }
    free(t->tok);
    *t = out;
}

static void replace_in(ByteBuf *b, const char *pat, const char *with) {
    size_t lp = strlen(pat), lw = strlen(with);
    ByteBuf out = {0};
    for (size_t i = 0; i < b->n;) {
        if (i + lp <= b->n && !memcmp(b->s + i, pat, lp)) {
            bytebuf_put(&out, with, lw);
            i += lp;
        } else {
            bytebuf_put(&out, b->s + i, 1);
            i++;
        }
    }
    free(b->s);
    *b = out.s ? out : (ByteBuf){calloc(1, 1), 0, 1};
}

static void dec_strip(Tokens *t, const DecStep *d) {
    size_t lc = strlen(d->a);
    for (size_t i = 0; i < t->n; i++) {
        ByteBuf *b = &t->tok[i];
        size_t from = 0, to = b->n;
        for (int k = 0; k < d->start && from + lc <= to && !memcmp(b->s + from, d->a, lc); k++) from += lc;
        for (int k = 0; k < d->stop && to >= from + lc && !memcmp(b->s + to - lc, d->a, lc); k++) to -= lc;
        memmove(b->s, b->s + from, to - from);
        b->n = to - from;
        b->s[b->n] = 0;
    }
}

static void run_decoder(const Tokenizer *tk, Tokens *t) {
    for (int s = 0; s < tk->n_dec; s++) {
        const DecStep *d = &tk->dec[s];
        switch (d->kind) {
        case D_BYTE_LEVEL: dec_byte_level(t); break;
        case D_BYTE_FALLBACK: dec_byte_fallback(t); break;
        case D_FUSE: fuse_all(t); break;
        case D_REPLACE:
            for (size_t i = 0; i < t->n; i++) replace_in(&t->tok[i], d->a, d->b);
            break;
        case D_STRIP: dec_strip(t, d); break;
        case D_METASPACE: /* the reference drops every replacement of the first token */
            for (size_t i = 0; i < t->n; i++) replace_in(&t->tok[i], d->a, i == 0 && d->start ? "" : " ");
            break;
        }
    }
}

/* transformers' clean_up_tokenization_spaces: " ." -> "." and the like */
static void clean_up_spaces(ByteBuf *b) {
    static const char *const FROM[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
    static const char *const TO[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
    for (size_t k = 0; k < PPA_ARRAY_LEN(FROM); k++) replace_in(b, FROM[k], TO[k]);
}

char *tokenizer_decode(const Tokenizer *tk, const int *ids, size_t n, int skip_special, size_t *len) {
    Tokens t = {xcalloc(n + 1, sizeof(ByteBuf)), 0};
    for (size_t i = 0; i < n; i++) {
        int id = ids[i];
        if (id < 0 || id >= tk->size || !tk->id_str[id] || (skip_special && tk->id_special[id])) continue;
        ByteBuf b = {0};
        bytebuf_put(&b, tk->id_str[id], tk->id_len[id]);
        t.tok[t.n++] = b;
    }
    run_decoder(tk, &t);
    ByteBuf out = {0};
    bytebuf_put(&out, "", 0);
    for (size_t i = 0; i < t.n; i++) {
        bytebuf_put(&out, t.tok[i].s ? t.tok[i].s : "", t.tok[i].n);
        free(t.tok[i].s);
    }
    free(t.tok);
    if (tk->cleanup) clean_up_spaces(&out);
    if (len) *len = out.n;
    return out.s;
}

/* ---- queries ---- */

void tokenizer_set_clean_up_spaces(Tokenizer *t, int on) { t->cleanup = on; }
int tokenizer_clean_up_spaces(const Tokenizer *t) { return t->cleanup; }

int tokenizer_has_added_token(const Tokenizer *t, const char *text, size_t len) {
    size_t at;
    return find_added(t, text, NULL, len, 0, &at) >= 0;
}

long tokenizer_find_special(const Tokenizer *t, const char *text, const unsigned char *mask, size_t len, size_t *tok_len) {
    size_t at;
    for (size_t from = 0;; from = at + 1) {
        int k = find_added(t, text, mask, len, from, &at);
        if (k < 0) return -1;
        if (t->added[k].special) return *tok_len = t->added[k].len, (long)at;
    }
}

int tokenizer_added_id(const Tokenizer *t, const char *token) {
    for (int i = 0; i < t->n_added; i++)
        if (!strcmp(t->added[i].content, token)) return t->added[i].id;
    return -1;
}

int tokenizer_token_id(const Tokenizer *t, const char *token) {
    for (int i = 0; i < t->n_added; i++)
        if (!strcmp(t->added[i].content, token)) return t->added[i].id;
    return strmap_get(&t->bpe.vocab, token, strlen(token));
}

const char *tokenizer_token(const Tokenizer *t, int id) { return id >= 0 && id < t->size ? t->id_str[id] : NULL; }
int tokenizer_is_special(const Tokenizer *t, int id) { return id >= 0 && id < t->size && t->id_special[id]; }
int tokenizer_size(const Tokenizer *t) { return t->size; }
int tokenizer_bos_id(const Tokenizer *t) { return t->n_post && t->post[0] >= 0 ? t->post[0] : -1; }
const char *tokenizer_family(const Tokenizer *t) { return t->bpe.byte_level ? "byte-level" : "sentencepiece"; }
