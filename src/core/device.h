/*
 * device.h — the device layer's internals for the engine and the CLI: the backend vtable and the
 * backend device behind a bt_device, the hardware-table merge hook and why backends did not load.
 */
#ifndef BT_CORE_DEVICE_H
#define BT_CORE_DEVICE_H

#include "backends/backend.h"
#include "blocktune.h"

/* The vtable and the opened backend device of d (owned by d). */
const bt__backend_iface *bt__device_iface(const bt_device *d);
bt__bdev *bt__device_bdev(const bt_device *d);

/* Closes and opens d's backend device again: after a fault poisoned its context (CUDA), this is
 * how a tune goes on. Every module, buffer and function of the old one is gone. */
bt_status bt__device_reopen(bt_device *d, bt_diag *diag);
/* Non-zero when a fault has poisoned d's context. */
int bt__device_lost(const bt_device *d);

/* Called on each device's info after the backend filled it: fills props fields the device did
 * not report (left 0) and the peaks from the hardware-table row the name matches, and sets
 * table_row. A no-op until the hardware table is wired in. */
void bt__device_merge_table(bt_device_info *info);

/* The registered backends, after loading them (once per process): their number, and for the i-th
 * its name and, when it did not load, why (*reason NULL when it loaded). Returns 0 for i out of
 * range, else 1. The strings live until exit. */
int bt__device_backend_count(void);
int bt__device_backend_status(int i, const char **name, const char **reason);

#endif
