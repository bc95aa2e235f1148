/* bpe.c: the BPE model of tokenizer.json: vocabulary, ranked merges (both the
 * "a b" and ["a", "b"] forms), byte-level symbols (GPT-2 bytes_to_unicode) or
 * characters with byte fallback, ignore_merges, and a heap-based merge loop
 * that is O(n log n) in the piece length (legacy SentencePiece files have no
 * pre-tokenizer, so one piece can be a whole paragraph). */
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "tokenizer/internal.h"
#include "io/json.h"
#include "tokenizer/buffers.h"

#define CACHE_MAX_ENTRIES 200000
#define CACHE_MAX_PIECE 64

/* GPT-2's bytes_to_unicode: printable bytes map to themselves, the other 68
 * bytes to U+0100 + k in byte order. */
static uint32_t byte_level_cp(unsigned char b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    int k = 0;
    for (int x = 0; x < b; x++)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) k++;
    return 256 + (uint32_t)k;
}

size_t byte_level_char(unsigned char b, char out[2]) {
    uint32_t cp = byte_level_cp(b); /* < 0x800: one or two bytes */
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int byte_level_byte(uint32_t cp) {
    static int inverse[324];
    static int ready;
    if (!ready) { /* benign race: every thread writes the same values */
        for (int i = 0; i < 324; i++) inverse[i] = -1;
        for (int b = 0; b < 256; b++) inverse[byte_level_cp((unsigned char)b)] = b;
        ready = 1;
    }
    return cp < 324 ? inverse[cp] : -1;
}

static uint64_t pair_key(int a, int b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

static int add_merge(Bpe *m, const char *a, size_t la, const char *b, size_t lb, int rank, char *err, size_t errlen) {
    int ia = strmap_get(&m->vocab, a, la), ib = strmap_get(&m->vocab, b, lb);
    char *ab = xmalloc(la + lb + 1);
    memcpy(ab, a, la);
    memcpy(ab + la, b, lb);
    int iab = strmap_get(&m->vocab, ab, la + lb);
    free(ab);
    if (ia < 0 || ib < 0 || iab < 0) {
        snprintf(err, errlen, "merge %d (\"%.*s\" \"%.*s\") uses a token that is not in the vocabulary", rank, (int)la,
                 a, (int)lb, b);
        return -1;
    }
    if (u64map_get(&m->merges, pair_key(ia, ib)) < 0) u64map_put(&m->merges, pair_key(ia, ib), rank);
    m->merge_result[rank] = iab;
    return 0;
}

static int load_merges(Bpe *m, const cJSON *merges, char *err, size_t errlen) {
    if (!cJSON_IsArray(merges)) {
        snprintf(err, errlen, "model.merges must be an array");
        return -1;
    }
    m->n_merges = cJSON_GetArraySize(merges);
    m->merge_result = xmalloc(sizeof(int) * (size_t)(m->n_merges ? m->n_merges : 1));
    int rank = 0;
    for (const cJSON *it = merges->child; it; it = it->next, rank++) {
        const char *a, *b;
        size_t la, lb;
        if (cJSON_IsString(it)) { /* "a b": split on the single space */
            const char *sp = strchr(it->valuestring, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                snprintf(err, errlen, "merge %d \"%s\" is not two tokens separated by one space", rank, it->valuestring);
                return -1;
            }
            a = it->valuestring, la = (size_t)(sp - a), b = sp + 1, lb = strlen(b);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(it->child) &&
                   cJSON_IsString(it->child->next)) {
            a = it->child->valuestring, la = strlen(a), b = it->child->next->valuestring, lb = strlen(b);
        } else {
            snprintf(err, errlen, "merge %d is neither \"a b\" nor [\"a\", \"b\"]", rank);
            return -1;
        }
        if (add_merge(m, a, la, b, lb, rank, err, errlen)) return -1;
    }
    return 0;
}

static int check_option(const cJSON *model, const char *key, char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, key);
    if (!v || cJSON_IsNull(v) || (cJSON_IsString(v) && !v->valuestring[0]) || (cJSON_IsNumber(v) && v->valuedouble == 0))
        return 0;
    snprintf(err, errlen, "model.%s is set, which ppa does not support", key);
    return -1;
}

int bpe_load(Bpe *m, const cJSON *model, int byte_level, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE")) {
        snprintf(err, errlen, "model type %s is not supported (only BPE)", cJSON_IsString(type) ? type->valuestring : "?");
        return -1;
    }
    if (check_option(model, "dropout", err, errlen) || check_option(model, "continuing_subword_prefix", err, errlen) ||
        check_option(model, "end_of_word_suffix", err, errlen))
        return -1;
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(vocab)) {
        snprintf(err, errlen, "model.vocab must be an object");
        return -1;
    }
    char msg[256];
    for (const cJSON *it = vocab->child; it; it = it->next) {
        long id;
        if (json_whole(it, it->string, 0, TOKENIZER_MAX_ID - 1, &id, msg, sizeof msg)) { /* 3.5 is not read as 3 */
            snprintf(err, errlen, "model.vocab: %s", msg);
            return -1;
        }
        strmap_put(&m->vocab, it->string, strlen(it->string), (int)id);
    }
    m->byte_level = byte_level;
    if (json_bool(model, "byte_fallback", &m->byte_fallback, msg, sizeof msg) ||
        json_bool(model, "fuse_unk", &m->fuse_unk, msg, sizeof msg) ||
        json_bool(model, "ignore_merges", &m->ignore_merges, msg, sizeof msg)) {
        snprintf(err, errlen, "model: %s", msg);
        return -1;
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    m->unk_id = cJSON_IsString(unk) ? strmap_get(&m->vocab, unk->valuestring, strlen(unk->valuestring)) : -1;
    for (int b = 0; b < 256; b++) {
        char c[8];
        size_t n = byte_level ? byte_level_char((unsigned char)b, c) : (size_t)snprintf(c, sizeof c, "<0x%02X>", b);
        m->byte_id[b] = strmap_get(&m->vocab, c, n);
        if (byte_level && m->byte_id[b] < 0) {
            snprintf(err, errlen, "byte-level vocabulary lacks the character of byte 0x%02X", b);
            return -1;
        }
    }
    return load_merges(m, cJSON_GetObjectItemCaseSensitive(model, "merges"), err, errlen);
}

