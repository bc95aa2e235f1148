/* tfevents.c: TFRecords of tensorflow.Event messages, encoded by hand (tfevents.h). Why no protobuf library: the
 * three messages use four wire types and two dozen lines of encoder, which a test decodes with Debian's
 * python3-protobuf (tests/ref/tfevents_read.py); protobuf-c would add a code generator to the build for them. */
#include "io/tfevents.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/crc32c.h"
#include "io/file.h"

struct TfEvents {
    FILE *f;
    char *path;
};

/* a growing byte buffer */
typedef struct {
    unsigned char *p;
    size_t n, cap;
} Buf;

static void put(Buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_varint(Buf *b, uint64_t v) {
    unsigned char t[10];
    int k = 0;
    do {
        t[k++] = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(b, t, (size_t)k);
}

static void put_le(Buf *b, uint64_t v, int bytes) { /* little-endian, whatever the machine's order */
    unsigned char t[8];
    for (int i = 0; i < bytes; i++) t[i] = (unsigned char)(v >> (8 * i));
    put(b, t, (size_t)bytes);
}

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

static void put_key(Buf *b, int field, int wire) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }

static void put_bytes(Buf *b, int field, const void *p, size_t n) {
    put_key(b, field, WIRE_LEN);
    put_varint(b, n);
    put(b, p, n);
}

/* Value { tag = 1; simple_value = 2 } */
static void put_value(Buf *b, const TfScalar *s) {
    Buf v = {0};
    put_bytes(&v, 1, s->tag, strlen(s->tag));
    float x = (float)s->value;
    uint32_t u;
    memcpy(&u, &x, 4);
    put_key(&v, 2, WIRE_FIXED32); /* a oneof member: written even when 0 */
    put_le(&v, u, 4);
    put_bytes(b, 1, v.p, v.n);
    free(v.p);
}

unsigned char *tfevents_encode(long step, double wall_time, const char *file_version, const TfScalar *v, int n,
                               size_t *len) {
    Buf b = {0};
    if (wall_time != 0) { /* proto3: a field at its default is left out */
        uint64_t u;
        memcpy(&u, &wall_time, 8);
        put_key(&b, 1, WIRE_FIXED64);
        put_le(&b, u, 8);
    }
    if (step != 0) put_key(&b, 2, WIRE_VARINT), put_varint(&b, (uint64_t)(int64_t)step); /* int64: two's complement */
    if (file_version) {
        put_bytes(&b, 3, file_version, strlen(file_version));
    } else {
        Buf s = {0};
        for (int i = 0; i < n; i++) put_value(&s, &v[i]);
        put_bytes(&b, 5, s.p, s.n);
        free(s.p);
    }
    if (!b.p) b.p = xmalloc(1);
    *len = b.n;
    return b.p;
}

/* one TFRecord: length, its masked CRC, the data, its masked CRC; flushed */
static int put_record(TfEvents *t, const unsigned char *data, size_t n, char *err, size_t errlen) {
    Buf r = {0};
    put_le(&r, n, 8);
    uint32_t lc = crc32c_mask(crc32c(r.p, 8));
    put_le(&r, lc, 4);
    put(&r, data, n);
    put_le(&r, crc32c_mask(crc32c(data, n)), 4);
    int bad = fwrite(r.p, 1, r.n, t->f) != r.n || fflush(t->f) || ferror(t->f);
    free(r.p);
    if (bad) return ppa_fail(err, errlen, "%s: cannot write: %s", t->path, strerror(errno ? errno : EIO));
    return 0;
}

TfEvents *tfevents_create(const char *path, double wall_time, char *err, size_t errlen) {
    FILE *f = file_create(path, 0, err, errlen);
    if (!f) return NULL;
    TfEvents *t = xcalloc(1, sizeof *t);
    t->f = f, t->path = strdup(path);
    size_t n;
    unsigned char *d = tfevents_encode(0, wall_time, "brain.Event:2", NULL, 0, &n);
    int rc = put_record(t, d, n, err, errlen);
    free(d);
    if (rc) {
        char ignore[8];
        tfevents_close(t, ignore, sizeof ignore);
        return NULL;
    }
    return t;
}

int tfevents_write(TfEvents *t, long step, double wall_time, const TfScalar *v, int n, char *err, size_t errlen) {
    size_t len;
    unsigned char *d = tfevents_encode(step, wall_time, NULL, v, n, &len);
    int rc = put_record(t, d, len, err, errlen);
    free(d);
    return rc;
}

int tfevents_close(TfEvents *t, char *err, size_t errlen) {
    if (!t) return 0;
    int rc = fclose(t->f) ? ppa_fail(err, errlen, "%s: cannot write: %s", t->path, strerror(errno)) : 0;
    free(t->path), free(t);
    return rc;
}
