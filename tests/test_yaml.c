/* test_yaml.c: the recipe YAML reader: every supported construct, the typed
 * views, a complete alignment-handbook style recipe, and every refusal with
 * its line number. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/yaml.h"

static char err[1024];

static YamlNode *parse(const char *text) { return yaml_parse(text, strlen(text), "t.yaml", err, sizeof err); }

static const char *str_of(const YamlNode *n) { return n && n->kind == YAML_SCALAR ? n->str : "(not a scalar)"; }

#define CHECK_STR(node, want) CHECK(!strcmp(str_of(node), want), "got '%s', want '%s'", str_of(node), want)

/* A refusal: NULL root, and the message starts with t.yaml:LINE: and contains `what`. */
static void check_refused(const char *text, int line, const char *what, int src_line) {
    YamlNode *n = parse(text);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t.yaml:%d: ", line);
    CHECK(!n, "line %d: accepted a document it must refuse", src_line);
    CHECK(!strncmp(err, prefix, strlen(prefix)) && strstr(err, what),
          "line %d: message '%s', want prefix '%s' and '%s'", src_line, err, prefix, what);
    yaml_free(n);
}
#define REFUSED(text, line, what) check_refused(text, line, what, __LINE__)

static void test_mappings(void) {
    YamlNode *r = parse("# a comment\n"
                        "---\n"
                        "a: 1\n"
                        "\n"
                        "b: two words   # trailing comment\n"
                        "c:\n"
                        "  d: x\n"
                        "  e:\n"
                        "    f: deep\n"
                        "g: last\n");
    CHECK(r && r->kind == YAML_MAP && r->n == 4, "top-level mapping of 4: %s", err);
    if (!r) return;
    CHECK_STR(yaml_get(r, "a"), "1");
    CHECK_STR(yaml_get(r, "b"), "two words");
    const YamlNode *c = yaml_get(r, "c");
    CHECK(c && c->kind == YAML_MAP && c->n == 2 && c->line == 7, "nested mapping c starts on line 7");
    CHECK_STR(yaml_get(yaml_get(c, "e"), "f"), "deep");
    CHECK_STR(yaml_get(r, "g"), "last");
    CHECK(r->key_lines[0] == 3 && r->key_lines[1] == 5 && r->key_lines[2] == 6 && r->key_lines[3] == 10,
          "key lines 3 5 6 10: %d %d %d %d", r->key_lines[0], r->key_lines[1], r->key_lines[2], r->key_lines[3]);
    CHECK(yaml_get(r, "a")->line == 3, "value line");
    CHECK(!strcmp(r->keys[0], "a") && !strcmp(r->keys[3], "g"), "keys in file order");
    CHECK(yaml_get(r, "zz") == NULL && yaml_find(r, "zz") == -1 && yaml_get(yaml_get(r, "a"), "x") == NULL,
          "absent keys");
    yaml_free(r);

    /* quoted keys, a key with spaces, a value holding ':' without a space, '#' without a space before it */
    r = parse("\"quoted key\": 1\n'single': 2\nkey with spaces: 3\nurl: http://x.org/a#b\nc#d: e\n");
    CHECK(r && r->n == 5, "5 keys: %s", err);
    if (r) {
        CHECK_STR(yaml_get(r, "quoted key"), "1");
        CHECK_STR(yaml_get(r, "single"), "2");
        CHECK_STR(yaml_get(r, "key with spaces"), "3");
        CHECK_STR(yaml_get(r, "url"), "http://x.org/a#b");
        CHECK_STR(yaml_get(r, "c#d"), "e");
    }
    yaml_free(r);

    /* CRLF, a byte order mark, trailing blanks, a tab inside quotes, "..." document end */
    r = parse("\xEF\xBB\xBF" "a: 1\r\nb: \"x\ty\"  \r\n \t \n...\r\n# after the end, comments only\n");
    CHECK(r && r->n == 2, "CRLF + BOM: %s", err);
    if (r) {
        CHECK_STR(yaml_get(r, "a"), "1");
        CHECK_STR(yaml_get(r, "b"), "x\ty");
    }
    yaml_free(r);
}

