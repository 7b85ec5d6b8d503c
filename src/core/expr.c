/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expr.c — the expression language of expr.h: the symbol table, the tokenizer, a recursive-descent
 * parser that emits flat stack-machine bytecode (with jumps for && || ?:), the evaluator and the
 * renderer.
 *
 * Limits that keep hostile input harmless: sources longer than BT__EXPR_MAX_LEN bytes, nesting
 * deeper than BT__EXPR_MAX_DEPTH levels (parentheses, function arguments, ?: branches, unary
 * operators and ** chains each count one level) and programs that need more than
 * BT__EXPR_MAX_STACK stack entries are parse errors. The evaluator's operand stack is a fixed
 * local array of BT__EXPR_MAX_STACK entries, so evaluation never allocates; every arithmetic
 * operation is checked (__builtin_*_overflow, explicit zero and INT64_MIN checks).
 */
#include "core/expr.h"

#include "core/util.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ============================================================================================= */
/* Symbol table                                                                                  */
/* ============================================================================================= */

struct bt__symtab {
    char **names;
    int count, cap;
};

/* The words the language owns: they cannot be names (Python's keywords too, so that Kernel
 * Tuner's restriction strings read as they do in Python). */
static const char *const reserved_words[] = {"true", "false", "True",  "False", "and",
                                             "or",   "not",   "in",    "is",    "if",
                                             "else", "None",  "lambda", "for"};

typedef enum fn_id {
    FN_CDIV,
    FN_MIN,
    FN_MAX,
    FN_IS_POW2,
    FN_LOG2,
    FN_ALIGN_UP,
    FN_ABS,
    FN_CLAMP
} fn_id;

typedef struct fn_info {
    const char *name;
    int min_args, max_args; /* max_args < 0: unlimited */
    fn_id id;
} fn_info;

static const fn_info functions[] = {
    {"cdiv", 2, 2, FN_CDIV},       {"min", 2, -1, FN_MIN},    {"max", 2, -1, FN_MAX},
    {"is_pow2", 1, 1, FN_IS_POW2}, {"log2", 1, 1, FN_LOG2},   {"align_up", 2, 2, FN_ALIGN_UP},
    {"abs", 1, 1, FN_ABS},         {"clamp", 3, 3, FN_CLAMP},
};

static bool is_ident_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(int c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static const fn_info *find_function(const char *s, size_t n)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(functions); i++)
        if (strlen(functions[i].name) == n && memcmp(functions[i].name, s, n) == 0)
            return &functions[i];
    return NULL;
}

bool bt__expr_is_reserved(const char *name)
{
    if (!name)
        return false;
    for (size_t i = 0; i < BT__ARRAY_LEN(reserved_words); i++)
        if (strcmp(reserved_words[i], name) == 0)
            return true;
    return find_function(name, strlen(name)) != NULL;
}

bt__symtab *bt__symtab_new(void)
{
    return calloc(1, sizeof(bt__symtab));
}

void bt__symtab_free(bt__symtab *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->count; i++)
        free(t->names[i]);
    free(t->names);
    free(t);
}

int bt__symtab_add(bt__symtab *t, const char *name)
{
    if (!t || !name || !is_ident_start((unsigned char)name[0]))
        return -1;
    for (const char *c = name; *c; c++)
        if (!is_ident_char((unsigned char)*c))
            return -1;
    if (bt__expr_is_reserved(name))
        return -1;
    int have = bt__symtab_find(t, name);
    if (have >= 0)
        return have;
    if (t->count == INT_MAX)
        return -1;
    if (t->count == t->cap) {
        int cap = t->cap ? (t->cap > INT_MAX / 2 ? INT_MAX : t->cap * 2) : 16;
        char **names = realloc(t->names, (size_t)cap * sizeof *names);
        if (!names)
            return -1;
        t->names = names;
        t->cap = cap;
    }
    char *copy = bt__strdup(name);
    if (!copy)
        return -1;
    t->names[t->count] = copy;
    return t->count++;
}

/* Slot of the name s[0..n), or -1. */
static int symtab_find_n(const bt__symtab *t, const char *s, size_t n)
{
    if (!t)
        return -1;
    for (int i = 0; i < t->count; i++)
        if (strncmp(t->names[i], s, n) == 0 && t->names[i][n] == '\0')
            return i;
    return -1;
}

int bt__symtab_find(const bt__symtab *t, const char *name)
{
    return name ? symtab_find_n(t, name, strlen(name)) : -1;
}

int bt__symtab_find_nocase(const bt__symtab *t, const char *name)
{
    if (!t || !name)
        return -1;
    for (int i = 0; i < t->count; i++)
        if (bt__streq_nocase(t->names[i], name))
            return i;
    return -1;
}

int bt__symtab_count(const bt__symtab *t)
{
    return t ? t->count : 0;
}

const char *bt__symtab_name(const bt__symtab *t, int slot)
{
    if (!t || slot < 0 || slot >= t->count)
        return NULL;
    return t->names[slot];
}

/* ============================================================================================= */
/* Bytecode                                                                                      */
/* ============================================================================================= */

typedef enum op {
    OP_CONST, /* push k */
    OP_LOAD,  /* push slots[a] */
    OP_NEG,   /* unary minus */
    OP_NOT,   /* logical not */
    OP_BOOL,  /* x != 0 */
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_POW,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_ANDJ, /* top == 0: keep it (0) and jump to a; else pop */
    OP_ORJ,  /* top != 0: make it 1 and jump to a; else pop */
    OP_JZ,   /* pop; jump to a if it was 0 */
    OP_JMP,  /* jump to a */
    OP_CDIV,
    OP_MIN, /* binary: min/max of n arguments are chained */
    OP_MAX,
    OP_IS_POW2,
    OP_LOG2,
    OP_ALIGN_UP,
    OP_ABS,
    OP_CLAMP,
    OP_FLOORDIV, /* Python's //: rounds toward negative infinity */
    OP_CMPK,     /* chained comparison: [x, y] -> [x <a> y, y] (a is the comparison's opcode) */
    OP_CHAINJ,   /* [r, y]: r == 0: [0] and jump to a; else [y] */
    OP_IN,       /* [x, e1..en] -> [x equals one of them] (a = n) */
    OP_END, /* result is the top of the stack */
} op;

typedef struct ins {
    int32_t op;
    int32_t a; /* slot or jump target */
    int64_t k; /* constant */
} ins;

/* Where an instruction's sub-expression lies in the source, for error messages. */
typedef struct span {
    uint32_t start, end;
} span;

/* One occurrence of a name in the source, for render and uses. */
typedef struct ref {
    uint32_t start, len;
    int slot;
} ref;

