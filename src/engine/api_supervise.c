/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_supervise.c — the public calls a tool that supervises its tunes needs (what `blocktune
 * tune` does, tools/cmd_tune.c and tools/sweep.c): the in-flight note a supervisor reads after
 * the process that tuned died, a tune that reports only what the store holds, what a result says
 * of the store, the limit its report shows and the winner's rate, and the MPI begin and end of a
 * command line. Each wraps the engine's own (record.c, mpi_cli.c or nompi.c, report.c).
 */
#include "engine/mpi.h"
#include "engine/record.h"
#include "engine/report.h"

_Static_assert((int)BT_INFLIGHT_NONE == (int)BT__INFLIGHT_NONE &&
                   (int)BT_INFLIGHT_CONFIG == (int)BT__INFLIGHT_CONFIG &&
                   (int)BT_INFLIGHT_REFERENCE == (int)BT__INFLIGHT_REFERENCE,
               "the public in-flight kinds are the engine's");

size_t bt_inflight_size(void)
{
    return sizeof(bt__inflight);
}

void bt_inflight_share(void *page)
{
    bt__inflight_share(page);
}

void bt_inflight_clear(void)
{
    bt__inflight_clear();
}

bt_inflight_kind bt_inflight_get(int *stored, const char **what)
{
    const bt__inflight *n = bt__inflight_get();
    if (stored)
        *stored = n->stored;
    if (what)
        *what = n->what;
    return (bt_inflight_kind)n->kind;
}

void bt_kernel_set_stored_only(bt_kernel *kn, const char *why)
{
    bt__kernel_stored_only(kn, why);
}

int bt_result_store_note(const bt_result *r, char *buf, size_t size)
{
    if (!r || !buf || !size)
        return 0;
    return bt__result_store_note(r, buf, size);
}

void bt_result_set_time_limit_s(bt_result *r, double seconds)
{
    if (r)
        r->opts.time_limit_s = seconds;
}

size_t bt_result_count(const bt_result *r)
{
    return r ? r->n : 0;
}

int bt_result_winner_rate(const bt_result *r, double *rate, int *memory_bound, double *efficiency)
{
    if (!r || r->winner < 0)
        return -1;
    const bt__entry *w = &r->e[r->winner];
    bool mem = false, known = bt__result_roofline_known(r, &mem);
    if (rate)
        *rate = mem ? w->gbps : w->tflops;
    if (memory_bound)
        *memory_bound = mem;
    if (efficiency)
        *efficiency = w->eff;
    return known;
}

int bt_mpi_cli_begin(bt_tune_options *o, int flags, const char **device, char *devbuf,
                     size_t size, int *role)
{
    bool quiet = false;
    *role = 0;
    o->o.mpi_flags = flags;
    int rc = bt__mpi_cli_begin(&o->o, device, devbuf, size, &quiet);
    if (!rc && o->o.mpi_comm)
        *role = quiet ? 2 : 1;
    return rc;
}

int bt_mpi_cli_end(const bt_tune_options *o, int rc)
{
    return bt__mpi_cli_end(&o->o, rc);
}
