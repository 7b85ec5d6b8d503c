/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpienv.h — whether this process was started by an MPI launcher, from the environment alone
 * (no MPI library needed: the build without MPI uses it to refuse to run N independent tunes).
 */
#ifndef BT_PLATFORM_MPIENV_H
#define BT_PLATFORM_MPIENV_H

/* The number of ranks the launcher started (Open MPI's OMPI_COMM_WORLD_SIZE, else the PMI
 * PMI_SIZE of MPICH/Hydra and Slurm's PMI), 1 when none says more; and the variable that said
 * it (NULL: none). */
int bt__mpi_env_size(const char **var);
/* This process's rank on its node (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID), -1: unknown. */
int bt__mpi_env_local_rank(void);

#endif