static void test_nulls_and_scalars(void) {
    YamlNode *r = parse("a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: \"null\"\ng: ''\nh: -1\ni: -x\nj: 5.0e-7\n");
    CHECK(r && r->n == 10, "10 keys: %s", err);
    if (!r) return;
    const char *nulls[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        CHECK(yaml_get(r, nulls[i])->kind == YAML_NULL, "%s is null", nulls[i]);
    CHECK(yaml_get(r, "a")->line == 1, "an empty value has its key's line");
    CHECK(yaml_get(r, "f")->kind == YAML_SCALAR && yaml_get(r, "f")->quoted, "quoted null is a string");
    CHECK_STR(yaml_get(r, "f"), "null");
    CHECK(yaml_get(r, "g")->kind == YAML_SCALAR && yaml_get(r, "g")->str[0] == 0, "'' is an empty string");
    CHECK_STR(yaml_get(r, "h"), "-1");
    CHECK_STR(yaml_get(r, "i"), "-x");
    CHECK_STR(yaml_get(r, "j"), "5.0e-7");
    CHECK(strcmp(yaml_kind_name(yaml_get(r, "a")), "null") == 0 && strcmp(yaml_kind_name(r), "a mapping") == 0,
          "kind names");
    yaml_free(r);

    /* empty documents */
    const char *empties[] = {"", "\n\n", "# only a comment\n", "---\n", "--- # c\n...\n"};
    for (int i = 0; i < 5; i++) {
        r = parse(empties[i]);
        CHECK(r && r->kind == YAML_NULL && r->n == 0, "empty document %d: %s", i, err);
        yaml_free(r);
    }
    /* a top-level scalar and a top-level list */
    r = parse("just text\n");
    CHECK(r && r->kind == YAML_SCALAR, "top-level scalar");
    if (r) CHECK_STR(r, "just text");
    yaml_free(r);
}

static void test_quoted(void) {
    YamlNode *r = parse("a: \"tab\\there\\nnl \\\"q\\\" back\\\\slash \\/ \\x41\\u00e9\\U0001F600 # not a comment\"\n"
                        "b: 'it''s # not a comment: either'\n"
                        "c: \"with: colon, [brackets]\"   # a comment\n"
                        "d: \"\\e\\a\\b\\f\\v\\r\\0x\"\n");
    /* d holds \0: refused; check a-c on a document without it */
    CHECK(!r && strstr(err, "t.yaml:4:") && strstr(err, "\\0"), "\\0 refused on line 4: %s", err);
    yaml_free(r);
    r = parse("a: \"tab\\there\\nnl \\\"q\\\" back\\\\slash \\/ \\x41\\u00e9\\U0001F600 # not a comment\"\n"
              "b: 'it''s # not a comment: either'\n"
              "c: \"with: colon, [brackets]\"   # a comment\n"
              "d: \"\\e\\a\\b\\f\\v\\r\\ \\N\\_\\L\\P\"\n");
    CHECK(r && r->n == 4, "quoted values: %s", err);
    if (!r) return;
    CHECK_STR(yaml_get(r, "a"), "tab\there\nnl \"q\" back\\slash / A\xC3\xA9\xF0\x9F\x98\x80 # not a comment");
    CHECK_STR(yaml_get(r, "b"), "it's # not a comment: either");
    CHECK_STR(yaml_get(r, "c"), "with: colon, [brackets]");
    CHECK_STR(yaml_get(r, "d"), "\x1b\a\b\f\v\r \xC2\x85\xC2\xA0\xE2\x80\xA8\xE2\x80\xA9");
    CHECK(yaml_get(r, "a")->quoted && yaml_get(r, "b")->quoted, "quoted flags");
    yaml_free(r);
}

static void test_sequences(void) {
    YamlNode *r = parse("splits:\n"
                        "- train\n"
                        "- test   # at the key's indentation (the handbook style)\n"
                        "indented:\n"
                        "  - a\n"
                        "  -   b\n"
                        "  -\n"
                        "  - \"c, d\"\n"
                        "maps:\n"
                        "  - id: data/a.jsonl\n"
                        "    split: train\n"
                        "  - id: data/b.jsonl\n"
                        "nested:\n"
                        "  - - 1\n"
                        "    - 2\n"
                        "  - - 3\n"
                        "block_item:\n"
                        "  -\n"
                        "    k: v\n"
                        "flow: [a, 'b, c', \"d\", [1, 2], [], 5.0e-7, ~]\n"
                        "empty: []\n"
                        "trailing: [x, y, ]\n");
    CHECK(r && r->n == 8, "sequences: %s", err);
    if (!r) return;
    const YamlNode *s = yaml_get(r, "splits");
    CHECK(s && s->kind == YAML_SEQ && s->n == 2 && s->line == 2, "compact list");
    if (s && s->n == 2) {
        CHECK_STR(s->items[0], "train");
        CHECK_STR(s->items[1], "test");
    }
    s = yaml_get(r, "indented");
    CHECK(s && s->kind == YAML_SEQ && s->n == 4, "indented list of 4");
    if (s && s->n == 4) {
        CHECK_STR(s->items[1], "b");
        CHECK(s->items[2]->kind == YAML_NULL && s->items[2]->line == 7, "empty item is null on its line");
        CHECK_STR(s->items[3], "c, d");
    }
    s = yaml_get(r, "maps");
    CHECK(s && s->kind == YAML_SEQ && s->n == 2, "list of mappings");
    if (s && s->n == 2) {
        CHECK(s->items[0]->kind == YAML_MAP && s->items[0]->n == 2 && s->items[0]->line == 10, "first item map");
        CHECK_STR(yaml_get(s->items[0], "split"), "train");
        CHECK(s->items[0]->key_lines[1] == 11, "key line inside an item");
        CHECK_STR(yaml_get(s->items[1], "id"), "data/b.jsonl");
    }
    s = yaml_get(r, "nested");
    CHECK(s && s->n == 2 && s->items[0]->kind == YAML_SEQ && s->items[0]->n == 2 && s->items[1]->n == 1,
          "nested block lists");
    s = yaml_get(r, "block_item");
    CHECK(s && s->n == 1 && s->items[0]->kind == YAML_MAP, "'-' alone then an indented block");
    s = yaml_get(r, "flow");
    CHECK(s && s->kind == YAML_SEQ && s->n == 7, "flow list of 7");
    if (s && s->n == 7) {
        CHECK_STR(s->items[1], "b, c");
        CHECK(s->items[2]->quoted, "quoted flow item");
        CHECK(s->items[3]->kind == YAML_SEQ && s->items[3]->n == 2, "nested flow");
        CHECK(s->items[4]->kind == YAML_SEQ && s->items[4]->n == 0, "empty nested flow");
        CHECK_STR(s->items[5], "5.0e-7");
        CHECK(s->items[6]->kind == YAML_NULL, "~ in a flow list");
        CHECK(s->line == 20, "flow line");
    }
    CHECK(yaml_get(r, "empty")->kind == YAML_SEQ && yaml_get(r, "empty")->n == 0, "[]");
    CHECK(yaml_get(r, "trailing")->n == 2, "trailing comma");
    yaml_free(r);

    r = parse("- a\n- b: 1\n  c: 2\n- [x]\n");
    CHECK(r && r->kind == YAML_SEQ && r->n == 3 && r->items[1]->kind == YAML_MAP && r->items[1]->n == 2,
          "top-level list: %s", err);
    yaml_free(r);
}

static void test_typed(void) {
    YamlNode *r = parse("t1: true\nt2: True\nt3: yes\nt4: ON\nf1: false\nf2: No\nf3: off\nq: \"true\"\nn: 1\n"
                        "d1: 5.0e-7\nd2: 5e-7\nd3: .5\nd4: -1\nd5: +2.5\nd6: \"0.1\"\n"
                        "x1: 0x10\nx2: inf\nx3: .inf\nx4: 1_000\nx5: abc\nx6: nan\nx7: ''\n"
                        "l1: 32\nl2: 1.0\nl3: 1e3\nl4: 1.5\nl5: -1\n");
    CHECK(r != NULL, "typed: %s", err);
    if (!r) return;
    int b = -1;
    const char *yes[] = {"t1", "t2", "t3", "t4"}, *no[] = {"f1", "f2", "f3"};
    for (int i = 0; i < 4; i++) CHECK(!yaml_as_bool(yaml_get(r, yes[i]), &b) && b == 1, "%s is true", yes[i]);
    for (int i = 0; i < 3; i++) CHECK(!yaml_as_bool(yaml_get(r, no[i]), &b) && b == 0, "%s is false", no[i]);
    CHECK(yaml_as_bool(yaml_get(r, "q"), &b) == -1, "quoted true is not a boolean");
    CHECK(yaml_as_bool(yaml_get(r, "n"), &b) == -1, "1 is not a boolean");
    double x = 0;
    const struct {
        const char *key;
        double want;
    } nums[] = {{"d1", 5e-7}, {"d2", 5e-7}, {"d3", 0.5}, {"d4", -1}, {"d5", 2.5}, {"d6", 0.1}, {"l1", 32}};
    for (int i = 0; i < 7; i++)
        CHECK(!yaml_as_double(yaml_get(r, nums[i].key), &x) && x == nums[i].want, "%s = %g", nums[i].key, x);
    const char *bad[] = {"x1", "x2", "x3", "x4", "x5", "x6", "x7", "t1"};
    for (int i = 0; i < 8; i++) CHECK(yaml_as_double(yaml_get(r, bad[i]), &x) == -1, "%s is not a number", bad[i]);
    CHECK(yaml_as_double(r, &x) == -1 && yaml_as_double(NULL, &x) == -1, "a mapping is not a number");
    long l = 0;
    CHECK(!yaml_as_long(yaml_get(r, "l1"), &l) && l == 32, "32");
    CHECK(!yaml_as_long(yaml_get(r, "l2"), &l) && l == 1, "1.0 is a whole number");
    CHECK(!yaml_as_long(yaml_get(r, "l3"), &l) && l == 1000, "1e3");
    CHECK(!yaml_as_long(yaml_get(r, "l5"), &l) && l == -1, "-1");
    CHECK(yaml_as_long(yaml_get(r, "l4"), &l) == -1, "1.5 is not whole");
    CHECK(yaml_as_long(yaml_get(r, "x5"), &l) == -1, "abc");
    yaml_free(r);
}

/* An alignment-handbook style DPO recipe, written for this test. */
static const char RECIPE[] =
    "# Model arguments\n"                                         /* 1 */
    "model_name_or_path: ./checkpoints/qwen2-0.5b-sft\n"          /* 2 */
    "torch_dtype: bfloat16\n"                                     /* 3 */
    "use_flash_attention_2: false\n"                              /* 4 */
    "\n"                                                          /* 5 */
    "# Data training arguments\n"                                 /* 6 */
    "dataset_mixer:\n"                                            /* 7 */
    "  data/list_ultrafeedback_train.jsonl: 1.0\n"                /* 8 */
    "dataset_splits:\n"                                           /* 9 */
    "- train\n"                                                   /* 10 */
    "- test\n"                                                    /* 11 */
    "preprocessing_num_workers: 12\n"                             /* 12 */
    "\n"                                                          /* 13 */
    "# Trainer arguments\n"                                       /* 14 */
    "bf16: true\n"                                                /* 15 */
    "beta: 0.1\n"                                                 /* 16 */
    "tau: 1.0\n"                                                  /* 17 */
    "list_size: 8\n"                                              /* 18 */
    "loss_type: neural_ndcg   # the paper's method\n"             /* 19 */
    "do_eval: true\n"                                             /* 20 */
    "evaluation_strategy: steps\n"                                /* 21 */
    "eval_steps: 200\n"                                           /* 22 */
    "gradient_accumulation_steps: 32\n"                           /* 23 */
    "gradient_checkpointing: true\n"                              /* 24 */
    "gradient_checkpointing_kwargs:\n"                            /* 25 */
    "  use_reentrant: False\n"                                    /* 26 */
    "hub_model_id: qwen2-0.5b-ppa\n"                              /* 27 */
    "learning_rate: 5.0e-7\n"                                     /* 28 */
    "log_level: info\n"                                           /* 29 */
    "logging_steps: 5\n"                                          /* 30 */
    "lr_scheduler_type: cosine\n"                                 /* 31 */
    "max_length: 1024\n"                                          /* 32 */
    "max_prompt_length: 512\n"                                    /* 33 */
    "num_train_epochs: 1\n"                                       /* 34 */
    "optim: adamw_torch\n"                                        /* 35 */
    "output_dir: runs/qwen2-0.5b-ppa\n"                           /* 36 */
    "run_name: qwen2-0.5b-ppa\n"                                  /* 37 */
    "per_device_train_batch_size: 1\n"                            /* 38 */
    "per_device_eval_batch_size: 4\n"                             /* 39 */
    "push_to_hub: false\n"                                        /* 40 */
    "report_to:\n"                                                /* 41 */
    "- tensorboard\n"                                             /* 42 */
    "save_strategy: \"no\"\n"                                     /* 43 */
    "seed: 42\n"                                                  /* 44 */
    "warmup_ratio: 0.1\n";                                        /* 45 */

static void test_recipe(void) {
    YamlNode *r = parse(RECIPE);
    CHECK(r && r->kind == YAML_MAP && r->n == 35, "recipe: 35 keys (%s)", r ? "" : err);
    if (!r) return;
    CHECK_STR(yaml_get(r, "model_name_or_path"), "./checkpoints/qwen2-0.5b-sft");
    const YamlNode *mix = yaml_get(r, "dataset_mixer");
    CHECK(mix && mix->kind == YAML_MAP && mix->n == 1 && !strcmp(mix->keys[0], "data/list_ultrafeedback_train.jsonl") &&
              mix->key_lines[0] == 8,
          "dataset_mixer");
    double x;
    CHECK(mix && mix->n == 1 && !yaml_as_double(mix->items[0], &x) && x == 1.0, "mixer fraction");
    const YamlNode *splits = yaml_get(r, "dataset_splits");
    CHECK(splits && splits->kind == YAML_SEQ && splits->n == 2, "dataset_splits");
    CHECK(!yaml_as_double(yaml_get(r, "learning_rate"), &x) && x == 5e-7, "learning_rate 5.0e-7");
    CHECK(r->key_lines[yaml_find(r, "learning_rate")] == 28, "learning_rate on line 28");
    CHECK_STR(yaml_get(r, "loss_type"), "neural_ndcg");
    int b;
    CHECK(!yaml_as_bool(yaml_get(yaml_get(r, "gradient_checkpointing_kwargs"), "use_reentrant"), &b) && b == 0,
          "nested False");
    const YamlNode *ss = yaml_get(r, "save_strategy");
    CHECK(ss && ss->quoted && !strcmp(ss->str, "no") && yaml_as_bool(ss, &b) == -1, "quoted \"no\" is a string");
    CHECK(yaml_get(r, "report_to")->kind == YAML_SEQ, "report_to list");
    CHECK(r->key_lines[r->n - 1] == 45, "last key on line 45");
    yaml_free(r);
}

static void test_load(void) {
    char path[] = "/tmp/ppa_test_yaml_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    FILE *f = fdopen(fd, "w");
    fputs(RECIPE, f);
    fclose(f);
    YamlNode *r = yaml_load(path, err, sizeof err);
    CHECK(r && r->n == 35, "yaml_load: %s", err);
    yaml_free(r);
    f = fopen(path, "w");
    fputs("a: 1\nb: &x 2\n", f);
    fclose(f);
    r = yaml_load(path, err, sizeof err);
    char want[128];
    snprintf(want, sizeof want, "%s:2: ", path);
    CHECK(!r && !strncmp(err, want, strlen(want)), "file errors name the path: %s", err);
    unlink(path);
    r = yaml_load(path, err, sizeof err);
    CHECK(!r && strstr(err, path) && strstr(err, "cannot open"), "missing file: %s", err);
}

static void test_refusals(void) {
    REFUSED("a: 1\nb: &anchor 2\n", 2, "anchors");
    REFUSED("a: 1\nb: *anchor\n", 2, "aliases");
    REFUSED("a: !!str 1\n", 1, "tags");
    REFUSED("a: 1\nb: |\n  text\n", 2, "block scalars");
    REFUSED("a: >\n  folded\n", 1, "block scalars");
    REFUSED("a:\n\tb: 1\n", 2, "tab in the indentation");
    REFUSED("a:\n  \tb: 1\n", 2, "tab in the indentation");
    REFUSED("a:\tb\n", 1, "a tab character");
    REFUSED("a: x\ty\n", 1, "a tab character");
    REFUSED("a: b\t# c\n", 1, "a tab character");
    REFUSED("a: b\t\n", 1, "a tab character");
    REFUSED("a\tb: 1\n", 1, "a tab character");
    REFUSED("a: \"x\"\t\n", 1, "a tab character");
    REFUSED("a: [x,\ty]\n", 1, "a tab character");
    REFUSED("-\tx\n", 1, "a tab character");
    REFUSED("a: 1\nb: {c: 1}\n", 2, "flow mappings");
    REFUSED("a: [1, {c: 1}]\n", 1, "flow mappings");
    REFUSED("a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a' (first at line 1)");
    REFUSED("x:\n  a: 1\n  a: 2\n", 3, "duplicate key 'a'");
    REFUSED("a: one\n  two\n", 2, "multi-line");
    REFUSED("a:\n  - x\n    y\n", 3, "multi-line");
    REFUSED("- a\n  b\n", 2, "multi-line");
    REFUSED("a: \"open\nb: 1\n", 1, "not closed");
    REFUSED("a: 'open\n", 1, "not closed");
    REFUSED("a: [1,\n  2]\n", 1, "multi-line flow");
    REFUSED("a: 1\n---\nb: 2\n", 2, "second document");
    REFUSED("---\n---\n", 2, "second document");
    REFUSED("--- a: 1\n", 1, "after '---'");
    REFUSED("%YAML 1.2\n---\na: 1\n", 1, "directives");
    REFUSED("? a\n: 1\n", 1, "complex keys");
    REFUSED("a: \"\\q\"\n", 1, "unknown escape");
    REFUSED("a: \"\\u12\"\n", 1, "hexadecimal digits");
    REFUSED("a: \"\\uD800\"\n", 1, "surrogate");
    REFUSED("a: b: c\n", 1, "': ' inside the value");
    REFUSED("a: value:\n", 1, "': ' inside the value");
    REFUSED("b: 2\na:1\n", 2, "space after the colon");
    REFUSED("a: 1\nplain line\n", 2, "expected 'key: value'");
    REFUSED("a:\n    b: 1\n  c: 2\n", 3, "unexpected indentation");
    REFUSED("a: 1\n- b\n", 2, "'- ' item among the keys");
    REFUSED("a: 1\n...\nb: 2\n", 3, "document end marker '...' of line 2");
    REFUSED("a: - b\n", 1, "list cannot start on the line of its key");
    REFUSED("a: [x,, y]\n", 1, "empty item");
    REFUSED("a: [x] y\n", 1, "unexpected text after the value");
    REFUSED("a: \"x\" y\n", 1, "unexpected text after the value");
    REFUSED("a: [x y: z]\n", 1, "': ' inside the value");
    REFUSED("a: [x, - y]\n", 1, "'- ' inside a flow sequence");
    REFUSED("a: [x, y?]\n", 1, "'?' inside a plain value of a flow sequence");
    REFUSED("a: [x, :y]\n", 1, "cannot start with ':'");
    REFUSED("a: @x\n", 1, "cannot start with '@'");
    REFUSED("a: 1\n: 2\n", 2, "empty key");
    REFUSED("  a: 1\nb: 2\n", 2, "unexpected content");
    REFUSED("- a\nb: 1\n", 2, "unexpected content");
    /* a NUL byte, counted on its line */
    static const char nul[] = "a: 1\nb: x\0y\n";
    YamlNode *n = yaml_parse(nul, sizeof nul - 1, "t.yaml", err, sizeof err);
    CHECK(!n && !strncmp(err, "t.yaml:2: ", 10) && strstr(err, "NUL"), "NUL byte: %s", err);
}

/* Seeded mutations of the recipe and of a document with every construct: the
 * reader must never crash (run it under ASan), and every refusal must name
 * t.yaml and a line that exists. */
static void test_mutations(void) {
    static const char OTHER[] = "a: \"tab\\there \\u00e9\"\nb: 'it''s # x'\nc: [a, 'b, c', [1, 2], [], ~]\n"
                                "d:\n  - id: x\n    split: train\n  - - 1\n    - 2\ne:\n- f\n- g   # c\nh: -1\n"
                                "\"q k\": v\n---\n";
    static const char CH[] = " :-#'\"[],{}\t\n&*|>!?%~x0.\\\r";
    unsigned long long state = 12345;
    int crashes_or_bad = 0, accepted = 0, refused = 0;
    char buf[4096];
    for (int it = 0; it < 5000; it++) {
        const char *base = it % 2 ? OTHER : RECIPE;
        size_t n = strlen(base);
        if (n > sizeof buf - 16) n = sizeof buf - 16;
        memcpy(buf, base, n);
        int ops = 1 + (int)((state >> 33) % 4);
        for (int k = 0; k < ops; k++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t at = (size_t)((state >> 33) % (n + 1));
            int op = (int)((state >> 20) % 3);
            char c = CH[(state >> 40) % (sizeof CH - 1)];
            if (op == 0 && n > 0 && at < n) memmove(buf + at, buf + at + 1, n - at - 1), n--;   /* delete */
            else if (op == 1) memmove(buf + at + 1, buf + at, n - at), buf[at] = c, n++;      /* insert */
            else if (n > 0 && at < n) buf[at] = c;                                          /* replace */
        }
        int lines = 1;
        for (size_t i = 0; i < n; i++) lines += buf[i] == '\n';
        YamlNode *r = yaml_parse(buf, n, "t.yaml", err, sizeof err);
        if (r) {
            accepted++;
        } else {
            refused++;
            long line = strncmp(err, "t.yaml:", 7) ? -1 : strtol(err + 7, NULL, 10);
            if (line < 1 || line > lines) crashes_or_bad++, fprintf(stderr, "bad message: %s\n", err);
        }
        yaml_free(r);
    }
    CHECK(crashes_or_bad == 0, "%d refusals without a valid t.yaml:LINE", crashes_or_bad);
    CHECK(accepted > 500 && refused > 500, "the mutations exercise both outcomes: %d accepted, %d refused", accepted,
          refused);
}

int main(void) {
    test_mappings();
    test_nulls_and_scalars();
    test_quoted();
    test_sequences();
    test_typed();
    test_recipe();
    test_load();
    test_refusals();
    test_mutations();
    return check_report("test_yaml");
}
