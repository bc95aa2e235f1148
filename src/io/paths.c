/* paths.c: outputs against inputs by device and inode (paths.h). */
#include "io/paths.h"

#include <dirent.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"

static int same(const struct stat *a, const struct stat *b) { return a->st_dev == b->st_dev && a->st_ino == b->st_ino; }

static int is_output(PathRole r) { return r == PATH_OUT_FILE || r == PATH_OUT_DIR; }

static int given(const PathUse *u) { return u->path && u->path[0] && strcmp(u->path, "-"); }

/* "--log L is the same file as --data D: ...", "--out G is the file model.safetensors of --model M: ..." */
static int refuse(char *err, size_t errlen, const PathUse *out, const PathUse *in, const char *how, const char *name) {
    if (!out->path[0] || !strcmp(out->option, "standard output")) /* a redirection: its path says nothing */
        return ppa_fail(err, errlen, "standard output is the %s %s %s %s: an output never replaces an input; redirect "
                        "it elsewhere", how, name, in->option, in->path);
    return ppa_fail(err, errlen, "%s %s is the %s %s %s %s: an output never replaces an input; choose another %s",
                    out->option, out->path, how, name, in->option, in->path, out->option);
}

/* the output file o (existing: st) against every regular file directly in input folder in */
static int file_in_folder(const PathUse *o, const struct stat *st, const PathUse *in, char *err, size_t errlen) {
    DIR *d = opendir(in->path);
    if (!d) return 0;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        char *p = ppa_path_join(in->path, e->d_name);
        struct stat sb;
        if (!stat(p, &sb) && same(&sb, st)) {
            char *of = xmalloc(strlen(e->d_name) + 4);
            sprintf(of, "%s of", e->d_name);
            rc = refuse(err, errlen, o, in, "file", of);
            free(of);
        }
        free(p);
    }
    closedir(d);
    return rc;
}

/* does the input (file or folder) stand directly in output folder o (st) under a name o's command writes? */
static int written_in(const PathUse *o, const struct stat *st, const PathUse *in, char *err, size_t errlen) {
    if (!o->writes) return 0;
    char *copy = strdup(in->path), *copy2 = strdup(in->path);
    const char *name = basename(copy2);
    struct stat parent;
    int rc = 0;
    if (!stat(dirname(copy), &parent) && same(&parent, st))
        for (const char *const *w = o->writes; *w && !rc; w++)
            if (!fnmatch(*w, name, 0))
                rc = ppa_fail(err, errlen, "%s %s writes %s, which is %s %s: an output never replaces an input; choose "
                              "another %s, or move the input", o->option, o->path, name, in->option, in->path, o->option);
    free(copy), free(copy2);
    return rc;
}

/* pass 0: the same file or folder; pass 1: inside each other (the plainest reason is given first) */
static int check_pair(const PathUse *o, const PathUse *in, int pass, char *err, size_t errlen) {
    struct stat so, si;
    if (stat(o->path, &so) || stat(in->path, &si)) return 0; /* a missing output is new; a missing input fails later */
    if (pass == 0)
        return same(&so, &si) ? refuse(err, errlen, o, in, "same", S_ISDIR(si.st_mode) ? "folder as" : "file as") : 0;
    if (o->role == PATH_OUT_FILE && in->role == PATH_IN_DIR && S_ISDIR(si.st_mode)) return file_in_folder(o, &so, in, err, errlen);
    if (o->role == PATH_OUT_DIR && S_ISDIR(so.st_mode)) return written_in(o, &so, in, err, errlen);
    return 0;
}

int paths_check(const PathUse *uses, int n, char *err, size_t errlen) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            if (!is_output(uses[i].role) || !given(&uses[i])) continue;
            for (int j = 0; j < n; j++)
                if (!is_output(uses[j].role) && given(&uses[j]) && check_pair(&uses[i], &uses[j], pass, err, errlen))
                    return -1;
        }
    return 0;
}

void paths_add_stdout(PathUse *uses, int *n) {
    struct stat sb; /* `>` has emptied such a file already, `>>` would append to it */
    if (!fstat(STDOUT_FILENO, &sb) && S_ISREG(sb.st_mode))
        uses[(*n)++] = (PathUse){"standard output", "/dev/stdout", PATH_OUT_FILE, NULL};
}

int paths_check_stdout(const char *option, const char *path, char *err, size_t errlen) {
    PathUse use[2] = {{option, path, PATH_IN_FILE, NULL}};
    int n = 1;
    paths_add_stdout(use, &n);
    return paths_check(use, n, err, errlen);
}
