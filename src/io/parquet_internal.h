/* parquet_internal.h: what the Parquet reader's files share (parquet_meta.c reads the footer, parquet_page.c
 * decodes a column chunk's pages, parquet.c assembles rows); not part of the API. The subset is the one the
 * Hugging Face Hub's files use (pyarrow's and arrow-rs's writers); parquet.h lists it. */
#ifndef PPA_PARQUET_INTERNAL_H
#define PPA_PARQUET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* physical types */
enum { PQ_BOOLEAN = 0, PQ_INT32 = 1, PQ_INT64 = 2, PQ_INT96 = 3, PQ_FLOAT = 4, PQ_DOUBLE = 5, PQ_BYTE_ARRAY = 6,
       PQ_FIXED = 7 };
/* repetition */
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };
/* what a node means to the row assembly */
enum { PQ_KIND_LEAF, PQ_KIND_STRUCT, PQ_KIND_LIST };
/* how a leaf's values print */
enum { PQ_AS_NUMBER, PQ_AS_STRING, PQ_AS_BOOL, PQ_AS_FLOAT };

#define PQ_MAX_LEVEL 60      /* nesting of a column: far beyond any data set's (messages are 3 levels) */
#define PQ_MAX_NODES 100000  /* schema elements */

typedef struct {
    char *name;
    int type;       /* physical type of a leaf; -1 for a group */
    int repetition; /* PQ_REQUIRED ... */
    int kind;       /* PQ_KIND_ */
    int as;         /* PQ_AS_ (leaves) */
    int n_children, *children; /* node indices */
    int def, rep;              /* definition and repetition levels of the node itself (counted from the root) */
    int first_leaf, n_leaves;  /* the leaves under it, in column order */
    int elem;       /* a list: the node of its elements (-1: the repeated node itself is the element) */
    int repeated;   /* a list: its repeated node */
    char *path;     /* dotted path, for messages */
} PqNode;

typedef struct {
    int codec;
    int64_t num_values, start, size; /* the chunk's pages lie at [start, start + size) of the file */
} PqChunk;

typedef struct {
    int64_t num_rows;
    PqChunk *chunks; /* [n_leaves] */
} PqGroup;

typedef struct {
    PqNode *nodes; /* [n_nodes]; nodes[0] is the root */
    int n_nodes;
    int *leaves; /* [n_leaves] node index of each column */
    int n_leaves;
    PqGroup *groups;
    int n_groups;
    int64_t num_rows;
} PqMeta;

/* Reads the footer of a file of file_size bytes open on fd: schema, row groups, every chunk's range checked
 * against the file. 0, or -1 with the problem in err (without the file's name). */
int pq_meta_read(int fd, int64_t file_size, PqMeta *m, char *err, size_t errlen);
void pq_meta_free(PqMeta *m);

/* One value of a leaf: numbers, booleans, or a string as [off, off + len) of the leaf's heap */
typedef union {
    int64_t i;
    double d;
    struct {
        uint64_t off;
        uint64_t len;
    } s;
} PqValue;

/* A column chunk decoded: one (rep, def) entry per level position, a value for every entry whose def is the
 * leaf's maximum */
typedef struct {
    uint8_t *rep, *def; /* [n] */
    int64_t n;
    PqValue *val; /* [n_val] */
    int64_t n_val;
    char *heap;   /* string bytes, each followed by a NUL */
    size_t heap_len;
    int64_t at, vat; /* cursors of the row assembly */
} PqColumn;

/* Decodes the chunk of leaf `leaf` in row group g (bytes read with pread from fd); budget: decoded bytes left
 * to the row group, lowered by what this chunk takes. 0, or -1 with the problem in err. */
int pq_column_read(int fd, const PqMeta *m, int g, int leaf, PqColumn *col, size_t *budget, char *err,
                   size_t errlen);
void pq_column_free(PqColumn *col);

/* The codec names for messages */
const char *pq_codec_name(int codec);

#endif
