/* test_yaml.c: the recipe YAML reader (libyaml events to a tree): the
 * constructs recipes use and those libyaml adds (anchors, flow mappings,
 * block and multi-line scalars), the typed views, a complete
 * alignment-handbook style recipe, the limits against hostile input (deep
 * nesting, alias bombs), and refusals with their line numbers. */
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

/* An acceptance: a root, or a failed check naming the test's line. */
static YamlNode *check_accepted(const char *text, int src_line) {
    YamlNode *r = parse(text);
    CHECK(r != NULL, "line %d: refused: %s", src_line, err);
    return r;
}
#define ACCEPTED(text) check_accepted(text, __LINE__)

/* A refusal: NULL root, and the message starts with t.yaml:LINE: and contains `what`. */
static void check_refused(const char *text, int line, const char *what, int src_line) {
    YamlNode *n = parse(text);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t.yaml:%d: ", line);
    CHECK(!n, "line %d: accepted a document it must refuse", src_line);
    CHECK(!strncmp(err, prefix, strlen(prefix)) && strstr(err, what),
          "line %d: message '%s', want prefix '%s' and '%s'", src_line, err, prefix, what);
    yaml_tree_free(n);
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
    yaml_tree_free(r);

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
    yaml_tree_free(r);

    /* CRLF, a byte order mark, trailing blanks, a tab inside quotes, "..." document end */
    r = parse("\xEF\xBB\xBF" "a: 1\r\nb: \"x\ty\"  \r\n   \n...\r\n# after the end, comments only\n");
    CHECK(r && r->n == 2, "CRLF + BOM: %s", err);
    if (r) {
        CHECK_STR(yaml_get(r, "a"), "1");
        CHECK_STR(yaml_get(r, "b"), "x\ty");
    }
    yaml_tree_free(r);
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
    yaml_tree_free(r);

    /* empty documents */
    const char *empties[] = {"", "\n\n", "# only a comment\n", "---\n", "--- # c\n...\n"};
    for (int i = 0; i < 5; i++) {
        r = parse(empties[i]);
        CHECK(r && r->kind == YAML_NULL && r->n == 0, "empty document %d: %s", i, err);
        yaml_tree_free(r);
    }
    /* a top-level scalar and a top-level list */
    r = parse("just text\n");
    CHECK(r && r->kind == YAML_SCALAR, "top-level scalar");
    if (r) CHECK_STR(r, "just text");
    yaml_tree_free(r);
}

