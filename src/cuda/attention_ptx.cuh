/* attention_ptx.cuh: the inline PTX of the attention kernels (attention.cu): cp.async, ldmatrix, mma.sync, and
 * the macros of their launches and dynamic shared memory, so that the kernels' own code holds no assembly and no
 * launch syntax (and can be read, or run under a stand-in for this header, as plain C++). */
#ifndef PPA_CUDA_ATTENTION_PTX_CUH
#define PPA_CUDA_ATTENTION_PTX_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

/* kernel<<<grid, block, smem, the module's stream>>>: PC_LAUNCH(grid, block, smem, kernel)(args) */
#define PC_LAUNCH(grid, block, smem, ...) __VA_ARGS__<<<(grid), (block), (smem), (cudaStream_t)pc_stream()>>>
/* the kernel's dynamic shared memory, 16-byte aligned */
#define PC_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16 bytes global -> shared, asynchronously; zeros when !pred (src then not read) */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool pred) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(pred ? 16 : 0)
                 : "memory");
}
/* 4 bytes (cp.async.ca takes 4, 8 or 16); zeros when !pred */
__device__ __forceinline__ void cp_async4(void *dst, const void *src, bool pred) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(pred ? 4 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* four 8x8 bf16 matrices; lane l gives the address of row l % 8 of matrix l / 8 and receives, in r[i], the elements
 * (row l / 4, columns 2 (l % 4), + 1) of matrix i (with .trans: of its transpose) */
__device__ __forceinline__ void ldsm4(uint32_t r[4], const __nv_bfloat16 *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm4t(uint32_t r[4], const __nv_bfloat16 *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

/* c [16 x 8] += a [16 x 16] b [16 x 8]; with g = lane / 4, q = lane % 4: a[0] = A(g, 2q..2q+1), a[1] = A(g+8, 2q..),
 * a[2] = A(g, 2q+8..), a[3] = A(g+8, 2q+8..); b0 = B(2q..2q+1, g), b1 = B(2q+8.., g); c[0..1] = C(g, 2q..2q+1),
 * c[2..3] = C(g+8, 2q..2q+1) (the lower index in the lower half of a register) */
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif
