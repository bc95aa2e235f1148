/* pair_template.c: the pair judge's template files (pair_judge.h): reading,
 * checking and substitution. Not here: tokenizing and the model
 * (pair_judge.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "io/file.h"
#include "judge/pair_judge.h"

enum { SLOT_PROMPT, SLOT_A, SLOT_B, N_SLOTS };
static const char *const SLOT_NAMES[N_SLOTS] = {"prompt", "response_A", "response_B"};

struct PairTemplate {
    char *buf; /* the literal pieces, escapes resolved, back to back */
    size_t off[N_SLOTS + 1]; /* piece i starts at buf + off[i] */
    size_t len[N_SLOTS + 1]; /* piece i: before the first placeholder, between them, after the last */
    int order[N_SLOTS]; /* the placeholders in order of appearance */
};

static long line_of(const char *s, size_t at) {
    long line = 1;
    for (size_t i = 0; i < at; i++) line += s[i] == '\n';
    return line;
}

/* offset of the first byte that is not valid UTF-8 (overlongs, surrogates
 * and code points above U+10FFFF are invalid), or n */
static size_t utf8_bad(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 2, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 3, min = 0x10000;
        else
            return i;
        unsigned cp = c & (0x3F >> need);
        for (unsigned k = 1; k <= need; k++) {
            if (i + k >= n || (s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += need + 1;
    }
    return n;
}

/* bytes no template may hold: checked before parsing so that a message
 * names the first offending line */
static int check_bytes(const char *s, size_t n, const char *name, char *err, size_t errlen) {
    const char *nul = memchr(s, 0, n), *cr = memchr(s, '\r', n);
    if (nul)
        return ppa_fail(err, errlen, "%s:%ld: a NUL byte: a template is text", name, line_of(s, (size_t)(nul - s)));
    if (cr)
        return ppa_fail(
            err, errlen,
            "%s:%ld: a carriage return (\\r): the template is tokenized as written; save it with Unix line ends", name,
            line_of(s, (size_t)(cr - s)));
    size_t bad = utf8_bad((const unsigned char *)s, n);
    if (bad < n) return ppa_fail(err, errlen, "%s:%ld: invalid UTF-8 at byte %zu", name, line_of(s, bad), bad);
    return 0;
}

static int slot_of(const char *name, size_t n) {
    for (int k = 0; k < N_SLOTS; k++)
        if (strlen(SLOT_NAMES[k]) == n && !memcmp(SLOT_NAMES[k], name, n)) return k;
    return -1;
}

/* s[at] == '{' not followed by '{': the placeholder's slot, its end in *end;
 * -1 with the message otherwise */
static int placeholder(const char *s, size_t n, size_t at, size_t *end, const char *name, char *err, size_t errlen) {
    size_t j = at + 1;
    while (j < n && s[j] != '}' && s[j] != '{' && s[j] != '\n') j++;
    long line = line_of(s, at);
    if (j >= n || s[j] != '}')
        return ppa_fail(err, errlen, "%s:%ld: a '{' without its '}' (write {{ for a literal brace)", name, line);
    int k = slot_of(s + at + 1, j - at - 1);
    if (k < 0) {
        int shown = j - at - 1 > 40 ? 40 : (int)(j - at - 1);
        return ppa_fail(err, errlen,
                        "%s:%ld: unknown placeholder {%.*s%s} (the placeholders are {prompt}, {response_A} and "
                        "{response_B}; write {{ and }} for literal braces)",
                        name, line, shown, s + at + 1, shown < (int)(j - at - 1) ? "..." : "");
    }
    *end = j + 1;
    return k;
}

/* the literal pieces (into t->buf) and the placeholders of s [n] */
static int split(PairTemplate *t, const char *s, size_t n, const char *name, char *err, size_t errlen) {
    size_t w = 0, seen_at[N_SLOTS];
    int count = 0;
    t->off[0] = 0;
    for (size_t i = 0; i < n;) {
        if ((s[i] == '{' || s[i] == '}') && i + 1 < n && s[i + 1] == s[i]) {
            t->buf[w++] = s[i], i += 2;
        } else if (s[i] == '}') {
            return ppa_fail(err, errlen, "%s:%ld: a lone '}' (write }} for a literal brace)", name, line_of(s, i));
        } else if (s[i] == '{') {
            size_t end = i;
            int k = placeholder(s, n, i, &end, name, err, errlen);
            if (k < 0) return -1;
            for (int q = 0; q < count; q++)
                if (t->order[q] == k)
                    return ppa_fail(err, errlen,
                                    "%s:%ld: {%s} appears a second time (first on line %ld); each "
                                    "placeholder appears exactly once",
                                    name, line_of(s, i), SLOT_NAMES[k], line_of(s, seen_at[k]));
            t->len[count] = w - t->off[count];
            t->order[count] = k, seen_at[k] = i, count++;
            t->off[count] = w;
            i = end;
        } else {
            t->buf[w++] = s[i++];
        }
    }
    t->len[count] = w - t->off[count];
    for (int k = 0; k < N_SLOTS && count < N_SLOTS; k++) {
        int found = 0;
        for (int q = 0; q < count; q++) found |= t->order[q] == k;
        if (!found)
            return ppa_fail(err, errlen,
                            "%s: the placeholder {%s} is missing (each of {prompt}, {response_A} "
                            "and {response_B} appears exactly once)",
                            name, SLOT_NAMES[k]);
    }
    return 0;
}

PairTemplate *pair_template_parse(const char *text, size_t len, const char *name, char *err, size_t errlen) {
    if (check_bytes(text, len, name, err, errlen)) return NULL;
    if (len && text[len - 1] == '\n') len--; /* the editor's final line end */
    PairTemplate *t = xcalloc(1, sizeof *t);
    t->buf = xmalloc(len + 1);
    if (split(t, text, len, name, err, errlen)) {
        pair_template_free(t);
        return NULL;
    }
    return t;
}

PairTemplate *pair_template_load(const char *path, char *err, size_t errlen) {
    FILE *f = file_open_regular(path, err, errlen);
    if (!f) return NULL;
    size_t cap = 1 << 12, n = 0, k;
    char *buf = xmalloc(cap);
    while ((k = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += k) == cap) buf = xrealloc(buf, cap *= 2);
    int bad = ferror(f), e = errno;
    fclose(f);
    PairTemplate *t = NULL;
    if (bad)
        ppa_fail(err, errlen, "%s: read error: %s", path, strerror(e));
    else
        t = pair_template_parse(buf, n, path, err, errlen);
    free(buf);
    return t;
}

void pair_template_free(PairTemplate *t) {
    if (!t) return;
    free(t->buf);
    free(t);
}

char *pair_template_render(const PairTemplate *t, const char *prompt, const char *response_a, const char *response_b,
                           size_t *len, unsigned char **mask) {
    const char *val[N_SLOTS] = {prompt, response_a, response_b};
    size_t vlen[N_SLOTS], total = 0;
    for (int k = 0; k < N_SLOTS; k++) vlen[k] = strlen(val[k]), total += vlen[k];
    for (int q = 0; q <= N_SLOTS; q++) total += t->len[q];
    char *out = xmalloc(total + 1), *w = out;
    unsigned char *mk = mask ? xmalloc(total + 1) : NULL, *wm = mk;
    for (int q = 0; q <= N_SLOTS; q++) {
        memcpy(w, t->buf + t->off[q], t->len[q]), w += t->len[q];
        if (mk) memset(wm, 0, t->len[q]), wm += t->len[q];
        if (q < N_SLOTS) {
            size_t n = vlen[t->order[q]];
            memcpy(w, val[t->order[q]], n), w += n;
            if (mk) memset(wm, 1, n), wm += n;
        }
    }
    *w = 0;
    if (len) *len = total;
    if (mask) *mask = mk;
    return out;
}
