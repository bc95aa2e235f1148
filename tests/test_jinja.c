/* test_jinja.c: ppa's chat-template renderer (template/jinja.h) and the
 * template of a run (template/template.h chat_template_*).
 * 1. Every template of tests/fixtures/jinja_cases.json against Python's
 *    Jinja2 in transformers' environment (tests/fixtures/jinja_golden.jsonl,
 *    written by tests/ref/jinja_ref.py): the same text, or both fail; where
 *    the case says ppa refuses, ppa's message names the construct.
 * 2. The same cases against @huggingface/jinja (cache/tokref/jinja_js.jsonl,
 *    tests/ref/jinja_ref.cjs), except where the case records how that port
 *    differs from Python.
 * 3. The real Qwen3 and Llama 3.1 templates (npm fixtures) against both
 *    references on chat_cases.json: text, and ids of the encoded rendering.
 * 4. Refusals with their line, message-text flags, named templates, the
 *    scored response cut from two renderings, --template's special tokens.
 * Without the cache, parts 2 and 3 print SKIP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "byte_tokenizer.h"
#include "check.h"
#include "io/jsonl.h"
#include "template/jinja.h"
#include "template/template.h"

static char tmpdir[64];

/* ppa's rendering: 0 and the text in *out, or -1 and the reason in err */
static int render(const char *tpl, const ChatMessage *m, int n, int gen, ByteBuf *out, ByteBuf *mask, char *err, size_t errlen) {
    static const char *const names[] = {"bos_token", "eos_token"}, *const values[] = {"<s>", "</s>"};
    memset(out, 0, sizeof *out), memset(mask, 0, sizeof *mask);
    JinjaTemplate *t = jinja_parse(tpl, strlen(tpl), err, errlen);
    if (!t) return -1;
    JinjaChat chat = {m, n, gen, names, values, 2};
    int rc = jinja_render(t, &chat, out, mask, err, errlen);
    jinja_free(t);
    return rc;
}

static int messages(const cJSON *list, ChatMessage *m, int max) {
    int n = 0;
    for (const cJSON *it = list ? list->child : NULL; it && n < max; it = it->next, n++)
        m[n] = (ChatMessage){cJSON_GetObjectItemCaseSensitive(it, "role")->valuestring,
                             cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring};
    return n;
}

static const cJSON *find_template(const cJSON *spec, const char *name) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(spec, "templates");
    for (const cJSON *t = list ? list->child : NULL; t; t = t->next)
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring, name)) return t;
    return NULL;
}

/* parts 1 and 2: one reference file against ppa; js: skip the cases that record a difference */
static void compare_cases(const cJSON *spec, const char *path, int js) {
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("SKIP synthetic templates against %s: not there (run scripts/fetch-fixtures.sh)\n", path);
        return;
    }
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    int same = 0, total = 0, refused = 0, skipped = 0;
    while (jsonl_next(&rd, &line)) {
        cJSON *j = cJSON_Parse(line);
        const char *name = cJSON_GetObjectItemCaseSensitive(j, "name")->valuestring;
        const cJSON *t = find_template(spec, name), *want = cJSON_GetObjectItemCaseSensitive(j, "text");
        const cJSON *refuses = cJSON_GetObjectItemCaseSensitive(t, "ppa_refuses");
        if (!t || (js && (cJSON_GetObjectItemCaseSensitive(t, "js_differs") || refuses))) {
            skipped += t != NULL;
            CHECK(t != NULL, "%s:%ld: template %s is not in the cases", path, rd.line, name);
            cJSON_Delete(j);
            continue;
        }
        int conv = cJSON_GetObjectItemCaseSensitive(j, "conv")->valueint;
        ChatMessage m[8];
        int n = messages(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, "conversations"), conv), m, 8);
        int gen = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt"));
        ByteBuf out, mask;
        char err[1024];
        int rc = render(cJSON_GetObjectItemCaseSensitive(t, "template")->valuestring, m, n, gen, &out, &mask, err, sizeof err);
        int ok;
        total++;
        if (refuses) { /* ppa refuses where Python renders (or fails): the construct is named */
            ok = rc && strstr(err, refuses->valuestring);
            refused += ok;
            CHECK(ok, "%s:%ld: %s: ppa refuses naming '%s': %s", path, rd.line, name, refuses->valuestring, rc ? err : out.s);
        } else if (cJSON_IsString(want)) {
            ok = !rc && out.n == strlen(want->valuestring) && !memcmp(out.s, want->valuestring, out.n);
            CHECK(ok, "%s:%ld: %s (conversation %d, generation prompt %d): ppa %s\n%s\nwant\n%s", path, rd.line, name,
                  conv, gen, rc ? "fails" : "renders", rc ? err : out.s, want->valuestring);
        } else { /* the reference fails: so must ppa */
            ok = rc != 0;
            CHECK(ok, "%s:%ld: %s: the reference fails (%s), ppa renders %s", path, rd.line, name,
                  cJSON_GetObjectItemCaseSensitive(j, "error")->valuestring, out.s);
        }
        same += ok;
        free(out.s), free(mask.s);
        cJSON_Delete(j);
    }
    printf("synthetic templates against %s: %d/%d renderings agree (%d of them refused by design)%s", js ? "@huggingface/jinja"
           : "Python Jinja2", same, total, refused, skipped ? "" : "\n");
    if (skipped) printf(", %d left out where the port differs from Python\n", skipped);
    CHECK(total >= (js ? 50 : 150), "%s: enough renderings compared (%d)", path, total);
    jsonl_free(&rd);
    fclose(f);
}

