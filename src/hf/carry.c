/* carry.c: the files an output folder carries from its input (carry.h). */
#include "hf/carry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "io/atomic.h"
#include "io/file.h"

const char *const CARRY_TOKENIZER_FILES[] = {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                                             "chat_template.json", "special_tokens_map.json", "added_tokens.json",
                                             "tokenizer.model", "vocab.json", "merges.txt", NULL};

char *carry_folder_of(const char *path) {
    struct stat sb;
    if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) return strdup(path);
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int carry_copy(const char *src, const char *dst, char *err, size_t errlen) {
    size_t n;
    char *bytes = file_read_all(src, &n, err, errlen);
    if (!bytes) return -1;
    int rc = atomic_write_bytes(dst, bytes, n, err, errlen);
    free(bytes);
    return rc;
}

/* 1 when path is there and a readable regular file (a link to one is read through), 0 when it is not there (a
 * dangling link is there: unreadable), -1 with err naming it */
static int readable(const char *path, char *err, size_t errlen) {
    struct stat sb;
    char why[4400];
    if (lstat(path, &sb) && errno == ENOENT) return 0;
    FILE *f = file_open_regular(path, why, sizeof why); /* opened, not read: a FIFO never blocks */
    if (!f) return ppa_fail(err, errlen, "%s (the folders ppa writes carry this file from their input)", why);
    fclose(f);
    return 1;
}

int carry_file(const char *from, const char *to, const char *name, char *err, size_t errlen) {
    char *src = ppa_path_join(from, name), *dst = ppa_path_join(to, name);
    int rc = readable(src, err, errlen);
    if (rc == 1 && carry_copy(src, dst, err, errlen)) rc = -1;
    free(src), free(dst);
    return rc;
}

static int check_one(const char *dir, const char *name, char *err, size_t errlen) {
    char *path = ppa_path_join(dir, name);
    int rc = readable(path, err, errlen);
    free(path);
    return rc < 0 ? -1 : 0;
}

int carry_check(const char *dir, char *err, size_t errlen) {
    for (int i = 0; CARRY_TOKENIZER_FILES[i]; i++)
        if (check_one(dir, CARRY_TOKENIZER_FILES[i], err, errlen)) return -1;
    return check_one(dir, CARRY_GENERATION_CONFIG, err, errlen);
}
