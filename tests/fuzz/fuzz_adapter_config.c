/* fuzz_adapter_config.c: PEFT's adapter_config.json (hf/adapter.h). An
 * accepted config has a usable shape (r >= 1, alpha > 0, dropout in [0, 1),
 * some of the seven targets); a new adapter of that shape on a small model is
 * written as PEFT's folder and read back with the same shape and values. */
#include "fuzz_common.h"
#include "hf/adapter.h"
#include "model/lora.h"

static char in_dir[600], in_path[700], out_dir[600];
static Model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_path(in_dir, sizeof in_dir, "in");
    fuzz_path(out_dir, sizeof out_dir, "out");
    snprintf(in_path, sizeof in_path, "%s/adapter_config.json", in_dir);
    if (mkdir(in_dir, 0755)) abort();
    static const char cfg[] = "{\"model_type\": \"llama\", \"vocab_size\": 16, \"hidden_size\": 16, "
                              "\"intermediate_size\": 24, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                              "\"num_key_value_heads\": 1}";
    ModelConfig c;
    char err[1024];
    if (model_config_parse(&c, cfg, "fuzz", err, sizeof err) || !(model = model_new(&c, 1, err, sizeof err))) abort();
    return 0;
}

static void round_trip(const LoraSpec *s) {
    char err[2048];
    Model *m = model_new(model_config(model), 1, err, sizeof err);
    FUZZ_ASSERT(m, "model: %s", err);
    if (model_lora_new(m, s, 3, err, sizeof err)) { /* a rank larger than the layers: refused, fine */
        model_free(m);
        return;
    }
    remove_tree(out_dir);
    FUZZ_ASSERT(lora_save(m, out_dir, NULL, err, sizeof err) == 0, "an adapter is not writable: %s", err);
    Model *back = model_new(model_config(model), 1, err, sizeof err);
    FUZZ_ASSERT(lora_load(back, out_dir, err, sizeof err) == 0, "the written adapter does not load: %s", err);
    const LoraSpec *b = model_lora(back);
    FUZZ_ASSERT(b->r == s->r && b->alpha == s->alpha && b->dropout == s->dropout && b->rslora == s->rslora &&
                    b->targets == s->targets,
                "the written adapter's shape differs");
    FUZZ_ASSERT(model_n_params(back) == model_n_params(m) &&
                    !memcmp(model_params(back), model_params(m), sizeof(float) * model_n_params(m)),
                "the written adapter's values differ");
    model_free(back), model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write(in_path, data, size);
    LoraSpec s;
    char err[2048];
    if (adapter_read_spec(in_dir, &s, err, sizeof err)) {
        FUZZ_ASSERT(strstr(err, "adapter_config.json"), "a refusal names the file: %s", err);
        return 0;
    }
    FUZZ_ASSERT(s.r >= 1 && s.alpha > 0 && s.dropout >= 0 && s.dropout < 1, "accepted a shape that cannot run");
    FUZZ_ASSERT(s.targets && !(s.targets & ~LORA_ALL_TARGETS), "accepted targets %#x", s.targets);
    if (s.r <= 64) round_trip(&s);
    return 0;
}
