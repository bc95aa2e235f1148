/* fuzz_common.h: what the libFuzzer harnesses share. The parsers under test
 * read paths, so each input is written to a file in a private temporary
 * folder ($TMPDIR, else /dev/shm, else /tmp), removed at exit. A failure
 * here is the harness's own (disk full, ...), not a finding: abort loudly. */
#ifndef PPA_FUZZ_COMMON_H
#define PPA_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/state.h" /* remove_tree */

static char fuzz_dir[512];

static void fuzz_cleanup(void) { remove_tree(fuzz_dir); }

/* the folder, created on first use */
static inline const char *fuzz_tmpdir(void) {
    if (fuzz_dir[0]) return fuzz_dir;
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/ppa-fuzz-XXXXXX", base);
    if (!mkdtemp(fuzz_dir)) {
        perror(fuzz_dir);
        abort();
    }
    atexit(fuzz_cleanup);
    return fuzz_dir;
}

/* folder/name into buf */
static inline const char *fuzz_path(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "%s/%s", fuzz_tmpdir(), name);
    return buf;
}

/* Replaces the file at path with data[0..size). */
static inline void fuzz_write(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(path);
        abort();
    }
}

/* A broken promise of the library (not a sanitizer report): stop with a
 * message so that libFuzzer saves the input. */
#define FUZZ_ASSERT(cond, ...)                                          \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "fuzz: %s:%d: ", __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            abort();                                                    \
        }                                                               \
    } while (0)

#endif