void bpe_free(Bpe *m) {
    strmap_free(&m->vocab);
    u64map_free(&m->merges);
    free(m->merge_result);
    strmap_free(&m->cache);
    free(m->cache_ids.v);
    free(m->cache_at.v);
    memset(m, 0, sizeof *m);
}

/* ---- the merge loop ---- */

typedef struct {
    int rank, pos;
} Cand;

typedef struct {
    Cand *h;
    size_t n, cap;
} Heap;

static int cand_less(Cand a, Cand b) { return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos); }

static void heap_push(Heap *q, Cand c) {
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 64;
        q->h = xrealloc(q->h, sizeof(Cand) * q->cap);
    }
    size_t i = q->n++;
    while (i && cand_less(c, q->h[(i - 1) / 2])) {
        q->h[i] = q->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->h[i] = c;
}

static Cand heap_pop(Heap *q) {
    Cand top = q->h[0], last = q->h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n) break;
        if (c + 1 < q->n && cand_less(q->h[c + 1], q->h[c])) c++;
        if (!cand_less(q->h[c], last)) break;
        q->h[i] = q->h[c];
        i = c;
    }
    if (q->n) q->h[i] = last;
    return top;
}

typedef struct {
    int *id, *next, *prev; /* [n] linked list of live symbols; -1 ends */
    size_t n, cap;
    Heap heap;
} Symbols;

static void symbols_reserve(Symbols *s, size_t n) {
    if (n <= s->cap) return;
    s->cap = n * 2;
    s->id = xrealloc(s->id, sizeof(int) * s->cap);
    s->next = xrealloc(s->next, sizeof(int) * s->cap);
    s->prev = xrealloc(s->prev, sizeof(int) * s->cap);
}

static void push_pair(const Bpe *m, Symbols *s, int pos) {
    if (pos < 0 || s->next[pos] < 0) return;
    int rank = u64map_get(&m->merges, pair_key(s->id[pos], s->id[s->next[pos]]));
    if (rank >= 0) heap_push(&s->heap, (Cand){rank, pos});
}

