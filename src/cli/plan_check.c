/* plan_check.c: runs that would learn nothing (plan_check.h). */
#include "cli/plan_check.h"

#include <stdio.h>

#include "core/common.h"
#include "dist/dist.h"

/* "21 lists" or "1 list" */
static const char *count_of(long n, const char *unit, char *buf, size_t len) {
    snprintf(buf, len, "%ld %s%s", n, unit, n == 1 ? "" : "s");
    return buf;
}

/* written by the user: on the command line or in the recipe (not a default, not derived) */
static int written(const TrainOptions *o, TrainOptId id) {
    return o->origin[id].from == TRAIN_FROM_CLI || o->origin[id].from == TRAIN_FROM_CONFIG;
}

void plan_steps(const TrainOptions *o, long items, long batch, long *total, long *warmup) {
    long per_epoch = (items + batch - 1) / batch; /* an epoch's last step may be smaller */
    *total = o->max_steps > 0 ? o->max_steps : (long)o->epochs * per_epoch;
    *warmup = (long)(o->warmup_ratio * (double)*total + 0.999999);
}

/* 1 if some step of [start, total) has a learning rate above 0: the loop's own schedule, from the first step on (it
 * stops at the first such step, the second at the latest) */
static int some_lr(const RunPlan *r, long start, long warmup, long total) {
    for (long s = start; s < total; s++)
        if (schedule_lr(r->schedule, r->lr, s, warmup, total) > 0) return 1;
    return 0;
}

/* fewer items than one step: a mistake at the default batch size, a request when the user chose the batch (the
 * command line, a recipe, or micro-batch x grad-accum); the batch suggested is the largest whose run passes the
 * learning-rate check too */
static void check_batch(const TrainOptions *o, const RunPlan *r, const char *who) {
    if (r->items >= r->batch) return;
    char a[64], b[64], use[256];
    if (o->origin[TOPT_BATCH_SIZE].from != TRAIN_FROM_DEFAULT) {
        if (dist_rank() == 0)
            fprintf(stderr, "ppa %s: note: %s are fewer than one optimizer step of %ld (--batch-size %ld, as given): "
                            "every step takes all %ld\n", who, count_of(r->items, r->unit, a, sizeof a), r->batch, r->batch,
                    r->items);
        return;
    }
    long micro = written(o, TOPT_MICRO_BATCH) ? o->micro_batch : 1, fit = r->items / micro * micro, best = 0;
    for (long size = fit; size >= micro && !best; size -= micro) {
        long total, warmup;
        plan_steps(o, r->items, size, &total, &warmup);
        if (some_lr(r, 0, warmup, total)) best = size;
    }
    char multiple[64] = "";
    if (micro > 1) snprintf(multiple, sizeof multiple, " (a multiple of --micro-batch %ld)", micro);
    if (!fit)
        snprintf(use, sizeof use, "--batch-size and --micro-batch %ld or fewer", r->items);
    else if (best == fit)
        snprintf(use, sizeof use, "--batch-size %ld or fewer%s", best, multiple);
    else if (best)
        snprintf(use, sizeof use, "--batch-size %ld or fewer%s (with %ld every step would have lr 0: warm-up)", best,
                 multiple, fit);
    else
        snprintf(use, sizeof use, "--batch-size %ld or fewer%s with --warmup-ratio 0 (a single step of warm-up has lr 0)",
                 fit, multiple);
    ppa_die(2, "%s: %s give%s no full optimizer step of %s (--batch-size, the default): use %s, or more data", who,
            count_of(r->items, r->unit, a, sizeof a), r->items == 1 ? "s" : "", count_of(r->batch, r->unit, b, sizeof b),
            use);
}

void plan_check(const TrainOptions *o, const RunPlan *r) {
    const char *who = options_command_name(o->cmd);
    char a[64];
    check_batch(o, r, who);
    long left = r->total - r->start;
    if (left <= 0 && !r->start)
        ppa_die(2, "%s: the run has no optimizer step (%s, %ld a step, --epochs %d, --max-steps %ld): nothing would be "
                   "trained", who, count_of(r->items, r->unit, a, sizeof a), r->batch, o->epochs, o->max_steps);
    if (left <= 0) { /* a finished run resumed: its output written again, which is all it can do */
        if (dist_rank() == 0)
            fprintf(stderr, "ppa %s: note: --resume %s is at step %ld of %ld: no step is left, so --out gets the "
                            "checkpoint's weights as they are\n", who, o->resume ? o->resume : "", r->start, r->total);
        return;
    }
    if (some_lr(r, r->start, r->warmup, r->total)) return;
    char more[128];
    if (o->max_steps > 0) snprintf(more, sizeof more, "a larger --max-steps");
    else if (r->items > 1) snprintf(more, sizeof more, "more --epochs, or a smaller --batch-size");
    else snprintf(more, sizeof more, "more --epochs");
    char steps[128], b[64];
    if (r->start) snprintf(steps, sizeof steps, "%ld step%s left after step %ld of %ld", left, left == 1 ? "" : "s", r->start,
                           r->total);
    else count_of(left, "step", steps, sizeof steps);
    ppa_die(2, "%s: every optimizer step would have learning rate 0, so no weight would change: %s, and --warmup-ratio "
               "%g of %s rounds up to %s, whose lr climbs from 0 (--lr %g x step / %ld, from step 0): use "
               "--warmup-ratio 0, or more steps (%s)", who, steps, o->warmup_ratio, count_of(r->total, "step", a, sizeof a),
            count_of(r->warmup, "warm-up step", b, sizeof b), r->lr, r->warmup, more);
}
