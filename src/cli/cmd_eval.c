/* cmd_eval.c: `ppa eval`: how a policy ranks held-out lists compared with its
 * reference (eval/metrics.h has the definitions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/load.h"
#include "cli/reference.h"
#include "cli/setup.h"
#include "core/common.h"
#include "core/progress.h"
#include "dist/dist.h"
#include "eval/metrics.h"

static const char USAGE[] =
    "usage: ppa eval --model DIR --ref DIR --data FILE.jsonl [options]\n"
    "\n"
    "One JSON object: pairwise ranking accuracy and NDCG@k of the implicit reward\n"
    "s = beta (log pi(y|x) - log pi_ref(y|x)) against the labels, the ranking accuracy of the raw\n"
    "likelihood (the paper's definition: pi(y_w|x) >= pi(y_l|x)), rank flips against the reference\n"
    "(incorrect under the reference and correct under the policy, and the reverse) as counts and rates,\n"
    "mean reward and margins. Every response of a row is used (no list-size selection); rows are\n"
    "truncated and filtered as in training. --ref-cache reuses (or writes) the reference log-probs.\n\n";

int cmd_eval(int argc, char **argv) {
    TrainOptions o;
    setup_options(CMD_EVAL, USAGE, argc, argv, &o);
    Model *m = load_model(&o, o.model, 0);
    PrepArgs pa = dataset_args(&o, m);
    Prepared p;
    dataset_load(&p, &pa, "eval");
    RefCache pol, rc;
    Progress pr;
    progress_init(&pr, "eval", "policy log-probs", dist_rank() == 0);
    refcache_compute_ranks(&pol, m, p.data.rows, p.data.n, setup_batch_tokens(&o), 0, &pr); /* the rows divided among ranks */
    if (!model_lora(m)) model_free(m), m = NULL; /* one model in memory at a time */
    reference_of_policy(&rc, &p, &pa, m, o.model, o.ref, o.ref_cache, 0);
    model_free(m);
    PpaLossOptions lo;
    ppa_loss_options_default(&lo);
    lo.k = o.loss.k;
    EvalSums e = {0};
    for (int r = 0; r < p.data.n; r++)
        eval_add_list(&e, &lo, o.beta, p.data.rows[r].n_resp, pol.logp + pol.offset[r], rc.logp + rc.offset[r],
                      p.data.rows[r].scores);
    if (dist_rank() == 0) {
        eval_print_json(stdout, &e);
        putchar('\n');
    }
    refcache_free(&pol), refcache_free(&rc);
    dataset_free(&p);
    train_options_free(&o);
    return 0;
}
