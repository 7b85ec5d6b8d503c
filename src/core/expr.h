/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expr.h — the constraint and geometry expression language (internal).
 *
 * A small, safe, C-like integer language used for constraints ("BLOCK_M * BLOCK_K <= 4096"),
 * geometry ("cdiv(M, BLOCK_M)"), resource formulas and FLOP/byte counts. Values are int64_t.
 *
 *   literals     123, 0x40, true / True (1), false / False (0)
 *   operators    ?:  || or  && and  not  comparisons (== != < <= > >= in, not in)  + -
 *                * / // %  unary ! - +  ** (power, right-assoc, binds tighter than unary minus:
 *                -2**2 == -4)
 *   functions    cdiv(a,b) min(a,b,...) max(a,b,...) is_pow2(a) log2(a) (floor) align_up(a,b)
 *                abs(a) clamp(x,lo,hi)
 *   names        looked up in a bt__symtab when parsed; each becomes a slot index, evaluated
 *                against an int64_t array of slot values.
 *
 * The Python spellings are there so that Kernel Tuner's restriction strings read as they do in
 * Python: "block_size_x*block_size_y <= 1024 and tile_size_x in [1, 2]". Comparisons are one
 * level and chain as in Python (a < b <= c is a < b && b <= c, b evaluated once, c only when
 * a < b holds); 'x in [a, b]' / 'x not in (a, b)' compare x with each element and end a chain
 * ('(a)' is one value, not a tuple: write '(a,)');
 * Python's not binds looser than comparisons (not x == 1 is !(x == 1)) while C's ! binds like
 * unary minus. What Python has and this language does not (floats, strings, 'is', 'if ... else',
 * lambda, range(), attributes, bitwise operators) is a parse error that says so.
 *
 * Semantics: / and % truncate toward zero (as C; Python's / is true division, its % follows the
 * divisor's sign: they agree with Python where the quotient is whole or the operands are
 * non-negative), // rounds toward negative infinity (as Python); a / 0, a // 0, a % 0,
 * cdiv(a, 0), align_up(a, 0), log2(x<=0), a negative power, and any int64 overflow are evaluation
 * errors (BT_EVAL with a message), never a crash. && || and ?: short-circuit, so
 * "K > 0 && N / K > 2" is safe. Comparisons, ! not && || in and is_pow2 give 0 or 1.
 * cdiv(a, b) is the exact ceiling of a/b for any signs; align_up(a, b) is the smallest multiple of
 * b that is >= a and needs b > 0 (a negative alignment is an error too); clamp(x, lo, hi) needs
 * lo <= hi; INT64_MIN % -1 is 0; 0 ** 0 is 1. Literals must fit in int64 (9223372036854775807 at
 * most; write INT64_MIN as -9223372036854775807 - 1).
 *
 * Limits (parse errors beyond them): BT__EXPR_MAX_LEN bytes of source, BT__EXPR_MAX_DEPTH levels
 * of nesting (parentheses, call arguments, ?: branches, unary operators, ** chains) and
 * BT__EXPR_MAX_STACK evaluation stack entries.
 *
 * An expression is parsed once into flat bytecode and evaluated many times; evaluation does not
 * allocate and is thread-safe (a parsed bt__expr is immutable).
 */
#ifndef BT_CORE_EXPR_H
#define BT_CORE_EXPR_H

#include "blocktune.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BT__EXPR_MAX_LEN 65536
#define BT__EXPR_MAX_DEPTH 256
#define BT__EXPR_MAX_STACK 1024
#define BT__EXPR_MAX_NAME 255 /* longer names are shortened in messages */

/* --- symbol table: names -> slot indices ---------------------------------------------------- */
typedef struct bt__symtab bt__symtab;

bt__symtab *bt__symtab_new(void);
void bt__symtab_free(bt__symtab *t);
/* Adds a name (copied) and returns its slot (>= 0); if present returns the existing slot.
 * Returns -1 on allocation failure, an invalid identifier (not [A-Za-z_][A-Za-z0-9_]*) or a
 * reserved word (see bt__expr_is_reserved). Slots are numbered 0, 1, ... in order of addition. */
int bt__symtab_add(bt__symtab *t, const char *name);
/* True for the words the language owns (function names, true, false): they cannot be names. */
bool bt__expr_is_reserved(const char *name);
/* Slot of a name, or -1. Case-sensitive. */
int bt__symtab_find(const bt__symtab *t, const char *name);
/* Slot of a name ignoring case, or -1. */
int bt__symtab_find_nocase(const bt__symtab *t, const char *name);
int bt__symtab_count(const bt__symtab *t);
const char *bt__symtab_name(const bt__symtab *t, int slot);

/* --- expressions ---------------------------------------------------------------------------- */
typedef struct bt__expr bt__expr;

/* Parses `src`. On failure returns BT_PARSE and fills diag->column (1-based, within src) and
 * diag->msg, e.g. "expected ')' but found ',' at column 12", "unknown name 'BLOK_M' at column 3
 * (did you mean 'BLOCK_M'?)", "unknown function 'cieldiv'". diag->line/file are left as they are
 * so a caller can prefill the position of the string in a file. *out is NULL on failure. */
bt_status bt__expr_parse(const char *src, const bt__symtab *syms, bt__expr **out, bt_diag *diag);
void bt__expr_free(bt__expr *e);

/* Evaluates with slot values `slots` (indexed by symtab slot). On error returns BT_EVAL and, if
 * diag is non-NULL, writes e.g. "division by zero in 'cdiv(M, BLOCK_M)'" to diag->msg. */
bt_status bt__expr_eval(const bt__expr *e, const int64_t *slots, int64_t *out, bt_diag *diag);

/* The source text as given. */
const char *bt__expr_source(const bt__expr *e);
/* True if the expression reads `slot`. */
bool bt__expr_uses(const bt__expr *e, int slot);
/* True if the expression is a constant (reads no slot). */
bool bt__expr_is_const(const bt__expr *e);
/* 1 + the highest slot the expression reads (0 when constant): the slot array passed to
 * bt__expr_eval must have at least this many entries. */
int bt__expr_slots_needed(const bt__expr *e);

/* Writes the source with every name replaced by its value and '*' by the multiplication sign
 * (UTF-8 "×"), keeping the rest of the text: "num_stages * (BLOCK_M*BLOCK_K)" with values gives
 * "5 × (128×64)". Truncates to size; returns buf. */
char *bt__expr_render(const bt__expr *e, const int64_t *slots, char *buf, size_t size);

#endif
