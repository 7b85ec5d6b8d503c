/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.h — the device layer's internals for the engine and the CLI: the backend vtable and the
 * backend device behind a bt_device, the hardware-table merge and why backends did not load.
 * It lives beside the registry (backend.c) because listing and opening devices is the one place
 * that walks every backend: the engine above sees a device only through its vtable.
 */
#ifndef BT_BACKENDS_DEVICE_H
#define BT_BACKENDS_DEVICE_H

#include "backends/backend.h"
#include "blocktune.h"

/* The vtable and the opened backend device of d (owned by d). */
const bt__backend_iface *bt__device_iface(const bt_device *d);
bt__bdev *bt__device_bdev(const bt_device *d);

/* Gives back d's backend device and opens it again: after a fault poisoned its context (CUDA),
 * this is how a tune goes on. Every module, buffer and function of the old one is dead on the
 * device; their host sides (and the old backend device itself, with device_release) stay
 * readable until they are freed — the old backend device with d — so that a launch in flight in
 * another thread fails instead of reading freed memory. */
bt_status bt__device_reopen(bt_device *d, bt_diag *diag);
/* A device of GPU g (a hardware-table row) that only compiles, named `name` (NULL: g's name) as
 * a real device of that GPU reports itself: no driver is loaded; the build layer's compile is
 * the one thing that may use it (blocktune precompile). Freed by bt_device_destroy. */
bt_status bt__device_offline(const bt__backend_iface *I, const bt_gpu *g, const char *name,
                             bt_device **out, bt_diag *diag);
/* Non-zero when a fault has poisoned d's context. */
int bt__device_lost(const bt_device *d);

/* Called on each device's info after the backend filled it: fills props fields the device did
 * not report (left 0) and the peaks from the hardware-table row whose canonical name or alias is
 * the device's name, and sets table_row; a device no row names is left as it reported itself. */
void bt__device_merge_table(bt_device_info *info);

/* The registered backends, after loading them (once per process): their number, and for the i-th
 * its name and, when it did not load, why (*reason NULL when it loaded). Returns 0 for i out of
 * range, else 1. The strings live until exit. */
int bt__device_backend_count(void);
/* How many backends this process has loaded so far (in the table's order; tests). */
int bt__device_backends_loaded(void);
int bt__device_backend_status(int i, const char **name, const char **reason);

#endif
