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
