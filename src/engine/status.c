/*
 * status.c — a config's status (the list is BT__CFG_STATUSES in engine.h): its name as reports
 * print it and the store keeps it, the status of a stored name (older spellings too), how a
 * failed device call maps to a status and a status back to what a search strategy is told, and
 * marking an entry failed.
 */
#include "engine/tune_ctx.h"

#include "core/util.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *old;
} names[] = {
#define BT__CS_NAME(id, name, old) [BT__CS_##id] = {name, old},
    BT__CFG_STATUSES(BT__CS_NAME)
#undef BT__CS_NAME
};

const char *bt__cfg_status_name(bt__cfg_status s)
{
    return (size_t)s < BT__ARRAY_LEN(names) ? names[s].name : "?";
}

bt__cfg_status bt__cfg_status_parse(const char *text)
{
    for (size_t i = 0; text && i < BT__ARRAY_LEN(names); i++)
        if (!strcmp(text, names[i].name) || (names[i].old && !strcmp(text, names[i].old)))
            return (bt__cfg_status)i;
    return BT__CS_PENDING;
}

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
