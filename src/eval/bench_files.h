/* bench_files.h: the files the general benchmarks' judges read, as their
 * own generation scripts write them:
 *   AlpacaEval (`alpaca_eval --model_outputs FILE`): a JSON array, one object
 *     per instruction in input order, every input field as given (in its
 *     order) with "output" (the response) and "generator" (the model's name)
 *     set in place, or added at the end when absent;
 *   MT-Bench (FastChat's fastchat/llm_judge/gen_model_answer.py, read by
 *     gen_judgment.py from data/mt_bench/model_answer/MODEL.jsonl): one JSON
 *     object a line, {"question_id", "answer_id", "model_id", "choices":
 *     [{"index": j, "turns": [answer, ...]}, ...], "tstamp"}.
 * Pure formatting: no model here. */
#ifndef PPA_BENCH_FILES_H
#define PPA_BENCH_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* FastChat's sampling temperature of an MT-Bench category (temperature_config
 * in fastchat/llm_judge/common.py): writing and roleplay 0.7; extraction,
 * math, coding, reasoning and arena-hard-200 0.0; stem and humanities 0.1;
 * any other category (or none) 0.7, as gen_model_answer.py falls back. */
double mtbench_temperature(const char *category);

/* A deterministic stand-in for FastChat's answer_id (shortuuid.uuid(): 22
 * characters of shortuuid's 57-letter alphabet, about 128 bits): the same
 * alphabet and length, from a hash of the run's seed, the model id, the
 * question's line and its question_id as printed. out: 23 bytes. */
void mtbench_answer_id(char *out, uint64_t seed, const char *model_id, long line, const char *question_id);

/* The time written as "tstamp" (time.time() in FastChat): SOURCE_DATE_EPOCH
 * when it is set (reproducible bytes), else now. 0, or -1 with why in err. */
int bench_tstamp(double *t, char *err, size_t errlen);

/* One answer line. text[j * n_turns + t] (len[...] bytes) is choice j's
 * answer to turn t; question_id is printed as given (a number or a string). */
void mtbench_write_answer(FILE *f, const cJSON *question_id, const char *answer_id, const char *model_id,
                          char *const *text, const size_t *len, int n_choices, int n_turns, double tstamp);

/* Element i of n of an AlpacaEval array: "[\n" before the first, ",\n"
 * between, "\n]\n" after the last (n = 0: "[]\n" alone, with source NULL). */
void alpaca_write_element(FILE *f, const cJSON *source, const char *output, size_t len, const char *generator, long i,
                          long n);

#endif
