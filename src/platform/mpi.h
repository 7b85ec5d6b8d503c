/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi.h — the MPI transport (BT_MPI builds only; Open MPI through mpi.h): messages of bytes
 * between the ranks of a communicator, sent without blocking and polled for, so that a rank that
 * died never blocks the one waiting on it (Open MPI 4.1 tells the survivors nothing).
 */
#ifndef BT_PLATFORM_MPI_H
#define BT_PLATFORM_MPI_H

#include "blocktune.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct bt__comm bt__comm;

/* MPI initialised for this process unless it is already (MPI_Init_thread, funneled: only the
 * thread that tunes calls MPI); *world: the address of an MPI_COMM_WORLD handle, for
 * bt_tune_options_set_mpi_comm. */
bt_status bt__mpi_init(const void **world, bt_diag *diag);
/* MPI_Finalize when this process initialised MPI; a finalize that waits on a dead peer longer
 * than 20 s ends the process with exit status rc instead. */
void bt__mpi_finalize(int rc);
/* The transport over the caller's communicator (a pointer to an MPI_Comm): made at the first
 * call for it (MPI_Comm_dup, collective: every rank calls it then), kept for the process. */
bt__comm *bt__comm_get(const void *mpi_comm, bt_diag *diag);
int bt__comm_rank(const bt__comm *c);
int bt__comm_size(const bt__comm *c);
/* This rank's position among the ranks of its node (MPI_Comm_split_type shared). */
int bt__comm_local_rank(const bt__comm *c);
const char *bt__comm_host(const bt__comm *c);
/* Sends buf[0..len) to rank dest without waiting (a copy is sent). */
bt_status bt__comm_send(bt__comm *c, int dest, const void *buf, size_t len, bt_diag *diag);
/* A message waiting from rank src (-1: any): true with its sender and length. */
bool bt__comm_poll(bt__comm *c, int src, int *from, size_t *len);
/* Receives the message bt__comm_poll found (buf holds len bytes), polling rather than blocking:
 * a sender killed after its message was found but before its body crossed (Open MPI's
 * shared-memory single copy then fails, "Read -1 ... errno = 3", and a blocking receive never
 * returns) must not hold this rank forever. While it waits, gone(user, from) is asked every 50 ms
 * (NULL: never); when it says the sender is gone the wait ends with BT_IO and *held true: the
 * receive stays posted, so buf must never be freed or reused (the caller leaks it). */
bt_status bt__comm_recv(bt__comm *c, int from, void *buf, size_t len,
                        bool (*gone)(void *user, int rank), void *user, bool *held, bt_diag *diag);

#endif