static void test_quoted(void) {
    YamlNode *r = parse("a: \"tab\\there\\nnl \\\"q\\\" back\\\\slash \\/ \\x41\\u00e9\\U0001F600 # not a comment\"\n"
                        "b: 'it''s # not a comment: either'\n"
                        "c: \"with: colon, [brackets]\"   # a comment\n"
                        "d: \"\\e\\a\\b\\f\\v\\r\\0x\"\n");
    /* d holds \0: refused; check a-c on a document without it */
    CHECK(!r && strstr(err, "t.yaml:4:") && strstr(err, "\\0"), "\\0 refused on line 4: %s", err);
    yaml_tree_free(r);
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
    yaml_tree_free(r);
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
    yaml_tree_free(r);

    r = parse("- a\n- b: 1\n  c: 2\n- [x]\n");
    CHECK(r && r->kind == YAML_SEQ && r->n == 3 && r->items[1]->kind == YAML_MAP && r->items[1]->n == 2,
          "top-level list: %s", err);
    yaml_tree_free(r);
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
    yaml_tree_free(r);
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
    yaml_tree_free(r);
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
    yaml_tree_free(r);
    f = fopen(path, "w");
    fputs("a: 1\nb: *x\n", f);
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
    /* ours, on top of libyaml */
    REFUSED("a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a' (first at line 1)");
    REFUSED("x:\n  a: 1\n  a: 2\n", 3, "duplicate key 'a' (first at line 2)");
    REFUSED("a: {b: 1, c: 2, b: 3}\n", 1, "duplicate key 'b' (first at line 1)");
    REFUSED("a: 1\n\"a\": 2\n", 2, "duplicate key 'a' (first at line 1)"); /* quoting does not make it another key */
    REFUSED("a: !!str 1\n", 1, "tags are not supported");
    REFUSED("a: !!int 1\n", 1, "tags are not supported");
    REFUSED("a: ! x\n", 1, "tags are not supported");
    REFUSED("a: !!map {}\n", 1, "tags are not supported");
    REFUSED("!!seq [a]\n", 1, "tags are not supported");
    REFUSED("%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n", 3, "tags are not supported");
    REFUSED("? [a]\n: 1\n", 1, "a list as a key (complex key)");
    REFUSED("[a]: 1\n", 1, "a list as a key");
    REFUSED("b: 1\n{a: 1}: 2\n", 2, "a mapping as a key");
    REFUSED("?\n: 1\n", 1, "empty key");
    REFUSED("a: 1\n---\nb: 2\n", 2, "second document");
    REFUSED("---\n---\n", 2, "second document");
    REFUSED("a: \"x\\0y\"\n", 1, "\\0");
    REFUSED("a: 1\nb: \"\\x00\"\n", 2, "NUL character");
    /* libyaml's, with its line (and the line of what it was reading) */
    REFUSED("a:\n\tb: 1\n", 2, "found character that cannot start any token");
    REFUSED("a:\n\tb: 1\n", 2, "tab in the indentation");
    REFUSED("a:\n  \tb: 1\n", 2, "tab in the indentation");
    REFUSED("-\tx\n", 1, "cannot start any token");
    REFUSED("a: \"1\"\n \t \nb: 2\n", 2, "tab in the indentation"); /* a blank line with a tab (after a plain value
                                                                         libyaml reads it as part of the value) */
    REFUSED("a: 1\n\t\nb: 2\n", 2, "found a tab character that violates indentation");
    /* an error at the end of the text is put on its last line (libyaml says the line after) */
    REFUSED("a: \"open\nb: 1\n", 2, "found unexpected end of stream (while scanning a quoted scalar at line 1)");
    REFUSED("a: 'open\n", 1, "found unexpected end of stream");
    REFUSED("a: 'open", 1, "found unexpected end of stream");
    REFUSED("a: 1\r\nb: 'open\r\n\r\n", 3, "found unexpected end of stream (while scanning a quoted scalar at line 2)");
    REFUSED("--- a: 1\n", 1, "mapping values are not allowed in this context");
    REFUSED("%YAML 2.0\n---\na: 1\n", 1, "found incompatible YAML document");
    REFUSED("a: \"\\q\"\n", 1, "found unknown escape character");
    REFUSED("a: \"\\u12\"\n", 1, "did not find expected hexdecimal number");
    REFUSED("a: \"\\uD800\"\n", 1, "found invalid Unicode character escape code");
    REFUSED("a: b: c\n", 1, "mapping values are not allowed in this context");
    REFUSED("a: value:\n", 1, "mapping values are not allowed");
    REFUSED("b: 2\na:1\n", 2, "could not find expected ':' (while scanning a simple key at line 2)");
    REFUSED("a: 1\nplain line\n", 2, "could not find expected ':'");
    REFUSED("a:\n    b: 1\n  c: 2\n", 3, "did not find expected key (while parsing a block mapping at line 1)");
    REFUSED("a: 1\n- b\n", 2, "did not find expected key");
    REFUSED("a: 1\n...\nb: 2\n", 3, "did not find expected <document start>");
    REFUSED("a: - b\n", 1, "block sequence entries are not allowed in this context");
    REFUSED("a: [x,, y]\n", 1, "did not find expected node content");
    REFUSED("a: [x] y\n", 1, "did not find expected key");
    REFUSED("a: \"x\" y\n", 1, "did not find expected key");
    REFUSED("a: [x, - y]\n", 1, "did not find expected node content");
    REFUSED("a: [x, :y]\n", 1, "did not find expected node content");
    REFUSED("a: @x\n", 1, "found character that cannot start any token");
    REFUSED("a: 1\n: 2\n", 2, "did not find expected key");
    REFUSED("  a: 1\nb: 2\n", 2, "did not find expected <document start>");
    REFUSED("- a\nb: 1\n", 2, "did not find expected '-' indicator");
    REFUSED("a: 1\nb: \xff\n", 2, "invalid leading UTF-8 octet (0xFF)");
    REFUSED("a: 1\nb: \x01\n", 2, "control characters are not allowed (0x1)");
    REFUSED("a: 1\rb: *x\n", 2, "undefined alias"); /* a lone CR ends a line, as in YAML */
    REFUSED("\xEF\xBB\xBF\xC3\xA9: 1\n  \xC3\xA9\xC3\xA9:\n", 2, "mapping values are not allowed"); /* BOM, UTF-8 */
    /* a NUL byte, counted on its line */
    static const char nul[] = "a: 1\nb: x\0y\n";
    YamlNode *n = yaml_parse(nul, sizeof nul - 1, "t.yaml", err, sizeof err);
    CHECK(!n && !strncmp(err, "t.yaml:2: ", 10) && strstr(err, "NUL"), "NUL byte: %s", err);
    n = yaml_parse(NULL, 0, "t.yaml", err, sizeof err);
    CHECK(n && n->kind == YAML_NULL && n->line == 1, "no text at all: null");
    yaml_tree_free(n);
}

