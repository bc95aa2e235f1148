/* hash.c: hash64, hash64_file. */
#include "core/hash.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P1 0x9E3779B97F4A7C15ULL
#define P2 0xC2B2AE3D27D4EB4FULL

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t mix(uint64_t h) { /* splitmix64's finaliser */
    h ^= h >> 30, h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27, h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

uint64_t hash64(const void *p, size_t n, uint64_t seed) {
    const unsigned char *b = p;
    uint64_t lane[4] = {seed + P1, seed ^ P2, seed - P1, ~seed};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * l, 8);
            lane[l] = rotl(lane[l] ^ (w * P2), 31) * P1;
        }
    uint64_t h = mix(lane[0]) ^ rotl(mix(lane[1]), 16) ^ rotl(mix(lane[2]), 32) ^ rotl(mix(lane[3]), 48);
    for (; i < n; i++) h = (h ^ b[i]) * P1;
    return mix(h ^ (uint64_t)n);
}

uint64_t hash64_file(const char *path, int *ok) {
    /* a regular file only, opened without blocking: a FIFO in a folder must not hang a hash */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    FILE *f = fd >= 0 && !fstat(fd, &sb) && S_ISREG(sb.st_mode) ? fdopen(fd, "rb") : NULL;
    *ok = 0;
    if (!f) {
        if (fd >= 0) close(fd);
        return 0;
    }
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    uint64_t h = 0;
    size_t got;
    int fine = buf != NULL;
    while (fine && (got = fread(buf, 1, CHUNK, f)) > 0) h = hash64(buf, got, h);
    if (fine && ferror(f)) fine = 0;
    fclose(f);
    free(buf);
    *ok = fine;
    return h;
}

static int weights_file(const struct dirent *e) {
    size_t n = strlen(e->d_name);
    return !strcmp(e->d_name, "config.json") || !strcmp(e->d_name, "adapter_config.json") ||
           (n > 12 && !strcmp(e->d_name + n - 12, ".safetensors"));
}

uint64_t hash64_folder(const char *dir, int *ok) {
    struct dirent **names;
    int n = scandir(dir, &names, weights_file, alphasort); /* sorted: the same folder, the same hash */
    uint64_t h = 0x666f6c646572ULL;
    *ok = n > 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]->d_name) + 2;
        char *path = malloc(len);
        int fine = 0;
        if (path) {
            snprintf(path, len, "%s/%s", dir, names[i]->d_name);
            h = hash64(names[i]->d_name, strlen(names[i]->d_name), h);
            h = hash64_more(h, &(uint64_t){hash64_file(path, &fine)}, sizeof(uint64_t));
        }
        *ok = *ok && fine;
        free(path), free(names[i]);
    }
    if (n >= 0) free(names);
    return h;
}
