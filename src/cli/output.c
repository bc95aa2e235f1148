/* output.c: gathered output under several ranks (output.h). */
#include "cli/output.h"

#include <stdlib.h>

#include "core/common.h"
#include "dist/dist.h"
#include "io/atomic.h"

void output_gathered(const char *mine, size_t n, const char *out, const char *who) {
    char *all, err[1024];
    size_t total;
    dist_gather_bytes(mine, n, &all, &total);
    if (dist_rank() == 0 && out && atomic_write_bytes(out, all, total, err, sizeof err)) ppa_die(1, "%s: %s", who, err);
    if (dist_rank() == 0 && !out && (fwrite(all, 1, total, stdout) != total || fflush(stdout)))
        ppa_die(1, "%s: error writing the output", who);
    free(all);
}