/* part 3: the real templates through chat_template_open, text and ids */
static void compare_real(const char *family, const char *ref) {
    char dir[128], path[160], err[2048];
    snprintf(dir, sizeof dir, "cache/tokenizers/%s", family);
    snprintf(path, sizeof path, "cache/tokref/%s_%s.jsonl", ref, family);
    Tokenizer *tok = access(path, R_OK) ? NULL : tokenizer_load(dir, err, sizeof err);
    FILE *f = tok ? fopen(path, "r") : NULL;
    if (!f) {
        printf("SKIP the %s chat template against %s: no %s (run scripts/fetch-fixtures.sh)\n", family, ref, path);
        tokenizer_free(tok);
        return;
    }
    ChatTemplate *c = chat_template_open(NULL, dir, tok, err, sizeof err);
    CHECK(c && !strncmp(chat_template_name(c), "jinja-", 6), "%s: its own Jinja template is read: %s", family, c ? "" : err);
    JsonlReader rd;
    jsonl_init(&rd, f, path);
    char *line;
    int texts = 0, ids_same = 0, total = 0;
    while (c && jsonl_next(&rd, &line)) {
        cJSON *j = cJSON_Parse(line);
        ChatMessage m[32];
        int n = messages(cJSON_GetObjectItemCaseSensitive(j, "messages"), m, 32);
        int gen = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt"));
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(j, "text"), *want_ids = cJSON_GetObjectItemCaseSensitive(j, "ids_nospecial");
        MaskedText out = {0};
        int rc = chat_template_render(c, m, n, gen, &out, err, sizeof err);
        int ok = !rc && cJSON_IsString(want) && !strcmp(out.text.s, want->valuestring);
        CHECK(ok, "%s:%ld: %s renders\n%s\nwant\n%s", path, rd.line, family, rc ? err : out.text.s,
              cJSON_IsString(want) ? want->valuestring : "?");
        texts += ok, total++;
        if (ok && cJSON_IsArray(want_ids)) { /* the reference encodes the whole rendering as text: no forged markers here */
            int *ids;
            long k = tokenizer_encode_masked(tok, out.text.s, NULL, out.text.n, 0, &ids, err, sizeof err);
            int same = k == cJSON_GetArraySize(want_ids);
            for (long i = 0; same && i < k; i++) same = cJSON_GetArrayItem(want_ids, (int)i)->valueint == ids[i];
            ids_same += same;
            CHECK(same, "%s:%ld: ids of the rendering", path, rd.line);
            free(ids);
        }
        masked_free(&out);
        cJSON_Delete(j);
    }
    printf("chat template of %s against %s: %d/%d renderings equal", family,
           strcmp(ref, "chat") ? "Python Jinja2" : "@huggingface/jinja", texts, total);
    printf(strcmp(ref, "chat") ? "\n" : ", %d with equal ids (@huggingface/tokenizers)\n", ids_same);
    if (!strcmp(ref, "chat")) CHECK(ids_same == total, "%s: every rendering encodes to the reference ids", family);
    if (f) jsonl_free(&rd), fclose(f);
    chat_template_free(c);
    tokenizer_free(tok);
}

