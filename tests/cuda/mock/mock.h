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

#endif
