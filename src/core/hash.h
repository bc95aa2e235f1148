/* hash.h: a fast 64-bit content hash (not cryptographic) for cache keys:
 * model weights, data files, token streams. Four independent lanes of
 * multiply-xor-rotate over 64-bit words, then a full mix; byte order is the
 * machine's (little-endian here), so keys are per-platform. */
#ifndef PPA_HASH_H
#define PPA_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash64(const void *p, size_t n, uint64_t seed);
/* hash of a file read in 1 MiB blocks, chained (not equal to hash64 of
 * the whole); *ok = 0 if it cannot be read */
uint64_t hash64_file(const char *path, int *ok);
/* hash of a model or adapter folder's weights and config: config.json,
 * adapter_config.json and every *.safetensors file in it, by name (sorted)
 * and content; *ok = 0 if one cannot be read or there is none */
uint64_t hash64_folder(const char *dir, int *ok);
/* hash64 chained: h = hash64(p, n, h) */
static inline uint64_t hash64_more(uint64_t h, const void *p, size_t n) { return hash64(p, n, h); }

#endif
