/* jsonl.h: JSON Lines input with line numbers, and typed getters on top of
 * cJSON that turn every malformed field into a message naming the field. */
#ifndef PPA_JSONL_H
#define PPA_JSONL_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* The longest line a reader takes unless told otherwise (--max-line-bytes):
 * a line that never ends (--data /dev/zero) must not grow without bound. */
#define JSONL_MAX_LINE_DEFAULT (256L << 20)

typedef struct {
    FILE *f;
    const char *name; /* for messages: a path, or "stdin" */
    long line;        /* 1-based number of the line last returned */
    size_t len;       /* bytes of the line last returned (it may hold NUL bytes: json_parse refuses them) */
    size_t max_line;  /* longer lines are fatal */
    char *buf;
    size_t cap;
} JsonlReader;

/* The line limit of the readers made from now on (0: the default). */
void jsonl_set_max_line(size_t bytes);
/* The limit in force (Parquet rows printed as JSON text are held to it too). */
size_t jsonl_max_line(void);

void jsonl_init(JsonlReader *r, FILE *f, const char *name);
/* Next line that is not blank; *line points into the reader's buffer and
 * r->len is its length. Returns 1, or 0 at end of input. Read errors and a
 * line longer than r->max_line are fatal (exit status 1 and 2). */
int jsonl_next(JsonlReader *r, char **line);
void jsonl_free(JsonlReader *r);

/* Reads a JSON array of numbers into a growing buffer. null entries become
 * NaN when allow_null, else an error; non-finite numbers are errors.
 * Returns the length, or -1 with a message in err. */
int json_number_array(const cJSON *obj, const char *field, int allow_null, double **buf, int *cap, char *err,
                      size_t errlen);

/* The longest line (and JSON file read whole as records) a reader takes now. */
size_t jsonl_max_line(void);

/* Writes s[0..n) as a JSON string: UTF-8 as is, '"' and '\\' escaped,
 * control characters (NUL too) as \n, \t, \r or \u00XX. */
void json_put_string(FILE *f, const char *s, size_t n);

/* Prints a double with full precision (%.17g), or null if not finite. */
void json_print_number(FILE *f, double x);

#endif
