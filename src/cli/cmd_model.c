/* cmd_model.c: `ppa init` (a randomly initialised Hugging Face model folder
 * for a config.json and a tokenizer.json), `ppa inspect` (what a model
 * folder holds, checked against its config.json) and `ppa merge` (a LoRA
 * adapter folded into its base). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "core/common.h"
#include "hf/carry.h"
#include "hf/checkpoint.h"
#include "hf/merge.h"
#include "io/file.h"
#include "options/argv.h"
#include "template/template.h"

static const char INIT_HELP[] =
    "usage: ppa init --config config.json [--tokenizer tokenizer.json|DIR] --out DIR [--seed N]\n"
    "                [--save-dtype f32|bf16] [--init-std X] [--init-all]\n"
    "\n"
    "Writes a randomly initialised model folder that transformers loads: config.json,\n"
    "model.safetensors, generation_config.json (the one beside --config, byte for byte,\n"
    "or a minimal one of its bos/eos/pad ids) and the tokenizer and template files of the\n"
    "tokenizer's folder, byte for byte (tokenizer.json, tokenizer_config.json or a minimal\n"
    "one, chat_template.jinja, ...: docs/model-folders.md; without --tokenizer the folder\n"
    "serves pre-tokenized data). Initial weights: embeddings and projection matrices\n"
    "~ N(0, 0.02^2) (transformers' initializer_range; --init-std changes it), RMSNorm\n"
    "weights 1, biases 0 (--init-all perturbs those too, by the same std: for tests);\n"
    "one random stream per tensor, seeded by --seed (default 0) and the tensor's name.\n"
    "--save-dtype: the written dtype (default f32).\n"
    "--out must not exist, or be an empty folder: nothing is overwritten.\n";

static const char INSPECT_HELP[] =
    "usage: ppa inspect DIR\n"
    "\n"
    "Prints the architecture, parameter count, dtypes and tensor list of a model folder,\n"
    "its tokenizer family and chat template, and checks the tensors against config.json\n"
    "(exit status 2 when some are missing, unexpected or of the wrong shape).\n";

static const char MERGE_HELP[] =
    "usage: ppa merge --model BASE --adapter ADAPTER --out DIR [--save-dtype f32|bf16]\n"
    "\n"
    "Writes the Hugging Face folder of BASE with the PEFT LoRA adapter ADAPTER folded in: every\n"
    "target matrix becomes W + s B A (s = lora_alpha / r, or / sqrt(r) with use_rslora), each element\n"
    "summed in double and rounded once, as PEFT's merge_and_unload; the other tensors, config.json,\n"
    "generation_config.json and the tokenizer and template files are BASE's. --save-dtype: the written\n"
    "dtype (default f32). The base is read\n"
    "tensor by tensor from its mapped files, so a 7B model merges in about one tensor of memory.\n"
    "--out must not exist, or be an empty folder.\n";

static void die_err(const char *err) { ppa_die(2, "%s", err); }

/* --save-dtype, in the words of the model commands' table */
static StDtype parse_dtype(const char *s, const char *who) {
    if (!strcmp(s, "f32") || !strcmp(s, "float32")) return ST_F32;
    if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) return ST_BF16;
    ppa_die(2, "%s: --save-dtype: cannot use '%s': expected f32 or bf16", who, s);
}

int cmd_merge(int argc, char **argv) {
    enum { OPT_MODEL = 1, OPT_ADAPTER, OPT_OUT, OPT_DTYPE };
    static const struct option opts[] = {
        {"model", required_argument, NULL, OPT_MODEL}, {"adapter", required_argument, NULL, OPT_ADAPTER},
        {"out", required_argument, NULL, OPT_OUT}, {"save-dtype", required_argument, NULL, OPT_DTYPE}, {0},
    };
    const char *model = NULL, *adapter = NULL, *out = NULL, *v;
    StDtype dtype = ST_F32;
    char err[8192];
    ArgvParser p;
    argv_begin(&p, "merge", opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        switch (c) {
        case ARGV_HELP: fputs(MERGE_HELP, stdout); return 0;
        case OPT_MODEL: model = v; break;
        case OPT_ADAPTER: adapter = v; break;
        case OPT_OUT: out = v; break;
        case OPT_DTYPE: dtype = parse_dtype(v, "merge"); break;
        default: ppa_die(2, "merge: %s", err);
        }
    }
    if (!model || !adapter || !out)
        ppa_die(2, "merge: %s is required", !model ? "--model BASE" : !adapter ? "--adapter ADAPTER" : "--out DIR");
    if (file_refuse_hub_id(adapter, err, sizeof err) || adapter_merge_folder(model, adapter, out, dtype, err, sizeof err))
        ppa_die(2, "merge: %s", err); /* also when writing OUT fails: the folder writer does not tell it from a refusal */
    fprintf(stderr, "ppa merge: wrote %s (%s + %s, %s)\n", out, model, adapter, st_dtype_name(dtype));
    return 0;
}

