/* SPDX-License-Identifier: Apache-2.0 */
/*
 * specld.h — the spec loader's shared context and helpers (internal to src/core/spec*.c).
 *
 * The loader is split by section: spec.c (the root, parameters, problem, model, key, boundary,
 * reference, tolerance and the public entry points), spec_args.c (arguments, outputs, data
 * files, expected answers), spec_launch.c (launch geometry, block_size_x/y/z and grid_div, problem
 * defines). Every helper here fails with BT_PARSE (or BT_IO for a file that cannot be read) and a
 * diag naming file:line:column and the field; the position of a field comes from jpos.c.
 *
 * A document in another format (a T1 file, t1.c) is loaded as the spec it translates to; a path
 * map then sends each spec field to the field of the original it came from, so that errors name
 * the original's field at its position.
 */
#ifndef BT_CORE_SPECLD_H
#define BT_CORE_SPECLD_H

#include "core/jpos.h"
#include "core/kdesc.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Where a spec field came from: the spec path `from` ("args[2].size") or anything under it
 * ("args[2]", "args[2].init.const") is the original's field `to`
 * ("KernelSpecification.Arguments[2].Size"). `verbatim`: the spec's text is the original's as
 * written, so a column inside it is a column of the original too. */
typedef struct bt__ldmap_entry {
    char from[96];
    char to[96];
    bool verbatim;
} bt__ldmap_entry;

typedef struct bt__ldmap {
    bt__ldmap_entry *e;
    int n, cap;
} bt__ldmap;

/* Adds an entry (BT_NOMEM when out of memory; paths longer than the fields are cut). */
bt_status bt__ldmap_add(bt__ldmap *m, const char *from, const char *to, bool verbatim);
void bt__ldmap_free(bt__ldmap *m);
/* The original's field for the spec path `path`: the `to` of the longest entry whose `from` is
 * path or a prefix of it ending before '.' or '['; "" (the root) when none is. */
const char *bt__ldmap_find(const bt__ldmap *m, const char *path, bool *verbatim);

typedef struct bt__ld bt__ld;
struct bt__ld {
    bt_kdesc *k;
    const char *file;
    bt__jpos *pos;
    bt_diag *diag;
    bool embedded;         /* sources resolve against the embedded files */
    const bt__ldmap *map;  /* NULL, or where the spec's fields came from (pos is the original's) */
    bool triton;           /* the spec has a "triton" source (spec_triton.c) */
    /* loads a family's spec (spec.c: a built-in by name, or a file beside a spec file) */
    bt_status (*load_family)(struct bt__ld *L, const char *name, bool file, bt_kdesc **out,
                             bt_diag *diag);
};

#define BT__TRY(x)                                                                                 \
    do {                                                                                           \
        bt_status st_ = (x);                                                                       \
        if (st_ != BT_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

/* Fails with BT_PARSE at the value at `path` ("args[2].size"; "" for the root). */
bt_status bt__ld_fail(bt__ld *L, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with another status (BT_IO for a file). */
bt_status bt__ld_fail_st(bt__ld *L, const char *path, bt_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "an object", "a string", ...: what a JSON value is, for messages. */
const char *bt__ld_jtype(const json_t *v);
/* Rejects keys of obj not in the NULL-terminated `allowed`, suggesting the closest. */
bt_status bt__ld_keys(bt__ld *L, const json_t *obj, const char *path, const char *const *allowed);
bt_status bt__ld_int(bt__ld *L, const json_t *v, const char *path, int64_t *out);
bt_status bt__ld_num(bt__ld *L, const json_t *v, const char *path, double *out);
bt_status bt__ld_bool(bt__ld *L, const json_t *v, const char *path, bool *out);
bt_status bt__ld_str(bt__ld *L, const json_t *v, const char *path, const char **out);
/* Parses an expression given as a string or an integer into x (positions kept for messages). */
bt_status bt__ld_expr(bt__ld *L, const json_t *v, const char *path, bt__kexpr *x);
/* Parses the expression text `src` (not a JSON value) as the field `path`, e.g. one composed from
 * several values; errors point at the field. */
bt_status bt__ld_expr_text(bt__ld *L, const char *src, const char *path, bt__kexpr *x);
/* Fails when the list value v has more than max elements ("at most %d <what>"). */
bt_status bt__ld_bound(bt__ld *L, const json_t *v, const char *path, size_t max, const char *what);

/* A file named in the spec, relative to the spec's directory, that must be a regular file: the
 * path in *out (malloc'd). BT_IO otherwise: "cannot read <what> '<path>': is a directory". */
bt_status bt__ld_file(bt__ld *L, const char *rel, const char *path, const char *what,
                      char **out);
/* A source: "file.cu", {"file": ...}, {"inline": ...}, or a list of them, concatenated. */
bt_status bt__ld_source(bt__ld *L, const json_t *v, const char *path, char **out);
/* A "sources" object at path: {LANGUAGE: source or list of sources, ...} into out[0..*n)
 * (BT__MAX_LANGS entries; language names are lowercase identifiers of at most 15 characters),
 * each text composed as a backend compiles it: the language's prelude from `prelude` (a
 * {LANGUAGE: source} object, may be NULL; a language it names must have a source), a newline,
 * then the source. */
bt_status bt__ld_sources(bt__ld *L, const json_t *v, const char *path, const json_t *prelude,
                         const char *prelude_path, bt__ksource *out, int *n);

/* Index of a parameter, problem variable or argument by name; -1 when there is none. */
int bt__ld_param(const bt_kdesc *k, const char *name);
int bt__ld_problem(const bt_kdesc *k, const char *name);
int bt__ld_arg(const bt_kdesc *k, const char *name);
/* Whether name is a C identifier ([A-Za-z_][A-Za-z0-9_]*). */
bool bt__ld_ident(const char *name);

void bt__kexpr_free(bt__kexpr *x);

/* Sections in the other files. */
bt_status bt__ld_args(bt__ld *L, const json_t *root);         /* args, outputs, resets, answers */
bt_status bt__ld_answers(bt__ld *L, const json_t *v);         /* reference.answers */
bt_status bt__ld_launch(bt__ld *L, const json_t *launch);     /* launch */
bt_status bt__ld_defines(bt__ld *L, const json_t *defines);   /* defines */
void bt__ld_args_free(bt_kdesc *k);
bt_status bt__ld_families(bt__ld *L, const json_t *v);       /* families (spec_family.c) */

/* Triton specs (spec_triton.c): whether root has a "triton" source; that source's file (one
 * name, its absolute path into s->path); the launch without "block" (32 * num_warps threads) and
 * "local_mem"; the whole spec once loaded (one source, arguments Triton passes). */
bool bt__ld_is_triton(const json_t *root);
bt_status bt__ld_triton_source(bt__ld *L, const json_t *v, const char *path, bt__ksource *s);
bt_status bt__ld_triton_launch(bt__ld *L, const json_t *launch);
bt_status bt__ld_triton_check(bt__ld *L, const json_t *root);

#endif