/* ---- part 4 ---- */

static void expect_refusal(const char *tpl, const char *needle, const char *what) {
    ByteBuf out, mask;
    char err[1024] = "";
    ChatMessage m[1] = {{"user", "hi"}};
    int rc = render(tpl, m, 1, 1, &out, &mask, err, sizeof err);
    CHECK(rc && strstr(err, needle), "%s: refused with '%s': %s", what, needle, rc ? err : out.s);
    free(out.s), free(mask.s);
}

/* the step bound grows with the conversation (jinja.h): a loop that one message's budget cannot pay for is refused
 * with the bound; the same loop is paid for by a conversation long enough */
static void test_step_bound(void) {
    const long n = 1000 * 300; /* iterations (ranges are at most 100000: nested), each at least one step */
    char tpl[160], err[512];
    snprintf(tpl, sizeof tpl, "{%% for i in range(1000) %%}{%% for j in range(300) %%}{{ '' }}{%% endfor %%}{%% endfor %%}"
             "{{ messages[0]['content'] }}");
    ChatMessage m[1] = {{"user", "hi"}};
    ByteBuf out, mask;
    int rc = render(tpl, m, 1, 0, &out, &mask, err, sizeof err);
    CHECK(rc && strstr(err, "the template runs too long") && strstr(err, "for 1 message of 9 bytes (with the template's variables;") &&
          strstr(err, "the bound: 200000 + 20000 a message + 100 a byte)"),
          "a loop of %ld steps on a 2-byte message (7 bytes of variables) is refused with the bound: %s", n, rc ? err : "rendered");
    free(out.s), free(mask.s);
    /* loops count their iterations, empty bodies too (nested empty loops were not bounded) */
    rc = render("{% for i in range(1000) %}{% for j in range(300) %}{% endfor %}{% endfor %}x", m, 1, 0, &out, &mask, err,
                sizeof err);
    CHECK(rc && strstr(err, "the template runs too long"), "nested empty loops of 300,000 iterations: refused: %s",
          rc ? err : "rendered");
    free(out.s), free(mask.s);
    /* a message of 100 KB buys 10M steps */
    char *big = malloc(100001);
    if (!big) return;
    memset(big, 'a', 100000), big[100000] = 0;
    m[0].content = big;
    rc = render(tpl, m, 1, 0, &out, &mask, err, sizeof err);
    CHECK(!rc && out.n == 100000, "the same loop within a 100 KB conversation's bound: %s", rc ? err : "rendered");
    free(out.s), free(mask.s), free(big);
}

static void test_refusals(void) {
    expect_refusal("a\nb\n{% macro f() %}x{% endmacro %}", "line 3: {% macro %} is not supported", "a macro, named with its line");
    expect_refusal("{{ x }}\n{{ x | frobnicate }}", "line 2: the filter 'frobnicate'", "an unknown filter");
    expect_refusal("{% if x %}\n\nno end", "line 1: this block is never closed (expected {% endif %})", "an unclosed if");
    expect_refusal("{% for m in messages %}{{ m }", "unexpected '}'", "a malformed tag");
    expect_refusal("{{ 'a' ~ }}", "unexpected '}}'", "a missing operand");
    expect_refusal("{% endfor %}", "unknown tag 'endfor'", "a stray end tag");
    expect_refusal("{% break %}", "'break' outside a for loop", "break outside a loop");
    expect_refusal("{{ messages[0].content.format(1) }}", "the method 'format()'", "an unknown method");
    expect_refusal("{{ raise_exception('no system role') }}", "raised an exception: no system role", "raise_exception");
    expect_refusal("{% for i in range(100000000) %}{% endfor %}", "Range too big", "the sandbox's range limit");
    expect_refusal("{% set s = 'x' * 100000 %}{% for i in range(100000) %}{{ s }}{% endfor %}", "writes more than",
                   "an output limit");
    expect_refusal("{{ [1] }}", "printing a list", "printing a list");
    expect_refusal("{{ 'a' \x80 }}", "not valid UTF-8", "a template that is not UTF-8");
    char deep[2000] = "{{ ";
    for (int i = 0; i < 400; i++) strcat(deep, "(");
    expect_refusal(deep, "nested too deeply", "deep nesting");
}

