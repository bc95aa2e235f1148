/* jinja_call.c: finding the chat-template renderer's builtins by name (jinja_builtins.c's table) and calling
 * them, the arguments bound as Python binds them: positional, then by keyword, unknown keywords and extra
 * arguments refused. */
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "template/internal.h"

int jb_find(BuiltinKind k, const char *name, size_t n) {
    for (size_t i = 0; i < JB_N; i++)
        if (JB_TABLE[i].kind == k && strlen(JB_TABLE[i].name) == n && !memcmp(JB_TABLE[i].name, name, n)) return (int)i;
    return -1;
}

const char *jb_name(int index) { return JB_TABLE[index].name; }

int jb_method_of(Arena *a, JVal self, JStr name, JVal *out) {
    for (size_t i = 0; i < JB_N; i++)
        if (JB_TABLE[i].kind == B_METHOD && JB_TABLE[i].receiver == self.t && strlen(JB_TABLE[i].name) == name.n &&
            !memcmp(JB_TABLE[i].name, name.s, name.n)) {
            JVal *s = ar_alloc(a, sizeof *s);
            *s = self;
            *out = (JVal){.t = V_METHOD, .fn = (uint8_t)i, .self = s};
            return 1;
        }
    return 0;
}

/* Python's binding of args and keywords to the builtin's parameters */
JVal jb_call(Ctx *c, const JNode *at, int index, JVal self, JVal *args, int nargs, const JStr *kwn, JVal *kwv, int nkw) {
    const Builtin *b = &JB_TABLE[index];
    const char *names[JB_MAX_PARAMS + 1];
    int np = 0, npos = -1, kwstar = 0;
    char buf[64], *save;
    snprintf(buf, sizeof buf, "%s", b->params);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "*")) npos = np;
        else if (!strcmp(tok, "**")) kwstar = 1;
        else names[np++] = tok;
    }
    int star = npos >= 0;
    if (!star) npos = np;
    JVal *p[JB_MAX_PARAMS] = {NULL};
    int used = nargs < npos ? nargs : npos;
    for (int i = 0; i < used; i++) p[i] = &args[i];
    if (nargs > npos && !star)
        jj_fail(c->ar, at->line, "%s() takes at most %d argument%s (%d given)", b->name, npos, npos == 1 ? "" : "s", nargs);
    for (int k = 0; k < nkw && !kwstar; k++) {
        int i = 0;
        while (i < np && !(strlen(names[i]) == kwn[k].n && !memcmp(names[i], kwn[k].s, kwn[k].n))) i++;
        if (i == np) jj_fail(c->ar, at->line, "%s() got an unexpected keyword argument '%.*s'", b->name, (int)kwn[k].n, kwn[k].s);
        if (p[i]) jj_fail(c->ar, at->line, "%s() got multiple values for argument '%s'", b->name, names[i]);
        p[i] = &kwv[k];
    }
    for (int i = 0; i < b->required; i++)
        if (!p[i]) jj_fail(c->ar, at->line, "%s() is missing its argument '%s'", b->name, names[i]);
    if (kwstar) return b->fn(c, at, self, p, kwv, nkw); /* keywords as given (at->kwn names them) */
    return b->fn(c, at, self, p, args + used, nargs - used);
}
