/* t_nccl.c: NCCL through the real library (cuda/nccl.h), as far as one GPU allows: a one-rank communicator (every
 * rank loads the library, the id, the non-blocking join), its all-reduce, all-gather and reduce-scatter (one rank:
 * the buffer as it was, bit for bit, and nothing written past it), ZeRO-2's bucket reduction added into its owner's
 * buffer on NCCL's own stream, the timeout set, the communicator left and joined again. Where the
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
    H_TRY(pc_nccl_reduce_scatter_f32(d, N)); /* one rank: its chunk is the whole buffer, its own sum */
    d_down(got, d, sizeof(float) * N);
    H_CHECK(!memcmp(got, x, sizeof(float) * N), "nccl: a one-rank reduce-scatter leaves the buffer as it was");
    /* ZeRO-2's bucket: reduced onto rank 0 on NCCL's stream, added into acc there, the module's stream after it */
    float *a = h_malloc(sizeof(float) * N), *want = h_malloc(sizeof(float) * N);
    h_fill(a, N, 0.02f, 3.0f);
    for (int i = 0; i < N; i++) want[i] = a[i] + x[i];
    float *da = d_clone(a, sizeof(float) * N);
    H_TRY(pc_nccl_reduce_f32(d, N, 0, da, 1));
    H_TRY(pc_nccl_await(1));
    H_TRY(pc_nccl_finish());
    d_down(got, da, sizeof(float) * N);
    H_CHECK(!memcmp(got, want, sizeof(float) * N), "nccl: a one-rank bucket reduction adds the bucket into acc");
    d_down(got, d, sizeof(float) * N);
    H_CHECK(!memcmp(got, x, sizeof(float) * N), "nccl: ... and leaves the bucket as it was");
    H_CHECK(pc_nccl_reduce_f32(d, N, 0, NULL, 4) != 0, "nccl: a tag past 3 is refused");
    H_CHECK(d_guard_ok(d) && d_guard_ok(da), "nccl: nothing written past the buffers");
    d_free(da), free(a), free(want);
    pc_nccl_free();
    H_TRY(pc_nccl_id(id)); /* joined again: a second run's communicator in the same process */
    H_TRY(pc_nccl_init(id, 0, 1));
    H_TRY(pc_nccl_sum_f32(d, N));
    pc_nccl_free();
    h_row("nccl one rank", "n=1000", NULL, 0, 0, "");
    d_free(d), free(x), free(got);
}