/* the flags: a message's bytes keep 1 through filters and slices; the template's are 0 */
static void test_flags(void) {
    ChatMessage m[1] = {{"user", "  Hi <|im_end|> x  "}};
    ByteBuf out, mask;
    char err[512];
    int rc = render("<{{ m }}>{% for m in messages %}[{{ m.content | trim | upper }}|{{ m.content[2:4] ~ '!' }}|"
                    "{{ m.content | tojson }}]{% endfor %}", m, 1, 0, &out, &mask, err, sizeof err);
    const char *want = "<>[HI <|IM_END|> X|Hi!|\"  Hi <|im_end|> x  \"]";
    const char *flags = "...^^^^^^^^^^^^^^^.^^...^^^^^^^^^^^^^^^^^^^..";
    char got[128] = "";
    for (size_t i = 0; !rc && i < mask.n && i < sizeof got - 1; i++) got[i] = mask.s[i] ? '^' : '.';
    CHECK(!rc && !strcmp(out.s, want), "flags template renders: %s", rc ? err : out.s);
    CHECK(!rc && !strcmp(got, flags), "message text flagged through trim, upper, slices and tojson:\n%s\n%s\n%s", out.s, got,
          flags);
    free(out.s), free(mask.s);
    setenv("SOURCE_DATE_EPOCH", "86400", 1);
    rc = render("{{ strftime_now('%Y-%m-%d') }}", m, 1, 0, &out, &mask, err, sizeof err);
    CHECK(!rc && !strcmp(out.s, "1970-01-02"), "strftime_now follows SOURCE_DATE_EPOCH: %s", rc ? err : out.s);
    free(out.s), free(mask.s);
    /* its output whole, however long (300 x "%Y-%m-%d|": 3,300 bytes, past any fixed buffer) */
    char fmt[4000] = "{{ strftime_now('", want_long[4000] = "";
    for (int i = 0; i < 300; i++) strcat(fmt, "%Y-%m-%d|"), strcat(want_long, "1970-01-02|");
    strcat(fmt, "') }}");
    memset(&out, 0, sizeof out), memset(&mask, 0, sizeof mask);
    rc = render(fmt, m, 1, 0, &out, &mask, err, sizeof err);
    CHECK(!rc && !strcmp(out.s, want_long), "strftime_now's long output whole (%zu bytes)", rc ? (size_t)0 : strlen(out.s));
    free(out.s), free(mask.s);
    /* SOURCE_DATE_EPOCH strictly: decimal seconds from 0 to 9999-12-31, refused otherwise naming the variable */
    const char *bad[] = {"abc", "1e9", "-5", "12 ", "253402300800", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("SOURCE_DATE_EPOCH", bad[i], 1);
        memset(&out, 0, sizeof out), memset(&mask, 0, sizeof mask);
        rc = render("{{ strftime_now('%Y') }}", m, 1, 0, &out, &mask, err, sizeof err);
        CHECK(rc && strstr(err, "SOURCE_DATE_EPOCH=") && strstr(err, "expected whole seconds since 1970-01-01 UTC"),
              "SOURCE_DATE_EPOCH=%s refused naming it: %s", bad[i], rc ? err : out.s);
        free(out.s), free(mask.s);
    }
    setenv("SOURCE_DATE_EPOCH", "253402300799", 1);
    memset(&out, 0, sizeof out), memset(&mask, 0, sizeof mask);
    rc = render("{{ strftime_now('%Y-%m-%d %H:%M:%S') }}", m, 1, 0, &out, &mask, err, sizeof err);
    CHECK(!rc && !strcmp(out.s, "9999-12-31 23:59:59"), "the last second accepted: %s", rc ? err : out.s);
    free(out.s), free(mask.s);
    unsetenv("SOURCE_DATE_EPOCH");
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static Tokenizer *tok; /* open_with's: it must outlive the template */

/* a folder with the byte tokenizer (chatml's markers special) and a config */
static ChatTemplate *open_with(const char *config, const char *name, char *err, size_t errlen) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/m", tmpdir);
    mkdir(dir, 0755);
    char path[160];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_byte_tokenizer(path, "{\"id\": 256, \"content\": \"<|im_start|>\", \"special\": true},"
                               " {\"id\": 257, \"content\": \"<|im_end|>\", \"special\": true},"
                               " {\"id\": 258, \"content\": \"<think>\", \"special\": false}");
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (config) write_file(dir, "tokenizer_config.json", config);
    else unlink(path);
    tokenizer_free(tok);
    tok = tokenizer_load(dir, err, errlen);
    return tok ? chat_template_open(name, dir, tok, err, errlen) : NULL;
}

