/* cleanup.h: a temporary folder that an interrupted command removes. While one is registered, SIGINT, SIGTERM and
 * SIGHUP remove its files (a flat folder: files only) and the folder, then end the process as the signal would
 * (status 128 + N). A signal the process ignores when this is called stays ignored. The handler uses only async-signal-safe calls (open, getdents64, unlinkat, rmdir). */
#ifndef PPA_CLEANUP_H
#define PPA_CLEANUP_H

/* registers dir (copied; at most 4095 bytes) until cleanup_forget; one at a time */
void cleanup_on_signal(const char *dir);
/* the folder is done with (renamed into place, or removed by the caller): signals act as before */
void cleanup_forget(void);

#endif
