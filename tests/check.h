/* check.h: a minimal test harness: counted checks with file:line messages,
 * tolerance comparisons, and the closing "N passed, N failed" line. */
#ifndef PPA_TEST_CHECK_H
#define PPA_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (cond) {                                                                                          \
            check_passed++;                                                                                  \
        } else {                                                                                             \
            check_failed++;                                                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
        }                                                                                                    \
    } while (0)

/* |got - want| <= atol + rtol |want|; NaN matches only NaN */
static inline int check_near(double got, double want, double atol, double rtol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    return fabs(got - want) <= atol + rtol * fabs(want);
}

#define CHECK_NEAR(got, want, atol, rtol, what, ...)                                                         \
    CHECK(check_near((got), (want), (atol), (rtol)), what ": got %.17g, want %.17g (diff %.3g)",             \
          ##__VA_ARGS__, (double)(got), (double)(want), fabs((double)(got) - (double)(want)))

/* A whole file as a NUL-terminated string (malloc'd), NULL if unreadable. */
static inline char *check_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (s && (n < 0 || fread(s, 1, (size_t)n, f) != (size_t)n)) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* Prints the summary line that tests/run.sh adds up; returns the exit status. */
static inline int check_report(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
