/* rng.h: small deterministic random numbers (splitmix64), for benchmarks,
 * tests and list sampling. Same seed, same sequence, on every platform. */
#ifndef PPA_RNG_H
#define PPA_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t state;
} PpaRng;

void rng_seed(PpaRng *r, uint64_t seed);
uint64_t rng_u64(PpaRng *r);
double rng_uniform(PpaRng *r); /* [0, 1), 53 random bits */
double rng_normal(PpaRng *r);  /* N(0, 1), Box-Muller, no cached second value */
/* A 64-bit hash of a string, to derive seeds from names (FNV-1a + mixing). */
uint64_t rng_hash_string(const char *s);

#endif
