/* fuzz_safetensors_header.c: safetensors files (io/safetensors.h st_open).
 * An input that starts with '{' is a model.safetensors.index.json beside
 * one fixed valid shard, model-00001-of-00001.safetensors, holding "a" and
 * "b"; any other input is a .safetensors file. Every tensor of an opened
 * set is widened to float32, which reads all its bytes. */
#include <sys/stat.h>

#include "fuzz_common.h"
#include "io/safetensors.h"

static char file_path[600], index_path[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char dir[600], shard[700], err[1024];
    fuzz_path(file_path, sizeof file_path, "x.safetensors");
    fuzz_path(dir, sizeof dir, "sharded");
    FUZZ_ASSERT(mkdir(dir, 0700) == 0, "mkdir %s", dir);
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    snprintf(shard, sizeof shard, "%s/model-00001-of-00001.safetensors", dir);
    const float v[6] = {1, 2, 3, 4, 5, 6};
    const int64_t sa[2] = {2, 2}, sb[1] = {2};
    StWriteTensor t[2] = {{"a", 2, sa, v}, {"b", 1, sb, v + 4}};
    FUZZ_ASSERT(st_write(shard, t, 2, ST_BF16, err, sizeof err) == 0, "the fixed shard: %s", err);
    return 0;
}

static void read_all(const StSet *st) {
    for (int i = 0; i < st->n_tensors; i++) {
        const StTensor *t = &st->tensors[i];
        FUZZ_ASSERT(t->nbytes == (size_t)t->numel * st_dtype_size(t->dtype), "%s: nbytes", t->name);
        FUZZ_ASSERT(st_find(st, t->name) == t, "%s: not found by name", t->name);
        float *out = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
        st_to_f32(t, out);
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = size && data[0] == '{' ? index_path : file_path;
    fuzz_write(path, data, size);
    StSet st;
    char err[2048];
    if (st_open(&st, path, err, sizeof err) == 0) read_all(&st);
    st_close(&st);
    return 0;
}
