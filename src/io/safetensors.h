/* safetensors.h: safetensors checkpoints (shared/spec/formats.md e.1).
 *
 * Reading: a .safetensors file, or a folder holding model.safetensors or a
 * sharded model.safetensors.index.json, is memory-mapped read-only and its
 * header validated in full (every rule of the format, every dtype's size) before
 * anything is returned. ppa loads F32, F16 and BF16 and widens them to float32;
 * the other safetensors dtypes are recognised and refused by name. Malformed
 * input never crashes or exits: -1 and a message naming the file (and tensor).
 *
 * Writing: F32 or BF16 (round to nearest even), __metadata__ {"format":"pt"},
 * header padded with spaces to a multiple of 8, every file written atomically
 * (temp file, fsync, rename, fsync of the directory).
 *
 * Not here: which tensors a model needs and their shapes (the model loader). */
#ifndef PPA_SAFETENSORS_H
#define PPA_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_NDIM 8 /* higher ranks are refused on open */

typedef enum { ST_F32, ST_F16, ST_BF16 } StDtype; /* the dtypes ppa loads */

typedef struct {
    char *name;
    StDtype dtype;
    int ndim;                   /* 0 (scalar) .. ST_MAX_NDIM */
    int64_t shape[ST_MAX_NDIM]; /* [ndim], row-major */
    int64_t numel;              /* product of shape: 1 for rank 0, 0 for an empty tensor */
    int file;                   /* index into StSet.paths of the file holding it */
    const unsigned char *data;  /* [nbytes] inside the mmap, little-endian; NOT necessarily aligned */
    size_t nbytes;              /* numel * st_dtype_size(dtype) */
} StTensor;

typedef struct {
    int n_files;
    char **paths;         /* [n_files] */
    unsigned char **maps; /* [n_files] read-only mappings (NULL for an empty mapping) */
    size_t *map_sizes;    /* [n_files] */
    int n_tensors;
    StTensor *tensors; /* [n_tensors], sorted by name (strcmp), names unique across files */
} StSet;

/* Opens PATH: a .safetensors file; a model.safetensors.index.json file; or a
 * folder holding model.safetensors (preferred, as transformers does) or
 * model.safetensors.index.json. Sharded: every shard named in weight_map is
 * opened and validated, every tensor must be in the shard the map names, and
 * every tensor of a shard must be in the map. Returns 0, or -1 with a message
 * in err naming the file (and the tensor) and *st zeroed. */
int st_open(StSet *st, const char *path, char *err, size_t errlen);

/* The tensor called NAME, or NULL (binary search). */
const StTensor *st_find(const StSet *st, const char *name);

/* Widens F16/BF16 and copies F32 into out [t->numel]; any alignment of t->data. */
void st_to_f32(const StTensor *t, float *out);

/* Unmaps and frees everything; leaves *st zeroed. Safe on a zeroed set. */
void st_close(StSet *st);

/* "F32", "F16" or "BF16", and the element size in bytes (4, 2, 2). */
const char *st_dtype_name(StDtype dtype);
size_t st_dtype_size(StDtype dtype);

/* Scalar conversions. F16 keeps signed zeros, subnormals, infinities and NaN
 * payloads. f32 -> BF16 rounds to nearest even (overflow gives inf); a NaN
 * stays a (quiet) NaN with its sign instead of rounding to inf. */
float st_f16_to_f32(uint16_t h);
float st_bf16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float x);

typedef struct {
    const char *name;     /* non-empty UTF-8, not "__metadata__", unique */
    int ndim;             /* 0 .. ST_MAX_NDIM */
    const int64_t *shape; /* [ndim], each >= 0 (may be NULL when ndim = 0) */
    const float *data;    /* [numel] (may be NULL when numel = 0) */
} StWriteTensor;

/* Writes one file: __metadata__ {"format":"pt"}, the tensors in the given
 * order, data as DTYPE (ST_F32 or ST_BF16). Atomic: writes PATH.tmp.<pid>,
 * fflush + fsync, renames it over PATH, then fsyncs the directory. On an error
 * before the rename the temp file is removed and PATH is untouched; an fsync
 * failure of the directory after the rename is still reported. Returns 0, or
 * -1 with a message in err naming PATH (and the tensor). */
int st_write(const char *path, const StWriteTensor *t, int n, StDtype dtype, char *err, size_t errlen);

/* Writes the tensors into folder DIR (created if missing, one level). Shards
 * are filled greedily in the given order with at most max_shard_bytes of data
 * each (a larger tensor gets a shard to itself): DIR/model-00001-of-0000N.
 * safetensors ..., then DIR/model.safetensors.index.json
 * {"metadata":{"total_size":bytes},"weight_map":{name:file}} last. With a
 * single shard it writes DIR/model.safetensors and no index. A stale
 * model.safetensors or index of the other layout is removed at the end, so the
 * folder opens as what was just written. Every file is atomic; a failure
 * midway can leave shards of this call next to the previous index. */
int st_write_sharded(const char *dir, const StWriteTensor *t, int n, StDtype dtype, size_t max_shard_bytes, char *err,
                     size_t errlen);

/* st_write_sharded where a tensor whose data is NULL is made as it is written,
 * by fill(ctx, index in t, out [numel]), one tensor at a time: a model larger
 * than memory in float32 can be written. */
typedef void (*StFillFn)(const void *ctx, int index, float *out);
int st_write_sharded_fill(const char *dir, const StWriteTensor *t, int n, StDtype dtype, size_t max_shard_bytes,
                          StFillFn fill, const void *ctx, char *err, size_t errlen);

#endif