/* Lowest rank first, leftmost among equal ranks (as the reference). */
static void merge_all(const Bpe *m, Symbols *s) {
    s->heap.n = 0;
    for (size_t i = 0; i + 1 < s->n; i++) push_pair(m, s, (int)i);
    while (s->heap.n) {
        Cand c = heap_pop(&s->heap);
        int a = c.pos, b = s->id[a] >= 0 ? s->next[a] : -1;
        if (b < 0 || u64map_get(&m->merges, pair_key(s->id[a], s->id[b])) != c.rank) continue; /* stale */
        s->id[a] = m->merge_result[c.rank];
        s->next[a] = s->next[b];
        if (s->next[b] >= 0) s->prev[s->next[b]] = a;
        s->id[b] = -1;
        push_pair(m, s, s->prev[a]);
        push_pair(m, s, a);
    }
}

static void add_symbol(Symbols *s, int id) {
    symbols_reserve(s, s->n + 1);
    s->id[s->n] = id;
    s->prev[s->n] = (int)s->n - 1;
    s->next[s->n] = -1;
    if (s->n) s->next[s->n - 1] = (int)s->n;
    s->n++;
}

/* 1 if every byte of a character has a <0xNN> token: byte fallback takes
 * all of them or none (tokenizers' BPE falls back to unk otherwise) */
static int bytes_known(const Bpe *m, const char *p, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (m->byte_id[(unsigned char)p[k]] < 0) return 0;
    return 1;
}

/* Characters (or byte-level bytes) to initial symbols. */
static void initial_symbols(const Bpe *m, const char *p, size_t len, Symbols *s) {
    s->n = 0;
    if (m->byte_level) {
        for (size_t i = 0; i < len; i++) add_symbol(s, m->byte_id[(unsigned char)p[i]]);
        return;
    }
    int last_unk = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = (size_t)utf8_next((const unsigned char *)p + i, len - i, &cp);
        int id = strmap_get(&m->vocab, p + i, n);
        if (id >= 0) {
            add_symbol(s, id);
            last_unk = 0;
        } else if (m->byte_fallback && bytes_known(m, p + i, n)) {
            for (size_t k = 0; k < n; k++) add_symbol(s, m->byte_id[(unsigned char)p[i + k]]);
            last_unk = 0;
        } else if (m->unk_id >= 0 && !(m->fuse_unk && last_unk)) {
            add_symbol(s, m->unk_id);
            last_unk = 1;
        }
        i += n;
    }
}

static int whole_piece_id(const Bpe *m, const char *p, size_t len) {
    if (!m->byte_level) return strmap_get(&m->vocab, p, len);
    char *w = xmalloc(2 * len);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += byte_level_char((unsigned char)p[i], w + n);
    int id = strmap_get(&m->vocab, w, n);
    free(w);
    return id;
}

static void encode_uncached(Bpe *m, const char *p, size_t len, IntVec *out) {
    static __thread Symbols s; /* reused between calls */
    if (m->ignore_merges) { /* a piece that is a token as a whole is not merged */
        int id = whole_piece_id(m, p, len);
        if (id >= 0) {
            intvec_push(out, id);
            return;
        }
    }
    initial_symbols(m, p, len, &s);
    merge_all(m, &s);
    for (int i = s.n ? 0 : -1; i >= 0; i = s.next[i]) intvec_push(out, s.id[i]);
}

void bpe_encode_piece(Bpe *m, const char *piece, size_t len, IntVec *out) {
    if (!len) return;
    if (len > CACHE_MAX_PIECE) {
        encode_uncached(m, piece, len, out);
        return;
    }
    int e = strmap_get(&m->cache, piece, len);
    if (e >= 0) {
        int at = m->cache_at.v[2 * e], n = m->cache_at.v[2 * e + 1];
        for (int i = 0; i < n; i++) intvec_push(out, m->cache_ids.v[at + i]);
        return;
    }
    size_t start = out->n;
    encode_uncached(m, piece, len, out);
    if (m->cache.count < CACHE_MAX_ENTRIES) {
        strmap_put(&m->cache, piece, len, (int)(m->cache_at.n / 2));
        intvec_push(&m->cache_at, (int)m->cache_ids.n);
        intvec_push(&m->cache_at, (int)(out->n - start));
        for (size_t i = start; i < out->n; i++) intvec_push(&m->cache_ids, out->v[i]);
    }
}
