/* fuzz_config_json.c: config.json parsing (hf/config.h). An accepted
 * config is then used as the engine uses it (tensor table, parameter count,
 * RoPE frequencies, summary) and written back: config.h promises that the
 * writer takes every parsed config and that loading its output gives the
 * same config. */
#include "fuzz_common.h"
#include "hf/config.h"

static char out_path[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_path(out_path, sizeof out_path, "config.json");
    return 0;
}

static void use_config(const ModelConfig *c) {
    ModelTensorSpec *specs;
    int n = model_tensor_table(c, &specs);
    FUZZ_ASSERT(n == model_tensor_count(c), "tensor table %d, count %d", n, model_tensor_count(c));
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += specs[i].numel;
    FUZZ_ASSERT(total == model_param_count(c), "parameters %lld vs %lld", (long long)total,
                (long long)model_param_count(c));
    free(specs);
    double *inv = malloc(sizeof(double) * (size_t)(c->head_dim / 2 + 1));
    rope_inv_freq(&c->rope, c->head_dim, inv);
    free(inv);
    char buf[2048], err[1024];
    (void)model_config_describe(c, buf, sizeof buf);
    (void)model_config_check_seq_len(c, 4096, err, sizeof err);
}

static void round_trip(const ModelConfig *c) {
    char err[1024];
    ModelConfig back;
    FUZZ_ASSERT(model_config_write(c, out_path, err, sizeof err) == 0, "a parsed config is not writable: %s", err);
    FUZZ_ASSERT(model_config_load(&back, out_path, err, sizeof err) == 0, "the written config does not load: %s", err);
    const char *diff = model_config_difference(c, &back);
    FUZZ_ASSERT(!diff, "the written config differs in %s", diff);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1); /* the parser takes a C string */
    memcpy(text, data, size);
    text[size] = 0;
    ModelConfig c;
    char err[1024];
    if (model_config_parse(&c, text, "config.json", err, sizeof err) == 0) {
        use_config(&c);
        round_trip(&c);
    }
    free(text);
    return 0;
}
