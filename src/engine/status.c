/*
 * status.c — a config's status in the engine (the list and its names: core/cfgstatus.h): how a
 * failed device call maps to a status, a status back to what a search strategy is told, and
 * marking an entry failed.
 */
#include "engine/tune_ctx.h"

#include "core/util.h"

#include <stdlib.h>
#include <string.h>

bt__cfg_status bt__cfg_status_of(bt_status st)
{
    switch (st) {
    case BT_RESOURCES: return BT__CS_RESOURCES;
    case BT_TIMEOUT: return BT__CS_TIMEOUT;
    case BT_COMPILE: return BT__CS_COMPILE;
    default: return BT__CS_LAUNCH;
    }
}

bt_status bt__cfg_status_fail(bt__cfg_status s)
{
    switch (s) {
    case BT__CS_OK: return BT_OK;
    case BT__CS_INVALID: return BT_INVALID_CONFIG;
    case BT__CS_COMPILE: return BT_COMPILE;
    case BT__CS_RESOURCES: return BT_RESOURCES;
    case BT__CS_WRONG: return BT_WRONG_RESULT;
    case BT__CS_TIMEOUT: return BT_TIMEOUT;
    default: return BT_LAUNCH;
    }
}

void bt__entry_fail(bt__entry *e, bt__cfg_status s, const char *msg)
{
    e->status = s;
    free(e->error);
    e->error = bt__strdup(msg);
}