int cmd_init(int argc, char **argv) {
    enum { OPT_CONFIG = 1, OPT_TOK, OPT_OUT, OPT_SEED, OPT_DTYPE, OPT_STD, OPT_ALL };
    static const struct option opts[] = {
        {"config", required_argument, NULL, OPT_CONFIG}, {"tokenizer", required_argument, NULL, OPT_TOK},
        {"out", required_argument, NULL, OPT_OUT}, {"seed", required_argument, NULL, OPT_SEED},
        {"save-dtype", required_argument, NULL, OPT_DTYPE}, {"init-std", required_argument, NULL, OPT_STD},
        {"init-all", no_argument, NULL, OPT_ALL}, {0},
    };
    double std = 0.02;
    int perturb_all = 0;
    const char *config = NULL, *tokenizer = NULL, *out = NULL, *v;
    long seed = 0;
    StDtype dtype = ST_F32;
    char err[2048];
    ArgvParser p;
    argv_begin(&p, "init", opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        switch (c) {
        case ARGV_HELP: fputs(INIT_HELP, stdout); return 0;
        case OPT_CONFIG: config = v; break;
        case OPT_TOK: tokenizer = v; break;
        case OPT_OUT: out = v; break;
        case OPT_SEED:
            if (argv_long("--seed", v, 0, LONG_MAX, &seed, err, sizeof err)) ppa_die(2, "init: %s", err);
            break;
        case OPT_STD:
            if (argv_double("--init-std", v, 0, 100, &std, err, sizeof err)) ppa_die(2, "init: %s", err);
            break;
        case OPT_ALL: perturb_all = 1; break;
        case OPT_DTYPE: dtype = parse_dtype(v, "init"); break;
        default: ppa_die(2, "init: %s", err);
        }
    }
    if (!config || !out) ppa_die(2, "init: %s is required", !config ? "--config config.json" : "--out DIR");
    ModelConfig cfg;
    if (model_config_load(&cfg, config, err, sizeof err)) die_err(err);
    snprintf(cfg.dtype, sizeof cfg.dtype, "%s", dtype == ST_BF16 ? "bfloat16" : "float32");
    if (tokenizer) {
        Tokenizer *tok = tokenizer_load(tokenizer, err, sizeof err);
        if (!tok) die_err(err);
        if (tokenizer_size(tok) > cfg.vocab_size)
            ppa_die(2, "init: the tokenizer has %d tokens but config.json's vocab_size (embedding rows) is %d",
                    tokenizer_size(tok), cfg.vocab_size);
        tokenizer_free(tok);
    }
    ModelTensorSpec *specs;
    int n = model_tensor_table(&cfg, &specs);
    char *gen_dir = carry_folder_of(config); /* a generation_config.json beside config.json is the model's */
    if (checkpoint_write_random_folder(out, &cfg, specs, n, (unsigned long long)seed, std, perturb_all, dtype,
                                       tokenizer, gen_dir, err, sizeof err))
        die_err(err);
    free(gen_dir);
    printf("wrote %s: %s, %lld parameters in %d tensors (%s), seed %ld\n", out, model_type_name(cfg.type),
           (long long)model_param_count(&cfg), n, st_dtype_name(dtype), seed);
    free(specs);
    return 0;
}

static void print_tokenizer(const char *dir) {
    char err[1024];
    Tokenizer *tok = tokenizer_load(dir, err, sizeof err);
    if (!tok) {
        printf("tokenizer: none (%s); pre-tokenized data only\n", err);
        return;
    }
    ChatTemplate *chat = chat_template_open(NULL, dir, tok, err, sizeof err);
    int bos = tokenizer_bos_id(tok);
    printf("tokenizer: %s BPE, %d tokens, BOS %s (%d), chat template %s%s%s\n", tokenizer_family(tok), tokenizer_size(tok),
           bos >= 0 ? tokenizer_token(tok, bos) : "none", bos, chat ? chat_template_name(chat) : "refused (",
           chat ? "" : err, chat ? "" : ")");
    chat_template_free(chat);
    tokenizer_free(tok);
}

int cmd_inspect(int argc, char **argv) {
    static const struct option opts[] = {{0}};
    const char *dir = NULL, *v;
    char err[8192], desc[4096];
    ArgvParser p;
    argv_begin(&p, "inspect", opts, NULL, argc, argv);
    p.arguments = 1;
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        if (c == ARGV_HELP) return fputs(INSPECT_HELP, stdout), 0;
        if (c == ARGV_ARGUMENT && !dir) dir = v;
        else if (c == ARGV_ARGUMENT) ppa_die(2, "inspect: unexpected argument '%s' (one model folder: ppa inspect DIR)", v);
        else ppa_die(2, "inspect: %s", err);
    }
    if (!dir) ppa_die(2, "inspect: a model folder is required (ppa inspect DIR)");
    ModelConfig cfg;
    if (model_config_load(&cfg, dir, err, sizeof err)) die_err(err);
    model_config_describe(&cfg, desc, sizeof desc);
    printf("%s\n%s\n", dir, desc);
    StSet st;
    if (st_open(&st, dir, err, sizeof err)) die_err(err);
    int counts[3] = {0};
    int64_t numel = 0;
    for (int i = 0; i < st.n_tensors; i++) counts[st.tensors[i].dtype]++, numel += st.tensors[i].numel;
    printf("checkpoint: %d tensors in %d file%s, %lld parameters; F32 %d, F16 %d, BF16 %d\n", st.n_tensors, st.n_files,
           st.n_files == 1 ? "" : "s", (long long)numel, counts[ST_F32], counts[ST_F16], counts[ST_BF16]);
    for (int i = 0; i < st.n_tensors; i++) {
        const StTensor *t = &st.tensors[i];
        printf("  %-56s %-4s [", t->name, st_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) printf(d ? ", %lld" : "%lld", (long long)t->shape[d]);
        printf("]\n");
    }
    print_tokenizer(dir);
    int problems = checkpoint_check(&cfg, &st, err, sizeof err);
    st_close(&st);
    if (problems) ppa_die(2, "%s: %d problem%s with the tensors:\n%s", dir, problems, problems == 1 ? "" : "s", err);
    printf("check: the tensors match config.json\n");
    return 0;
}