struct bt__expr {
    char *src;
    ins *code;
    span *spans; /* parallel to code */
    int ncode;
    ref *refs; /* in source order */
    int nrefs;
    int max_stack;
    int slots_needed; /* 1 + highest slot read, 0 when constant */
};

/* ============================================================================================= */
/* Tokenizer                                                                                     */
/* ============================================================================================= */

typedef enum tok_kind {
    T_END,
    T_NUM,
    T_IDENT,
    T_LPAREN,
    T_RPAREN,
    T_COMMA,
    T_QUESTION,
    T_COLON,
    T_OROR,
    T_ANDAND,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_PERCENT,
    T_POW,
    T_BANG,
    T_FLOORDIV, /* // */
    T_NOT,      /* not */
    T_IN,       /* in */
    T_LBRACKET,
    T_RBRACKET,
} tok_kind;

typedef struct tok {
    tok_kind kind;
    uint32_t pos, len;
    int64_t num;
} tok;

typedef struct parser {
    const char *src;
    size_t n;
    const bt__symtab *syms;
    bt_diag *diag;
    tok t;
    int depth;
    bool failed;
    bt_status status;
    /* output */
    ins *code;
    span *spans;
    int ncode, capcode;
    ref *refs;
    int nrefs, caprefs;
    int sp, max_sp;
} parser;

/* Describes token t for messages: "'BLOCK_N'", "','", "end of input". */
static void describe_tok(const parser *p, const tok *t, char *buf, size_t size)
{
    if (t->kind == T_END) {
        snprintf(buf, size, "end of input");
        return;
    }
    unsigned len = t->len > 40 ? 40 : t->len;
    snprintf(buf, size, "'%.*s%s'", (int)len, p->src + t->pos, t->len > 40 ? "..." : "");
}

/* Records the first error: BT_PARSE (or status) with column `pos`+1. Later errors are ignored. */
static bool fail_at(parser *p, bt_status status, uint32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool fail_at(parser *p, bt_status status, uint32_t pos, const char *fmt, ...)
{
    if (p->failed)
        return false;
    p->failed = true;
    p->status = status;
    if (p->diag) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->diag->msg, sizeof p->diag->msg, fmt, ap);
        va_end(ap);
        p->diag->column = (int)pos + 1;
    }
    return false;
}

/* "expected X but found Y at column N" for the current token, with an optional note. */
static bool fail_expected(parser *p, const char *what, const char *note)
{
    char found[64];
    describe_tok(p, &p->t, found, sizeof found);
    return fail_at(p, BT_PARSE, p->t.pos, "expected %s but found %s at column %u%s%s%s", what,
                   found, (unsigned)p->t.pos + 1, note ? " (" : "", note ? note : "",
                   note ? ")" : "");
}

/* Reads the next token into p->t. Returns false (error recorded) on a bad character or number. */
/* Scans a number at s[i] (c1 is the byte after its first) into t; a fraction, exponent or
 * trailing letters make it malformed (expressions are integer-only). */
static bool scan_number(parser *p, size_t i, unsigned char c1, tok t)
{
    const char *s = p->src;
    size_t j = i;
    bool hex = s[i] == '0' && (c1 == 'x' || c1 == 'X');
    uint64_t v = 0;
    bool big = false, digits = false;
    if (hex) {
        for (j = i + 2; j < p->n; j++) {
            int d = s[j] >= '0' && s[j] <= '9'   ? s[j] - '0'
                    : s[j] >= 'a' && s[j] <= 'f' ? s[j] - 'a' + 10
                    : s[j] >= 'A' && s[j] <= 'F' ? s[j] - 'A' + 10
                                                 : -1;
            if (d < 0)
                break;
            digits = true;
            if (v > (uint64_t)INT64_MAX >> 4)
                big = true;
            v = v * 16 + (uint64_t)d;
        }
    } else {
        for (; j < p->n && s[j] >= '0' && s[j] <= '9'; j++) {
            digits = true;
            if (v > ((uint64_t)INT64_MAX - (uint64_t)(s[j] - '0')) / 10)
                big = true;
            v = v * 10 + (uint64_t)(s[j] - '0');
        }
    }
    bool frac = !hex && j < p->n && (s[j] == '.' || s[j] == 'e' || s[j] == 'E');
    /* Swallow a fraction and trailing identifier characters so that "1.5", "1e3", "12ab" or "0x"
     * is reported whole. */
    bool junk = false;
    while (j < p->n && (is_ident_char((unsigned char)s[j]) || (frac && s[j] == '.')))
        j++, junk = true;
    t.kind = T_NUM;
    t.len = (uint32_t)(j - i);
    p->t = t;
    int shown = (int)(t.len > 40 ? 40 : t.len);
    if (frac && digits)
        return fail_at(p, BT_PARSE, t.pos,
                       "floating-point number '%.*s' at column %u: expressions are integer-only",
                       shown, s + i, (unsigned)t.pos + 1);
    if (junk || !digits)
        return fail_at(p, BT_PARSE, t.pos, "malformed number '%.*s' at column %u", shown, s + i,
                       (unsigned)t.pos + 1);
    if (big || v > (uint64_t)INT64_MAX)
        return fail_at(p, BT_PARSE, t.pos,
                       "number '%.*s' does not fit in a signed 64-bit integer at column %u", shown,
                       s + i, (unsigned)t.pos + 1);
    p->t.num = (int64_t)v;
    return true;
}

/* Python words that restriction strings may hold but this language does not take, with what to
 * write instead. */
static const struct {
    const char *word, *instead;
} unsupported_words[] = {
    {"is", "use '==' or '!='"},
    {"if", "a conditional is written 'cond ? a : b'"},
    {"else", "a conditional is written 'cond ? a : b'"},
    {"lambda", "a restriction is an expression over the parameters"},
    {"for", "list the values: 'x in [1, 2, 4]'"},
    {"None", "values are integers"},
};

/* Scans a word at s[i]: a name, or one of Python's keywords (and, or, not, in become operators). */
static bool scan_word(parser *p, size_t i, tok t)
{
    const char *s = p->src;
    size_t j = i;
    while (j < p->n && is_ident_char((unsigned char)s[j]))
        j++;
    t.kind = T_IDENT;
    t.len = (uint32_t)(j - i);
    static const struct {
        const char *w;
        tok_kind k;
    } kw[] = {{"and", T_ANDAND}, {"or", T_OROR}, {"not", T_NOT}, {"in", T_IN}};
    for (size_t k = 0; k < BT__ARRAY_LEN(kw); k++)
        if (strlen(kw[k].w) == t.len && !memcmp(s + i, kw[k].w, t.len))
            t.kind = kw[k].k;
    p->t = t;
    for (size_t k = 0; k < BT__ARRAY_LEN(unsupported_words); k++)
        if (strlen(unsupported_words[k].word) == t.len &&
            !memcmp(s + i, unsupported_words[k].word, t.len))
            return fail_at(p, BT_PARSE, t.pos, "Python's '%s' at column %u is not supported (%s)",
                           unsupported_words[k].word, (unsigned)t.pos + 1,
                           unsupported_words[k].instead);
    return true;
}

