/* rng.c: splitmix64 and derived distributions. */
#include "core/rng.h"

#include <math.h>

void rng_seed(PpaRng *r, uint64_t seed) { r->state = seed; }

uint64_t rng_u64(PpaRng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double rng_uniform(PpaRng *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

uint64_t rng_hash_string(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    PpaRng mix = {h};
    return rng_u64(&mix);
}

double rng_normal(PpaRng *r) {
    double u1 = 1.0 - rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
