/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi.h — a tune spread over the ranks of an MPI communicator (internal; docs/mpi.md). Rank 0
 * runs the search and alone writes the store; each round's configs are spread over the ranks
 * (mpi_root.c), compiled, verified and measured there (mpi_work.c) and every outcome comes back
 * before the strategy sees the round; the finals run on rank 0's device. Messages: mpi_msg.c; the
 * transport: platform/mpi.c. A build without MPI (BT_MPI off) has nompi.c instead, which refuses.
 */
#ifndef BT_ENGINE_MPI_H
#define BT_ENGINE_MPI_H

#include "engine/tune_ctx.h"

/* --- tune.c; measure.c calls bt__mpi_round through T->mpi_round ------------------------------ */
/* T->o.mpi_comm is set: the tune's MPI state in T->mpi. On a rank other than 0 nothing is stored
 * and no progress is shown. Rank 0 refuses devices of other models here unless allowed. */
bt_status bt__mpi_begin(bt__tctx *T, bt_diag *diag);
/* This tune serves rank 0 (a rank other than 0). */
bool bt__mpi_worker(const bt__tctx *T);
/* On a rank other than 0, instead of the search and the finals: runs the configs rank 0 sends
 * until it ends the tune; r then holds the winner rank 0 chose (one entry, not loaded). */
bt_status bt__mpi_work(bt__tctx *T, bt_diag *diag);
/* Rank 0, one round: jobs[0..n) (entries of r->e) spread over the ranks and run; every outcome
 * is in r->e and in the store when it returns. A rank that dies loses its config in flight,
 * which another rank runs again (a config whose two ranks both died fails). */
bt_status bt__mpi_round(bt__tctx *T, bt__entry **jobs, size_t n);
/* Rank 0, after the search: the finals re-measure on this rank's device (their provenance). */
void bt__mpi_searched(bt__tctx *T);
/* The end of the tune with status st: rank 0 tells every rank the winner (or the failure); a
 * rank other than 0 that failed before serving tells rank 0 and waits for the end. T->mpi freed. */
void bt__mpi_end(bt__tctx *T, bt_status st, const bt_diag *diag);

/* --- the command line (bt_mpi_cli_begin/end, api_supervise.c; tools/cmd_tune.c) --------------- */
/* Under an MPI launcher (more than one rank): MPI initialised, o->mpi_comm set, the device this
 * rank opens (its local rank's of the default backend, unless *device was given) into devbuf,
 * and on ranks other than 0 *quiet set, stdout and progress off. Returns 0, or an exit status after saying
 * why (a build without MPI says how to get it). */
int bt__mpi_cli_begin(bt__tune_opts *o, const char **device, char *devbuf, size_t size,
                      bool *quiet);
/* MPI ended (when bt__mpi_cli_begin started it); returns rc. */
int bt__mpi_cli_end(const bt__tune_opts *o, int rc);

#endif
