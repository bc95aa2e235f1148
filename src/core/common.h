/* common.h: process-level helpers shared by every module: fatal errors with
 * file:line, checked allocation, and small utilities. Library code that can
 * fail on user input returns a status instead of calling die(). */
#ifndef PPA_COMMON_H
#define PPA_COMMON_H

#include <stddef.h>
#include <stdio.h>

#define PPA_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Print "ppa: <message>" to stderr and end the process with `status`
 * (through the exit hook when one is set: a rank of an MPI job stops the
 * whole job).
 * The leak convention: a fatal error ends the process at once, output streams
 * flushed, then _exit (ppa_exit_fatal): nothing is freed on the way out and no
 * atexit handler runs, so LeakSanitizer, which checks at exit(), checks only
 * runs that end normally. An error can be reached at any depth holding
 * anything; whether a block held by a frame still on the stack is "leaked"
 * would depend on the registers and stack bytes the compiler (-march) and
 * the C library leave behind, so the sanitizer suite's answer would depend on
 * the machine. The system releases the memory of an ended process. For the
 * same reason `make asan` gives LeakSanitizer no stack or register roots
 * (Makefile, LSAN_ROOTS): at a normal end every frame has returned. */
_Noreturn void ppa_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ppa_die's ending without a message: flush every output stream, then the
 * exit hook or _exit(status) */
_Noreturn void ppa_exit_fatal(int status);
/* For src/dist: messages say "ppa[rank R]: " when rank >= 0, and ppa_die ends
 * through exit_fn (which must not return) instead of _exit. */
void ppa_die_setup(int rank, void (*exit_fn)(int status));
/* Formats a message into err [errlen] (when err is not NULL) and returns -1: the error return of the library. */
int ppa_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "dir/name", allocated (xmalloc) */
char *ppa_path_join(const char *dir, const char *name);

void *ppa_xmalloc_at(size_t n, const char *file, int line);
void *ppa_xcalloc_at(size_t count, size_t size, const char *file, int line);
void *ppa_xrealloc_at(void *p, size_t n, const char *file, int line);

/* Large buffers whose memory is resident only while in use (anonymous
 * mappings, transparent huge pages where the system allows them): zero on
 * first touch; ppa_release hands the pages of [p, p + n) that lie wholly
 * inside it back to the system (they read as zero again), and zeroes the
 * rest when zero is set (otherwise its contents are unspecified). Used for
 * the gradients (released instead of cleared, so they take no memory in the
 * forward) and the activations (released layer by layer in the backward). */
void *ppa_xmap_at(size_t n, const char *file, int line);
void ppa_unmap(void *p, size_t n);
void ppa_release(void *p, size_t n, int zero);

/* Allocation failure is fatal and names the call site. */
#define xmalloc(n) ppa_xmalloc_at((n), __FILE__, __LINE__)
#define xcalloc(c, s) ppa_xcalloc_at((c), (s), __FILE__, __LINE__)
#define xrealloc(p, n) ppa_xrealloc_at((p), (n), __FILE__, __LINE__)
#define xmap(n) ppa_xmap_at((n), __FILE__, __LINE__)

/* Test hooks (an environment variable that makes ppa misbehave on purpose, e.g. die in the middle of a save) exist
 * only in what the tests build with -DPPA_TEST_HOOKS (the test binaries and build/ppa-hooks: the Makefile's
 * HOOK_SRC); in ./ppa they are compiled out and the variables mean nothing. */
#ifdef PPA_TEST_HOOKS
#define PPA_TEST_HOOK(name) getenv(name)
#else
#define PPA_TEST_HOOK(name) ((const char *)NULL)
#endif

#endif
