/* cmd_tokenize.c: `ppa tokenize`: text to ids (or ids to text with --decode)
 * with a tokenizer.json, one JSON line in, one out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/common.h"
#include "io/paths.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "options/argv.h"
#include "template/template.h"

static const char HELP[] =
    "usage: ppa tokenize --tokenizer FILE|DIR [--add-special-tokens] [--template NAME]\n"
    "                    [--special-tokens-in-text] [--decode [--skip-special-tokens]]\n"
    "                    [--input FILE] [--skip-invalid]\n"
    "\n"
    "Reads JSON Lines (stdin or --input): {\"text\": \"...\"} and writes {\"ids\": [...]}, as\n"
    "Hugging Face's tokenizer(text) (special-token strings in it are control tokens);\n"
    "{\"messages\": [{\"role\": ..., \"content\": ...}, ...]} renders a chat template first\n"
    "(with the generation prompt when the last turn is the user's) and writes {\"text\", \"ids\"}:\n"
    "special-token strings in the messages stay text there, as in training rows;\n"
    "with --decode reads {\"ids\": [...]} and writes {\"text\": \"...\"}.\n"
    "\n"
    "  --tokenizer FILE|DIR    a Hugging Face tokenizer.json, or the model folder holding it\n"
    "  --add-special-tokens    run the post-processor (BOS for Llama 3 and Mistral; none for Qwen)\n"
    "  --template NAME         chatml, llama3, mistral, zephyr, llama2 or none (default: the tokenizer's\n"
    "                          own chat template, rendered exactly or refused; without one, the code\n"
    "                          template its special tokens name); BOS comes from the template or the\n"
    "                          post-processor, never both\n"
    "  --special-tokens-in-text  special-token strings in messages become control tokens (HF's default)\n"
    "  --decode                ids to text\n"
    "  --skip-special-tokens   with --decode: drop special tokens\n"
    "  --input FILE            read FILE instead of stdin\n"
    "  --skip-invalid          report malformed lines, count them and go on (default: stop, status 2)\n";

typedef struct {
    Tokenizer *tok;
    ChatTemplate *template; /* NULL until a messages line needs it */
    const char *path, *name;
    int add_special, decode, skip_special, special_in_text;
} TokenizeOpts;

static void print_ids(const int *ids, long n) {
    fputs("[", stdout);
    for (long i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
    fputs("]", stdout);
}

/* {"messages": [...]}: render, then encode with exactly one BOS */
static int encode_messages(TokenizeOpts *o, const cJSON *msgs, char *err, size_t errlen) {
    int n = cJSON_GetArraySize(msgs), i = 0;
    ChatMessage *m = xcalloc((size_t)n + 1, sizeof *m);
    for (const cJSON *it = msgs->child; it; it = it->next, i++) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role"), *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(c)) {
            snprintf(err, errlen, "\"messages\"[%d] needs string \"role\" and \"content\"", i);
            free(m);
            return -1;
        }
        m[i] = (ChatMessage){role->valuestring, c->valuestring};
    }
    int gen = n > 0 && !strcmp(m[n - 1].role, "user");
    if (!n || template_check(m, n, gen, err, errlen)) {
        if (!n) snprintf(err, errlen, "\"messages\" is empty");
        free(m);
        return -1;
    }
    if (!o->template && !(o->template = chat_template_open(o->name, o->path, o->tok, err, errlen))) {
        free(m);
        return -2; /* the template itself is refused: every line would be */
    }
    MaskedText text = {0};
    int *ids = NULL;
    long k = chat_template_render(o->template, m, n, gen, &text, err, errlen) ? -1
             : tokenizer_encode_masked(o->tok, text.text.s, o->special_in_text ? NULL : (const unsigned char *)text.mask.s,
                                       text.text.n, chat_template_add_special(o->template, &text), &ids, err, errlen);
    if (k >= 0) {
        cJSON *s = cJSON_CreateString(text.text.s);
        char *js = cJSON_PrintUnformatted(s);
        printf("{\"text\": %s, \"ids\": ", js);
        print_ids(ids, k);
        fputs("}\n", stdout);
        free(js);
        cJSON_Delete(s);
        free(ids);
    }
    masked_free(&text);
    free(m);
    return k < 0 ? -1 : 0;
}

static int encode_line(TokenizeOpts *o, const cJSON *root, char *err, size_t errlen) {
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (cJSON_IsArray(msgs)) return encode_messages(o, msgs, err, errlen);
    if (!cJSON_IsString(text)) {
        snprintf(err, errlen, "expected {\"text\": string} or {\"messages\": [...]}");
        return -1;
    }
    int *ids;
    long n = tokenizer_encode(o->tok, text->valuestring, strlen(text->valuestring), o->add_special, &ids, err, errlen);
    if (n < 0) return -1;
    fputs("{\"ids\": ", stdout);
    print_ids(ids, n);
    fputs("}\n", stdout);
    free(ids);
    return 0;
}

