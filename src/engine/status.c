/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.c — a config's status in the engine (the list and its names: core/cfgstatus.h): how a
 * failed device call maps to a status, a status back to what a search strategy is told, marking
 * an entry failed, and committing an entry's outcome to the results store as it happens —
 * preceded, on a device that can crash the process, by an in-flight row.
 */
#include "engine/tune_ctx.h"

#include "core/util.h"
#include "engine/record.h"

#include <stdio.h>
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

void bt__entry_drop(bt__tctx *T, bt__entry *e)
{
    if (e->mod)
        T->I->module_free(T->D, e->mod);
    free(e->blob.data);
    free(e->log);
    free(e->error);
    memset(e, 0, sizeof *e);
}

void bt__record_outcome(bt__tctx *T, const bt__entry *e)
{
    if (!T->store)
        return;
    bt_diag d = {0};
    if (bt__record_put(T->store, T->r, e, false, &d) != BT_OK)
        fprintf(stderr, "blocktune: a measurement could not be stored: %s\n", d.msg);
}

void bt__record(bt__tctx *T, const bt__entry *e)
{
    bt__inflight_clear();
    bt__record_outcome(T, e);
}

bool bt__device_in_process(const bt__tctx *T)
{
    return !T->r->dev.is_gpu;
}

void bt__record_inflight(bt__tctx *T, const bt__entry *e)
{
    if (!bt__device_in_process(T))
        return;
    char cfg[256];
    bt__config_format(&T->k->space, &e->ev.cfg, " ", cfg, sizeof cfg);
    bool stored = false;
    if (T->store) {
        bt__entry f = {.ev = e->ev, .status = BT__CS_LAUNCH, .error = (char *)BT__INFLIGHT_ERROR,
                       .compile_s = e->compile_s, .res = e->res};
        bt_diag d = {0};
        stored = bt__record_put(T->store, T->r, &f, false, &d) == BT_OK;
        if (!stored)
            fprintf(stderr, "blocktune: config %s could not be recorded as in flight: %s\n", cfg,
                    d.msg);
        else
            T->r->stored--; /* a provisional row: the outcome's write counts */
    }
    bt__inflight_note(BT__INFLIGHT_CONFIG, stored, "config %s", cfg);
}
