/* internal.h: the pieces of the chat-template interpreter (jinja.h):
 * an arena, values, tokens, the syntax tree, and the calls between the
 * parser (jinja_parse.c), the values (jinja_value.c), the evaluator
 * (jinja_eval.c) and the filters, tests and methods (jinja_builtins.c).
 * Errors leave through a longjmp to the one entry point that set it, so the
 * arena, which owns everything, is all there is to free. */
#ifndef PPA_JINJA_INTERNAL_H
#define PPA_JINJA_INTERNAL_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/buffers.h"
#include "template/jinja.h"

/* ---- arena (jinja_value.c) ---- */
typedef struct ArBlock ArBlock;
typedef struct {
    ArBlock *head;
    size_t total, limit; /* bytes taken; past limit the user's jmp_buf is taken */
    jmp_buf *jb;
    char *err;
    size_t errlen;
} Arena;
void *ar_alloc(Arena *a, size_t n); /* zeroed */
void ar_free(Arena *a);
/* printf into err, then longjmp(*a->jb): every error of a parse or a render */
_Noreturn void jj_fail(Arena *a, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- values ---- */
typedef struct {
    const char *s;
    const unsigned char *m; /* one flag per byte, 1 = message text; NULL: none is */
    size_t n;
} JStr;

typedef enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT, V_NS, V_FUNC, V_METHOD } VType;
typedef struct JVal JVal;
typedef struct {
    JVal *v;
    size_t n, cap;
    int tuple;
} JList;
typedef struct {
    JStr *k;
    JVal *v;
    size_t n, cap;
} JDict;
struct JVal {
    uint8_t t;
    uint8_t fn; /* V_FUNC, V_METHOD: index in the builtin table */
    union {
        int b;
        int64_t i;
        double f;
        JStr s;     /* V_STR; V_UNDEF: what was looked up, for messages */
        JList *l;   /* V_LIST */
        JDict *d;   /* V_DICT, V_NS */
        JVal *self; /* V_METHOD: the receiver */
    };
};

JVal jv_undef(const char *why); /* why: the message an error on it gives ("'x' is undefined") */
JVal jv_none(void);
JVal jv_bool(int b);
JVal jv_int(int64_t i);
JVal jv_float(double f);
JVal jv_str(JStr s);
JStr js_lit(const char *s); /* a C string, no message text */
JStr js_copy(Arena *a, const char *s, const unsigned char *m, size_t n);
JStr js_cat(Arena *a, JStr x, JStr y);
JList *jl_new(Arena *a, size_t cap);
void jl_push(Arena *a, JList *l, JVal v);
JDict *jd_new(Arena *a);
void jd_set(Arena *a, JDict *d, JStr k, JVal v);
JVal *jd_get(const JDict *d, const char *k, size_t n);

const char *jv_type(JVal v); /* Python's type name, for messages */
int jv_truthy(JVal v);
int jv_eq(JVal x, JVal y);
/* x < y as Python orders them (numbers, strings, lists); fails otherwise */
int jv_less(Arena *a, int line, JVal x, JVal y);
/* str(v): what {{ v }} prints; fails for lists, dicts and functions */
JStr jv_str_of(Arena *a, int line, JVal v);
/* json.dumps(v, ensure_ascii=False, indent=indent) (-1: none): transformers' tojson */
JStr jv_tojson(Arena *a, int line, JVal v, int indent);
/* Python float repr ("0.5", "1e+16", "inf") */
void jv_float_repr(double f, char out[32]);

/* code points: Python's str.isspace, UTF-8 steps */
int py_isspace(uint32_t cp);
size_t js_next(JStr s, size_t i, uint32_t *cp); /* length of the code point at byte i */
size_t js_len(JStr s);                          /* in code points */
/* byte offset of code point k (k <= js_len) */
size_t js_offset(JStr s, size_t k);
JStr js_sub(JStr s, size_t from, size_t to);   /* bytes [from, to) */
/* strip chars (NULL: whitespace) from the left (which & 1) and right (which & 2) */
JStr js_strip(JStr s, const JStr *chars, int which);

