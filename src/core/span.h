/* span.h: sorted, disjoint [lo, hi) index ranges of a flat buffer, e.g. the
 * parameters weight decay applies to (the matrices' tensors: a few spans
 * instead of a byte per parameter). */
#ifndef PPA_SPAN_H
#define PPA_SPAN_H

#include <stddef.h>
#include <stdlib.h>

typedef struct {
    size_t lo, hi;
} Span;

typedef struct {
    int n;
    Span *s; /* [n], sorted, disjoint */
} Spans;

static inline void spans_free(Spans *d) {
    free(d->s);
    d->s = NULL, d->n = 0;
}

#endif
