/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t1.h — T1 input files (the community's kernel-tuning problem description, JSON schema
 * kernel_tuner/schema/T1/1.0.0/input-schema.json) read as blocktune specs (internal; docs/t1.md).
 *
 * t1.c translates a T1 document into the spec object that spec.c loads, with a path map
 * (specld.h) so that every error, the loader's own included, names the T1 file's field at its
 * line and column. t1py.c evaluates what T1 writes in Python: a parameter's "Values" (a list, a
 * list comprehension over range(), list(range(...))) and an argument's "Size" (over ProblemSize
 * and max()/min() of a parameter's values), as Kernel Tuner's tune_kernel_T1 eval()s them.
 */
#ifndef BT_CORE_T1_H
#define BT_CORE_T1_H

#include "core/specld.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether root is a T1 document: an object with "KernelSpecification" or "ConfigurationSpace"
 * (a blocktune spec has neither). */
bool bt__t1_is(const json_t *root);

/* Translates the T1 document root into a blocktune spec object (*out, a new reference) and
 * fills map (which the caller frees) with where each spec field came from. L is the loader of
 * the T1 file: its file, positions and kdesc (whose dir resolves KernelFile), and its map still
 * NULL. Errors (BT_PARSE, BT_IO, BT_NOMEM) go through L at the T1 field. */
bt_status bt__t1_translate(bt__ld *L, const json_t *root, json_t **out, bt__ldmap *map);

/* A failure in a Python text: where (a byte offset into it) and why. */
typedef struct bt__t1err {
    size_t off;
    char msg[512];
} bt__t1err;

/* The integers of a "Values" text, as Python evaluates it: "[1, 2, 4]" or a tuple, "[EXPR for
 * NAME in ITER]" with an optional "if COND", "list(ITER)" or "range(...)", where ITER is
 * range(stop), range(start, stop[, step]) or a list; EXPR and COND are expressions (expr.h) over
 * NAME. At most max values. *vals is malloc'd (*n entries). BT_PARSE (or BT_NOMEM) with *err. */
bt_status bt__t1_values(const char *text, size_t max, int64_t **vals, size_t *n, bt__t1err *err);

/* What names an argument's "Size" may use: the problem variables standing for ProblemSize's
 * entries (ps_names[d], NULL where that entry is an expression, not a number; ps_scalar: the
 * T1 gave ProblemSize as one number) and the parameters with their values. */
typedef struct bt__t1names {
    const char *ps_names[3];
    int nps;
    bool ps_scalar;
    const char *const *params;
    const int64_t *const *values;
    const size_t *nvalues;
    int nparams;
} bt__t1names;

/* Rewrites a "Size" text into an expression (malloc'd in *out): ProblemSize[d] (or ProblemSize
 * when it is one number) becomes its problem variable, max(P) and min(P) of a parameter P its
 * largest and smallest value; any other use of a parameter is an error (a buffer is made once
 * per problem, before any config). BT_PARSE (or BT_NOMEM) with *err. */
bt_status bt__t1_size(const char *text, const bt__t1names *nm, char **out, bt__t1err *err);

#endif
