/* jstext.c: JavaScript string semantics on UTF-8 (see jstext.h). */
#include "judge/jstext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "core/common.h"

size_t js_utf8_next(const char *s, size_t n, long *cp) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &c);
    if (k <= 0) {
        *cp = -1;
        return 1;
    }
    *cp = c;
    return (size_t)k;
}

int js_is_space(long cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d)) return 1;
    if (cp < 0x80) return 0;
    return cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

size_t js_space_len(const char *s, size_t n) {
    if (n == 0) return 0;
    if ((unsigned char)s[0] < 0x80) return js_is_space((unsigned char)s[0]) ? 1 : 0;
    long cp;
    size_t k = js_utf8_next(s, n, &cp);
    return js_is_space(cp) ? k : 0;
}

size_t js_utf16_len(const char *s, size_t n) {
    size_t units = 0;
    for (size_t i = 0; i < n;) {
        long cp;
        i += js_utf8_next(s + i, n - i, &cp);
        units += cp >= 0x10000 ? 2 : 1;
    }
    return units;
}

/* Simple case mapping plus the one unconditional special casing rule:
 * U+0130 becomes "i" + U+0307. The conditional final-sigma rule is left out:
 * it only picks between two Greek letters, and no key of the AFINN, emoji or
 * VADER lists contains Greek, so no lookup or token count depends on it. */
char *js_lower(const char *s, size_t n, size_t *out_len) {
    char *out = xmalloc(2 * n + 1); /* no lower-case form is longer than twice its upper-case bytes */
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            char c = s[i++];
            out[o++] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
            continue;
        }
        long cp;
        size_t k = js_utf8_next(s + i, n - i, &cp);
        if (cp < 0) {
            out[o++] = s[i];
        } else if (cp == 0x130) {
            memcpy(out + o, "i\xcc\x87", 3);
            o += 3;
        } else {
            o += (size_t)utf8proc_encode_char(utf8proc_tolower((utf8proc_int32_t)cp), (utf8proc_uint8_t *)out + o);
        }
        i += k;
    }
    out[o] = 0;
    if (out_len) *out_len = o;
    return out;
}

/* Every double of magnitude >= 5e-21 (below that the result is 0 for any
 * digits <= 20) has at most 1100 decimals; glibc prints them exactly. */
double js_to_fixed(double x, int digits) {
    double a = fabs(x);
    if (!isfinite(x) || a >= 1e21 || digits < 0 || digits > 20) return x;
    char buf[1500];
    int len = snprintf(buf, sizeof buf, "%.1100f", a);
    if (len <= 0 || (size_t)len >= sizeof buf) return x;
    char *dot = strchr(buf, '.');
    char *cut = dot + 1 + digits;
    /* above the half way up; exactly half way (all later digits 0) also up,
     * since toFixed picks the larger n of two equally close ones */
    int up = *cut >= '5';
    *cut = 0;
    if (up) { /* add one unit in the last kept place, carrying leftwards */
        char *p = cut - 1;
        for (;; p--) {
            if (p < buf) { /* carry out of the leading digit: 9.99 -> 10.00 */
                memmove(buf + 1, buf, strlen(buf) + 1);
                buf[0] = '1';
                break;
            }
            if (*p == '.') continue;
            if (*p < '9') { (*p)++; break; }
            *p = '0';
        }
    }
    double r = strtod(buf, NULL);
    return x < 0 ? -r : r;
}
