/* jsonl.h: JSON Lines input with line numbers, and typed getters on top of
 * cJSON that turn every malformed field into a message naming the field. */
#ifndef PPA_JSONL_H
#define PPA_JSONL_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

typedef struct {
    FILE *f;
    const char *name; /* for messages: a path, or "stdin" */
    long line;        /* 1-based number of the line last returned */
    char *buf;
    size_t cap;
} JsonlReader;

void jsonl_init(JsonlReader *r, FILE *f, const char *name);
/* Next line that is not blank; *line points into the reader's buffer.
 * Returns 1, or 0 at end of input. Read errors are fatal. */
int jsonl_next(JsonlReader *r, char **line);
void jsonl_free(JsonlReader *r);

/* Reads every non-blank line of path into a malloc'd array of items of size
 * bytes: parse fills a zeroed item and returns 0, or -1 with a message (the
 * item is then released with free_item). A bad line stops the read with
 * "path:LINE: message" in err, or, with skip_invalid, is reported on stderr
 * ("ppa: path:LINE: skipped: message"), counted in *skipped, and passed over.
 * Returns 0, or -1 with nothing allocated. */
typedef int (*JsonlParseFn)(const char *line, long lineno, void *item, void *ctx, char *msg, size_t msglen);
int jsonl_read_all(const char *path, size_t size, JsonlParseFn parse, void (*free_item)(void *), void *ctx,
                   int skip_invalid, void **items, int *n, long *skipped, char *err, size_t errlen);

/* Reads a JSON array of numbers into a growing buffer. null entries become
 * NaN when allow_null, else an error; non-finite numbers are errors.
 * Returns the length, or -1 with a message in err. */
int json_number_array(const cJSON *obj, const char *field, int allow_null, double **buf, int *cap, char *err,
                      size_t errlen);

/* Prints a double with full precision (%.17g), or null if not finite. */
void json_print_number(FILE *f, double x);

#endif
