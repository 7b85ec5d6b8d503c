/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpienv.c — the MPI launcher's environment variables: how many ranks, this one's local rank.
 */
#include "platform/mpienv.h"

#include <stdlib.h>

/* The value of the first of vars that is set to a whole number, -1 when none is. */
static int env_int(const char *const *vars, const char **which)
{
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long n = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && n >= 0 && n < 1 << 24) {
            if (which)
                *which = vars[i];
            return (int)n;
        }
    }
    return -1;
}

int bt__mpi_env_size(const char **var)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", NULL};
    if (var)
        *var = NULL;
    int n = env_int(vars, var);
    return n > 1 ? n : 1;
}

int bt__mpi_env_local_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", NULL};
    return env_int(vars, NULL);
}
