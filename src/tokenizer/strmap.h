/* strmap.h: open-addressing hash maps for the tokenizer: byte strings to
 * ints (vocabulary, added tokens) and 64-bit keys to ints (BPE merges). Keys
 * are copied into the map's own storage; maps only grow. */
#ifndef PPA_STRMAP_H
#define PPA_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t *slots; /* [cap] entry index + 1, 0 = empty */
    size_t cap, count;
    char **keys;     /* [count] */
    uint32_t *lens;  /* [count] */
    int *values;     /* [count] */
    uint64_t *hashes;
} StrMap;

void strmap_init(StrMap *m);
void strmap_free(StrMap *m);
/* Inserts or overwrites; returns the entry index. */
size_t strmap_put(StrMap *m, const char *key, size_t len, int value);
/* Returns the value, or -1 when absent. */
int strmap_get(const StrMap *m, const char *key, size_t len);
/* The entry index (values[index] is the value), or -1 when absent: for maps
 * in which -1 is a value like any other. */
long strmap_index(const StrMap *m, const char *key, size_t len);

typedef struct {
    uint64_t *keys; /* [cap], UINT64_MAX = empty */
    int *values;    /* [cap] */
    size_t cap, count;
} U64Map;

void u64map_init(U64Map *m);
void u64map_free(U64Map *m);
void u64map_put(U64Map *m, uint64_t key, int value); /* key != UINT64_MAX */
int u64map_get(const U64Map *m, uint64_t key);       /* -1 when absent */

uint64_t hash_bytes(const void *p, size_t n);

#endif
