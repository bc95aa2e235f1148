/* dynlib.c: code loaded only from files that only the user or root can change (dynlib.h). */
#include "core/dynlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dynlib_check(const char *path, int *fdp, char *err, size_t errlen) {
    if (fdp) *fdp = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
    struct stat st;
    const char *why = NULL;
    char buf[160];
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_uid != geteuid() && st.st_uid != 0)
        snprintf(buf, sizeof buf, "owned by another user (uid %ld)", (long)st.st_uid), why = buf;
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        snprintf(buf, sizeof buf, "writable by %s (mode %04o; chmod go-w it)", st.st_mode & S_IWOTH ? "others" : "its group",
                 (unsigned)(st.st_mode & 07777)),
            why = buf;
    if (why) {
        close(fd);
        return snprintf(err, errlen, "%s is %s: ppa loads code only from files that only you or root can change", path,
                        why),
               -1;
    }
    if (fdp)
        *fdp = fd;
    else
        close(fd);
    return 0;
}

void *dynlib_open(const char *lib, int flags, char *err, size_t errlen) {
    void *h;
    if (!strchr(lib, '/')) { /* a soname: the system loader's own search */
        dlerror();
        if (!(h = dlopen(lib, flags))) {
            const char *e = dlerror();
            snprintf(err, errlen, "%s", e ? e : "dlopen failed");
        }
        return h;
    }
    int fd;
    if (dynlib_check(lib, &fd, err, errlen)) return NULL;
    char via[64];
    snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
    dlerror();
    h = dlopen(via, flags);
    if (!h) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s: %s", lib, e ? e : "dlopen failed");
        close(fd);
    }
    /* loaded: the descriptor stays open for the process's life. The C library knows the object by the name it was
     * opened with; were the number freed, the next library loaded through it would get the same name, and dlopen
     * would hand back the first one (OpenBLAS in place of the CUDA module) */
    return h;
}
