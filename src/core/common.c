/* common.c: fatal errors, checked allocation and released mappings. */
#include "core/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int die_rank = -1;
static void (*die_exit)(int status);

void ppa_die_setup(int rank, void (*exit_fn)(int status)) { die_rank = rank, die_exit = exit_fn; }

void ppa_die(int status, const char *fmt, ...) {
    /* one write: the ranks of a job share stderr, and a message written in pieces interleaves with theirs */
    char buf[8192];
    int at = die_rank >= 0 ? snprintf(buf, sizeof buf, "ppa[rank %d]: ", die_rank) : snprintf(buf, sizeof buf, "ppa: ");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + at, sizeof buf - (size_t)at - 1, fmt, ap);
    va_end(ap);
    size_t room = sizeof buf - (size_t)at - 2; /* a longer message is cut there, its newline kept */
    size_t len = (size_t)at + (n < 0 ? 0 : (size_t)n < room ? (size_t)n : room);
    buf[len++] = '\n';
    fflush(stderr);
    for (size_t done = 0; done < len;) {
        ssize_t w = write(STDERR_FILENO, buf + done, len - done);
        if (w <= 0 && errno != EINTR) break;
        if (w > 0) done += (size_t)w;
    }
    ppa_exit_fatal(status);
}

void ppa_exit_fatal(int status) {
    fflush(NULL); /* what was written before the error still reaches its file or pipe, as exit() would */
    if (die_exit) die_exit(status);
    _exit(status);
}

static _Noreturn void oom(size_t n, const char *file, int line) {
    ppa_die(1, "out of memory allocating %zu bytes at %s:%d (%s)", n, file, line, strerror(errno));
}

void *ppa_xmalloc_at(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n, file, line);
    return p;
}

void *ppa_xcalloc_at(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) oom(count * size, file, line);
    return p;
}

void *ppa_xmap_at(size_t n, const char *file, int line) {
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) oom(n, file, line);
#ifdef MADV_HUGEPAGE
    madvise(p, n ? n : 1, MADV_HUGEPAGE); /* fewer faults when released pages come back; a hint only */
#endif
    return p;
}

void ppa_unmap(void *p, size_t n) {
    if (p) munmap(p, n ? n : 1);
}

void ppa_release(void *p, size_t n, int zero) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p, lo = (a + pg - 1) / pg * pg, hi = (a + n) / pg * pg;
    if (lo >= hi || madvise((void *)lo, hi - lo, MADV_DONTNEED)) { /* nothing whole to hand back, or refused */
        if (zero) memset(p, 0, n);
        return;
    }
    if (zero) memset(p, 0, lo - a), memset((void *)hi, 0, a + n - hi);
}

void *ppa_xrealloc_at(void *p, size_t n, const char *file, int line) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n, file, line);
    return q;
}

int ppa_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

char *ppa_path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}
