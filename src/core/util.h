/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.h — small internal helpers shared by every layer: diag setters, checked allocation,
 * string utilities, embedded files and monotonic time.
 */
#ifndef BT_CORE_UTIL_H
#define BT_CORE_UTIL_H

#include "blocktune.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BT__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

void bt__diag_clear(bt_diag *d);
/* A diag of this library's layout with every field empty, without clearing its buffers: for hot
 * loops (the model evaluates ~20 expressions for each of tens of thousands of configs) whose
 * callee writes d only through bt__diag_set and whose caller reads only d->msg. */
static inline void bt__diag_fresh(bt_diag *d)
{
    d->size = sizeof *d;
    d->file[0] = d->field[0] = d->msg[0] = '\0';
    d->line = d->column = 0;
}
/* Copies what both diags hold (the caller's size kept): never *dst = *src, which would write past
 * a diag of an older layout. */
void bt__diag_copy(bt_diag *dst, const bt_diag *src);
/* printf into d->msg (d may be NULL). */
void bt__diag_set(bt_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bt__diag_field(bt_diag *d, const char *field);
/* Prepends formatted text to d->msg. */
void bt__diag_prefix(bt_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* strdup that returns NULL on NULL. */
char *bt__strdup(const char *s);
/* *slot = a copy of v (NULL: none), the old value freed; BT_NOMEM leaves *slot as it was. */
bt_status bt__strset(char **slot, const char *v);
/* Case-insensitive equality. */
bool bt__streq_nocase(const char *a, const char *b);
/* snprintf-append: appends to a malloc'd growing string. */
typedef struct bt__sbuf {
    char *s;
    size_t len, cap;
    bool oom;
} bt__sbuf;
void bt__sbuf_printf(bt__sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bt__sbuf_free(bt__sbuf *b);
/* Damerau-free Levenshtein distance (for "did you mean"). */
int bt__edit_distance(const char *a, const char *b);

/* Reads a whole file (NUL-terminated); *size excludes the NUL. NULL on failure (errno set). */
char *bt__read_file(const char *path, size_t *size);
/* A Unix time as "2026-12-01T17:52:39Z" (UTC) into buf; "" when it cannot be formed. */
void bt__utc_iso(double unix_s, char *buf, size_t size);
/* mkdir -p: dir and every missing folder above it (0755); BT_IO names the one that failed. */
bt_status bt__mkdirs(const char *dir, bt_diag *diag);
/* Writes atomically: a temp file in the same directory, fsync, rename. */
bt_status bt__write_file_atomic(const char *path, const void *data, size_t size, bt_diag *diag);

/* Files compiled into the library (cmake/embed.cmake): path relative to the source root, e.g.
 * "data/gpus.json", "kernels/opencl/vector_add.cl". NULL if absent. */
const char *bt__embedded(const char *path, size_t *size);
/* The i-th embedded file (0-based): its data, with *path and *size set; NULL past the end. */
const char *bt__embedded_at(size_t i, const char **path, size_t *size);

/* Monotonic clock in seconds. */
double bt__now(void);

/* qsort/bsearch order of uint64_t values, increasing. */
int bt__cmp_u64(const void *a, const void *b);

/* 64-bit FNV-1a, for source hashes and keys. */
uint64_t bt__fnv1a(const void *data, size_t n, uint64_t seed);
#define BT__FNV_SEED 0xcbf29ce484222325ULL

#endif
