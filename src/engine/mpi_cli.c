/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi_cli.c — `blocktune tune` under mpirun (BT_MPI builds): MPI started on MPI_COMM_WORLD, each
 * rank on its local rank's device of the default backend (a CPU device: each rank its own), the
 * ranks other than 0 quiet on stdout, and MPI ended at exit.
 */
#include "engine/mpi.h"

#include "platform/mpi.h"
#include "platform/mpienv.h"

#include <stdio.h>
#include <string.h>

/* The device of local rank `local` on the default device's backend, into buf. */
static void local_device(int local, char *buf, size_t size)
{
    bt_device_list *l = NULL;
    bt_diag d = {0};
    if (bt_devices_list(&l, &d) != BT_OK)
        return;
    const char *backend = NULL;
    size_t n = bt_device_list_count(l), count = 0;
    for (size_t i = 0; i < n; i++)
        if (bt_device_list_at(l, i)->is_default)
            backend = bt_device_list_at(l, i)->backend;
    for (size_t i = 0; backend && i < n; i++)
        count += !strcmp(bt_device_list_at(l, i)->backend, backend);
    for (size_t i = 0, k = 0; backend && count && i < n; i++) {
        const bt_device_info *di = bt_device_list_at(l, i);
        if (strcmp(di->backend, backend))
            continue;
        if (k++ == (size_t)local % count)
            snprintf(buf, size, "%s", di->id);
    }
    bt_device_list_destroy(l);
}

int bt__mpi_cli_begin(bt__tune_opts *o, const char **device, char *devbuf, size_t size,
                      bool *quiet)
{
    *quiet = false;
    if (bt__mpi_env_size(NULL) <= 1)
        return 0;
    const void *world = NULL;
    bt_diag d = {0};
    bt__comm *c = bt__mpi_init(&world, &d) == BT_OK ? bt__comm_get(world, &d) : NULL;
    if (!c) {
        fprintf(stderr, "blocktune: MPI: %s\n", d.msg);
        return 1;
    }
    o->mpi_comm = world;
    if (!*device) {
        devbuf[0] = '\0';
        local_device(bt__comm_local_rank(c), devbuf, size);
        if (devbuf[0])
            *device = devbuf;
    }
    if (bt__comm_rank(c) != 0) {
        *quiet = true;
        o->progress = 0;
        if (!freopen("/dev/null", "w", stdout))
            fprintf(stderr, "blocktune: MPI rank %d: stdout stays open\n", bt__comm_rank(c));
    }
    return 0;
}

int bt__mpi_cli_end(const bt__tune_opts *o, int rc)
{
    if (o->mpi_comm) {
        fflush(NULL);
        bt__mpi_finalize(rc);
    }
    return rc;
}
