/* thrift.c: Thrift compact protocol reader (thrift.h). */
#include "io/thrift.h"

#include <string.h>

static int fail(ThriftCursor *c, const char *why) {
    if (!c->err) c->err = why;
    c->p = c->end;
    return 0;
}

static uint64_t varint(ThriftCursor *c) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (c->err || c->p >= c->end) return fail(c, "truncated Thrift data"), 0;
        uint8_t b = *c->p++;
        if (shift == 63 && b > 1) return fail(c, "a Thrift varint longer than 64 bits"), 0;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    return fail(c, "a Thrift varint longer than 64 bits"), 0;
}

static int64_t zigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

int64_t thrift_i64(ThriftCursor *c) { return zigzag(varint(c)); }

int32_t thrift_i32(ThriftCursor *c) {
    int64_t v = thrift_i64(c);
    if (v < INT32_MIN || v > INT32_MAX) return fail(c, "a Thrift i32 out of range"), 0;
    return (int32_t)v;
}

double thrift_double(ThriftCursor *c) {
    if (c->err || c->end - c->p < 8) return fail(c, "truncated Thrift data"), 0.0;
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--) u = u << 8 | c->p[i];
    c->p += 8;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

const uint8_t *thrift_binary(ThriftCursor *c, size_t *len) {
    uint64_t n = varint(c);
    *len = 0;
    if (c->err) return NULL;
    if (n > (uint64_t)(c->end - c->p)) return fail(c, "a Thrift string longer than the bytes left"), NULL;
    const uint8_t *s = c->p;
    c->p += n, *len = (size_t)n;
    return s;
}

int thrift_field(ThriftCursor *c, int *last_id, int *id, int *type) {
    if (c->err || c->p >= c->end) return fail(c, "truncated Thrift data");
    uint8_t b = *c->p++;
    if (b == TH_STOP) return 0;
    *type = b & 0x0f;
    int delta = b >> 4;
    if (delta) *id = *last_id + delta;
    else *id = (int)thrift_i64(c); /* a full i16 field id follows */
    if (*type > TH_STRUCT || *id < -32768 || *id > 32767) return fail(c, "a bad Thrift field header");
    *last_id = *id;
    return !c->err;
}

int thrift_field_bool(int type) { return type == TH_TRUE; }

int64_t thrift_list(ThriftCursor *c, int *elem_type) {
    if (c->err || c->p >= c->end) return fail(c, "truncated Thrift data");
    uint8_t b = *c->p++;
    *elem_type = b & 0x0f;
    uint64_t n = b >> 4;
    if (n == 15) n = varint(c);
    if (c->err) return 0;
    if (*elem_type > TH_STRUCT || *elem_type == TH_STOP) return fail(c, "a bad Thrift list header");
    if (n > (uint64_t)(c->end - c->p)) return fail(c, "a Thrift list longer than the bytes left");
    return (int64_t)n;
}

void thrift_skip(ThriftCursor *c, int type) {
    if (c->err) return;
    switch (type) {
    case TH_TRUE:
    case TH_FALSE: return; /* a field's value is in its header; a list element takes one byte (below) */
    case TH_BYTE:
        if (c->p >= c->end) fail(c, "truncated Thrift data");
        else c->p++;
        return;
    case TH_I16:
    case TH_I32:
    case TH_I64: (void)varint(c); return;
    case TH_DOUBLE: (void)thrift_double(c); return;
    case TH_BINARY: {
        size_t n;
        (void)thrift_binary(c, &n);
        return;
    }
    default: break;
    }
    if (++c->depth > THRIFT_MAX_DEPTH) {
        fail(c, "Thrift data nested too deeply");
        return;
    }
    if (type == TH_STRUCT) {
        int last = 0, id, t;
        while (thrift_field(c, &last, &id, &t)) thrift_skip(c, t);
    } else if (type == TH_LIST || type == TH_SET) {
        int et;
        int64_t n = thrift_list(c, &et);
        for (int64_t i = 0; i < n && !c->err; i++) {
            if (et == TH_TRUE || et == TH_FALSE) thrift_skip(c, TH_BYTE);
            else thrift_skip(c, et);
        }
    } else if (type == TH_MAP) {
        uint64_t n = varint(c);
        if (n > (uint64_t)(c->end - c->p)) fail(c, "a Thrift map longer than the bytes left");
        else if (n) {
            if (c->p >= c->end) fail(c, "truncated Thrift data");
            else {
                uint8_t kv = *c->p++;
                int kt = kv >> 4, vt = kv & 0x0f;
                for (uint64_t i = 0; i < n && !c->err; i++) {
                    thrift_skip(c, kt == TH_TRUE || kt == TH_FALSE ? TH_BYTE : kt);
                    thrift_skip(c, vt == TH_TRUE || vt == TH_FALSE ? TH_BYTE : vt);
                }
            }
        }
    } else {
        fail(c, "an unknown Thrift type");
    }
    c->depth--;
}