/* What the hand-written subset refused and libyaml reads, with the values. */
static void test_formerly_refused(void) {
    /* tabs that separate (not indent) */
    YamlNode *r = ACCEPTED("a:\tb\nc: x\ty\nd: b\t# c\ne: b\t\nf\tg: 1\nh: \"x\"\t\ni: [x,\ty]\n");
    if (r) {
        CHECK_STR(yaml_get(r, "a"), "b");
        CHECK_STR(yaml_get(r, "c"), "x\ty");
        CHECK_STR(yaml_get(r, "d"), "b");
        CHECK_STR(yaml_get(r, "e"), "b");
        CHECK_STR(yaml_get(r, "f\tg"), "1");
        CHECK(yaml_get(r, "h")->quoted, "quoted then a tab");
        CHECK_STR(yaml_get(r, "h"), "x");
        const YamlNode *i = yaml_get(r, "i");
        CHECK(i && i->kind == YAML_SEQ && i->n == 2, "flow list with a tab");
        if (i && i->n == 2) CHECK_STR(i->items[1], "y");
    }
    yaml_tree_free(r);
    /* flow mappings, also inside flow lists */
    r = ACCEPTED("a: 1\nb: {c: 1, d: [x, y], e}\nf: [1, {g: 2}]\nh: [x y: z]\n");
    if (r) {
        const YamlNode *b = yaml_get(r, "b");
        CHECK(b && b->kind == YAML_MAP && b->n == 3 && b->line == 2 && b->key_lines[2] == 2, "flow mapping");
        CHECK_STR(yaml_get(b, "c"), "1");
        CHECK(yaml_get(b, "d") && yaml_get(b, "d")->kind == YAML_SEQ && yaml_get(b, "d")->n == 2, "a list in it");
        CHECK(yaml_get(b, "e") && yaml_get(b, "e")->kind == YAML_NULL, "a key without a value is null");
        const YamlNode *f = yaml_get(r, "f");
        CHECK(f && f->n == 2 && f->items[1]->kind == YAML_MAP, "a flow mapping in a flow list");
        if (f && f->n == 2) CHECK_STR(yaml_get(f->items[1], "g"), "2");
        const YamlNode *h = yaml_get(r, "h");
        CHECK(h && h->n == 1 && h->items[0]->kind == YAML_MAP, "a single-pair mapping in a flow list");
        if (h && h->n == 1) CHECK_STR(yaml_get(h->items[0], "x y"), "z");
    }
    yaml_tree_free(r);
    /* multi-line plain, quoted and flow values */
    r = ACCEPTED("a: one\n  two\nb:\n  - x\n    y\nc: \"dq\n  next\"\nd: 'sq\n\n  para'\ne: [1,\n  2]\n");
    if (r) {
        CHECK_STR(yaml_get(r, "a"), "one two");
        const YamlNode *b = yaml_get(r, "b");
        CHECK(b && b->kind == YAML_SEQ && b->n == 1, "a list of one folded item");
        if (b && b->n == 1) CHECK_STR(b->items[0], "x y");
        CHECK_STR(yaml_get(r, "c"), "dq next");
        CHECK_STR(yaml_get(r, "d"), "sq\npara");
        CHECK(yaml_get(r, "c")->line == 6 && r->key_lines[4] == 11, "lines after multi-line values");
        CHECK(yaml_get(r, "e")->kind == YAML_SEQ && yaml_get(r, "e")->n == 2, "a flow list over two lines");
    }
    yaml_tree_free(r);
    r = ACCEPTED("- a\n  b\n");
    CHECK(r && r->kind == YAML_SEQ && r->n == 1, "a top-level list with a folded item");
    if (r && r->n == 1) CHECK_STR(r->items[0], "a b");
    yaml_tree_free(r);
    /* a %YAML directive, "? key" with a text key, '?' inside a flow item */
    r = ACCEPTED("%YAML 1.1\n---\n? a\n: 1\nb: [x, y?]\n");
    if (r) {
        CHECK_STR(yaml_get(r, "a"), "1");
        CHECK(r->key_lines[0] == 3, "explicit key on line 3");
        CHECK(yaml_get(r, "b")->n == 2 && !strcmp(str_of(yaml_get(r, "b")->items[1]), "y?"), "y? in a flow list");
    }
    yaml_tree_free(r);
    /* a top-level flow list, keys that read as null or booleans stay text */
    r = ACCEPTED("[1, [2, 3]]\n");
    CHECK(r && r->kind == YAML_SEQ && r->n == 2 && r->items[1]->kind == YAML_SEQ, "top-level flow list");
    yaml_tree_free(r);
    r = ACCEPTED("null: 1\n~: 2\ntrue: 3\n\"\": 4\n");
    CHECK(r && r->n == 4 && yaml_find(r, "null") == 0 && yaml_find(r, "~") == 1 && yaml_find(r, "true") == 2 &&
              yaml_find(r, "") == 3,
          "keys keep their text");
    yaml_tree_free(r);
}