/* ---- tokens and syntax tree (jinja_parse.c) ---- */
enum {
    O_NONE, O_ADD, O_SUB, O_MUL, O_DIV, O_FLOORDIV, O_MOD, O_POW, O_TILDE, O_LBRACKET, O_RBRACKET, O_LPAREN, O_RPAREN,
    O_LBRACE, O_RBRACE, O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE, O_ASSIGN, O_DOT, O_COLON, O_PIPE, O_COMMA, O_SEMI,
    O_IN, O_NOTIN /* comparisons only */
};

typedef enum {
    S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_BREAK, S_CONTINUE, S_BODY,
    E_LIT, E_NAME, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_NOT, E_NEG, E_POS, E_BIN, E_AND, E_OR, E_CMP,
    E_COND, E_LIST, E_TUPLE, E_DICT, E_NSREF
} NodeKind;

typedef struct JNode JNode;
struct JNode {
    uint8_t kind, op;
    int line;
    JStr name;           /* E_NAME, E_ATTR, E_NSREF (attribute), builtin names */
    JStr name2;          /* E_NSREF: the namespace variable */
    JVal lit;            /* E_LIT, S_TEXT */
    int builtin;         /* E_FILTER, E_TEST: index in the table */
    JNode *a, *b, *c, *d, *e;
    JNode **args;        /* call arguments, list items, dict keys and values, compared operands */
    int nargs;
    JStr *kwn;           /* keyword arguments */
    JNode **kwv;
    int nkw;
    uint8_t *ops;        /* E_CMP: one per operand after the first */
    JNode *next;         /* the next statement of a body */
};

struct JinjaTemplate {
    Arena arena;
    JNode *body;
};

/* ---- builtins: the functions and their table (jinja_builtins.c), finding and calling them (jinja_call.c) ---- */
typedef struct Ctx Ctx;
typedef enum { B_FILTER, B_TEST, B_METHOD, B_FUNC } BuiltinKind;
#define JB_MAX_PARAMS 4
typedef JVal (*BuiltinFn)(Ctx *c, const JNode *at, JVal self, JVal **p, JVal *rest, int nrest);
typedef struct {
    uint8_t kind;      /* BuiltinKind */
    uint8_t receiver;  /* methods: V_STR or V_DICT */
    const char *name;
    const char *params; /* comma-separated; "*" takes further positional arguments (the names after it are
                         * keyword-only), "**" any keywords */
    int required;
    BuiltinFn fn;
} Builtin;
extern const Builtin JB_TABLE[];
extern const size_t JB_N;
/* index of a builtin of that kind, -1 if ppa lacks it */
int jb_find(BuiltinKind k, const char *name, size_t n);
const char *jb_name(int index);
/* a V_METHOD for receiver self when name is one of its type's methods; 0 if not */
int jb_method_of(Arena *a, JVal self, JStr name, JVal *out);
/* calls builtin index on self with bound arguments (the node gives the line) */
JVal jb_call(Ctx *c, const JNode *at, int index, JVal self, JVal *args, int nargs, const JStr *kwn, JVal *kwv, int nkw);

/* ---- evaluator (jinja_eval.c), for the builtins ---- */
/* what the builtins call back into (select, map, attribute lookups, ...): given to them in their context, so
 * that the evaluator and the builtins do not call each other's functions by name */
typedef struct {
    /* getattr then getitem, as Jinja's sandbox does for obj.name */
    JVal (*getattr)(Ctx *c, int line, JVal obj, JStr name);
    /* apply a test or filter by name to v (select, map, ...) */
    JVal (*apply)(Ctx *c, const JNode *at, BuiltinKind k, JStr name, JVal v, JVal *args, int nargs);
    /* the items a for loop or a filter walks: a list's, a string's characters, a dict's keys */
    JList *(*iter)(Ctx *c, int line, JVal v);
} EvalOps;
struct Ctx {
    Arena *ar;
    ByteBuf *out, *mask;
    struct Scope *scope;
    JDict *globals;
    long steps, max_steps;
    int n_messages; /* nodes evaluated, and the render's bound (jinja.h: JINJA_STEPS_*) */
    int ctl;               /* 1: break, 2: continue */
    struct Pending *pending; /* {% set %} blocks being rendered */
    const EvalOps *ev;     /* the evaluator's services */
};

#endif
