/* setup.h: a model command's options parsed (options/options.h) and the threads set. */
#ifndef PPA_CLI_SETUP_H
#define PPA_CLI_SETUP_H

#include "options/options.h"

/* Parses a model command's options (options/options.h). --help prints usage
 * and the command's option lines and exits 0, --list-objectives the names:
 * an error dies with "CMD: message" and exit status 2. Sets the threads. */
void setup_options(OptCommand cmd, const char *usage, int argc, char **argv, TrainOptions *o);
/* Compute threads for matrix products and OpenMP loops; 0 leaves the default (all cores). */
void setup_threads(int n);

/* The command's --device (options/options.h) resolved to DEVICE_CPU or DEVICE_CUDA, said in its first log line,
 * or a death naming why it cannot run where --device asks. setup_options calls it. */
void setup_device(TrainOptions *o);
/* tokens per forward batch when scoring: --batch-tokens, else the device's default */
long setup_batch_tokens(const TrainOptions *o);

#endif
