/* cmd_loss.c: `ppa loss`: one list per JSON line in, loss, gradient and
 * metrics per line out. A malformed line stops the run with exit status 2
 * unless --skip-invalid, which reports and counts it instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/objective_flags.h"
#include "core/common.h"
#include "io/paths.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "options/argv.h"

static const char HELP[] =
    "usage: ppa loss --objective NAME [objective options] [--input FILE] [--skip-invalid]\n"
    "\n"
    "Reads JSON Lines (stdin, or --input FILE), one list per line:\n"
    "  {\"scores\": [s_1, ...], \"labels\": [psi_1, ...]}     (a label may be null: masked out)\n"
    "and writes one line per list:\n"
    "  {\"loss\": l, \"grad\": [dl/ds_i in input order], \"ndcg\": true NDCG@k of s,\n"
    "   \"accuracy\": pairwise ranking accuracy, \"kendall_tau\": tau-b[, \"sinkhorn_iters\": T]}\n"
    "Numbers are printed with 17 significant digits; undefined metrics are null.\n"
    "\n"
    "  --input FILE            read FILE instead of stdin\n"
    "  --skip-invalid          report malformed lines on stderr, count them, and go on\n"
    "                          (default: stop at the first with exit status 2)\n"
    "\n";

typedef struct {
    double *s, *psi, *grad;
    int cap_s, cap_psi;
} Buffers;

/* Parses and evaluates one line; prints the result, or returns -1 with err set. */
static int process_line(const char *line, size_t len, PpaObjective obj, const PpaLossOptions *o, Buffers *b,
                        FILE *out, char *err, size_t errlen) {
    cJSON *root = json_parse(line, len, err, errlen);
    if (!root) return -1;
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "a line must be a JSON object");
        cJSON_Delete(root);
        return -1;
    }
    int n = json_number_array(root, "scores", 0, &b->s, &b->cap_s, err, errlen), m = -1;
    if (n >= 0) m = json_number_array(root, "labels", 1, &b->psi, &b->cap_psi, err, errlen);
    cJSON_Delete(root);
    if (n < 0 || m < 0) return -1;
    if (n != m) {
        snprintf(err, errlen, "\"scores\" has %d entries but \"labels\" has %d", n, m);
        return -1;
    }
    int valid = 0;
    for (int i = 0; i < n; i++) valid += !isnan(b->psi[i]);
    if (valid < 2) {
        snprintf(err, errlen, "a list needs at least 2 items with labels, this one has %d", valid);
        return -1;
    }
    b->grad = xrealloc(b->grad, sizeof(double) * (size_t)n);
    PpaListResult r;
    PpaStatus st = ppa_loss_list(obj, o, n, b->s, b->psi, NULL, b->grad, &r);
    if (st != PPA_OK) {
        if (r.bad_index >= 0)
            snprintf(err, errlen, "item %d: %s (objective %s)", r.bad_index, ppa_status_string(st),
                     ppa_objective_name(obj));
        else
            snprintf(err, errlen, "%s", ppa_status_string(st));
        return -1;
    }
    if (!isfinite(r.loss)) { /* finite inputs with checked labels give a finite loss: say so rather than print null */
        snprintf(err, errlen, "the loss is not finite (objective %s)", ppa_objective_name(obj));
        return -1;
    }
    PpaListMetrics met;
    ppa_metrics_list(o, n, b->s, b->psi, NULL, &met);

    fputs("{\"loss\": ", out);
    json_print_number(out, r.loss);
    fputs(", \"grad\": [", out);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        json_print_number(out, b->grad[i]);
    }
    fputs("], \"ndcg\": ", out);
    json_print_number(out, met.ndcg);
    fputs(", \"accuracy\": ", out);
    json_print_number(out, met.accuracy);
    fputs(", \"kendall_tau\": ", out);
    json_print_number(out, met.kendall_tau);
    if (obj == PPA_NEURAL_NDCG) fprintf(out, ", \"sinkhorn_iters\": %d", r.sinkhorn_iters);
    fputs("}\n", out);
    return 0;
}

int cmd_loss(int argc, char **argv) {
    enum { OPT_INPUT = 1, OPT_SKIP };
    struct option opts[3 + OBJECTIVE_OPT_COUNT] = {
        {"input", required_argument, NULL, OPT_INPUT},
        {"skip-invalid", no_argument, NULL, OPT_SKIP},
    };
    objective_flags_append(opts, 2);
    PpaObjective obj = PPA_N_OBJECTIVES;
    PpaLossOptions o;
    ppa_loss_options_default(&o);
    const char *input = NULL, *v;
    int skip = 0;
    char err[512];
    ArgvParser p;
    argv_begin(&p, "loss", opts, NULL, argc, argv);
    for (int c; (c = argv_next(&p, &v, err, sizeof err)) != ARGV_END;) {
        if (objective_flags_handle(c, v, &obj, &o)) continue;
        switch (c) {
        case ARGV_HELP: fputs(HELP, stdout), objective_opts_help(stdout); return 0;
        case OPT_INPUT: input = v; break;
        case OPT_SKIP: skip = 1; break;
        default: ppa_die(2, "loss: %s", err);
        }
    }
    if (obj == PPA_N_OBJECTIVES) ppa_die(2, "loss: --objective NAME is required (see 'ppa loss --help')");

    char perr[4400];
    if (paths_check_stdout("--input", input, perr, sizeof perr)) ppa_die(2, "loss: %s", perr);
    FILE *in = stdin;
    if (input && !(in = fopen(input, "r"))) ppa_die(2, "loss: cannot open %s: %m", input);
    JsonlReader rd;
    jsonl_init(&rd, in, input ? input : "stdin");
    Buffers b = {0};
    long lines = 0, skipped = 0;
    char *line;
    while (jsonl_next(&rd, &line)) {
        lines++;
        if (process_line(line, rd.len, obj, &o, &b, stdout, err, sizeof err) == 0) continue;
        if (!skip) ppa_die(2, "%s:%ld: %s", rd.name, rd.line, err);
        fprintf(stderr, "ppa: %s:%ld: skipped: %s\n", rd.name, rd.line, err);
        skipped++;
    }
    if (skip) fprintf(stderr, "ppa: loss: skipped %ld of %ld lines\n", skipped, lines);
    jsonl_free(&rd);
    free(b.s);
    free(b.psi);
    free(b.grad);
    if (in != stdin) fclose(in);
    if (fflush(stdout) || ferror(stdout)) ppa_die(1, "loss: error writing the output");
    return 0;
}
