/* report.h: where a training command reports its numbers besides its JSON Lines log (--report-to, a recipe's
 * report_to): TensorBoard's event files, and the last value of each number for the model card (model_card.h).
 *
 * Every line the command logs (train and reward: --log, default OUT/train_log.jsonl; sft: standard output) goes
 * through report_tee, which hands each whole line to the report: its numeric fields, whatever they are, become
 * scalars of the line's "step", tagged "train/NAME" ("train/objectives/dpo" for a nested object) or, for an
 * evaluation line {"step": S, "eval": {...}}, "eval/NAME". Strings, booleans, lists (--log-lambdas' per-list
 * vectors) and nulls (a non-finite number) are not scalars. So a field added to the log later appears in
 * TensorBoard without more code.
 *
 * With tensorboard (or wandb, whose note says how to import the folder: ppa itself talks to no service) the
 * scalars go to OUT/runs/events.out.tfevents.ppa (io/tfevents.h), one fixed name, one event per logged line,
 * flushed line by line. A resumed run rewrites the file from the log's kept lines (those of the steps up to its
 * checkpoint), then appends: the file matches the log, as a run that never stopped writes it. wall_time is
 * SOURCE_DATE_EPOCH when set (then two identical runs write the same events but for the timing fields), else the
 * time of writing (a resumed run's rewritten events carry the time of the resume). The timing fields (names
 * ending in _s, comm_bytes, gpu_peak_gib) differ between identical runs, as in the log. */
#ifndef PPA_CLI_REPORT_H
#define PPA_CLI_REPORT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "options/options.h"

typedef struct Report Report;

/* What o->report_to asks of command `who` writing into o->out; replay: a log whose lines were logged before this
 * run (a resumed run's log, as kept), or NULL. Dies with exit 2 on a SOURCE_DATE_EPOCH that is no date, 1 when
 * the events file cannot be written. */
Report *report_open(const TrainOptions *o, const char *who, const char *replay);
/* A stream that writes to log (closing it when it is closed, if own) and hands each whole line to the report; a
 * failed write of either fails the stream's write (the events file's reason printed on stderr). */
FILE *report_tee(Report *r, FILE *log, int own);
/* The last value of every scalar logged, by tag in the order first seen, timing fields left out: the final
 * metrics of the model card. */
const cJSON *report_last(const Report *r);
/* The run's summary (OUT/summary.json, the log's closing line {"summary": {...}}): steps (the last logged), lists
 * (sft: rows, and rows_this_run, rows_per_s) and tokens of every step of the log (a resumed run's earlier steps included), the last train loss,
 * this run's steps and lists, the final eval line's numbers (final_eval) and the best one's (best_eval) (highest ndcg, else lowest loss),
 * each with its step (null without --eval-data), then runtime_s (this process's), lists_per_s and tokens_per_s of
 * this run (timings: they differ between identical runs). The caller frees it. */
cJSON *report_summary(const Report *r, double runtime_s);
/* The summary at the end of a training command: the log's closing line {"summary": {...}} written to log (the
 * tee), DIR/summary.json (atomically) and one line on stderr. Dies with exit 1 when a write fails. */
void report_finish(Report *r, FILE *log, const char *dir, double runtime_s);
/* 1 if a field of this name is a timing (differs between identical runs) */
int report_is_timing(const char *name);
/* Closes the events file (dies with exit 1 when its last write fails) and frees r (NULL: nothing). */
void report_close(Report *r);

#endif
