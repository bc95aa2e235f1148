/* text.c: strict text parsing and typo suggestions (text.h). */
#include "core/text.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int text_long(const char *s, long *out) {
    if (!*s || isspace((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end != s && !*end && errno != ERANGE) return *out = v, 0;
    if (strpbrk(s, "xXpP")) return -1;
    double x = strtod(s, &end); /* 1.0, 1e3: whole numbers written as floats */
    if (end == s || *end || !isfinite(x) || x != floor(x) || fabs(x) > 9007199254740992.0) return -1;
    *out = (long)x;
    return 0;
}

int text_double(const char *s, double *out) {
    if (!*s || isspace((unsigned char)*s) || strpbrk(s, "xXpP")) return -1;
    char *end;
    double x = strtod(s, &end);
    if (end == s || *end || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

int text_bool(const char *s, int *out) {
    static const char *const YES[] = {"true", "yes", "on", "1"}, *const NO[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, YES[i])) return *out = 1, 0;
        if (!strcasecmp(s, NO[i])) return *out = 0, 0;
    }
    return -1;
}

int text_choice(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Optimal string alignment distance, case-insensitive; words up to 63 bytes. */
static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 1000;
    int d[64][64];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

void text_closest_add(TextClosest *c, const char *word, const char *cand) {
    int dist = edit_distance(word, cand);
    int len = (int)strlen(word), limit = len / 3 > 2 ? len / 3 : 2;
    if (dist <= limit && (!c->best || dist < c->dist)) c->best = cand, c->dist = dist;
}

void text_printable(char *dst, size_t dstlen, const char *src, size_t n) {
    size_t o = 0;
    if (!dstlen) return;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        int plain = c >= 0x20 && c < 0x7f;
        if (o + (plain ? 1 : 4) >= dstlen) break;
        if (plain)
            dst[o++] = (char)c;
        else
            o += (size_t)snprintf(dst + o, dstlen - o, "\\x%02x", c);
    }
    dst[o] = 0;
}
