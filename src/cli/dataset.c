/* dataset.c: the data commands' rows prepared (dataset.h). */
#include "cli/dataset.h"

#include "cli/setup.h"

#include <math.h>
#include <string.h>

#include "core/common.h"
#include "dist/dist.h"
#include "core/hash.h"
#include "io/file.h"
#include "io/records.h"

PrepArgs dataset_args(const TrainOptions *o, const Model *m) { return dataset_args_config(o, model_config(m)); }

PrepArgs dataset_args_config(const TrainOptions *o, const ModelConfig *c) {
    int len = o->max_length, plen = o->max_prompt_length, pos = c->max_position_embeddings;
    if (options_takes(o->cmd, TOPT_MAX_LENGTH) && pos >= 2 && len > pos) { /* rows never run past the positions: cut to them, the prompt's share kept */
        plen = (int)((long)plen * pos / len);
        plen = plen < 1 ? 1 : plen > pos - 1 ? pos - 1 : plen;
        fprintf(stderr, "ppa %s: note: --max-length %d is more than the model's %d positions: rows are cut to %d "
                        "tokens, prompts to %d\n", options_command_name(o->cmd), len, pos, pos, plen);
        len = pos;
    }
    return (PrepArgs){o->model, o->data, o->template_name, o->skip_invalid, len, plen, o->special_tokens_in_text,
                      c->vocab_size, c->n_eos ? c->eos_token_ids[0] : -1, o->bf16, setup_batch_tokens(o), o};
}

DataOptions dataset_options(Prepared *p, const PrepArgs *a, const char *who) {
    char err[4096];
    memset(p, 0, sizeof *p);
    p->tok = tokenizer_load_folder(a->model_dir, err, sizeof err);
    if (!p->tok && err[0]) ppa_die(2, "%s: %s", who, err);
    if (!(p->tpl = chat_template_open(a->template_name, a->model_dir, p->tok, err, sizeof err))) ppa_die(2, "%s: %s", who, err);
    snprintf(p->template_name, sizeof p->template_name, "%s", chat_template_name(p->tpl));
    return (DataOptions){p->tok, p->tpl, a->eos_id, a->vocab_size, a->skip_invalid, 0, a->special_in_text, a->model_dir,
                         0};
}

void dataset_read(Prepared *p, const PrepArgs *a, const char *who) {
    char err[4096];
    DataOptions o = dataset_options(p, a, who);
    int ok;
    /* hashed, then read: a pipe would be empty the second time */
    p->data_hash = records_hash(a->data, &ok, err, sizeof err);
    if (!ok) ppa_die(2, "%s: --data %s", who, err);
    if (data_read(&p->data, a->data, &o, err, sizeof err)) ppa_die(2, "%s", err);
    if (p->data.skipped && dist_rank() == 0) fprintf(stderr, "ppa %s: skipped %ld invalid rows of %s (--skip-invalid)\n", who, p->data.skipped, a->data);
}

void dataset_load(Prepared *p, const PrepArgs *a, const char *who) {
    char err[4096];
    dataset_read(p, a, who);
    if (data_prepare(&p->data, a->max_length, a->max_prompt_length, &p->stats, err, sizeof err)) {
        const char *use = !strncmp(who, "eval", 4) ? "evaluate" : !strcmp(who, "score") ? "score" : "train on";
        ppa_die(2, "%s: %s %s: nothing to %s", who, a->data, err, use);
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "ppa %s: ", who);
    if (dist_rank() == 0) prep_stats_print(stderr, &p->stats, prefix); /* once per job */
}

void dataset_check_labels(const Prepared *p, PpaObjective obj, const char *path, const char *who) {
    char wh[1024];
    for (int r = 0; r < p->data.n; r++) {
        const DataRow *x = &p->data.rows[r];
        for (int k = 0; k < x->n_resp; k++) {
            PpaStatus st = isnan(x->scores[k]) ? PPA_OK : ppa_label_check(obj, x->scores[k]);
            if (st != PPA_OK)
                ppa_die(2, "%s: %s: response %d: label %g: %s (objective %s)", who, records_where(path, x->line, wh, sizeof wh), k + 1,
                        x->scores[k], ppa_status_string(st), ppa_objective_name(obj));
        }
    }
}

void dataset_free(Prepared *p) {
    data_free(&p->data);
    chat_template_free(p->tpl);
    tokenizer_free(p->tok);
}
