/* fuzz_yaml_recipe.c: YAML recipes: the reader (io/yaml.h yaml_parse) on
 * the bytes, the typed views of every scalar, and the recipe layer of
 * `ppa train` (train_options_parse with --config FILE and the required
 * flags), which reads the file again and maps its keys to options. */
#include "fuzz_common.h"
#include "io/yaml.h"
#include "options/options.h"

static char recipe_path[600];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_path(recipe_path, sizeof recipe_path, "recipe.yaml");
    devnull = fopen("/dev/null", "w");
    FUZZ_ASSERT(devnull, "/dev/null");
    return 0;
}

/* every node; the recursion is as deep as the tree, which yaml.h bounds */
static void walk(const YamlNode *n, int depth) {
    FUZZ_ASSERT(depth <= YAML_MAX_DEPTH + 1, "tree deeper than YAML_MAX_DEPTH");
    int b;
    double d;
    long l;
    (void)yaml_as_bool(n, &b), (void)yaml_as_double(n, &d), (void)yaml_as_long(n, &l), (void)yaml_kind_name(n);
    if (n->kind == YAML_MAP && n->n) (void)yaml_get(n, n->keys[n->n - 1]), (void)yaml_find(n, "beta");
    if (n->kind == YAML_SEQ || n->kind == YAML_MAP)
        for (int i = 0; i < n->n; i++) walk(n->items[i], depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[2048];
    YamlNode *root = yaml_parse((const char *)data, size, "fuzz.yaml", err, sizeof err);
    if (root) walk(root, 0);
    yaml_tree_free(root);

    fuzz_write(recipe_path, data, size);
    char *argv[] = {"train", "--model", "m", "--data", "d.jsonl", "--out", "o", "--config", recipe_path, NULL};
    TrainOptions o;
    if (train_options_parse(9, argv, &o, err, sizeof err) == TRAIN_OPTIONS_OK) train_options_print_json(&o, devnull);
    train_options_free(&o);
    return 0;
}
