/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfgstatus.h — the status of one config in a tune, one list for every layer (internal): the
 * names reports print, the store keeps and the interop formats map from. X(ID, name, older name):
 * an older store's spelling (NULL: none) is still read as the same status.
 */
#ifndef BT_CORE_CFGSTATUS_H
#define BT_CORE_CFGSTATUS_H

#include <stdbool.h>

#define BT__CFG_STATUSES(X)                                                                        \
    X(PENDING, "pending", NULL)                                                                    \
    X(OK, "ok", NULL)                                                                              \
    X(INVALID, "invalid", NULL)          /* eliminated by a rule or constraint (never compiled) */ \
    X(COMPILE, "compile_failed", NULL)   /* compile failed (log kept) */                           \
    X(RESOURCES, "resources_exceeded", "resources") /* resources exceeded at load or launch */   \
    X(LAUNCH, "launch_failed", NULL)     /* launch failed */                                       \
    X(WRONG, "wrong_result", NULL)       /* wrong result */                                        \
    X(TIMEOUT, "timed_out", NULL)        /* one run took longer than the timeout */                \
    X(SKIPPED, "not_measured", NULL)     /* valid but not measured (budget) */

typedef enum bt__cfg_status {
#define BT__CS_ENUM(id, name, old) BT__CS_##id,
    BT__CFG_STATUSES(BT__CS_ENUM)
#undef BT__CS_ENUM
} bt__cfg_status;

/* The name of a status ("?" for a value outside the list). */
const char *bt__cfg_status_name(bt__cfg_status s);
/* The status of a name (an older spelling too); PENDING for any other text or NULL. */
bt__cfg_status bt__cfg_status_parse(const char *text);
/* True for the statuses a finished measurement can have (what a store row may hold): not
 * pending, not "not measured". */
bool bt__cfg_status_final(bt__cfg_status s);

#endif
