/* cuda.h: the GPU, when there is one: ppa's CUDA module (src/cuda, built
 * into libppa_cuda.so when nvcc is found) loaded at run time, so that the
 * ppa binary starts on any machine and only --device cuda needs the driver
 * and NVIDIA's libraries. The module is looked for in $PPA_CUDA_LIB, then
 * beside the ppa binary, in build/ under its folder, and in ../lib. */
#ifndef PPA_DEVICE_CUDA_H
#define PPA_DEVICE_CUDA_H

#include <stddef.h>

#include "device/pc_api.h"

/* 0 when GPU `index` (-1: the local rank's, modulo the GPUs the driver shows: ranks on a node take a GPU each) is
 * usable (the module loads, it has every function of
 * pc_api.h, the driver answers, the device exists; its name in
 * device_cuda_name()); -1 with why in err: no module built, the module or an
 * NVIDIA library not loadable, a module of another version, no driver, no
 * device. Probes once; later calls give the same answer. */
int device_cuda_open(int index, char *err, size_t errlen);
/* "NVIDIA H200 (GPU 0, sm_90, 140 GiB, 139 GiB free)" after a successful open */
const char *device_cuda_name(void);
/* The module's functions (pc_api.h), every entry resolved, after a successful open; NULL before one or after a
 * failed one. The table lives as long as the process (the module is never unloaded). */
const PcApi *device_cuda_api(void);

#endif
