/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sweep.h — `blocktune tune` over several problem sizes (a sweep): the sizes given as lists or
 * ranges, each combination tuned as its own key inside the tune's supervised child (cmd_tune.c),
 * and the sweep's table, JSON and HTML written by the supervisor from what every child recorded.
 */
#ifndef BT_TOOLS_SWEEP_H
#define BT_TOOLS_SWEEP_H

#include "blocktune.h"

#include <stdbool.h>
#include <stddef.h>

#define BT_SWEEP_MAX_KEYS 4096

typedef struct bt_sweep bt_sweep;

/* The sizes of the command line (names[i] = values[i]): those whose value is a list or a range
 * (`1,2,4`, `pow2:1..4096`, `64..256:64`) are swept. *out is NULL when none is; docs: keep each
 * key's tune JSON document for --json/--html. Returns 0, or 2 after a usage error. */
int bt_sweep_plan(int nset, const char *const *names, const char *const *values, bool docs,
                  bt_sweep **out);
bool bt_sweep_swept(const bt_sweep *s, const char *name);
/* How many keys every child so far has finished (the next child starts there). */
size_t bt_sweep_done(const bt_sweep *s);
/* In the supervised child, first: the device's and the kernel's names, for the sweep's table. */
void bt_sweep_names(bt_sweep *s, const char *device, const char *kernel);
/* In the supervised child: tunes each key not yet done on kn with o (p holds the fixed sizes),
 * writing what each found into the shared record; progress: a line per key on a terminal.
 * Returns the exit status: restart_rc when the device was lost (the store holds the key's
 * outcomes so far), 1 when a key had no winner or a store write failed, else 0. */
int bt_sweep_tune(bt_sweep *s, bt_kernel *kn, bt_problem *p, const bt_tune_options *o,
                  bool progress, bool restart, int restart_rc);
/* In the supervisor: the sweep's table on stdout, then --json and --html (NULL: not asked) from
 * the keys tuned; rc is the tune's exit status so far. Returns the exit status. */
int bt_sweep_report(bt_sweep *s, const char *kernel, const char *json, const char *html, int rc);
void bt_sweep_free(bt_sweep *s);

#endif