#define CHATML "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}" \
               "{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}"

static void test_named_and_probe(void) {
    char err[2048];
    ChatTemplate *c = open_with("{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"x\"}, {\"name\": \"default\","
                                " \"template\": \"" CHATML "\"}]}", NULL, err, sizeof err);
    CHECK(c && !strcmp(chat_template_eot(c), "<|im_end|>"), "the template named default is used, its end of turn found: %s",
          c ? chat_template_eot(c) : err);
    chat_template_free(c);
    c = open_with("{\"chat_template\": [{\"name\": \"a\", \"template\": \"x\"}, {\"name\": \"b\", \"template\": \"y\"}]}",
                  NULL, err, sizeof err);
    CHECK(!c && strstr(err, "tokenizer_config.json: chat_template lists 2 templates (\"a\", \"b\") and none is named \"default\""),
          "several named templates without a default are refused: %s", c ? "(opened)" : err);
    chat_template_free(c);
    c = open_with("{\"chat_template\": \"{% for m in messages %}{{ m.content }}{% endfor %}\\n{{ m | sort }}\"}", NULL, err,
                  sizeof err);
    CHECK(!c && strstr(err, "tokenizer_config.json: chat_template line 2: the filter 'sort' is not supported"),
          "a template using what ppa lacks is refused at load with the file and line: %s", c ? "(opened)" : err);
    chat_template_free(c);
    /* no generation prompt: the assistant header would be scored */
    c = open_with("{\"chat_template\": \"{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n"
                  "{% endfor %}\"}", NULL, err, sizeof err);
    CHECK(!c && strstr(err, "writes the special token <|im_start|> between the generation prompt and the answer"),
          "a template without a generation prompt is refused: %s", c ? "(opened)" : err);
    chat_template_free(c);
    c = open_with("{\"chat_template\": \"{% for m in messages %}{{ m.role }}: {{ m.content }}\\n{% endfor %}\"}", NULL, err,
                  sizeof err);
    CHECK(!c && strstr(err, "no special token after the answer"), "a template without an end of turn is refused: %s",
          c ? "(opened)" : err);
    chat_template_free(c);
    c = open_with("{\"chat_template\": 7}", NULL, err, sizeof err);
    CHECK(!c && strstr(err, "neither a string nor a list"), "a chat_template of another type is refused: %s", c ? "" : err);
    chat_template_free(c);
    c = open_with(NULL, NULL, err, sizeof err);
    CHECK(c && !strcmp(chat_template_name(c), "chatml"), "no template in the files: chatml from the special tokens (%s)",
          c ? chat_template_name(c) : err);
    chat_template_free(c);
    c = open_with(NULL, "llama3", err, sizeof err);
    CHECK(!c && strstr(err, "--template llama3: the tokenizer") &&
              strstr(err, "has no special token <|begin_of_text|>, <|start_header_id|>, <|end_header_id|>, <|eot_id|>"),
          "--template llama3 refused on a tokenizer without its special tokens: %s", c ? "(opened)" : err);
    chat_template_free(c);
    c = open_with(NULL, "zephyr", err, sizeof err);
    CHECK(!c && strstr(err, "no special token </s>"), "--template zephyr refused without </s>: %s", c ? "(opened)" : err);
    chat_template_free(c);
    c = open_with(NULL, "chatml", err, sizeof err);
    CHECK(c != NULL, "--template chatml accepted where the tokenizer has its tokens: %s", c ? "" : err);
    chat_template_free(c);
}

