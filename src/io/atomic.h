/* atomic.h: files that matter are written atomically: PATH.tmp.<pid> is
 * written, flushed, fsynced and closed, then renamed over PATH and the folder
 * fsynced. A crash at any point leaves either the old PATH or the new one. */
#ifndef PPA_ATOMIC_H
#define PPA_ATOMIC_H

#include <stddef.h>
#include <stdio.h>

/* Writes the body; 0 on success (errno set on failure). */
typedef int (*AtomicWriteFn)(FILE *f, const void *ctx);

/* 0, or -1 with "PATH: ..." in err (PATH left unchanged). */
int atomic_write(const char *path, AtomicWriteFn fn, const void *ctx, char *err, size_t errlen);

/* atomic_write of n bytes */
int atomic_write_bytes(const char *path, const void *bytes, size_t n, char *err, size_t errlen);

/* fsync of the folder holding path (after a rename into it); 0 or -1. */
int fsync_parent(const char *path, char *err, size_t errlen);

#endif
