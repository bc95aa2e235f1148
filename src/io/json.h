/* json.h: the one place that decides what a valid JSON text is for ppa
 * (data rows, prompts, loss lines, judge rows, config.json, tokenizer.json,
 * tokenizer_config.json, checkpoint state, cache headers). cJSON parses;
 * before it, a scan over the raw text refuses what cJSON would accept
 * silently and differently from Python's json module or transformers:
 *   - a key twice in one object (cJSON keeps both and finds the first;
 *     Python keeps the last), naming both lines;
 *   - a string holding NUL (\u0000: C strings would be cut there);
 *   - a NUL byte, or anything after the value but blanks;
 *   - nesting deeper than JSON_MAX_DEPTH.
 * Keys are compared as written (escapes not decoded). */
#ifndef PPA_IO_JSON_H
#define PPA_IO_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define JSON_MAX_DEPTH 512

/* Parses text[0..len). Returns the tree, or NULL with a message in err; for
 * a text of several lines the message starts with "line N: ". */
cJSON *json_parse(const char *text, size_t len, char *err, size_t errlen);

/* A number that must be a whole number in [lo, hi] (3.5 and 1e30 are refused).
 * Returns 0, or -1 with "FIELD must be a whole number in [lo, hi], found X". */
int json_whole(const cJSON *v, const char *field, double lo, double hi, long *out, char *err, size_t errlen);

/* An optional boolean: absent or null keeps *out; true/false set it; any
 * other value ("false" as a string, 0) is an error naming the field. */
int json_bool(const cJSON *obj, const char *field, int *out, char *err, size_t errlen);

/* A number item that prints as the shortest decimal reading back as exactly
 * v (Python's repr; cJSON's own printing may round to 15 digits and lose the
 * last bit); null for NaN and infinities, which JSON cannot hold. */
cJSON *json_number_exact(double v);
/* The text of that number (v finite) into buf: the shortest decimal reading back as v, or, when is_float, as the
 * same float (a float32 value printed as the float's own shortest decimal). */
void json_number_text(double v, int is_float, char buf[40]);

/* The JSON file at path, parsed as json_parse does; NULL with "PATH: why"
 * (missing, unreadable, max_bytes or more, not JSON). */
cJSON *json_load_file(const char *path, size_t max_bytes, char *err, size_t errlen);

#endif
