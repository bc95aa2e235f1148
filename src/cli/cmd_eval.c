/* cmd_eval.c: `ppa eval`: how a policy ranks held-out lists compared with its
 * reference (train/metrics.h has the definitions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli/commands.h"
#include "cli/prep.h"
#include "core/common.h"
#include "model/gemm.h"
#include "train/metrics.h"

static const char HELP[] =
    "usage: ppa eval --model DIR --ref DIR --data FILE.jsonl [--beta B] [--k K] [--ref-cache FILE]\n"
    "                [--template NAME] [--max-length N] [--max-prompt-length N] [--skip-invalid] [--threads N]\n"
    "\n"
    "One JSON object: pairwise ranking accuracy and NDCG@k of the implicit reward\n"
    "s = beta (log pi(y|x) - log pi_ref(y|x)) against the labels, the ranking accuracy of the raw\n"
    "likelihood (the paper's definition: pi(y_w|x) >= pi(y_l|x)), rank flips against the reference\n"
    "(incorrect under the reference and correct under the policy, and the reverse) as counts and rates,\n"
    "mean reward and margins. Every response of a row is used (no list-size selection); rows are\n"
    "truncated and filtered as in training. --ref-cache reuses (or writes) the reference log-probs.\n";

int cmd_eval(int argc, char **argv) {
    const char *model = NULL, *ref = NULL, *data = NULL, *cache = NULL, *tpl = NULL;
    double beta = 0.1;
    int k = 0, threads = 0, skip = 0, max_length = 1024, max_prompt = 512;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) return fputs(HELP, stdout), 0;
        if (!strcmp(a, "--skip-invalid")) { skip = 1; continue; }
        if (!v) ppa_die(2, "eval: %s needs a value (see ppa eval --help)", a);
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--ref")) ref = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--ref-cache")) cache = v;
        else if (!strcmp(a, "--template")) tpl = v;
        else if (!strcmp(a, "--beta")) beta = atof(v);
        else if (!strcmp(a, "--k")) k = atoi(v);
        else if (!strcmp(a, "--max-length")) max_length = atoi(v);
        else if (!strcmp(a, "--max-prompt-length")) max_prompt = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else ppa_die(2, "eval: unknown option %s (see ppa eval --help)", a);
        i++;
    }
    if (!model || !ref || !data) ppa_die(2, "eval: --model, --ref and --data are required");
    if (!(beta > 0) || k < 0) ppa_die(2, "eval: --beta must be > 0 and --k >= 0");
    if (threads > 0) {
        gemm_set_threads(threads);
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
    }
    char err[4096];
    Model *m = model_load(model, err, sizeof err);
    if (!m) ppa_die(2, "eval: %s", err);
    const ModelConfig *c = model_config(m);
    PrepArgs pa = {model, data, tpl, skip, max_length, max_prompt, c->vocab_size, c->n_eos ? c->eos_token_ids[0] : -1};
    Prepared p;
    prep_load(&p, &pa, "eval");
    RefCache pol, rc;
    refcache_compute(&pol, m, p.data.rows, p.data.n, 4096, NULL, NULL);
    model_free(m);
    prep_reference(&rc, &p, &pa, ref, cache, 0);
    PpaLossOptions lo;
    ppa_loss_options_default(&lo);
    lo.k = k;
    EvalSums e = {0};
    for (int r = 0; r < p.data.n; r++)
        eval_add_list(&e, &lo, beta, p.data.rows[r].n_resp, pol.logp + pol.offset[r], rc.logp + rc.offset[r],
                      p.data.rows[r].scores);
    eval_print_json(stdout, &e);
    putchar('\n');
    refcache_free(&pol), refcache_free(&rc);
    prep_free(&p);
    return 0;
}
