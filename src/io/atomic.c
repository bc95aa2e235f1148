/* atomic.c: temp file, flush, fsync, rename, fsync of the folder. */
#include "io/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"


int fsync_parent(const char *path, char *err, size_t errlen) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    char *dir = xmalloc(n + 2);
    if (!slash) strcpy(dir, ".");
    else if (n == 0) strcpy(dir, "/");
    else memcpy(dir, path, n), dir[n] = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
    /* EINVAL: the file system has no directory fsync, nothing more to do */
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        rc = ppa_fail(err, errlen, "%s: written, but fsync of the folder %s failed: %s", path, dir, strerror(errno));
    if (fd >= 0) close(fd);
    free(dir);
    return rc;
}

int atomic_write(const char *path, AtomicWriteFn fn, const void *ctx, char *err, size_t errlen) {
    size_t tlen = strlen(path) + 32;
    char *tmp = xmalloc(tlen);
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    /* O_EXCL: a link in the temporary's place is never followed; the rename then replaces PATH itself (a link at
     * PATH is replaced, its target untouched); 0666 less the umask, as every output */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) /* left by a crashed process with our pid */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        ppa_fail(err, errlen, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    FILE *f = fdopen(fd, "wb");
    const char *step = NULL;
    int e = 0;
    if (!f) step = "fdopen", e = errno, close(fd);
    else {
        errno = 0;
        if (fn(f, ctx) || fflush(f)) step = "write", e = errno;
        else if (fsync(fileno(f))) step = "fsync", e = errno;
        if (fclose(f) && !step) step = "close", e = errno;
    }
    if (!step && rename(tmp, path)) step = "rename", e = errno;
    if (step) {
        unlink(tmp);
        ppa_fail(err, errlen, "%s: %s of %s failed: %s (left unchanged)", path, step, tmp, strerror(e ? e : EIO));
        free(tmp);
        return -1;
    }
    free(tmp);
    return fsync_parent(path, err, errlen);
}

typedef struct {
    const void *bytes;
    size_t n;
} Bytes;

static int write_bytes(FILE *f, const void *ctx) {
    const Bytes *b = ctx;
    return fwrite(b->bytes, 1, b->n, f) == b->n ? 0 : -1;
}

int atomic_write_bytes(const char *path, const void *bytes, size_t n, char *err, size_t errlen) {
    Bytes b = {bytes, n};
    return atomic_write(path, write_bytes, &b, err, errlen);
}
