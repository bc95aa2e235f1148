/* file.c: regular-file opening and the output folder's lock (file.h). */
#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "core/text.h"

const char *file_kind(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "a special file";
    }
}

/* ORG/NAME: two names of letters, digits, '.', '_' and '-' around one '/', neither starting with '.' or '-' */
static int looks_like_hub_id(const char *s) {
    int parts = 0;
    for (const char *p = s;; p++) {
        size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
        if (!n || p[0] == '.' || p[0] == '-') return 0;
        parts++, p += n;
        if (!*p) return parts == 2;
        if (*p != '/') return 0;
    }
}

int file_refuse_hub_id(const char *path, char *err, size_t errlen) {
    struct stat sb;
    if (!stat(path, &sb) || errno != ENOENT || !looks_like_hub_id(path)) return 0;
    const char *name = strchr(path, '/') + 1;
    return ppa_fail(err, errlen, "%s: no such folder. ppa reads local Hugging Face folders, and %s looks like a Hub id: "
                    "download it first, e.g. `huggingface-cli download %s --local-dir %s` (or `git clone "
                    "https://huggingface.co/%s`), then give the folder (%s)", path, path, path, name, path, name);
}

int file_check_regular(const char *path, char *err, size_t errlen) {
    struct stat sb;
    if (stat(path, &sb)) return ppa_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return ppa_fail(err, errlen, "%s: is %s, not a regular file", path, file_kind(sb.st_mode));
    return 0;
}

FILE *file_open_regular(const char *path, char *err, size_t errlen) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the mode is checked on the open file, not the name */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ppa_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno)), NULL;
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        int e = errno;
        if (!S_ISREG(sb.st_mode)) ppa_fail(err, errlen, "%s: is %s, not a regular file", path, file_kind(sb.st_mode));
        else ppa_fail(err, errlen, "%s: cannot open: %s", path, strerror(e));
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        ppa_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

char *file_read_all(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = file_open_regular(path, err, errlen);
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = xmalloc(cap + 1);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) buf = xrealloc(buf, (cap *= 2) + 1);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return ppa_fail(err, errlen, "%s: read error", path), NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

FILE *file_create(const char *path, int append, char *err, size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (append ? O_APPEND : O_TRUNC), 0666);
    if (fd < 0) {
        struct stat st;
        if (errno == ELOOP && !lstat(path, &st) && S_ISLNK(st.st_mode))
            ppa_fail(err, errlen, "%s: is a symbolic link: ppa never writes through a link; remove it", path);
        else
            ppa_fail(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return NULL;
    }
    FILE *f = fdopen(fd, append ? "ab" : "wb");
    if (!f) ppa_fail(err, errlen, "%s: cannot write: %s", path, strerror(errno)), close(fd);
    return f;
}

int file_lock_folder(const char *dir, const char *who, char *err, size_t errlen) {
    char *path = ppa_path_join(dir, ".ppa.lock");
    /* kept open (and so locked) until the process exits; O_CLOEXEC: no child inherits it */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        if (errno == ELOOP)
            ppa_fail(err, errlen, "%s: the folder's lock %s is a symbolic link: ppa never writes through a link; remove it",
                     dir, path);
        else
            ppa_fail(err, errlen, "%s: cannot create the folder's lock %s: %s", dir, path, strerror(errno));
        free(path);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        char raw[128] = "", text[4 * sizeof raw];
        ssize_t n = e == EWOULDBLOCK ? pread(fd, raw, sizeof raw - 1, 0) : -1;
        raw[n > 0 ? n : 0] = 0;
        raw[strcspn(raw, "\n")] = 0; /* the holder's line, its bytes escaped: the file may be anyone's */
        text_printable(text, sizeof text, raw, strlen(raw));
        if (e == EWOULDBLOCK)
            ppa_fail(err, errlen, "%s is in use by %s (%s holds %s): one run writes a folder at a time; wait for it to "
                     "finish, or choose another --out", dir, text[0] ? text : "another ppa process",
                     text[0] ? "it" : "that process", path);
        else
            ppa_fail(err, errlen, "%s: cannot lock %s: %s", dir, path, strerror(e));
        close(fd), free(path);
        return -1;
    }
    /* the holder's name for a second run's message; a stale one from a dead process is simply overwritten */
    char text[128];
    int n = snprintf(text, sizeof text, "ppa %s (pid %ld)\n", who, (long)getpid());
    if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)n, 0) != n) {
        ppa_fail(err, errlen, "%s: cannot write the folder's lock %s: %s", dir, path, strerror(errno));
        close(fd), free(path);
        return -1;
    }
    free(path);
    return 0;
}
