/* thrift.h: a reader of Apache Thrift's compact protocol, the encoding of a
 * Parquet file's footer and page headers. A cursor over bytes held in memory:
 * every read is checked against the end, every length and count against the
 * bytes left, nesting against THRIFT_MAX_DEPTH; the first problem sets
 * c->err (a fixed message) and every later read returns zero. */
#ifndef PPA_THRIFT_H
#define PPA_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#define THRIFT_MAX_DEPTH 64

/* compact protocol types (field headers and list headers) */
enum { TH_STOP = 0, TH_TRUE = 1, TH_FALSE = 2, TH_BYTE = 3, TH_I16 = 4, TH_I32 = 5, TH_I64 = 6, TH_DOUBLE = 7,
       TH_BINARY = 8, TH_LIST = 9, TH_SET = 10, TH_MAP = 11, TH_STRUCT = 12 };

typedef struct {
    const uint8_t *p, *end;
    const char *err; /* NULL while every read succeeded */
    int depth;
} ThriftCursor;

/* Next field of the struct being read: 1 with *id and *type set, 0 at its end (or after an error). last_id
 * carries the previous field id of this struct (start it at 0). A TH_TRUE/TH_FALSE field holds its value in
 * its type: read it with thrift_field_bool. */
int thrift_field(ThriftCursor *c, int *last_id, int *id, int *type);
int thrift_field_bool(int type);
int64_t thrift_i64(ThriftCursor *c); /* i16, i32 and i64 (zigzag varints) */
int32_t thrift_i32(ThriftCursor *c); /* an i32 field; a value outside int32 is an error */
double thrift_double(ThriftCursor *c);
/* A binary/string field: its bytes stay in the buffer; *len set. NULL after an error. */
const uint8_t *thrift_binary(ThriftCursor *c, size_t *len);
/* A list header: its element type and count (at most the bytes left: every element takes one byte or more). */
int64_t thrift_list(ThriftCursor *c, int *elem_type);
/* Skips a value of a type (structs, lists and maps recursively, bounded by THRIFT_MAX_DEPTH). */
void thrift_skip(ThriftCursor *c, int type);

#endif
