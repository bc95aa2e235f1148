/* dynlib.h: the one way ppa loads code at run time (dlopen). A bare soname ("libdnnl.so.2") is found by the system
 * loader in the places the installer and the user's LD_LIBRARY_PATH put it. A path (with a '/': a module beside the
 * binary, PPA_CUDA_LIB, PPA_BLAS=/path) is loaded only if that file is owned by the caller or by root and is not
 * writable by group or others; the file is opened once, checked through its descriptor, and the descriptor's file
 * is what dlopen loads (/proc/self/fd/N, kept open: that name must never be reused), so the file checked is the
 * file loaded, whatever happens to the path. */
#ifndef PPA_DYNLIB_H
#define PPA_DYNLIB_H

#include <stddef.h>

/* dlopen(lib, flags) under the rule above; NULL with why in err (the path and the reason, or dlerror()). */
void *dynlib_open(const char *lib, int flags, char *err, size_t errlen);

/* 0 when path may be loaded (same rule), else -1 with why in err; fd: the open descriptor (caller closes) or NULL. */
int dynlib_check(const char *path, int *fd, char *err, size_t errlen);

#endif
