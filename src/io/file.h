/* file.h: the checked ways ppa opens what a user gives it.
 *
 * Model, tokenizer, config, recipe, template and checkpoint files are opened
 * only when they are regular files: a FIFO, a device or a socket in their
 * place is refused at once (the open itself never blocks), so that a special
 * file never hangs a command. Data files that docs/commands.md says may be a pipe
 * (ppa loss --input, ppa judge --data -) are opened by their commands as
 * they are.
 *
 * One writer per output folder: a run that writes into a folder holds an
 * flock on FOLDER/.ppa.lock for its whole life; a second run on the same
 * folder is refused naming the first one's pid; the kernel drops the lock
 * when its process dies, so a stale lock file is simply taken over.
 *
 * Outputs never follow links: every file ppa writes is created by
 * atomic_write (atomic.h: a new file renamed into place) or opened by
 * file_create, with O_NOFOLLOW; a link found in an output's place is refused
 * naming it. Files are created with mode 0666 and folders 0777, less the
 * umask: one rule for every output. */
#ifndef PPA_FILE_H
#define PPA_FILE_H

#include <stddef.h>
#include <stdio.h>

/* fopen(path, "rb") for a regular file; NULL with "PATH: why" in err (also
 * "PATH: is a FIFO, not a regular file"). */
FILE *file_open_regular(const char *path, char *err, size_t errlen);
/* The whole of a regular file (as file_open_regular opens it), NUL-terminated and malloc'd, its length in *len
 * (len may be NULL); NULL with "PATH: why" in err. */
char *file_read_all(const char *path, size_t *len, char *err, size_t errlen);
/* 0 if path is a regular file (following links), else -1 with "PATH: why" in err */
int file_check_regular(const char *path, char *err, size_t errlen);
/* A model or tokenizer folder given as a Hugging Face Hub id: -1 when path does not exist and looks like ORG/NAME,
 * with "PATH: no such folder" and how to download it in err; 0 otherwise (an existing path, or any other missing
 * one, is left to its reader's own messages). ppa reads local folders only. */
int file_refuse_hub_id(const char *path, char *err, size_t errlen);
/* "a FIFO", "a directory", "a character device", ... for a stat mode */
const char *file_kind(unsigned mode);

/* The one way to open an output in place (a log appended to, a file of a folder being built): O_WRONLY | O_CREAT
 * | O_NOFOLLOW, truncated or appended to; NULL with "PATH: is a symbolic link: ..." (or the reason) in err. */
FILE *file_create(const char *path, int append, char *err, size_t errlen);

/* Takes dir's lock (dir must exist) for `who` ("train"); the lock lasts until
 * the process exits. 0, or -1 with the reason in err (held by another
 * process: "DIR is in use by ppa train (pid N) ..."). */
int file_lock_folder(const char *dir, const char *who, char *err, size_t errlen);

#endif
