/* test_common.c: the released mappings of core/common.h: a mapping reads as
 * zero, ppa_release with zero set leaves every byte zero (the unaligned edges
 * cleared by hand, the pages in between handed back), without it keeps what
 * lies outside the whole pages, and the pages handed back leave the resident
 * set (what the gradients and the activations rely on for the peak memory);
 * and ppa_die's ending (the leak convention of common.h): the status it was
 * given, the message, what stdout held before it written out, and no leak
 * report even for a block nothing points to any more (the sanitizer build
 * runs this test with LeakSanitizer on, which would end the process with its
 * own status 23 and a report if ppa_die went through exit()). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/common.h"

/* resident bytes of this process (the second field of /proc/self/statm, in pages) */
static long resident(void) {
    long size = 0, res = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &size, &res) != 2) res = -1;
    if (f) fclose(f);
    return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

static int all(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

static void *volatile lost; /* holds a block until it is dropped, so the compiler keeps the allocation */

/* ppa_die in a child whose stdout and stderr are a pipe each */
static void test_die(void) {
    int out[2], err[2];
    if (pipe(out) || pipe(err)) {
        CHECK(0, "pipes for the child");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1), dup2(err[1], 2);
        close(out[0]), close(err[0]);
        setvbuf(stdout, NULL, _IOFBF, 4096); /* a pipe: fully buffered, as a command's output into a file */
        printf("written before the error\n");
        lost = malloc(4096);
        memset(lost, 1, 4096);
        lost = NULL; /* the block is leaked for certain */
        ppa_die(2, "the error");
    }
    close(out[1]), close(err[1]);
    char a[256] = "", b[8192] = "";
    ssize_t na = read(out[0], a, sizeof a - 1), nb = 0, k;
    while ((k = read(err[0], b + nb, sizeof b - 1 - (size_t)nb)) > 0) nb += k;
    int status = 0;
    waitpid(pid, &status, 0);
    close(out[0]), close(err[0]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2, "ppa_die(2) ends the process with status 2 (status %d)",
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(na > 0 && !strcmp(a, "written before the error\n"), "stdout's buffered line reached the pipe");
    CHECK(nb > 0 && !strcmp(b, "ppa: the error\n"), "stderr holds the message alone (no leak report): '%s'", b);
}

int main(void) {
    test_die();
    size_t n = 64u << 20, pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p = xmap(n);
    CHECK(all(p, n, 0), "a mapping reads as zero");
    memset(p, 7, n);
    long touched = resident();
    /* an unaligned range: 1000 bytes into the first page to 1000 bytes short of the end */
    ppa_release(p + 1000, n - 2000, 1);
    long after = resident();
    CHECK(all(p + 1000, n - 2000, 0) && all(p, 1000, 7) && all(p + n - 1000, 1000, 7),
          "release with zero: the range reads zero, the bytes around it are kept");
    CHECK(touched > 0 && touched - after >= (long)(n - (1u << 20)), /* all but the edges and a little noise */
          "the whole pages left the resident set (%ld -> %ld bytes)", touched, after);
    memset(p, 9, n);
    ppa_release(p + 1000, n - 2000, 0);
    CHECK(all(p, pg, 9) && all(p + pg, n - 2 * pg, 0) && all(p + n - pg, pg, 9),
          "release without zero: the partial pages keep their bytes, the whole ones read zero");
    ppa_release(p + 10, 100, 1); /* no whole page inside */
    CHECK(all(p + 10, 100, 0) && p[9] == 9 && p[110] == 9, "a range inside one page is cleared by hand");
    ppa_unmap(p, n);
    return check_report("test_common");
}
