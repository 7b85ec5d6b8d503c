/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dl.h — loading shared libraries at run time (the only place that calls dlopen/dlsym).
 */
#ifndef BT_PLATFORM_DL_H
#define BT_PLATFORM_DL_H

#include "blocktune.h"

/* Tries each name in `names` (NULL-terminated), first as given (the loader's search path), then
 * under each directory of `dirs` (NULL-terminated, may be NULL). Returns the handle or NULL, with
 * every attempt's dlerror in diag. */
void *bt__dl_open(const char *const *names, const char *const *dirs, bt_diag *diag);
/* dlsym; NULL if missing (diag says which symbol). */
void *bt__dl_sym(void *lib, const char *sym, bt_diag *diag);
void bt__dl_close(void *lib);

#endif
