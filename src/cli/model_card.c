/* model_card.c: OUT/README.md (model_card.h). */
#include "cli/model_card.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "core/common.h"
#include "io/atomic.h"
#include "io/file.h"
#include "io/json.h"
#include "io/yaml.h"

/* s as a double-quoted YAML scalar: JSON's escapes are YAML's */
static void put_quoted(FILE *f, const char *s) {
    cJSON *j = cJSON_CreateString(s);
    char *t = cJSON_PrintUnformatted(j);
    fputs(t ? t : "\"\"", f);
    free(t), cJSON_Delete(j);
}

/* the last part of a path, without trailing slashes */
static char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t at = n;
    while (at > 0 && path[at - 1] != '/') at--;
    return strndup(path + at, n - at);
}

/* The base model's name: its config.json's _name_or_path when that is a Hub id (ORG/NAME or NAME, not a local
 * path), else the folder's name. */
static char *base_model(const char *dir) {
    char err[4400], *cfg = ppa_path_join(dir, "config.json");
    cJSON *j = json_load_file(cfg, 1 << 24, err, sizeof err);
    free(cfg);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "_name_or_path");
    char *name = NULL;
    if (cJSON_IsString(n) && n->valuestring[0] && n->valuestring[0] != '/' && n->valuestring[0] != '.' &&
        n->valuestring[0] != '~') {
        const char *slash = strchr(n->valuestring, '/');
        if (!slash || (!strchr(slash + 1, '/') && slash[1])) name = strdup(n->valuestring);
    }
    cJSON_Delete(j);
    return name ? name : base_name(dir);
}

/* The front matter of DIR/README.md (NULL: none, or not YAML: a note); *card_out: whether the card is there */
static YamlNode *base_front_matter(const char *dir, const char *who, int *card) {
    char err[4400], *path = ppa_path_join(dir, "README.md");
    struct stat sb;
    *card = !stat(path, &sb);
    size_t n = 0;
    char *text = *card ? file_read_all(path, &n, err, sizeof err) : NULL;
    YamlNode *y = NULL;
    if (text && !strncmp(text, "---\n", 4)) {
        char *end = strstr(text + 3, "\n---");
        if (end && (end[4] == '\n' || end[4] == '\r' || !end[4]))
            y = yaml_parse(text + 4, (size_t)(end + 1 - (text + 4)), path, err, sizeof err);
        if (!y) fprintf(stderr, "ppa %s: note: %s: its front matter is not read (%s): no license is taken from it\n", who,
                        path, end ? err : "no closing ---");
        if (y && y->kind != YAML_MAP) yaml_tree_free(y), y = NULL;
    }
    free(text), free(path);
    return y;
}

/* "ppa train --model m ...", each word quoted for a POSIX shell where it needs it */
static void put_command(FILE *f, int argc, char *const *argv) {
    fputs("ppa", f);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int plain = a[0] != 0;
        for (const char *p = a; *p && plain; p++)
            plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *p) != NULL;
        fputc(' ', f);
        if (plain) {
            fputs(a, f);
            continue;
        }
        fputc('\'', f);
        for (const char *p = a; *p; p++)
            if (*p == '\'') fputs("'\\''", f);
            else fputc(*p, f);
        fputc('\'', f);
    }
}

static void data_size(const DataSet *d, long *responses, long *tokens) {
    *responses = 0, *tokens = 0;
    for (int r = 0; r < d->n; r++) {
        *tokens += d->rows[r].prompt_len, *responses += d->rows[r].n_resp;
        for (int k = 0; k < d->rows[r].n_resp; k++) *tokens += d->rows[r].resp_len[k];
    }
}

static const char *command_text(OptCommand cmd) {
    switch (cmd) {
    case CMD_SFT: return "supervised fine-tuning: the mean negative log-likelihood of the response tokens, the prompt "
                         "not scored";
    case CMD_REWARD: return "a reward model trained on scored lists: the objective below on its head's output r(x, y) "
                            "(no reference model)";
    default: return "listwise preference alignment: the objective below on the implicit rewards s = beta (log pi(y|x) "
                    "- log pi_ref(y|x)) of each list's responses, against their labels";
    }
}

