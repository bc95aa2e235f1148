/* strmap.c: linear-probing hash maps with power-of-two capacities. */
#include "tokenizer/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"

uint64_t hash_bytes(const void *p, size_t n) {
    /* FNV-1a, then a final avalanche so that low bits are well mixed */
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

void strmap_init(StrMap *m) { memset(m, 0, sizeof *m); }

void strmap_free(StrMap *m) {
    for (size_t i = 0; i < m->count; i++) free(m->keys[i]);
    free(m->slots);
    free(m->keys);
    free(m->lens);
    free(m->values);
    free(m->hashes);
    memset(m, 0, sizeof *m);
}

static void strmap_rehash(StrMap *m, size_t cap) {
    free(m->slots);
    m->slots = xcalloc(cap, sizeof(uint32_t));
    m->cap = cap;
    for (size_t e = 0; e < m->count; e++) {
        size_t i = m->hashes[e] & (cap - 1);
        while (m->slots[i]) i = (i + 1) & (cap - 1);
        m->slots[i] = (uint32_t)(e + 1);
    }
    m->keys = xrealloc(m->keys, sizeof(char *) * cap);
    m->lens = xrealloc(m->lens, sizeof(uint32_t) * cap);
    m->values = xrealloc(m->values, sizeof(int) * cap);
    m->hashes = xrealloc(m->hashes, sizeof(uint64_t) * cap);
}

static size_t strmap_find(const StrMap *m, const char *key, size_t len, uint64_t h) {
    size_t i = h & (m->cap - 1);
    for (;;) {
        uint32_t s = m->slots[i];
        if (!s) return i;
        size_t e = s - 1;
        if (m->hashes[e] == h && m->lens[e] == len && !memcmp(m->keys[e], key, len)) return i;
        i = (i + 1) & (m->cap - 1);
    }
}

size_t strmap_put(StrMap *m, const char *key, size_t len, int value) {
    if ((m->count + 1) * 2 > m->cap) strmap_rehash(m, m->cap ? m->cap * 2 : 64);
    uint64_t h = hash_bytes(key, len);
    size_t i = strmap_find(m, key, len, h);
    if (m->slots[i]) {
        m->values[m->slots[i] - 1] = value;
        return m->slots[i] - 1;
    }
    size_t e = m->count++;
    m->keys[e] = xmalloc(len + 1);
    memcpy(m->keys[e], key, len);
    m->keys[e][len] = 0;
    m->lens[e] = (uint32_t)len;
    m->values[e] = value;
    m->hashes[e] = h;
    m->slots[i] = (uint32_t)(e + 1);
    return e;
}

int strmap_get(const StrMap *m, const char *key, size_t len) {
    if (!m->cap) return -1;
    size_t i = strmap_find(m, key, len, hash_bytes(key, len));
    return m->slots[i] ? m->values[m->slots[i] - 1] : -1;
}

long strmap_index(const StrMap *m, const char *key, size_t len) {
    if (!m->cap) return -1;
    size_t i = strmap_find(m, key, len, hash_bytes(key, len));
    return m->slots[i] ? (long)m->slots[i] - 1 : -1;
}

void u64map_init(U64Map *m) { memset(m, 0, sizeof *m); }

void u64map_free(U64Map *m) {
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static size_t u64_slot(uint64_t key, size_t cap) {
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 17) & (cap - 1);
}

void u64map_put(U64Map *m, uint64_t key, int value) {
    if ((m->count + 1) * 2 > m->cap) {
        size_t old_cap = m->cap, cap = old_cap ? old_cap * 2 : 1024;
        uint64_t *ok = m->keys;
        int *ov = m->values;
        m->keys = xmalloc(sizeof(uint64_t) * cap);
        m->values = xmalloc(sizeof(int) * cap);
        memset(m->keys, 0xff, sizeof(uint64_t) * cap);
        m->cap = cap;
        m->count = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (ok[i] != UINT64_MAX) u64map_put(m, ok[i], ov[i]);
        free(ok);
        free(ov);
    }
    size_t i = u64_slot(key, m->cap);
    while (m->keys[i] != UINT64_MAX && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == UINT64_MAX) m->count++;
    m->keys[i] = key;
    m->values[i] = value;
}

int u64map_get(const U64Map *m, uint64_t key) {
    if (!m->cap) return -1;
    size_t i = u64_slot(key, m->cap);
    while (m->keys[i] != UINT64_MAX) {
        if (m->keys[i] == key) return m->values[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}
