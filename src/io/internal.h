/* internal.h: helpers shared by the safetensors reader
 * (safetensors.c) and writer (safetensors_write.c); not part of the API. */
#ifndef PPA_SAFETENSORS_INTERNAL_H
#define PPA_SAFETENSORS_INTERNAL_H

#include <stddef.h>

#define ST_SINGLE_NAME "model.safetensors"
#define ST_INDEX_NAME "model.safetensors.index.json"
#define ST_JSON_INT_MAX 9007199254740992.0 /* 2^53: cJSON keeps numbers as doubles, exact up to here */


/* "DIR/NAME", malloc'd. */
char *st_path_join(const char *dir, const char *name);

/* The folder part of PATH, malloc'd: "." without a slash, "/" for a file at the root. */
char *st_dir_of(const char *path);

/* Offset of the first byte of s [n] that is not valid UTF-8 (overlongs,
 * surrogates and NUL included: a NUL would cut a name short), or n. */
size_t st_utf8_check(const unsigned char *s, size_t n);

#endif
