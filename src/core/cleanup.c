/* cleanup.c: the temporary folder an interrupted command removes (cleanup.h). */
#include "core/cleanup.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char dir_[4096];
static volatile sig_atomic_t armed_;
static pid_t main_tid_; /* the thread that writes the folder */
static struct sigaction old_[3];
static const int SIGS[3] = {SIGINT, SIGTERM, SIGHUP};

struct linux_dirent64 { /* getdents64's record (no libc wrapper in glibc 2.36's headers) */
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void on_signal(int sig) {
    /* a process signal may land on any thread (OpenMP's workers): the writing thread handles it, so that no file is
     * created in the folder after it is emptied */
    if (armed_ && syscall(SYS_gettid) != main_tid_) {
        syscall(SYS_tgkill, getpid(), main_tid_, sig);
        return;
    }
    if (armed_) {
        int fd = open(dir_, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            char buf[4096];
            long n;
            /* every entry (files only: ppa's own temporary folder), then the folder */
            while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
                for (long off = 0; off < n;) {
                    struct linux_dirent64 *e = (struct linux_dirent64 *)(buf + off);
                    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(fd, e->d_name, 0);
                    off += e->d_reclen;
                }
            close(fd);
            rmdir(dir_);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void cleanup_on_signal(const char *dir) {
    size_t n = strlen(dir);
    if (n >= sizeof dir_) return; /* too long to hold: left as it was (never the case for ppa's own names) */
    memcpy(dir_, dir, n + 1);
    main_tid_ = (pid_t)syscall(SYS_gettid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaddset(&sa.sa_mask, SIGS[i]);
    armed_ = 1;
    for (int i = 0; i < 3; i++) { /* a signal the caller ignores (a background job of a script: SIGINT) stays ignored */
        sigaction(SIGS[i], NULL, &old_[i]);
        if (old_[i].sa_handler != SIG_IGN) sigaction(SIGS[i], &sa, NULL);
    }
}

void cleanup_forget(void) {
    if (!armed_) return;
    for (int i = 0; i < 3; i++) sigaction(SIGS[i], &old_[i], NULL);
    armed_ = 0;
}
