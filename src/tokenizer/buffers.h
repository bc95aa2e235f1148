/* buffers.h: the byte-level helpers every part of the tokenizer uses, below
 * bpe.c, pretok.c, tokenizer.c and template.c: growable int and byte
 * buffers, and UTF-8 decoding and encoding of one code point (utf8proc).
 * Not here: normalization, Unicode classes, the byte-level (GPT-2) mapping. */
#ifndef PPA_TOKENIZER_BUFFERS_H
#define PPA_TOKENIZER_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

/* Start zeroed ({0}); free(v) / free(s) when done. */
typedef struct {
    int *v;
    size_t n, cap;
} IntVec;
void intvec_push(IntVec *a, int x);

typedef struct {
    char *s; /* NUL-terminated after every put */
    size_t n, cap;
} ByteBuf;
void bytebuf_put(ByteBuf *b, const void *p, size_t n);

/* UTF-8 decoding of one code point at s[0..len); returns its length (1 for an invalid byte, *cp = 0xFFFD). */
int utf8_next(const unsigned char *s, size_t len, uint32_t *cp);
size_t utf8_put(uint32_t cp, char out[4]); /* 1-4 bytes */
/* Appends s[0..len) to out as valid UTF-8: each maximal subpart of an
 * ill-formed sequence becomes one U+FFFD (Unicode 15 section 3.9, as Rust's
 * from_utf8_lossy and Python's decode(errors="replace") do). */
void utf8_put_lossy(ByteBuf *out, const char *s, size_t len);

#endif
