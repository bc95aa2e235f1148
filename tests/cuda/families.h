/* families.h: the kernel families' tests and the benchmark of test_cuda (tests/cuda/t_*.c). */
#ifndef PPA_TEST_CUDA_FAMILIES_H
#define PPA_TEST_CUDA_FAMILIES_H

void t_convert(void);
void t_matmul(void);
void t_embedding(void);
void t_rmsnorm(void);
void t_rope(void);
void t_swiglu(void);
void t_lmhead(void);
void t_sample(void);
void t_decode(void);
void t_nccl(void);
void t_adamw(void);
void t_global_norm(void);

/* the kernel benchmark on model shapes; dump: a folder for the LM head's inputs and log-probs (the PyTorch
 * comparison, bench/cuda_lmhead_torch.py) or NULL; tiny: toy shapes instead (a check of the benchmark's own code) */
void b_models(const char *dump, int tiny);

#endif
