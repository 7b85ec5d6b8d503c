/* SPDX-License-Identifier: Apache-2.0 */
/*
 * datadir.h — the installed data folder, found relative to the library (see datadir.c).
 */
#ifndef BT_CORE_DATADIR_H
#define BT_CORE_DATADIR_H

/* The data folder: next to the library (<libdir>/../share/blocktune as installed) when it holds
 * gpus.json, else the configured install folder. Static, never NULL. */
const char *bt__data_dir(void);

#endif
