/* yaml.h: a small YAML reader for run recipes (the alignment-handbook YAML
 * files), not a general YAML library.
 *
 * Read: block mappings nested by indentation, block sequences ("- item",
 * also at the indentation of their key and with "- key: value" items), flow
 * sequences "[a, b]" (nested allowed, one line), plain scalars, single- and
 * double-quoted scalars (with YAML's escapes), comments, one "---" document
 * start, an optional "..." document end, null / ~ / empty values, CRLF line
 * ends and a UTF-8 byte order mark.
 *
 * Refused, each with "FILE:LINE: explanation" and never read differently:
 * anchors and aliases (&, *), tags (!), block scalars (| and >), flow
 * mappings ({...}), tabs outside quotes (in indentation or as separators,
 * as PyYAML refuses them; blank and comment-only lines may hold any
 * blanks), multi-line plain, quoted or flow
 * values, complex keys (?), duplicate keys, a second document, directives
 * (%YAML), NUL bytes, and text that does not fit the indentation.
 *
 * Scalars stay text: yaml_as_* interpret them (YAML 1.1 booleans as PyYAML,
 * which reads the handbook's recipes, and numbers such as 5.0e-7 or 5e-7).
 * Every node remembers the line where it starts; map entries also keep the
 * line of their key. */
#ifndef PPA_YAML_H
#define PPA_YAML_H

#include <stddef.h>

typedef enum { YAML_NULL, YAML_SCALAR, YAML_SEQ, YAML_MAP } YamlKind;

typedef struct YamlNode {
    YamlKind kind;
    int line;               /* 1-based line where the node starts */
    char *str;              /* YAML_SCALAR: the text, quotes removed and escapes resolved; else NULL */
    int quoted;             /* YAML_SCALAR: 1 if written '...' or "..." (never null, bool or number) */
    int n;                  /* YAML_SEQ: items; YAML_MAP: entries */
    struct YamlNode **items; /* [n] sequence items, or the values of a mapping */
    char **keys;            /* YAML_MAP: [n] keys, in file order */
    int *key_lines;         /* YAML_MAP: [n] line of each key */
} YamlNode;

/* Reads and parses a file. Returns the root (YAML_NULL for a file with no
 * content), or NULL with "PATH:LINE: message" (or "PATH: message") in err. */
YamlNode *yaml_load(const char *path, char *err, size_t errlen);

/* Parses text[0..len); `name` prefixes messages. Same results as yaml_load. */
YamlNode *yaml_parse(const char *text, size_t len, const char *name, char *err, size_t errlen);

void yaml_free(YamlNode *node);

/* The value of `key` in a mapping, or NULL (absent, or node not a mapping). */
const YamlNode *yaml_get(const YamlNode *map, const char *key);
/* The index of `key` in a mapping, or -1. */
int yaml_find(const YamlNode *map, const char *key);

/* "null", "a string", "a list", "a mapping": for messages. */
const char *yaml_kind_name(const YamlNode *node);

/* Typed views of a scalar. Each returns 0, or -1 if the node is not a
 * scalar of that type (the value is then left unchanged).
 *   bool:   plain true/false, yes/no, on/off in lower, Title or UPPER case
 *           (YAML 1.1, as PyYAML reads them); quoted text is not a boolean;
 *   double: a finite decimal number (5.0e-7, 5e-7, -1, .5); quoted or not;
 *   long:   an integer, or a number with no fractional part (1.0, 1e3). */
int yaml_as_bool(const YamlNode *node, int *out);
int yaml_as_double(const YamlNode *node, double *out);
int yaml_as_long(const YamlNode *node, long *out);

#endif
