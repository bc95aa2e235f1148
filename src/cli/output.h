/* output.h: a command's output under several ranks: every rank's part gathered in
 * rank order and written once. */
#ifndef PPA_CLI_OUTPUT_H
#define PPA_CLI_OUTPUT_H

#include <stddef.h>

/* Under several ranks: every rank's output (mine, n bytes) gathered in rank order, written by rank 0 to out
 * atomically, or to stdout when out is NULL; dies with "WHO: ..." when it cannot. Every rank must call it. */
void output_gathered(const char *mine, size_t n, const char *out, const char *who);

#endif