static int decode_line(const TokenizeOpts *o, const cJSON *root, char *err, size_t errlen) {
    double *v = NULL;
    int cap = 0, n = json_number_array(root, "ids", 0, &v, &cap, err, errlen);
    if (n < 0) return -1;
    int *ids = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= tokenizer_size(o->tok) || v[i] != (int)v[i]) {
            snprintf(err, errlen, "\"ids\"[%d] = %g is not a token id of this tokenizer", i, v[i]);
            free(v);
            free(ids);
            return -1;
        }
        ids[i] = (int)v[i];
    }
    char *text = tokenizer_decode(o->tok, ids, (size_t)n, o->skip_special, NULL);
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "text", text);
    char *line = cJSON_PrintUnformatted(out);
    puts(line);
    free(line);
    cJSON_Delete(out);
    free(text);
    free(ids);
    free(v);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    enum { OPT_TOK = 1, OPT_ADD, OPT_DECODE, OPT_SKIP_SPECIAL, OPT_INPUT, OPT_SKIP, OPT_TEMPLATE, OPT_SPECIAL_TEXT };
    static const struct option opts[] = {
        {"tokenizer", required_argument, NULL, OPT_TOK},
        {"add-special-tokens", no_argument, NULL, OPT_ADD},
        {"decode", no_argument, NULL, OPT_DECODE},
        {"skip-special-tokens", no_argument, NULL, OPT_SKIP_SPECIAL},
        {"input", required_argument, NULL, OPT_INPUT},
        {"skip-invalid", no_argument, NULL, OPT_SKIP},
        {"template", required_argument, NULL, OPT_TEMPLATE},
        {"special-tokens-in-text", no_argument, NULL, OPT_SPECIAL_TEXT},
        {0},
    };
    TokenizeOpts o = {0};
    const char *path = NULL, *input = NULL, *template = NULL, *v;
    int skip = 0;
    char err[1024];
    ArgvParser p;
    argv_begin(&p, "tokenize", opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        switch (c) {
        case ARGV_HELP: fputs(HELP, stdout); return 0;
        case OPT_TOK: path = v; break;
        case OPT_ADD: o.add_special = 1; break;
        case OPT_DECODE: o.decode = 1; break;
        case OPT_SKIP_SPECIAL: o.skip_special = 1; break;
        case OPT_INPUT: input = v; break;
        case OPT_SKIP: skip = 1; break;
        case OPT_TEMPLATE: template = v; break;
        case OPT_SPECIAL_TEXT: o.special_in_text = 1; break;
        default: ppa_die(2, "tokenize: %s", err);
        }
    }
    if (!path) ppa_die(2, "tokenize: --tokenizer FILE|DIR is required");
    if (!(o.tok = tokenizer_load(path, err, sizeof err))) ppa_die(2, "%s", err);
    o.path = path, o.name = template;
    if (template && !(o.template = chat_template_open(template, path, o.tok, err, sizeof err))) ppa_die(2, "tokenize: %s", err);
    char perr[4400];
    if (paths_check_stdout("--input", input, perr, sizeof perr)) ppa_die(2, "tokenize: %s", perr);
    FILE *in = stdin;
    if (input && !(in = fopen(input, "r"))) ppa_die(2, "tokenize: cannot open %s: %m", input);
    JsonlReader rd;
    jsonl_init(&rd, in, input ? input : "stdin");
    char *line;
    long lines = 0, skipped = 0;
    while (jsonl_next(&rd, &line)) {
        lines++;
        cJSON *root = json_parse(line, rd.len, err, sizeof err);
        int rc = -1;
        if (root && !cJSON_IsObject(root)) snprintf(err, sizeof err, "a line must be a JSON object");
        else if (root) rc = o.decode ? decode_line(&o, root, err, sizeof err) : encode_line(&o, root, err, sizeof err);
        cJSON_Delete(root);
        if (!rc) continue;
        if (rc == -2) ppa_die(2, "tokenize: %s", err);
        if (!skip) ppa_die(2, "%s:%ld: %s", rd.name, rd.line, err);
        fprintf(stderr, "ppa: %s:%ld: skipped: %s\n", rd.name, rd.line, err);
        skipped++;
    }
    if (skip) fprintf(stderr, "ppa: tokenize: skipped %ld of %ld lines\n", skipped, lines);
    jsonl_free(&rd);
    if (in != stdin) fclose(in);
    chat_template_free(o.template);
    tokenizer_free(o.tok);
    if (fflush(stdout) || ferror(stdout)) ppa_die(1, "tokenize: error writing the output");
    return 0;
}