static void test_block_scalars(void) {
    YamlNode *r = ACCEPTED("lit: |\n"          /* 1 */
                           "  line 1\n"        /* 2 */
                           "    indented\n"    /* 3 */
                           "  line 3\n"        /* 4 */
                           "fold: >\n"         /* 5 */
                           "  folded\n"        /* 6 */
                           "  text\n"          /* 7 */
                           "\n"                /* 8 */
                           "  para\n"          /* 9 */
                           "strip: |-\n"       /* 10 */
                           "  x\n"             /* 11 */
                           "keep: |+\n"        /* 12 */
                           "  y\n"             /* 13 */
                           "\n"                /* 14 */
                           "t: >-\n"           /* 15 */
                           "  true\n"          /* 16 */
                           "after: 1\n");      /* 17 */
    if (!r) return;
    CHECK_STR(yaml_get(r, "lit"), "line 1\n  indented\nline 3\n");
    CHECK_STR(yaml_get(r, "fold"), "folded text\npara\n");
    CHECK_STR(yaml_get(r, "strip"), "x");
    CHECK_STR(yaml_get(r, "keep"), "y\n\n");
    CHECK_STR(yaml_get(r, "t"), "true");
    int b;
    CHECK(yaml_get(r, "t")->quoted && yaml_as_bool(yaml_get(r, "t"), &b) == -1,
          "a block scalar is text, not a boolean");
    CHECK(yaml_get(r, "lit")->line == 1 && yaml_get(r, "fold")->line == 5, "a block scalar starts on its key's line");
    CHECK(r->key_lines[yaml_find(r, "after")] == 17, "lines after block scalars");
    yaml_tree_free(r);
}

static void test_anchors(void) {
    YamlNode *r = ACCEPTED("base: &b\n"        /* 1 */
                           "  beta: 0.1\n"     /* 2 */
                           "  list: [1, 2]\n"  /* 3 */
                           "run: *b\n"         /* 4 */
                           "lr: &lr 5.0e-7\n"  /* 5 */
                           "lr2: *lr\n"        /* 6 */
                           "&k key: v\n"       /* 7 */
                           "other: *k\n"       /* 8 */
                           "x: &x 1\n"         /* 9 */
                           "y: &x 2\n"         /* 10 */
                           "z: *x\n");         /* 11 */
    if (!r) return;
    const YamlNode *base = yaml_get(r, "base"), *run = yaml_get(r, "run");
    CHECK(run && run->kind == YAML_MAP && run->n == 2 && run != base, "an alias is a copy of the mapping");
    if (run && run->n == 2 && base) {
        CHECK_STR(yaml_get(run, "beta"), "0.1");
        CHECK(run->items[1] != base->items[1] && run->items[1]->n == 2 && run->keys[0] != base->keys[0],
              "a deep copy: its own list and keys");
        CHECK(run->line == base->line && run->key_lines[1] == 3, "the copy keeps the anchored text's lines");
    }
    double x = 0;
    CHECK(!yaml_as_double(yaml_get(r, "lr2"), &x) && x == 5e-7 && !yaml_get(r, "lr2")->quoted, "an aliased number");
    CHECK_STR(yaml_get(r, "other"), "key");
    CHECK_STR(yaml_get(r, "z"), "2");
    CHECK_STR(yaml_get(r, "key"), "v");
    CHECK(yaml_find(r, "key") == 4 && yaml_find(r, "other") == 5, "order kept");
    yaml_tree_free(r);
    r = ACCEPTED("a: &k name\n*k : 1\n");
    CHECK(r && r->n == 2 && !strcmp(str_of(yaml_get(r, "name")), "1") && r->key_lines[1] == 2, "an alias as a key");
    yaml_tree_free(r);
    REFUSED("a: &k a\n*k : 1\n", 2, "duplicate key 'a' (first at line 1)");
    REFUSED("a: &l [1]\n*l : 2\n", 2, "keys are plain or quoted text");
    REFUSED("a: 1\nb: *nope\n", 2, "undefined alias '*nope'");
    REFUSED("a: *later\nb: &later 1\n", 1, "undefined alias '*later'");
    REFUSED("a: &x [1, *x]\n", 1, "recursive alias");
    REFUSED("a: &x\n  b: *x\n", 2, "recursive alias");
}

