/* text.h: strict text-to-value parsing for options and recipe values, and the
 * "did you mean" suggestion for misspelt names. One place decides what a
 * whole number, a finite number or a boolean written as text is. */
#ifndef PPA_CORE_TEXT_H
#define PPA_CORE_TEXT_H

#include <stddef.h>

/* A whole number: decimal digits, or a float form with no fraction (1.0,
 * 1e3) up to 2^53; no blanks, no hexadecimal. 0, or -1 if it is not one. */
int text_long(const char *s, long *out);
/* A finite decimal number (5e-7, .5, -1); no blanks, no hexadecimal. */
int text_double(const char *s, double *out);
/* true/yes/on/1 or false/no/off/0, in any case. */
int text_bool(const char *s, int *out);
/* The index of s in names[0..n), or -1. */
int text_choice(const char *s, const char *const *names, int n);

/* The candidate closest to a word, when close enough to be a likely typo
 * (case-insensitive optimal string alignment distance, at most a third of
 * the word's length and at least 2). Feed candidates with text_closest_add. */
typedef struct {
    const char *best;
    int dist;
} TextClosest;

void text_closest_add(TextClosest *c, const char *word, const char *candidate);

/* src (n bytes) made safe to print on a terminal, into dst (NUL-terminated, cut to fit): control bytes, DEL and
 * bytes >= 0x80 as \xHH, so that text read from a file cannot send escape sequences. */
void text_printable(char *dst, size_t dstlen, const char *src, size_t n);

#endif
