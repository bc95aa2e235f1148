/* yaml.h: the YAML reader for run recipes (the alignment-handbook YAML
 * files): libyaml's event parser (Debian libyaml-dev, YAML 1.1) turned into
 * a small tree. Not a general YAML library: one document of text, lists and
 * mappings.
 *
 * Accepted, as libyaml reads them: block and flow mappings and sequences,
 * plain, quoted and block scalars (| and >), multi-line scalars, comments,
 * %YAML directives, "---" / "...", CRLF (a lone CR is a line break too, as
 * in YAML), a UTF-8 byte order mark, tabs where YAML allows them (inside
 * values, after a colon). Anchors and aliases: an alias is a deep copy of
 * its anchored node, lines included (they point at the anchored text).
 *
 * Refused, each with "FILE:LINE: explanation" (LINE 1-based, as YAML counts
 * lines): whatever libyaml refuses, with its problem text, the line of what
 * it was reading, and a hint when the culprit is a tab (tabs cannot indent;
 * libyaml also refuses a blank line holding a tab after a quoted value);
 * an error at the end of the text is put on the last line (libyaml says the
 * line after it). On top of libyaml:
 *   - a key repeated in one mapping (the message names both lines);
 *   - explicit tags, even the standard !!str or !!int: a recipe has no use
 *     for them and ppa would otherwise have to give each a meaning;
 *   - keys that are lists or mappings, and empty keys;
 *   - an alias to an unknown anchor, or to a collection that contains it;
 *   - a second document; NUL bytes, and a "\0" escape in a string (strings
 *     are C strings);
 *   - nesting deeper than YAML_MAX_DEPTH collections, more than
 *     YAML_MAX_NODES nodes or YAML_MAX_TEXT bytes of text, copies from
 *     aliases included (hostile input: deep nesting, alias "bombs").
 * The tree is built without recursion over the input; the only recursive
 * functions (freeing, copying an alias) are bounded by YAML_MAX_DEPTH.
 *
 * Scalars stay text: yaml_as_* interpret them (YAML 1.1 booleans as PyYAML,
 * which reads the handbook's recipes, and numbers such as 5.0e-7 or 5e-7).
 * A plain empty, ~, null, Null or NULL value is YAML_NULL; keys always stay
 * text ("null: 1" has the key "null"). Every node remembers the line where
 * it starts; map entries also keep the line of their key.
 *
 * libyaml exports its own `yaml_free` (and calls it through the PLT), so no
 * function here may be called yaml_free, yaml_malloc, yaml_strdup or any
 * other name libyaml exports: ours would replace libyaml's. */
#ifndef PPA_YAML_H
#define PPA_YAML_H

#include <stddef.h>

#define YAML_MAX_DEPTH 100         /* nested lists and mappings */
#define YAML_MAX_NODES 1000000     /* nodes of the tree, alias copies included */
#define YAML_MAX_TEXT (64L << 20) /* bytes of scalars and keys, alias copies included */

typedef enum { YAML_NULL, YAML_SCALAR, YAML_SEQ, YAML_MAP } YamlKind;

typedef struct YamlNode {
    YamlKind kind;
    int line;               /* 1-based line where the node starts */
    char *str;              /* YAML_SCALAR: the text, quotes removed and escapes resolved; else NULL */
    int quoted;             /* YAML_SCALAR: 1 if not plain ('...', "...", | or >): never null or a boolean */
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

/* Frees a tree from its root (NULL is fine). Not yaml_free: see above. */
void yaml_tree_free(YamlNode *node);

/* The value of `key` in a mapping, or NULL (absent, or node not a mapping). */
const YamlNode *yaml_get(const YamlNode *map, const char *key);
/* The index of `key` in a mapping, or -1. */
int yaml_find(const YamlNode *map, const char *key);

/* "null", "a scalar", "a list", "a mapping": for messages. */
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
