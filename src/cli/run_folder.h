/* run_folder.h: the --out folder of a training command (train, reward, sft):
 * created with its parents, refused when it already holds a model or
 * checkpoints (unless resuming), locked for the run (io/file.h: a second run
 * on it is refused naming the first's pid), and the final model published
 * into it file by file, config.json last. Under MPI only rank 0 calls these. */
#ifndef PPA_CLI_RUN_FOLDER_H
#define PPA_CLI_RUN_FOLDER_H

/* Creates, checks and locks out for command `who`; dies with exit 2 when it cannot. */
void run_folder_open(const char *out, int resuming, const char *who);
/* Moves the finished model folder `from` (a fresh folder beside out's files) into out, config.json (an adapter's
 * config) last, and removes from; dies with exit 1 when it cannot. */
void run_folder_publish(const char *from, const char *out, const char *who);

#endif
