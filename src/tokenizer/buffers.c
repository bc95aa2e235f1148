/* buffers.c: growable buffers and UTF-8 code points for the tokenizer (see
 * buffers.h). Defined here, once, so that bpe.c and pretok.c depend on this
 * file and not on each other. */
#include "tokenizer/buffers.h"

#include <string.h>
#include <utf8proc.h>

#include "core/common.h"

void intvec_push(IntVec *a, int x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->v = xrealloc(a->v, sizeof(int) * a->cap);
    }
    a->v[a->n++] = x;
}

void bytebuf_put(ByteBuf *b, const void *p, size_t n) {
    if (b->n + n + 1 > b->cap) {
        while (b->n + n + 1 > b->cap) b->cap = b->cap ? 2 * b->cap : 256;
        b->s = xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, p, n);
    b->n += n;
    b->s[b->n] = 0;
}

int utf8_next(const unsigned char *s, size_t len, uint32_t *cp) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(s, (utf8proc_ssize_t)len, &c);
    if (n <= 0) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = (uint32_t)c;
    return (int)n;
}

size_t utf8_put(uint32_t cp, char out[4]) {
    utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)out);
    return n > 0 ? (size_t)n : 0;
}

/* The second byte's range for a lead byte (Unicode Table 3-7), and the
 * sequence length; 0 for a byte that starts no sequence (80..C1, F5..FF). */
static int utf8_lead(unsigned char b, unsigned char *lo, unsigned char *hi) {
    *lo = 0x80, *hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) *lo = 0xA0; /* overlong below */
        if (b == 0xED) *hi = 0x9F; /* surrogates above */
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) *lo = 0x90; /* overlong */
        if (b == 0xF4) *hi = 0x8F; /* past U+10FFFF */
        return 4;
    }
    return 0;
}

void utf8_put_lossy(ByteBuf *out, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < len;) {
        unsigned char lo, hi;
        if (s[i] < 0x80) {
            bytebuf_put(out, s + i++, 1);
            continue;
        }
        int n = utf8_lead(s[i], &lo, &hi), k = 1;
        /* the longest prefix of a well-formed sequence, then one U+FFFD for it */
        while (k < n && i + (size_t)k < len && s[i + k] >= (k == 1 ? lo : 0x80) && s[i + k] <= (k == 1 ? hi : 0xBF)) k++;
        if (n && k == n) bytebuf_put(out, s + i, (size_t)n);
        else bytebuf_put(out, "\xEF\xBF\xBD", 3);
        i += (size_t)k;
    }
}
