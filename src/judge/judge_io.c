/* judge_io.c: whole-file reads and line numbers for the word-list loaders. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/file.h"
#include "judge/internal.h"

char *judge_read_file(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = file_open_regular(path, err, errlen);
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *buf = xmalloc(cap);
    while ((k = fread(buf + n, 1, cap - 1 - n, f)) > 0) {
        n += k;
        if (n + 1 == cap) buf = xrealloc(buf, cap *= 2);
    }
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(e));
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

long judge_line_of(const char *buf, const char *p) {
    long line = 1;
    for (const char *q = buf; q < p; q++) line += *q == '\n';
    return line;
}