/* A byte that starts no token: say what it would have been. */
static bool bad_char(parser *p, tok t, unsigned char c, unsigned char c1)
{
    const char *what = NULL;
    if (c == '\'' || c == '"')
        what = "strings are not supported";
    else if (c == '.')
        what = c1 >= '0' && c1 <= '9' ? "floating-point numbers are not supported: expressions "
                                        "are integer-only"
                                      : "attribute access ('.') is not supported";
    else if (c == '^' || c == '~')
        what = c == '^' ? "there are no bitwise operators; a power is '**'"
                        : "there are no bitwise operators";
    p->t = t;
    if (what)
        return fail_at(p, BT_PARSE, t.pos, "unexpected '%c' at column %u: %s", c,
                       (unsigned)t.pos + 1, what);
    if (c >= 0x21 && c < 0x7f)
        return fail_at(p, BT_PARSE, t.pos, "unexpected character '%c' at column %u", c,
                       (unsigned)t.pos + 1);
    return fail_at(p, BT_PARSE, t.pos, "unexpected byte 0x%02x at column %u", c,
                   (unsigned)t.pos + 1);
}

/* Reads the next token into p->t. Returns false (error recorded) on a bad character or number. */
static bool next(parser *p)
{
    const char *s = p->src;
    size_t i = p->t.pos + p->t.len;
    while (i < p->n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    tok t = {T_END, (uint32_t)i, 0, 0};
    if (i >= p->n) {
        p->t = t;
        return true;
    }
    unsigned char c = (unsigned char)s[i];
    unsigned char c1 = i + 1 < p->n ? (unsigned char)s[i + 1] : 0;
    t.len = 1;
    if (c >= '0' && c <= '9')
        return scan_number(p, i, c1, t);
    if (is_ident_start(c))
        return scan_word(p, i, t);
    switch (c) {
    case '(': t.kind = T_LPAREN; break;
    case ')': t.kind = T_RPAREN; break;
    case '[': t.kind = T_LBRACKET; break;
    case ']': t.kind = T_RBRACKET; break;
    case ',': t.kind = T_COMMA; break;
    case '?': t.kind = T_QUESTION; break;
    case ':': t.kind = T_COLON; break;
    case '+': t.kind = T_PLUS; break;
    case '-': t.kind = T_MINUS; break;
    case '%': t.kind = T_PERCENT; break;
    case '/':
        t.kind = c1 == '/' ? T_FLOORDIV : T_SLASH;
        t.len = c1 == '/' ? 2 : 1;
        break;
    case '*':
        t.kind = c1 == '*' ? T_POW : T_STAR;
        t.len = c1 == '*' ? 2 : 1;
        break;
    case '<':
    case '>':
        if (c1 == c) {
            p->t = t;
            return fail_at(p, BT_PARSE, t.pos, "unexpected '%c%c' at column %u: there are no "
                           "bitwise operators (a shift by k is '* 2**k' or '// 2**k')",
                           c, c, (unsigned)t.pos + 1);
        }
        t.kind = c == '<' ? (c1 == '=' ? T_LE : T_LT) : (c1 == '=' ? T_GE : T_GT);
        t.len = c1 == '=' ? 2 : 1;
        break;
    case '!':
        t.kind = c1 == '=' ? T_NE : T_BANG;
        t.len = c1 == '=' ? 2 : 1;
        break;
    case '=':
        if (c1 != '=') {
            p->t = t;
            return fail_at(p, BT_PARSE, t.pos, "unexpected '=' at column %u (did you mean '=='?)",
                           (unsigned)t.pos + 1);
        }
        t.kind = T_EQ;
        t.len = 2;
        break;
    case '&':
    case '|':
        if (c1 != c) {
            p->t = t;
            return fail_at(p, BT_PARSE, t.pos,
                           "unexpected '%c' at column %u (did you mean '%c%c'? there are no "
                           "bitwise operators)",
                           c, (unsigned)t.pos + 1, c, c);
        }
        t.kind = c == '&' ? T_ANDAND : T_OROR;
        t.len = 2;
        break;
    default:
        return bad_char(p, t, c, c1);
    }
    p->t = t;
    return true;
}

/* ============================================================================================= */
/* Code generation                                                                               */
/* ============================================================================================= */

/* Stack effect of each opcode (jumps: the fall-through path). */
static int stack_effect(op o)
{
    switch (o) {
    case OP_CONST:
    case OP_LOAD:
        return 1;
    case OP_NEG:
    case OP_NOT:
    case OP_BOOL:
    case OP_IS_POW2:
    case OP_LOG2:
    case OP_ABS:
    case OP_JMP:
    case OP_END:
        return 0;
    case OP_ANDJ:
    case OP_ORJ:
    case OP_JZ:
    case OP_CHAINJ:
        return -1;
    case OP_CMPK:
        return 0;
    case OP_CLAMP:
        return -2;
    default:
        return -1; /* binary operators and two-argument functions */
    }
}

/* Appends an instruction; returns its index or -1 (error recorded). */
static int emit(parser *p, op o, int32_t a, int64_t k, span sp)
{
    if (p->failed)
        return -1;
    if (p->ncode == p->capcode) {
        int cap = p->capcode ? p->capcode * 2 : 32;
        ins *code = realloc(p->code, (size_t)cap * sizeof *code);
        if (!code)
            return fail_at(p, BT_NOMEM, sp.start, "out of memory"), -1;
        p->code = code;
        span *spans = realloc(p->spans, (size_t)cap * sizeof *spans);
        if (!spans)
            return fail_at(p, BT_NOMEM, sp.start, "out of memory"), -1;
        p->spans = spans;
        p->capcode = cap;
    }
    p->code[p->ncode] = (ins){(int32_t)o, a, k};
    p->spans[p->ncode] = sp;
    p->sp += o == OP_IN ? -a : stack_effect(o);
    if (p->sp > p->max_sp) {
        p->max_sp = p->sp;
        if (p->max_sp > BT__EXPR_MAX_STACK)
            return fail_at(p, BT_PARSE, sp.start,
                           "expression too complex (needs more than %d stack entries) at column "
                           "%u",
                           BT__EXPR_MAX_STACK, (unsigned)sp.start + 1),
                   -1;
    }
    return p->ncode++;
}

static void patch(parser *p, int at)
{
    if (at >= 0 && !p->failed)
        p->code[at].a = p->ncode;
}

static bool add_ref(parser *p, uint32_t start, uint32_t len, int slot)
{
    if (p->nrefs == p->caprefs) {
        int cap = p->caprefs ? p->caprefs * 2 : 16;
        ref *refs = realloc(p->refs, (size_t)cap * sizeof *refs);
        if (!refs)
            return fail_at(p, BT_NOMEM, start, "out of memory");
        p->refs = refs;
        p->caprefs = cap;
    }
    p->refs[p->nrefs++] = (ref){start, len, slot};
    return true;
}

/* ============================================================================================= */
/* Parser                                                                                        */
/* ============================================================================================= */

static bool parse_ternary(parser *p, span *out);
static bool parse_unary(parser *p, span *out);

static bool enter(parser *p)
{
    if (++p->depth > BT__EXPR_MAX_DEPTH)
        return fail_at(p, BT_PARSE, p->t.pos,
                       "expression nested too deeply (more than %d levels) at column %u",
                       BT__EXPR_MAX_DEPTH, (unsigned)p->t.pos + 1);
    return true;
}

/* True if every character of `small` appears in `big` in order (ignoring case). */
static bool is_subsequence(const char *small, const char *big)
{
    for (; *small && *big; big++)
        if ((*small | 0x20) == (*big | 0x20))
            small++;
    return *small == '\0';
}

/* Whether candidate c is close enough to the unknown word w to suggest it ("BLOK_M" ->
 * "BLOCK_M", "block_m" -> "BLOCK_M", "cieldiv" -> "cdiv", "align" -> "align_up"); *dist gets
 * the edit distance, used to pick the best of several. */
static bool is_close(const char *w, const char *c, int *dist)
{
    size_t lw = strlen(w), lc = strlen(c);
    size_t minl = lw < lc ? lw : lc, maxl = lw > lc ? lw : lc;
    int d = bt__edit_distance(w, c); /* ignores case */
    *dist = d;
    if (d == 0)
        return true;
    if ((size_t)d < minl && (size_t)d * 3 <= maxl)
        return true; /* a few typos in a long enough word */
    /* one is an abbreviation or an extension of the other */
    return minl >= 3 && minl * 2 >= maxl && (lw < lc ? is_subsequence(w, c) : is_subsequence(c, w));
}

/* The closest of `n` candidates to the word, or NULL if none is close enough to suggest. */
static const char *closest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bestd = INT_MAX, d;
    for (int i = 0; i < n; i++)
        if (cands[i] && is_close(word, cands[i], &d) && d < bestd)
            bestd = d, best = cands[i];
    return best;
}

