/* run_folder.c: a training command's --out folder (run_folder.h). */
#include "cli/run_folder.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "io/atomic.h"
#include "io/file.h"

/* mkdir -p */
static int make_dirs(const char *path) {
    char *p = strdup(path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0777) && errno != EEXIST) return free(p), -1;
            *s = '/';
        }
    int rc = mkdir(p, 0777) && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

void run_folder_open(const char *out, int resuming, const char *who) {
    char err[4400];
    struct stat sb;
    if (make_dirs(out) || stat(out, &sb)) /* a path through a file is the user's; a refusal of the system is runtime */
        ppa_die(errno == ENOTDIR || errno == ENAMETOOLONG || errno == ELOOP ? 2 : 1, "%s: cannot create --out %s: %s", who,
                out, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) ppa_die(2, "%s: --out %s is %s, not a folder", who, out, file_kind(sb.st_mode));
    /* before anything is read or written there: a second run must not see the first's files half made */
    if (file_lock_folder(out, who, err, sizeof err)) ppa_die(2, "%s: %s", who, err);
    if (resuming) return;
    DIR *d = opendir(out);
    if (!d) ppa_die(1, "%s: cannot open --out %s: %s", who, out, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strcmp(e->d_name, "config.json") || !strcmp(e->d_name, "adapter_config.json") ||
            !strncmp(e->d_name, "checkpoint-", 11))
            ppa_die(2, "%s: %s already holds a model or checkpoints (%s): %schoose another --out", who, out, e->d_name,
                    strcmp(who, "sft") ? "continue with --resume OUT/checkpoint-STEP, or " : "");
    closedir(d);
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

void run_folder_publish(const char *from, const char *out, const char *who) {
    char *probe = ppa_path_join(from, "config.json");
    const char *last = exists(probe) ? "config.json" : "adapter_config.json";
    free(probe);
    DIR *d = opendir(from);
    if (!d) ppa_die(1, "%s: %s: %s", who, from, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, last)) continue;
        char *a = ppa_path_join(from, e->d_name), *b = ppa_path_join(out, e->d_name);
        if (rename(a, b)) ppa_die(1, "%s: cannot move %s to %s: %s", who, a, b, strerror(errno));
        free(a), free(b);
    }
    closedir(d);
    char *a = ppa_path_join(from, last), *b = ppa_path_join(out, last), err[512];
    if (rename(a, b) || rmdir(from)) ppa_die(1, "%s: cannot finish %s: %s", who, out, strerror(errno));
    if (fsync_parent(b, err, sizeof err)) ppa_die(1, "%s", err);
    free(a), free(b);
}
