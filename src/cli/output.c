/* output.c: gathered output under several ranks (output.h). */
#include "cli/output.h"

#include <stdlib.h>

#include "core/common.h"
#include "dist/dist.h"
#include "io/atomic.h"

typedef struct {
    const char *text;
    size_t n;
} Bytes;

static int write_bytes(FILE *f, const void *ctx) {
    const Bytes *b = ctx;
    return fwrite(b->text, 1, b->n, f) == b->n ? 0 : -1;
}

void output_gathered(const char *mine, size_t n, const char *out, const char *who) {
    char *all, err[1024];
    size_t total;
    dist_gather_bytes(mine, n, &all, &total);
    Bytes b = {all, total};
    if (dist_rank() == 0 && out && atomic_write(out, write_bytes, &b, err, sizeof err)) ppa_die(1, "%s: %s", who, err);
    if (dist_rank() == 0 && !out && (write_bytes(stdout, &b) || fflush(stdout)))
        ppa_die(1, "%s: error writing the output", who);
    free(all);
}
