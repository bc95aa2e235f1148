/* jstext.h: the few JavaScript string semantics that both sentiment judges
 * depend on, on UTF-8 bytes: what the regex class \s and String.trim() count
 * as white space, String.toLowerCase(), the UTF-16 length that `.length`
 * reports, and Number.prototype.toFixed(). The JS packages we reproduce
 * (sentiment, vader-sentiment) are defined by these, not by C's ctype. */
#ifndef PPA_JSTEXT_H
#define PPA_JSTEXT_H

#include <stddef.h>

/* Length in bytes of the UTF-8 sequence at s (1 for an invalid byte, which
 * then stands for itself) and its code point in *cp (-1 when invalid). */
size_t js_utf8_next(const char *s, size_t n, long *cp);

/* 1 when cp is in JS's \s set (WhiteSpace + LineTerminator, ECMA-262). */
int js_is_space(long cp);

/* Bytes of the white-space character at s[0], or 0 when there is none. */
size_t js_space_len(const char *s, size_t n);

/* `.length` of the string: UTF-16 code units (2 per astral character; an
 * invalid byte counts as 1, as a decoder would give one U+FFFD). */
size_t js_utf16_len(const char *s, size_t n);

/* String.prototype.toLowerCase(): a new NUL-terminated string, its byte
 * length in *out_len (may be NULL). */
char *js_lower(const char *s, size_t n, size_t *out_len);

/* parseFloat(x.toFixed(digits)) for |x| < 1e21: the exact binary value
 * rounded half away from zero (toFixed picks the larger n on a tie), then
 * read back as the nearest double. digits <= 20. */
double js_to_fixed(double x, int digits);

#endif