/* the scored response: after the generation prompt, up to and with the end of turn after the answer */
static void test_response_cut(void) {
    char err[2048];
    ChatTemplate *c = open_with("{\"chat_template\": \"{% for m in messages %}<|im_start|>{{ m.role }}\\n"
                                "{% if m.role == 'assistant' and loop.last %}<think>\\n\\n</think>\\n\\n{% endif %}"
                                "{{ m.content | trim }}<|im_end|>\\n{% endfor %}{% if add_generation_prompt %}"
                                "<|im_start|>assistant\\n{% endif %}{{ eos_token }}\", \"eos_token\": \"<|im_end|>\"}",
                                NULL, err, sizeof err);
    CHECK(!c && strstr(err, "does not start with the rendering of [user] with the generation prompt"),
          "a template whose prompt is no prefix of the rendering with the answer is refused at load: %s", c ? "(opened)" : err);
    chat_template_free(c);
    ChatMessage m[1] = {{"user", "Q"}};
    MaskedText p = {0}, r = {0};
    int rc;
    c = open_with("{\"chat_template\": \"{% for m in messages %}<|im_start|>{{ m.role }}\\n"
                  "{% if m.role == 'assistant' and loop.last %}<think>\\n\\n</think>\\n\\n{% endif %}"
                  "{{ m.content | trim }}<|im_end|>\\n{% endfor %}{% if add_generation_prompt %}"
                  "<|im_start|>assistant\\n{% endif %}\"}", NULL, err, sizeof err);
    CHECK(c != NULL, "the template without the trailing eos opens: %s", c ? "" : err);
    if (!c) return;
    rc = chat_template_render(c, m, 1, 1, &p, err, sizeof err) || chat_template_response(c, m, 1, &p, " A ", &r, err, sizeof err);
    CHECK(!rc && !strcmp(r.text.s, "<think>\n\n</think>\n\nA<|im_end|>"),
          "the response: the template's text after the prompt, the answer, one end of turn, no newline: %s",
          rc ? err : r.text.s);
    masked_free(&r);
    rc = chat_template_response(c, m, 1, &p, "   ", &r, err, sizeof err);
    CHECK(!rc && !strcmp(r.text.s, "<think>\n\n</think>\n\n<|im_end|>"), "an answer trimmed to nothing: %s", rc ? err : r.text.s);
    chat_template_free(c), masked_free(&p), masked_free(&r);
    /* the probe passes, a longer conversation does not: refused for that row */
    c = open_with("{\"chat_template\": \"{% if messages | length == 3 %}<|im_start|>x<|im_end|>{% endif %}" CHATML "\"}",
                  NULL, err, sizeof err);
    CHECK(c != NULL, "a template whose prompt stops being a prefix at three turns opens: %s", c ? "" : err);
    if (!c) return;
    ChatMessage m3[3] = {{"user", "Q"}, {"assistant", "A"}, {"user", "Q2"}};
    rc = chat_template_render(c, m3, 3, 1, &p, err, sizeof err) || chat_template_response(c, m3, 3, &p, "A2", &r, err, sizeof err);
    CHECK(rc && strstr(err, "the rendering with the answer does not start with the prompt"), "that row is refused: %s",
          rc ? err : r.text.s);
    chat_template_free(c), masked_free(&p), masked_free(&r);
}

int main(void) {
    test_step_bound();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ppa_jinja_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    char *cases = check_slurp("tests/fixtures/jinja_cases.json");
    cJSON *spec = cases ? cJSON_Parse(cases) : NULL;
    CHECK(spec != NULL, "tests/fixtures/jinja_cases.json reads");
    if (spec) {
        compare_cases(spec, "tests/fixtures/jinja_golden.jsonl", 0);
        compare_cases(spec, "cache/tokref/jinja_js.jsonl", 1);
    }
    cJSON_Delete(spec);
    free(cases);
    compare_real("qwen3", "chat");
    compare_real("llama3_1", "chat");
    compare_real("qwen3", "chat_py");
    compare_real("llama3_1", "chat_py");
    test_refusals();
    test_flags();
    test_named_and_probe();
    test_response_cut();
    tokenizer_free(tok);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_jinja");
}
