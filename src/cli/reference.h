/* reference.h: the reference log-probs of prepared rows: the cache's key, loaded
 * when a matching cache exists, else computed (by a loaded model, or a policy with
 * its adapter switched off) and saved. */
#ifndef PPA_CLI_REFERENCE_H
#define PPA_CLI_REFERENCE_H

#include "cli/dataset.h"
#include "train/refcache.h"

/* The key of a reference cache for p's rows and reference model ref. */
RefKey reference_key(const Prepared *p, Model *ref, const PrepArgs *a);
/* Loads the cache at path if it exists and matches (else dies naming the
 * reason), or computes it with the reference model at ref_dir and saves it. */
void reference_load(RefCache *c, const Prepared *p, const PrepArgs *a, const char *ref_dir, const char *path, int verbose);
/* The same with a loaded model ref (kept). */
void reference_with(RefCache *c, const Prepared *p, const PrepArgs *a, Model *ref, const char *path, int verbose);
/* The reference of a policy loaded from folder base: ref_dir, or base when NULL. A policy with an adapter whose
 * reference is its own base computes it with the adapter switched off (no second copy of the base); policy may be
 * NULL (freed: the reference is loaded). */
void reference_of_policy(RefCache *c, const Prepared *p, const PrepArgs *a, Model *policy, const char *base,
                           const char *ref_dir, const char *path, int verbose);

#endif
