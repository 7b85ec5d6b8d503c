/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nompi.c — the MPI entry points of a build without MPI (BT_MPI off): the option is refused,
 * and `blocktune tune` started by an MPI launcher says how to get MPI and exits, rather than
 * running N tunes of the same key side by side on one store.
 */
#include "engine/mpi.h"

#include "core/util.h"
#include "platform/mpienv.h"

#include <stdio.h>

bt_status bt_tune_options_set_mpi_comm(bt_tune_options *o, const void *comm, int flags)
{
    (void)comm;
    (void)flags;
    return o ? BT_UNSUPPORTED : BT_INVALID_ARG;
}

bt_status bt__mpi_begin(bt__tctx *T, bt_diag *diag)
{
    (void)T;
    bt__diag_set(diag, "this blocktune was built without MPI (cmake -DBT_MPI=ON)");
    return BT_UNSUPPORTED;
}

bool bt__mpi_worker(const bt__tctx *T)
{
    (void)T;
    return false;
}

bt_status bt__mpi_work(bt__tctx *T, bt_diag *diag)
{
    return bt__mpi_begin(T, diag);
}

bt_status bt__mpi_round(bt__tctx *T, bt__entry **jobs, size_t n)
{
    (void)jobs;
    (void)n;
    return bt__mpi_begin(T, T->sdiag);
}

void bt__mpi_searched(bt__tctx *T)
{
    (void)T;
}

void bt__mpi_end(bt__tctx *T, bt_status st, const bt_diag *diag)
{
    (void)T;
    (void)st;
    (void)diag;
}

int bt__mpi_cli_begin(bt__tune_opts *o, const char **device, char *devbuf, size_t size,
                      bool *quiet)
{
    (void)o;
    (void)device;
    (void)devbuf;
    (void)size;
    *quiet = false;
    const char *var;
    int n = bt__mpi_env_size(&var);
    if (n <= 1)
        return 0;
    fprintf(stderr,
            "blocktune: started by an MPI launcher (%s=%d), but this blocktune was built without "
            "MPI: the %d processes would each tune alone on one store. Install Open MPI (Debian: "
            "apt-get install openmpi-bin libopenmpi-dev) and build with cmake -DBT_MPI=ON "
            "(./dev.sh does); docs/mpi.md\n", var, n, n);
    return 2;
}

int bt__mpi_cli_end(const bt__tune_opts *o, int rc)
{
    (void)o;
    return rc;
}
