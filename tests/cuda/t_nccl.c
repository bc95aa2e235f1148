/* t_nccl.c: NCCL through the real library (cuda/nccl.h), as far as one GPU allows: a one-rank communicator (every
 * rank loads the library, the id, the non-blocking join), its all-reduce and all-gather (one rank: the buffer as it
 * was, bit for bit, and nothing written past it), the timeout set, the communicator left and joined again. Where the
 * library does not load (the stand-in without PPA_MOCK_NCCL, a machine without libnccl.so.2) it says SKIP and why:
 * several processes then sum through the host, which test_gpu_commands.sh checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/nccl.h"
#include "families.h"
#include "harness.h"

void t_nccl(void) {
    if (pc_nccl_load()) {
        printf("t_nccl: SKIP NCCL's one-rank checks: %s\n", pc_error());
        return;
    }
    enum { N = 1000 };
    unsigned char id[PC_NCCL_ID_BYTES];
    H_TRY(pc_nccl_id(id));
    H_TRY(pc_nccl_init(id, 0, 1));
    pc_nccl_set_timeout(60);
    float *x = h_malloc(sizeof(float) * N), *got = h_malloc(sizeof(float) * N);
    h_fill(x, N, 0.01f, 10.0f);
    float *d = d_clone(x, sizeof(float) * N);
    H_TRY(pc_nccl_sum_f32(d, N));
    d_down(got, d, sizeof(float) * N);
    H_CHECK(!memcmp(got, x, sizeof(float) * N), "nccl: a one-rank all-reduce leaves the buffer as it was");
    H_TRY(pc_nccl_all_gather_f32(d, N));
    d_down(got, d, sizeof(float) * N);
    H_CHECK(!memcmp(got, x, sizeof(float) * N), "nccl: a one-rank all-gather leaves the buffer as it was");
    H_CHECK(d_guard_ok(d), "nccl: nothing written past the buffer");
    pc_nccl_free();
    H_TRY(pc_nccl_id(id)); /* joined again: a second run's communicator in the same process */
    H_TRY(pc_nccl_init(id, 0, 1));
    H_TRY(pc_nccl_sum_f32(d, N));
    pc_nccl_free();
    h_row("nccl one rank", "n=1000", NULL, 0, 0, "");
    d_free(d), free(x), free(got);
}