static void write_card(FILE *f, const ModelCard *c, const char *base, const YamlNode *fm, int base_card) {
    const TrainOptions *o = c->o;
    const char *who = options_command_name(o->cmd), *unit = o->cmd == CMD_SFT ? "rows" : "lists";
    char *data = base_name(o->data), *out = base_name(o->out);
    const char *objective = o->cmd == CMD_SFT ? "sft" : ppa_objective_name(o->objective);
    fputs("---\nbase_model: ", f);
    put_quoted(f, base);
    fputs("\ndatasets:\n- ", f);
    put_quoted(f, data);
    fputs("\nlibrary_name: ppa\n", f);
    static const char *const LICENSE[] = {"license", "license_name", "license_link"};
    for (int i = 0; i < 3; i++) {
        const YamlNode *v = fm ? yaml_get(fm, LICENSE[i]) : NULL;
        if (v && v->kind == YAML_SCALAR) fprintf(f, "%s: ", LICENSE[i]), put_quoted(f, v->str), fputc('\n', f);
    }
    fputs("tags:\n- ppa\n- ", f);
    put_quoted(f, objective);
    fprintf(f, "\n- %s\n", o->cmd == CMD_SFT ? "sft" : o->cmd == CMD_REWARD ? "reward-model" : "preference-alignment");
    if (o->lora_r > 0 || o->adapter) fputs("- lora\n", f);
    fputs("---\n\n", f);
    fprintf(f, "# Model card for %s\n\n", out);
    const char *slash = strchr(base, '/');
    if (slash) fprintf(f, "This model is a fine-tuned version of [%s](https://huggingface.co/%s)", base, base);
    else fprintf(f, "This model is a fine-tuned version of `%s`", base);
    fprintf(f, ", trained on `%s` by ppa (`ppa %s`): %s.\n\n", data, who,
            o->lora_r > 0 || o->adapter ? "a LoRA adapter (PEFT's format) on the frozen base" : "every parameter trained");
    fprintf(f, "## Training procedure\n\n%s.\n\n", command_text(o->cmd));
    if (o->cmd == CMD_SFT) fputs("- objective: sft\n", f); /* the others' is the first option */
    options_print_markdown(o, f);
    fprintf(f, "- optimizer steps: %ld\n\n### Data\n\n", c->steps);
    long resp, tok;
    data_size(c->data, &resp, &tok);
    fprintf(f, "- training: `%s`, %d %s, %ld responses, %ld tokens (prompts once, after truncation to %d)\n", data,
            c->data->n, unit, resp, tok, o->max_length);
    if (c->eval) {
        char *ev = base_name(o->eval_data);
        data_size(c->eval, &resp, &tok);
        fprintf(f, "- held-out: `%s`, %d %s, %ld responses, %ld tokens\n", ev, c->eval->n, unit, resp, tok);
        free(ev);
    }
    fputs("\n### Final metrics\n\nThe last logged value of each number (`train/` per step, `eval/` on held-out "
          "lists; timings left out):\n\n| metric | value |\n|---|---|\n", f);
    for (const cJSON *m = c->metrics ? c->metrics->child : NULL; m; m = m->next)
        fprintf(f, "| %s | %.6g |\n", m->string, m->valuedouble);
    fputs("\n### Command\n\n```sh\n", f);
    put_command(f, c->argc, c->argv);
    fputs("\n```\n\n### Framework versions\n\n", f);
    fprintf(f, "- ppa: %s\n- C compiler: %s\n- cJSON: %d.%d.%d\n- matrix products: %s\n", PPA_VERSION,
#ifdef __VERSION__
            "gcc-compatible " __VERSION__,
#else
            "unknown",
#endif
            CJSON_VERSION_MAJOR, CJSON_VERSION_MINOR, CJSON_VERSION_PATCH, c->kernels ? c->kernels : "unknown");
    if (base_card)
        fprintf(f, "\n### The base model's card\n\nThe base model's own README.md describes the base model and is not "
                   "copied here;%s\n", fm && yaml_get(fm, "license") ? " its license is kept in the front matter above."
                                                                      : " it states no license.");
    free(data), free(out);
}

int model_card_write(const char *dir, const ModelCard *c, char *err, size_t errlen) {
    const char *who = options_command_name(c->o->cmd);
    char *base = base_model(c->o->model), *bytes = NULL, *path = ppa_path_join(dir, "README.md");
    int base_card;
    YamlNode *fm = base_front_matter(c->o->model, who, &base_card);
    size_t n = 0;
    FILE *mem = open_memstream(&bytes, &n);
    if (!mem) ppa_die(1, "%s: out of memory", who);
    write_card(mem, c, base, fm, base_card);
    if (fclose(mem)) ppa_die(1, "%s: out of memory", who);
    int rc = atomic_write_bytes(path, bytes, n, err, errlen);
    free(bytes), free(path), free(base);
    if (fm) yaml_tree_free(fm);
    return rc;
}