static bool parse_call(parser *p, const fn_info *fn, tok name, span *out)
{
    static const op fn_ops[] = {
        [FN_CDIV] = OP_CDIV,       [FN_MIN] = OP_MIN,     [FN_MAX] = OP_MAX,
        [FN_IS_POW2] = OP_IS_POW2, [FN_LOG2] = OP_LOG2,   [FN_ALIGN_UP] = OP_ALIGN_UP,
        [FN_ABS] = OP_ABS,         [FN_CLAMP] = OP_CLAMP,
    };
    char note[96];
    if (fn->max_args < 0)
        snprintf(note, sizeof note, "function '%s' takes %d or more arguments", fn->name,
                 fn->min_args);
    else
        snprintf(note, sizeof note, "function '%s' takes %d argument%s", fn->name, fn->min_args,
                 fn->min_args == 1 ? "" : "s");
    if (!next(p)) /* past '(' */
        return false;
    int argc = 0;
    for (;;) {
        if (argc == 0 && p->t.kind == T_RPAREN)
            return fail_expected(p, "an operand", note);
        span a;
        if (!parse_ternary(p, &a))
            return false;
        argc++;
        if (argc >= 2 && (fn->id == FN_MIN || fn->id == FN_MAX))
            if (emit(p, fn_ops[fn->id], 0, 0, (span){name.pos, a.end}) < 0)
                return false;
        if (p->t.kind == T_RPAREN) {
            if (argc < fn->min_args)
                return fail_expected(p, "','", note);
            break;
        }
        bool full = fn->max_args >= 0 && argc >= fn->max_args;
        if (p->t.kind != T_COMMA || full)
            return fail_expected(p,
                                 argc < fn->min_args ? "','"
                                 : full              ? "')'"
                                                     : "',' or ')'",
                                 note);
        if (!next(p))
            return false;
    }
    *out = (span){name.pos, p->t.pos + 1};
    if (fn->id != FN_MIN && fn->id != FN_MAX)
        if (emit(p, fn_ops[fn->id], 0, 0, *out) < 0)
            return false;
    return next(p); /* past ')' */
}

