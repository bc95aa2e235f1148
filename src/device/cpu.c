/* cpu.c: the CPU's device table (device.h): the functions of src/kernels and
 * src/optim as they are. */
#include "device/device.h"

#include "kernels/gemm.h"

static const Device CPU = {
    .name = "cpu",
    .mm_forward = mm_forward,
    .mm_backward = mm_backward,
    .gemm = gemm,
    .gemm_rows = gemm_rows,
    .rmsnorm_forward = rmsnorm_forward,
    .rmsnorm_backward = rmsnorm_backward,
    .rope_table = rope_table,
    .rope_apply = rope_apply,
    .swiglu_forward = swiglu_forward,
    .swiglu_backward = swiglu_backward,
    .attention_forward = attention_forward,
    .attention_backward = attention_backward,
    .lmhead_chunk = lmhead_chunk,
    .lmhead_work = lmhead_work,
    .lmhead_btmp = lmhead_btmp,
    .lmhead_forward = lmhead_forward,
    .lmhead_backward = lmhead_backward,
    .lmhead_backward_weights = lmhead_backward_weights,
    .to_bf16 = bf16_from_f32,
    .from_bf16 = bf16_to_f32,
    .adamw_step = adamw_step,
    .grad_norm = grad_norm,
};

const Device *device_cpu(void) { return &CPU; }
