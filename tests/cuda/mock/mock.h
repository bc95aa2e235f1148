/* mock.h: what the files of the CPU stand-in of the CUDA module share (mock_cuda.c defines these). */
#ifndef PPA_TEST_MOCK_H
#define PPA_TEST_MOCK_H

#include <stddef.h>

#include "cuda/common.h"

/* sets pc_error()'s message; returns -1 */
int mock_fail(const char *msg);
/* element i of a "device" array of t elements, widened to float32 (bf16 exactly); and stored (bf16: rounded to
 * nearest even, as the module rounds) */
float mock_ld(const void *p, PcDtype t, size_t i);
void mock_st(void *p, PcDtype t, size_t i, float v);
/* the stand-in's device memory: pc_alloc refuses a larger allocation (16 GiB unless set) */
void mock_set_capacity(size_t bytes);

/* PPA_MOCK_GUARD=1: "device" memory is mapped PROT_NONE whenever no stand-in function runs, so that host code that
 * reads or writes it (a bug on a real GPU, where it is not host memory) faults here too. Every exported function
 * opens with MOCK_GUARD (depth-counted; the cleanup closes it on every return). */
int mock_enter(void);
void mock_leave(int *depth);
#define MOCK_GUARD int mock_guard_ __attribute__((cleanup(mock_leave), unused)) = mock_enter()

#endif