static bool parse_primary(parser *p, span *out)
{
    tok t = p->t;
    switch (t.kind) {
    case T_NUM:
        *out = (span){t.pos, t.pos + t.len};
        return emit(p, OP_CONST, 0, t.num, *out) >= 0 && next(p);
    case T_LPAREN: {
        if (!next(p))
            return false;
        span inner;
        if (!parse_ternary(p, &inner))
            return false;
        if (p->t.kind != T_RPAREN)
            return fail_expected(p, "')'", NULL);
        *out = (span){t.pos, p->t.pos + 1};
        return next(p);
    }
    case T_IDENT: {
        const char *w = p->src + t.pos;
        char name[BT__EXPR_MAX_NAME + 1];
        unsigned shown = t.len > BT__EXPR_MAX_NAME ? BT__EXPR_MAX_NAME : t.len;
        memcpy(name, w, shown);
        name[shown] = '\0';
        *out = (span){t.pos, t.pos + t.len};
        if (!next(p))
            return false;
        bool call = p->t.kind == T_LPAREN;
        if (!call && t.len == 4 && (!memcmp(w, "true", 4) || !memcmp(w, "True", 4)))
            return emit(p, OP_CONST, 0, 1, *out) >= 0;
        if (!call && t.len == 5 && (!memcmp(w, "false", 5) || !memcmp(w, "False", 5)))
            return emit(p, OP_CONST, 0, 0, *out) >= 0;
        const fn_info *fn = find_function(w, t.len);
        if (fn) {
            if (!call) {
                char what[64];
                snprintf(what, sizeof what, "'(' after function '%s'", fn->name);
                return fail_expected(p, what, NULL);
            }
            return parse_call(p, fn, t, out);
        }
        if (call) {
            if (symtab_find_n(p->syms, w, t.len) >= 0)
                return fail_at(p, BT_PARSE, t.pos, "'%s' at column %u is a name, not a function",
                               name, (unsigned)t.pos + 1);
            const char *cands[BT__ARRAY_LEN(functions)];
            for (size_t i = 0; i < BT__ARRAY_LEN(functions); i++)
                cands[i] = functions[i].name;
            const char *s = closest(name, cands, (int)BT__ARRAY_LEN(functions));
            return fail_at(p, BT_PARSE, t.pos, "unknown function '%s%s' at column %u%s%s%s", name,
                           t.len > shown ? "..." : "", (unsigned)t.pos + 1,
                           s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
        }
        int slot = symtab_find_n(p->syms, w, t.len);
        if (slot < 0) {
            const char *s = NULL;
            if (p->syms && t.len <= BT__EXPR_MAX_NAME)
                s = closest(name, (const char *const *)p->syms->names, p->syms->count);
            return fail_at(p, BT_PARSE, t.pos, "unknown name '%s%s' at column %u%s%s%s", name,
                           t.len > shown ? "..." : "", (unsigned)t.pos + 1,
                           s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
        }
        return add_ref(p, t.pos, t.len, slot) && emit(p, OP_LOAD, slot, 0, *out) >= 0;
    }
    case T_LBRACKET:
        return fail_at(p, BT_PARSE, t.pos, "a list at column %u: lists are only taken after "
                       "'in' ('x in [1, 2]')", (unsigned)t.pos + 1);
    default:
        return fail_expected(p, "an operand", NULL);
    }
}

/* At an operator token: parses what follows it with `operand`, one nesting level deeper, and
 * spans the whole from `from`. */
static bool operand_after(parser *p, bool (*operand)(parser *, span *), uint32_t from, span *out)
{
    if (!enter(p) || !next(p))
        return false;
    span r;
    if (!operand(p, &r))
        return false;
    p->depth--;
    *out = (span){from, r.end};
    return true;
}

/* power := primary [ '**' unary ]   (right-associative; binds tighter than unary minus) */
static bool parse_power(parser *p, span *out)
{
    span l;
    if (!parse_primary(p, &l))
        return false;
    *out = l;
    if (p->t.kind != T_POW)
        return true;
    return operand_after(p, parse_unary, l.start, out) && emit(p, OP_POW, 0, 0, *out) >= 0;
}

/* unary := ('-' | '+' | '!') unary | power */
static bool parse_unary(parser *p, span *out)
{
    tok t = p->t;
    if (t.kind != T_MINUS && t.kind != T_PLUS && t.kind != T_BANG)
        return parse_power(p, out);
    if (!operand_after(p, parse_unary, t.pos, out))
        return false;
    if (t.kind == T_MINUS)
        return emit(p, OP_NEG, 0, 0, *out) >= 0;
    if (t.kind == T_BANG)
        return emit(p, OP_NOT, 0, 0, *out) >= 0;
    return true;
}

/* Binary arithmetic levels, loosest first; each is left-associative. */
enum { LV_ADD, LV_MUL, LV__COUNT };

static bool binop_of(tok_kind k, int level, op *o)
{
    if (level == LV_ADD) {
        if (k == T_PLUS || k == T_MINUS)
            return *o = k == T_PLUS ? OP_ADD : OP_SUB, true;
        return false;
    }
    switch (k) {
    case T_STAR: return *o = OP_MUL, true;
    case T_SLASH: return *o = OP_DIV, true;
    case T_FLOORDIV: return *o = OP_FLOORDIV, true;
    case T_PERCENT: return *o = OP_MOD, true;
    default: return false;
    }
}

static bool parse_binary(parser *p, int level, span *out)
{
    span l;
    if (!(level + 1 < LV__COUNT ? parse_binary(p, level + 1, &l) : parse_unary(p, &l)))
        return false;
    op o;
    while (binop_of(p->t.kind, level, &o)) {
        if (!next(p))
            return false;
        span r;
        if (!(level + 1 < LV__COUNT ? parse_binary(p, level + 1, &r) : parse_unary(p, &r)))
            return false;
        l.end = r.end;
        if (emit(p, o, 0, 0, l) < 0)
            return false;
    }
    *out = l;
    return true;
}

/* The comparison operator at the current token, or false; 'not in' (two tokens) is OP_IN with
 * *negate. Does not move past the token. */
static bool compare_op(parser *p, op *o, bool *negate)
{
    *negate = false;
    switch (p->t.kind) {
    case T_EQ: return *o = OP_EQ, true;
    case T_NE: return *o = OP_NE, true;
    case T_LT: return *o = OP_LT, true;
    case T_LE: return *o = OP_LE, true;
    case T_GT: return *o = OP_GT, true;
    case T_GE: return *o = OP_GE, true;
    case T_IN: return *o = OP_IN, true;
    case T_NOT: { /* 'not in' */
        parser peek = *p;
        peek.diag = NULL;
        if (!next(&peek) || peek.t.kind != T_IN)
            return false;
        *negate = true;
        return *o = OP_IN, true;
    }
    default: return false;
    }
}

/* The right side of 'in': a list [a, b, ...] or a tuple (a, b, ...) of expressions, pushed; the
 * number of elements in *n. As in Python, (a) is a parenthesized value, not a tuple ('x in (3)'
 * is Python's TypeError): a tuple of one element is written (a,). */
static bool parse_in_list(parser *p, int *n, span *out)
{
    tok_kind close = p->t.kind == T_LBRACKET ? T_RBRACKET : T_RPAREN;
    if (p->t.kind != T_LBRACKET && p->t.kind != T_LPAREN) {
        if (p->t.kind == T_IDENT && p->t.len == 5 && !memcmp(p->src + p->t.pos, "range", 5))
            return fail_at(p, BT_PARSE, p->t.pos, "'range' at column %u is not supported (list "
                           "the values, or write 'lo <= x < hi')", (unsigned)p->t.pos + 1);
        return fail_expected(p, "a list '[...]' after 'in'", NULL);
    }
    uint32_t start = p->t.pos;
    *n = 0;
    if (!next(p))
        return false;
    bool comma = false;
    while (p->t.kind != close) {
        span e;
        if (!parse_ternary(p, &e))
            return false;
        (*n)++;
        comma = p->t.kind == T_COMMA;
        if (comma) {
            if (!next(p))
                return false;
        } else if (p->t.kind != close)
            return fail_expected(p, close == T_RBRACKET ? "',' or ']'" : "',' or ')'", NULL);
    }
    if (close == T_RPAREN && *n == 1 && !comma)
        return fail_at(p, BT_PARSE, start, "'(...)' at column %u after 'in' is one value, not a "
                       "tuple (write '(x,)' or '[x]')", (unsigned)start + 1);
    *out = (span){start, p->t.pos + 1};
    return next(p);
}

/* comparison := additive { compop additive }, chained as in Python: a < b <= c is a < b and
 * b <= c, with b evaluated once and c only when a < b holds; 'x in [...]' and 'x not in [...]'
 * end a chain. */
static bool parse_compare(parser *p, span *out)
{
    span l;
    if (!parse_binary(p, LV_ADD, &l))
        return false;
    int chain = -1; /* the last OP_CHAINJ; each one's a links to the one before until patched */
    op o;
    bool negate;
    while (compare_op(p, &o, &negate)) {
        uint32_t at = p->t.pos;
        if (!next(p) || (negate && !next(p))) /* past the operator ('not' 'in': two tokens) */
            return false;
        span r;
        if (o == OP_IN) {
            int n = 0;
            if (!parse_in_list(p, &n, &r))
                return false;
            l.end = r.end;
            if (emit(p, OP_IN, n, 0, l) < 0 || (negate && emit(p, OP_NOT, 0, 0, l) < 0))
                return false;
            if (compare_op(p, &o, &negate))
                return fail_at(p, BT_PARSE, p->t.pos, "a comparison after '%s' (column %u) at "
                               "column %u: join them with 'and'", negate ? "not in" : "in",
                               (unsigned)at + 1, (unsigned)p->t.pos + 1);
            break;
        }
        if (!parse_binary(p, LV_ADD, &r))
            return false;
        span whole = {l.start, r.end};
        bool more = compare_op(p, &(op){0}, &(bool){0});
        if (!more) {
            if (emit(p, o, 0, 0, whole) < 0)
                return false;
            l.end = r.end;
            break;
        }
        int j;
        if (emit(p, OP_CMPK, (int32_t)o, 0, whole) < 0 ||
            (j = emit(p, OP_CHAINJ, chain, 0, whole)) < 0)
            return false;
        chain = j;
        l.end = r.end;
    }
    while (chain >= 0 && !p->failed) { /* every link jumps past the chain */
        int prev = p->code[chain].a;
        p->code[chain].a = p->ncode;
        chain = prev;
    }
    *out = l;
    return true;
}

/* not := 'not' not | comparison   (Python's not binds looser than comparisons) */
static bool parse_not(parser *p, span *out)
{
    tok t = p->t;
    if (t.kind != T_NOT)
        return parse_compare(p, out);
    return operand_after(p, parse_not, t.pos, out) && emit(p, OP_NOT, 0, 0, *out) >= 0;
}

/* and := not { ('&&' | 'and') not }     or := and { ('||' | 'or') and }   (short-circuit,
 * result 0/1) */
static bool parse_and(parser *p, span *out)
{
    span l;
    if (!parse_not(p, &l))
        return false;
    while (p->t.kind == T_ANDAND) {
        int j = emit(p, OP_ANDJ, 0, 0, l);
        if (j < 0 || !next(p))
            return false;
        span r;
        if (!parse_not(p, &r))
            return false;
        l.end = r.end;
        if (emit(p, OP_BOOL, 0, 0, l) < 0)
            return false;
        patch(p, j);
    }
    *out = l;
    return true;
}

static bool parse_or(parser *p, span *out)
{
    span l;
    if (!parse_and(p, &l))
        return false;
    while (p->t.kind == T_OROR) {
        int j = emit(p, OP_ORJ, 0, 0, l);
        if (j < 0 || !next(p))
            return false;
        span r;
        if (!parse_and(p, &r))
            return false;
        l.end = r.end;
        if (emit(p, OP_BOOL, 0, 0, l) < 0)
            return false;
        patch(p, j);
    }
    *out = l;
    return true;
}

/* ternary := or [ '?' ternary ':' ternary ]   (right-associative) */
static bool parse_ternary(parser *p, span *out)
{
    if (!enter(p))
        return false;
    span c;
    if (!parse_or(p, &c))
        return false;
    *out = c;
    if (p->t.kind == T_QUESTION) {
        int jz = emit(p, OP_JZ, 0, 0, c);
        if (jz < 0 || !next(p))
            return false;
        int base = p->sp;
        span a, b;
        if (!parse_ternary(p, &a))
            return false;
        if (p->t.kind != T_COLON)
            return fail_expected(p, "':'", NULL);
        int jmp = emit(p, OP_JMP, 0, 0, a);
        if (jmp < 0 || !next(p))
            return false;
        patch(p, jz);
        p->sp = base; /* the else branch starts from the stack the condition left */
        if (!parse_ternary(p, &b))
            return false;
        patch(p, jmp);
        out->end = b.end;
    }
    p->depth--;
    return true;
}

bt_status bt__expr_parse(const char *src, const bt__symtab *syms, bt__expr **out, bt_diag *diag)
{
    if (out)
        *out = NULL;
    if (!src || !out) {
        bt__diag_set(diag, "bt__expr_parse: NULL %s", !src ? "source" : "output");
        return BT_INVALID_ARG;
    }
    size_t n = strlen(src);
    if (n > BT__EXPR_MAX_LEN) {
        if (diag)
            diag->column = BT__EXPR_MAX_LEN + 1;
        bt__diag_set(diag, "expression too long (%zu bytes, at most %d)", n, BT__EXPR_MAX_LEN);
        return BT_PARSE;
    }
    parser p = {.src = src, .n = n, .syms = syms, .diag = diag};
    span whole = {0, 0};
    if (next(&p) && parse_ternary(&p, &whole)) {
        if (p.t.kind != T_END)
            fail_expected(&p, "an operator or end of input", NULL);
        else
            emit(&p, OP_END, 0, 0, whole);
    }
    bt__expr *e = NULL;
    if (!p.failed) {
        e = calloc(1, sizeof *e);
        if (!e || !(e->src = bt__strdup(src))) {
            fail_at(&p, BT_NOMEM, 0, "out of memory");
        }
    }
    if (p.failed) {
        if (e)
            free(e);
        free(p.code);
        free(p.spans);
        free(p.refs);
        return p.status;
    }
    e->code = p.code;
    e->spans = p.spans;
    e->ncode = p.ncode;
    e->refs = p.refs;
    e->nrefs = p.nrefs;
    e->max_stack = p.max_sp;
    for (int i = 0; i < e->nrefs; i++)
        if (e->refs[i].slot + 1 > e->slots_needed)
            e->slots_needed = e->refs[i].slot + 1;
    *out = e;
    return BT_OK;
}

void bt__expr_free(bt__expr *e)
{
    if (!e)
        return;
    free(e->src);
    free(e->code);
    free(e->spans);
    free(e->refs);
    free(e);
}

/* ============================================================================================= */
/* Evaluation                                                                                    */
/* ============================================================================================= */

typedef enum eval_err {
    E_DIV0,
    E_MOD0,
    E_OVERFLOW,
    E_NEG_POW,
    E_LOG2,
    E_ALIGN,
    E_CLAMP,
} eval_err;

static const char *op_symbol(op o)
{
    switch (o) {
    case OP_ADD:
        return "+";
    case OP_SUB:
        return "-";
    case OP_MUL:
        return "*";
    case OP_DIV:
        return "/";
    case OP_FLOORDIV:
        return "//";
    case OP_MOD:
        return "%";
    case OP_POW:
        return "**";
    default:
        return "?";
    }
}

/* Writes the failure of instruction pc (operands a, b, c as they were) into diag->msg. Kept out
 * of line so the evaluator's loop stays small. */
static __attribute__((noinline, cold)) bt_status
eval_fail(const bt__expr *e, int pc, eval_err err, int64_t a, int64_t b, int64_t c, bt_diag *diag)
{
    if (!diag)
        return BT_EVAL;
    span s = e->spans[pc];
    op o = (op)e->code[pc].op;
    unsigned len = s.end - s.start;
    const char *more = "";
    if (len > 120) {
        len = 117;
        more = "...";
    }
    char what[160];
    snprintf(what, sizeof what, "'%.*s%s'", (int)len, e->src + s.start, more);
    switch (err) {
    case E_DIV0:
        bt__diag_set(diag, "division by zero in %s", what);
        break;
    case E_MOD0:
        bt__diag_set(diag, "modulo by zero in %s", what);
        break;
    case E_NEG_POW:
        bt__diag_set(diag, "negative exponent %" PRId64 " in %s", b, what);
        break;
    case E_LOG2:
        bt__diag_set(diag, "log2 of non-positive value %" PRId64 " in %s", a, what);
        break;
    case E_ALIGN:
        bt__diag_set(diag, "align_up by %s alignment %" PRId64 " in %s",
                     b == 0 ? "zero" : "negative", b, what);
        break;
    case E_CLAMP:
        bt__diag_set(diag, "clamp with lo %" PRId64 " > hi %" PRId64 " in %s", b, c, what);
        break;
    case E_OVERFLOW:
        switch (o) {
        case OP_NEG:
            bt__diag_set(diag, "integer overflow in %s (negating %" PRId64 ")", what, a);
            break;
        case OP_ABS:
            bt__diag_set(diag, "integer overflow in %s (abs of %" PRId64 ")", what, a);
            break;
        case OP_CDIV:
        case OP_ALIGN_UP:
            bt__diag_set(diag, "integer overflow in %s (%s(%" PRId64 ", %" PRId64 "))", what,
                         o == OP_CDIV ? "cdiv" : "align_up", a, b);
            break;
        default:
            bt__diag_set(diag, "integer overflow in %s (%" PRId64 " %s %" PRId64 ")", what, a,
                         op_symbol(o), b);
            break;
        }
        break;
    }
    return BT_EVAL;
}

/* a ** b for b >= 0 by squaring; false on overflow. */
static bool ipow(int64_t base, int64_t exp, int64_t *out)
{
    int64_t r = 1;
    for (;;) {
        if (exp & 1)
            if (__builtin_mul_overflow(r, base, &r))
                return false;
        exp >>= 1; /* exp >= 0, so this is a plain halving */
        if (!exp)
            break;
        if (__builtin_mul_overflow(base, base, &base))
            return false; /* a higher bit remains, so the result exceeds base**2 */
    }
    *out = r;
    return true;
}

bt_status bt__expr_eval(const bt__expr *e, const int64_t *slots, int64_t *out, bt_diag *diag)
{
    if (out)
        *out = 0;
    if (!e || !out || (!slots && e->slots_needed > 0)) {
        bt__diag_set(diag, "bt__expr_eval: NULL %s", !e ? "expression" : !out ? "output" : "slots");
        return BT_INVALID_ARG;
    }
    int64_t stack[BT__EXPR_MAX_STACK];
    int64_t *sp = stack; /* points past the top */
    const ins *code = e->code;
    int pc = 0;
    int64_t a, b, c, r;
    for (;;) {
        const ins *in = &code[pc++];
        switch ((op)in->op) {
        case OP_CONST:
            *sp++ = in->k;
            break;
        case OP_LOAD:
            *sp++ = slots[in->a];
            break;
        case OP_NEG:
            a = sp[-1];
            if (a == INT64_MIN)
                return eval_fail(e, pc - 1, E_OVERFLOW, a, 0, 0, diag);
            sp[-1] = -a;
            break;
        case OP_NOT:
            sp[-1] = !sp[-1];
            break;
        case OP_BOOL:
            sp[-1] = sp[-1] != 0;
            break;
        case OP_ADD:
            a = sp[-2], b = sp[-1];
            if (__builtin_add_overflow(a, b, &r))
                return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            *(--sp - 1) = r;
            break;
        case OP_SUB:
            a = sp[-2], b = sp[-1];
            if (__builtin_sub_overflow(a, b, &r))
                return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            *(--sp - 1) = r;
            break;
        case OP_MUL:
            a = sp[-2], b = sp[-1];
            if (__builtin_mul_overflow(a, b, &r))
                return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            *(--sp - 1) = r;
            break;
        case OP_DIV:
            a = sp[-2], b = sp[-1];
            if (b == 0)
                return eval_fail(e, pc - 1, E_DIV0, a, b, 0, diag);
            if (a == INT64_MIN && b == -1)
                return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            *(--sp - 1) = a / b;
            break;
        case OP_MOD:
            a = sp[-2], b = sp[-1];
            if (b == 0)
                return eval_fail(e, pc - 1, E_MOD0, a, b, 0, diag);
            *(--sp - 1) = b == -1 ? 0 : a % b; /* INT64_MIN % -1 is 0, not a trap */
            break;
        case OP_POW:
            a = sp[-2], b = sp[-1];
            if (b < 0)
                return eval_fail(e, pc - 1, E_NEG_POW, a, b, 0, diag);
            if (!ipow(a, b, &r))
                return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            *(--sp - 1) = r;
            break;
        case OP_EQ:
            sp--, sp[-1] = sp[-1] == sp[0];
            break;
        case OP_NE:
            sp--, sp[-1] = sp[-1] != sp[0];
            break;
        case OP_LT:
            sp--, sp[-1] = sp[-1] < sp[0];
            break;
        case OP_LE:
            sp--, sp[-1] = sp[-1] <= sp[0];
            break;
        case OP_GT:
            sp--, sp[-1] = sp[-1] > sp[0];
            break;
        case OP_GE:
            sp--, sp[-1] = sp[-1] >= sp[0];
            break;
        case OP_ANDJ:
            if (sp[-1] == 0)
                pc = in->a;
            else
                sp--;
            break;
        case OP_ORJ:
            if (sp[-1] != 0)
                sp[-1] = 1, pc = in->a;
            else
                sp--;
            break;
        case OP_JZ:
            if (*--sp == 0)
                pc = in->a;
            break;
        case OP_JMP:
            pc = in->a;
            break;
        case OP_CDIV:
            a = sp[-2], b = sp[-1];
            if (b == 0)
                return eval_fail(e, pc - 1, E_DIV0, a, b, 0, diag);
            if (a == INT64_MIN && b == -1)
                return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            r = a / b;
            if (a % b != 0 && ((a < 0) == (b < 0)))
                r++; /* the exact quotient is positive and was truncated down */
            *(--sp - 1) = r;
            break;
        case OP_MIN:
            sp--;
            if (sp[0] < sp[-1])
                sp[-1] = sp[0];
            break;
        case OP_MAX:
            sp--;
            if (sp[0] > sp[-1])
                sp[-1] = sp[0];
            break;
        case OP_IS_POW2:
            a = sp[-1];
            sp[-1] = a > 0 && (a & (a - 1)) == 0;
            break;
        case OP_LOG2:
            a = sp[-1];
            if (a <= 0)
                return eval_fail(e, pc - 1, E_LOG2, a, 0, 0, diag);
            sp[-1] = 63 - __builtin_clzll((unsigned long long)a);
            break;
        case OP_ALIGN_UP:
            a = sp[-2], b = sp[-1];
            if (b <= 0)
                return eval_fail(e, pc - 1, E_ALIGN, a, b, 0, diag);
            c = a % b; /* b > 0, so no INT64_MIN % -1 */
            if (c > 0) {
                if (__builtin_add_overflow(a, b - c, &r))
                    return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            } else {
                r = a - c; /* c <= 0 and |c| < b: moves a up towards zero, cannot overflow */
            }
            *(--sp - 1) = r;
            break;
        case OP_ABS:
            a = sp[-1];
            if (a == INT64_MIN)
                return eval_fail(e, pc - 1, E_OVERFLOW, a, 0, 0, diag);
            sp[-1] = a < 0 ? -a : a;
            break;
        case OP_CLAMP:
            a = sp[-3], b = sp[-2], c = sp[-1];
            if (b > c)
                return eval_fail(e, pc - 1, E_CLAMP, a, b, c, diag);
            sp -= 2;
            sp[-1] = a < b ? b : a > c ? c : a;
            break;
        case OP_FLOORDIV:
            a = sp[-2], b = sp[-1];
            if (b == 0)
                return eval_fail(e, pc - 1, E_DIV0, a, b, 0, diag);
            if (a == INT64_MIN && b == -1)
                return eval_fail(e, pc - 1, E_OVERFLOW, a, b, 0, diag);
            r = a / b;
            if (a % b != 0 && ((a < 0) != (b < 0)))
                r--; /* the exact quotient is negative and was truncated up */
            *(--sp - 1) = r;
            break;
        case OP_CMPK:
            a = sp[-2], b = sp[-1];
            switch ((op)in->a) {
            case OP_EQ: r = a == b; break;
            case OP_NE: r = a != b; break;
            case OP_LT: r = a < b; break;
            case OP_LE: r = a <= b; break;
            case OP_GT: r = a > b; break;
            default: r = a >= b; break;
            }
            sp[-2] = r;
            break;
        case OP_CHAINJ:
            sp--;
            if (sp[-1] == 0)
                pc = in->a; /* [0] */
            else
                sp[-1] = sp[0]; /* [y]: the next comparison's left side */
            break;
        case OP_IN:
            sp -= in->a;
            r = 0;
            for (int32_t i = 0; i < in->a; i++)
                r |= sp[i] == sp[-1];
            sp[-1] = r;
            break;
        case OP_END:
            *out = sp[-1];
            return BT_OK;
        }
    }
}

/* ============================================================================================= */
/* Queries and rendering                                                                         */
/* ============================================================================================= */

const char *bt__expr_source(const bt__expr *e)
{
    return e ? e->src : NULL;
}

bool bt__expr_uses(const bt__expr *e, int slot)
{
    if (!e)
        return false;
    for (int i = 0; i < e->nrefs; i++)
        if (e->refs[i].slot == slot)
            return true;
    return false;
}

bool bt__expr_is_const(const bt__expr *e)
{
    return e && e->nrefs == 0;
}

int bt__expr_slots_needed(const bt__expr *e)
{
    return e ? e->slots_needed : 0;
}

/* Appends n bytes to buf if they fit whole (so that a number or "×" is never cut in half);
 * returns false once the buffer is full. */
static bool put(char *buf, size_t size, size_t *len, const char *s, size_t n)
{
    if (*len + n >= size)
        return false;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
    return true;
}

char *bt__expr_render(const bt__expr *e, const int64_t *slots, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    buf[0] = '\0';
    if (!e)
        return buf;
    size_t len = 0;
    const char *s = e->src;
    int next_ref = 0;
    for (size_t i = 0; s[i];) {
        char num[24];
        bool ok;
        if (next_ref < e->nrefs && e->refs[next_ref].start == i) {
            const ref *r = &e->refs[next_ref++];
            if (slots) {
                int n = snprintf(num, sizeof num, "%" PRId64, slots[r->slot]);
                ok = put(buf, size, &len, num, (size_t)n);
            } else {
                ok = put(buf, size, &len, s + i, r->len);
            }
            i += r->len;
        } else if (s[i] == '*' && s[i + 1] == '*') {
            ok = put(buf, size, &len, "**", 2);
            i += 2;
        } else if (s[i] == '*') {
            ok = put(buf, size, &len, "\xc3\x97", 2); /* U+00D7 MULTIPLICATION SIGN */
            i++;
        } else if (is_ident_start((unsigned char)s[i]) || (s[i] >= '0' && s[i] <= '9')) {
            /* a function name, true/false or a literal: copy it whole */
            size_t j = i;
            while (is_ident_char((unsigned char)s[j]))
                j++;
            ok = put(buf, size, &len, s + i, j - i);
            i = j;
        } else {
            ok = put(buf, size, &len, s + i, 1);
            i++;
        }
        if (!ok)
            break;
    }
    return buf;
}
