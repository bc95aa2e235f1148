/* checkpoint.h: Hugging Face model folders as a whole: checking that a
 * checkpoint holds exactly the tensors its config.json needs, random
 * initial weights for a config, and writing a folder transformers loads. */
#ifndef PPA_CHECKPOINT_H
#define PPA_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"
#include "hf/config.h"

/* Every tensor of the config's table present with its shape, and nothing
 * else. Returns the number of problems (0 = fine); the first ones are
 * described in err, one per line, naming the tensors. */
int checkpoint_check(const ModelConfig *c, const StSet *st, char *err, size_t errlen);
/* 1 for a tensor the checkpoint may hold that the engine does not use:
 * ArmoRM's gating network (gating.*) and reward_transform_matrix. */
int checkpoint_ignored(const ModelConfig *c, const char *name);

/* Initial weights, deterministic in seed and independent of tensor order:
 * matrices (embeddings and projections) ~ N(0, std^2) (transformers'
 * initializer_range is 0.02); RMSNorm weights 1 and biases 0, or with
 * perturb_all 1 + N(0, std^2) and N(0, std^2), so that tests see every weight
 * matter. data: [n] allocated arrays. */
void checkpoint_init(const ModelTensorSpec *specs, int n, uint64_t seed, double std, int perturb_all, float **data);

/* Writes DIR: config.json, model.safetensors (sharded above 5 GB, as
 * save_pretrained), generation_config.json (gen_dir's, byte for byte, when
 * that folder has one: the input model's sampling settings; else ppa's
 * minimal one of c's bos, eos and pad ids; gen_dir may be NULL) and the
 * tokenizer files of tokenizer_path (checkpoint_tokenizer_files; none when
 * it is NULL: a folder for pre-tokenized data).
 * Everything is written into a temporary folder that is renamed to DIR at the
 * end; an existing non-empty DIR is refused (nothing is overwritten). Returns 0
 * or -1 with err. */
int checkpoint_write_folder(const char *dir, const ModelConfig *c, const ModelTensorSpec *specs, float *const *data,
                            int n, StDtype dtype, const char *tokenizer_path, const char *gen_dir, char *err,
                            size_t errlen);

/* Writes folder DIR through fill(TMP, ctx), which writes the files into the
 * fresh temporary folder TMP; TMP is renamed to DIR when fill succeeds and
 * removed when it fails. An existing non-empty DIR is refused. 0 or -1. */
typedef int (*FolderFill)(const char *tmp, const void *ctx, char *err, size_t errlen);
int checkpoint_folder(const char *dir, FolderFill fill, const void *ctx, char *err, size_t errlen);
/* Into folder DIR: every tokenizer and template file (hf/carry.h's list)
 * of the folder tokenizer_path names, byte for byte; tokenizer_path is that
 * folder, or a tokenizer.json file (copied as tokenizer.json, the others
 * taken from beside it, where ppa's readers look for them). Where the input
 * has a tokenizer.json but no tokenizer_config.json, a minimal one is made
 * up from c's special tokens. A listed name that is there but no readable
 * regular file is an error naming it. */
int checkpoint_tokenizer_files(const char *dir, const ModelConfig *c, const char *tokenizer_path, char *err,
                               size_t errlen);

/* The folder with tensor i made by fill(ctx, i, out) as it is written, one
 * at a time (a model larger than memory in float32). */
int checkpoint_write_filled_folder(const char *dir, const ModelConfig *c, const ModelTensorSpec *specs, int n,
                                   StFillFn fill, const void *ctx, StDtype dtype, const char *tokenizer_path,
                                   const char *gen_dir, char *err, size_t errlen);

/* The same folder with checkpoint_init's weights, made and written one
 * tensor at a time: no float32 copy of the whole model (`ppa init` of a 7B
 * config needs about one tensor of memory, not 29 GB). The same bytes as
 * checkpoint_init + checkpoint_write_folder. */
int checkpoint_write_random_folder(const char *dir, const ModelConfig *c, const ModelTensorSpec *specs, int n,
                                   uint64_t seed, double std, int perturb_all, StDtype dtype, const char *tokenizer_path,
                                   const char *gen_dir, char *err, size_t errlen);

#endif
