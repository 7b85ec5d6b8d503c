/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfgstatus.c — names of the config statuses (the list is BT__CFG_STATUSES in cfgstatus.h).
 */
#include "core/cfgstatus.h"

#include "core/util.h"

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

bool bt__cfg_status_final(bt__cfg_status s)
{
    return s != BT__CS_PENDING && s != BT__CS_SKIPPED && (size_t)s < BT__ARRAY_LEN(names);
}
