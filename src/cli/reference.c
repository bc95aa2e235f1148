/* reference.c: the reference log-probs, cached (reference.h). */
#include "cli/reference.h"

#include <sys/stat.h>

#include "core/common.h"
#include "core/progress.h"
#include "dist/dist.h"
#include "core/timer.h"
#include "cli/load.h"

RefKey reference_key(const Prepared *p, Model *ref, const PrepArgs *a) {
    RefKey k = {refkey_weights(ref), refkey_tokens(p->data.rows, p->data.n), p->data_hash, "", a->max_length,
                a->max_prompt_length};
    snprintf(k.template_name, sizeof k.template_name, "%s", p->template_name);
    return k;
}

void reference_with(RefCache *c, const Prepared *p, const PrepArgs *a, Model *ref, const char *path, int verbose) {
    char err[4096], why[512];
    RefKey want = reference_key(p, ref, a);
    struct stat sb;
    int have = path && stat(path, &sb) == 0;
    dist_bcast(&have, sizeof have, 0); /* rank 0 decides: every rank takes the same path (the folder is shared) */
    if (have) {
        if (refcache_load(c, path, err, sizeof err)) ppa_die(2, "%s", err);
        if (refcache_check(c, &want, p->data.rows, p->data.n, why, sizeof why))
            ppa_die(2, "%s does not belong to this run: %s. Delete it, or give another --ref-cache", path, why);
        if (verbose && dist_rank() == 0) fprintf(stderr, "ppa: reference log-probs from %s\n", path);
        return;
    }
    double t0 = timer_now();
    int lead = dist_rank() == 0;
    Progress pr;
    progress_init(&pr, a->opt ? options_command_name(a->opt->cmd) : "reference", "reference log-probs", lead);
    refcache_compute_ranks(c, ref, p->data.rows, p->data.n, a->batch_tokens, 0, &pr);
    c->key = want;
    double sec = timer_now() - t0;
    long tokens = 0; /* what the forward computed: each prompt once, every response */
    for (int r = 0; r < p->data.n; r++) {
        tokens += p->data.rows[r].prompt_len;
        for (int k = 0; k < p->data.rows[r].n_resp; k++) tokens += p->data.rows[r].resp_len[k];
    }
    const ForwardEngine *e = model_forward_engine(ref);
    char where[96] = "";
    if (e && e->bytes) snprintf(where, sizeof where, ", on the GPU: %.2f GiB held", (double)e->bytes(e->ctx) / 1073741824.0);
    if (lead)
        fprintf(stderr, "ppa: reference log-probs of %d rows computed in %.3f s (%.0f tokens/s%s)\n", p->data.n, sec,
                sec > 0 ? (double)tokens / sec : 0.0, where);
    if (lead && path && refcache_save(c, path, err, sizeof err)) ppa_die(1, "%s", err);
    dist_barrier(); /* the cache is on disk before any rank goes on */
}

void reference_load(RefCache *c, const Prepared *p, const PrepArgs *a, const char *ref_dir, const char *path, int verbose) {
    char err[4096];
    /* frozen: a bf16 reference keeps bf16 weights only, and computes what a bf16 policy of the same weights does */
    Model *ref = model_load_as(ref_dir, a->bf16 ? MODEL_BF16 : MODEL_FP32, 1, err, sizeof err);
    if (!ref) ppa_die(2, "reference: %s", err);
    load_need_head(ref, ref_dir, 0, "reference");
    load_on_device(a->opt, ref);
    reference_with(c, p, a, ref, path, verbose);
    model_free(ref);
}

/* the same folder, however it is written */
static int same_folder(const char *a, const char *b) {
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void reference_of_policy(RefCache *c, const Prepared *p, const PrepArgs *a, Model *policy, const char *base,
                           const char *ref_dir, const char *path, int verbose) {
    if (policy && model_lora(policy) && (!ref_dir || same_folder(ref_dir, base))) {
        model_lora_enable(policy, 0); /* the base: no second copy of it (TRL's reference of a PEFT model) */
        reference_with(c, p, a, policy, path, verbose);
        model_lora_enable(policy, 1);
        return;
    }
    reference_load(c, p, a, ref_dir ? ref_dir : base, path, verbose);
}
