/* parquet.h: Apache Parquet files read row by row, each row as the text of one JSON object, so that every
 * reader of JSON Lines (through io/records.h) reads Parquet with the same schema, aliases and messages.
 *
 * The subset is what the Hugging Face Hub's files use (pyarrow and arrow-rs, the writers of `datasets` and
 * the Hub's conversion): Snappy, Zstandard, gzip or uncompressed pages (Debian's libsnappy, libzstd and zlib,
 * loaded when a page needs them); data pages v1 and v2; PLAIN, dictionary, RLE (booleans),
 * DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT encodings; booleans,
 * 32/64-bit integers (signed or not), floats, doubles and strings; optional values (null), structs (objects)
 * and lists (standard 3-level, legacy 2-level and bare repeated fields), nested to any depth the schema
 * allows. Refused by name: maps, INT96, FIXED_LEN_BYTE_ARRAY, DECIMAL, LZO/LZ4/Brotli, encryption, columns
 * in other files. A double NaN is read as null (a missing value, as JSON has no NaN), an infinity is refused.
 *
 * Bounds: the footer and every chunk's range are checked against the file; a page's sizes, counts and levels
 * against the bytes that hold them and the chunk's totals; a page holds at most 1 GiB, a row group decodes to
 * at most 4 GiB, a row's JSON text is at most the JSON Lines line limit (--max-line-bytes). */
#ifndef PPA_PARQUET_H
#define PPA_PARQUET_H

#include <stddef.h>
#include <stdint.h>

typedef struct ParquetReader ParquetReader;

/* 1 when the file at path starts with Parquet's magic "PAR1" */
int parquet_is_file(const char *path);

/* Opens path and reads its footer; NULL with "PATH: why" in err. */
ParquetReader *parquet_open(const char *path, char *err, size_t errlen);
int64_t parquet_rows(const ParquetReader *r);
/* The next row's JSON text (NUL-terminated, valid until the next call), *row its 1-based number in the file.
 * 1, 0 at the end, or -1 with "PATH:row N: why" or "PATH: row group G, column C: why" in err. */
int parquet_next(ParquetReader *r, const char **json, size_t *len, int64_t *row, char *err, size_t errlen);
void parquet_close(ParquetReader *r);

#endif
