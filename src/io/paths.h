/* paths.h: an output never overwrites an input. A command lists the paths
 * its options name, each with its role, and paths_check refuses, before any
 * work, an output that resolves to one of its inputs: the same file by
 * device and inode (so links, "..", and other spellings count too), a file
 * of an input folder (--log naming the model's model.safetensors), an input
 * folder itself, or an input file standing in an output folder under a name
 * the command writes there (--out OUT with --data OUT/train_log.jsonl). A
 * cache is read when it exists and written when it does not: it is checked
 * as an output. */
#ifndef PPA_PATHS_H
#define PPA_PATHS_H

#include <stddef.h>

typedef enum {
    PATH_IN_FILE,  /* read */
    PATH_IN_DIR,   /* a folder whose files are read (a model, an adapter, a checkpoint) */
    PATH_OUT_FILE, /* written (replaced) */
    PATH_OUT_DIR,  /* a folder written into: the files named by PathUse.writes */
} PathRole;

typedef struct {
    const char *option; /* "--data", or "standard output" */
    const char *path;   /* NULL or "-": not a file (stdin / stdout), skipped */
    PathRole role;
    const char *const *writes; /* PATH_OUT_DIR: fnmatch patterns of the names written in it, NULL-terminated */
} PathUse;

/* 0, or -1 with "--log D.jsonl is the same file as --data D.jsonl: ..." in err. */
int paths_check(const PathUse *uses, int n, char *err, size_t errlen);

/* Adds standard output, when it is a regular file (a shell redirection), to uses[*n] as an output (uses must have
 * room for one more). */
void paths_add_stdout(PathUse *uses, int *n);
/* paths_check of one input file (option, path; NULL: stdin) against standard output: for the commands that read one
 * file and print (ppa loss, ppa tokenize). */
int paths_check_stdout(const char *option, const char *path, char *err, size_t errlen);

#endif