/* The limits against hostile input; text built here, too long to write out. */
static char *repeat(const char *head, const char *unit, int n, const char *tail) {
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
    char *s = malloc(h + u * (size_t)n + t + 1);
    memcpy(s, head, h);
    for (int i = 0; i < n; i++) memcpy(s + h + u * (size_t)i, unit, u);
    memcpy(s + h + u * (size_t)n, tail, t + 1);
    return s;
}

static char *nested(int depth) { /* "[[[...]]]": depth lists */
    char *s = malloc(2 * (size_t)depth + 2);
    memset(s, '[', (size_t)depth);
    memset(s + depth, ']', (size_t)depth);
    strcpy(s + 2 * depth, "\n");
    return s;
}

static void test_limits(void) {
    char *s = nested(100000);
    REFUSED(s, 1, "nesting deeper than 100 levels");
    free(s);
    s = nested(100);
    YamlNode *r = ACCEPTED(s);
    int depth = 0;
    for (const YamlNode *p = r; p && p->kind == YAML_SEQ; p = p->n ? p->items[0] : NULL) depth++;
    CHECK(depth == 100, "100 levels read: %d", depth);
    yaml_tree_free(r);
    free(s);
    s = nested(101);
    REFUSED(s, 1, "nesting deeper than 100 levels");
    free(s);
    s = repeat("", "- ", 101, "x\n");
    REFUSED(s, 1, "nesting deeper than 100 levels");
    free(s);
    /* an alias may not carry a deep list deeper: 60 levels copied under 50 */
    char *a = nested(60);
    a[120] = 0;
    char *open = repeat("", "[", 50, ""), *close = repeat("", "]", 50, "");
    s = malloc(400);
    snprintf(s, 400, "a: &a %s\nb: %s*a%s\n", a, open, close);
    REFUSED(s, 2, "nesting deeper than 100 levels (through an alias)");
    free(a), free(open), free(close), free(s);
    /* the classic alias bomb: each line 10 times the one above */
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                       "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                       "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                       "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
    REFUSED(bomb, 6, "more than 1000000 nodes");
    /* one long text copied many times */
    char *big = repeat("a: &a ", "x", 1 << 20, "\nb: [");
    s = repeat(big, "*a, ", 70, "*a]\n");
    REFUSED(s, 2, "more than 64 MiB of text");
    free(big), free(s);
    /* many keys: found by hashing, a repeat still seen */
    enum { KEYS = 100000 };
    s = malloc((size_t)KEYS * 16 + 32);
    char *p = s;
    for (int i = 0; i < KEYS; i++) p += sprintf(p, "k%d: %d\n", i, i);
    r = ACCEPTED(s);
    CHECK(r && r->n == KEYS && !strcmp(str_of(yaml_get(r, "k99999")), "99999") && r->key_lines[KEYS - 1] == KEYS,
          "%d keys", KEYS);
    yaml_tree_free(r);
    sprintf(p, "k5: again\n");
    REFUSED(s, KEYS + 1, "duplicate key 'k5' (first at line 6)");
    free(s);
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
        int lines = 0; /* lines holding text, as YAML counts them: a lone CR ends a line too */
        for (size_t i = 0; i < n; i++)
            lines += buf[i] == '\n' || (buf[i] == '\r' && (i + 1 == n || buf[i + 1] != '\n'));
        if (n && buf[n - 1] != '\n' && buf[n - 1] != '\r') lines++; /* a last line without a line break */
        YamlNode *r = yaml_parse(buf, n, "t.yaml", err, sizeof err);
        if (r) {
            accepted++;
        } else {
            refused++;
            long line = strncmp(err, "t.yaml:", 7) ? -1 : strtol(err + 7, NULL, 10);
            if (line < 1 || line > lines)
                crashes_or_bad++, fprintf(stderr, "bad message: %s\n[%.*s]\n", err, (int)n, buf);
        }
        yaml_tree_free(r);
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
    test_formerly_refused();
    test_block_scalars();
    test_anchors();
    test_limits();
    test_mutations();
    return check_report("test_yaml");
}
