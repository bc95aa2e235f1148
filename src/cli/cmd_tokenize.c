/* cmd_tokenize.c: `ppa tokenize`: text to ids (or ids to text with --decode)
 * with a tokenizer.json, one JSON line in, one out. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/common.h"
#include "io/jsonl.h"
#include "tokenizer/tokenizer.h"

static const char HELP[] =
    "usage: ppa tokenize --tokenizer FILE|DIR [--add-special-tokens] [--decode [--skip-special-tokens]]\n"
    "                    [--input FILE] [--skip-invalid]\n"
    "\n"
    "Reads JSON Lines (stdin or --input): {\"text\": \"...\"} and writes {\"ids\": [...]};\n"
    "with --decode reads {\"ids\": [...]} and writes {\"text\": \"...\"}.\n"
    "\n"
    "  --tokenizer FILE|DIR    a Hugging Face tokenizer.json, or the model folder holding it\n"
    "  --add-special-tokens    run the post-processor (BOS for Llama 3 and Mistral; none for Qwen)\n"
    "  --decode                ids to text\n"
    "  --skip-special-tokens   with --decode: drop special tokens\n"
    "  --input FILE            read FILE instead of stdin\n"
    "  --skip-invalid          report malformed lines, count them and go on (default: stop, status 2)\n";

typedef struct {
    Tokenizer *tok;
    int add_special, decode, skip_special;
} TokenizeOpts;

static int encode_line(const TokenizeOpts *o, const cJSON *root, char *err, size_t errlen) {
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
    if (!cJSON_IsString(text)) {
        snprintf(err, errlen, "expected {\"text\": string}");
        return -1;
    }
    int *ids;
    long n = tokenizer_encode(o->tok, text->valuestring, strlen(text->valuestring), o->add_special, &ids, err, errlen);
    if (n < 0) return -1;
    fputs("{\"ids\": [", stdout);
    for (long i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
    fputs("]}\n", stdout);
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
    enum { OPT_HELP = 1, OPT_TOK, OPT_ADD, OPT_DECODE, OPT_SKIP_SPECIAL, OPT_INPUT, OPT_SKIP };
    static const struct option opts[] = {
        {"help", no_argument, NULL, OPT_HELP},
        {"tokenizer", required_argument, NULL, OPT_TOK},
        {"add-special-tokens", no_argument, NULL, OPT_ADD},
        {"decode", no_argument, NULL, OPT_DECODE},
        {"skip-special-tokens", no_argument, NULL, OPT_SKIP_SPECIAL},
        {"input", required_argument, NULL, OPT_INPUT},
        {"skip-invalid", no_argument, NULL, OPT_SKIP},
        {0},
    };
    TokenizeOpts o = {0};
    const char *path = NULL, *input = NULL;
    int skip = 0, c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_HELP: fputs(HELP, stdout); return 0;
        case OPT_TOK: path = optarg; break;
        case OPT_ADD: o.add_special = 1; break;
        case OPT_DECODE: o.decode = 1; break;
        case OPT_SKIP_SPECIAL: o.skip_special = 1; break;
        case OPT_INPUT: input = optarg; break;
        case OPT_SKIP: skip = 1; break;
        default: ppa_die(2, "tokenize: see 'ppa tokenize --help'");
        }
    }
    if (!path) ppa_die(2, "tokenize: --tokenizer is required");
    char err[1024];
    if (!(o.tok = tokenizer_load(path, err, sizeof err))) ppa_die(2, "%s", err);
    FILE *in = stdin;
    if (input && !(in = fopen(input, "r"))) ppa_die(2, "tokenize: cannot open %s: %m", input);
    JsonlReader rd;
    jsonl_init(&rd, in, input ? input : "stdin");
    char *line;
    long lines = 0, skipped = 0;
    while (jsonl_next(&rd, &line)) {
        lines++;
        cJSON *root = cJSON_Parse(line);
        int rc = -1;
        if (!cJSON_IsObject(root)) snprintf(err, sizeof err, "invalid JSON or not an object");
        else rc = o.decode ? decode_line(&o, root, err, sizeof err) : encode_line(&o, root, err, sizeof err);
        cJSON_Delete(root);
        if (!rc) continue;
        if (!skip) ppa_die(2, "%s:%ld: %s", rd.name, rd.line, err);
        fprintf(stderr, "ppa: %s:%ld: skipped: %s\n", rd.name, rd.line, err);
        skipped++;
    }
    if (skip) fprintf(stderr, "ppa: tokenize: skipped %ld of %ld lines\n", skipped, lines);
    jsonl_free(&rd);
    if (in != stdin) fclose(in);
    tokenizer_free(o.tok);
    if (fflush(stdout) || ferror(stdout)) ppa_die(1, "tokenize: error writing the output");
    return 0;
}
