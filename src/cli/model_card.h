/* model_card.h: the README.md a training command (train, reward, sft) writes into its output folder, in the
 * Hugging Face Hub's format as TRL writes one: YAML front matter (base_model, datasets, library_name: ppa, the
 * base's license when its own card states one, tags), then what the model is, the objective and its options, the
 * data's names and sizes, the final value of every logged number but the timings (cli/report.h), the command
 * line, shell-quoted, and the versions that made it. The same run gives the same bytes.
 *
 * The base model's README.md is its own card, describing another model: it is never copied over the new one;
 * only its license (license, license_name, license_link of its front matter) is carried, since the fine-tuned
 * weights are under the base's terms. ppa merge writes no card (it makes no new training). */
#ifndef PPA_CLI_MODEL_CARD_H
#define PPA_CLI_MODEL_CARD_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "data/rows.h"
#include "options/options.h"

typedef struct {
    const TrainOptions *o;
    int argc;                   /* the command's arguments, argv[0] its name ("train") */
    char *const *argv;
    const DataSet *data, *eval; /* the rows trained on, the held-out ones (NULL: none), as prepared */
    const cJSON *metrics;       /* report_last: tag -> final value */
    long steps;                 /* optimizer steps of the whole run */
    const char *kernels;        /* the matrix products used (cli/load.h load_kernels) */
} ModelCard;

/* Writes DIR/README.md atomically; 0, or -1 with "PATH: why" in err. A base card that cannot be read is a note on
 * stderr, not an error. */
int model_card_write(const char *dir, const ModelCard *c, char *err, size_t errlen);

#endif
