/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.c — the one thread pool (see pool.h): a shared job counter under a mutex, threads made
 * for one run and joined at its end; the calling thread takes jobs like any worker.
 */
#include "core/pool.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#define POOL_MAX_THREADS 128

typedef struct pool {
    size_t n, next, done;
    bt__pool_fn fn;
    bt__pool_progress_fn progress;
    void *arg;
    pthread_mutex_t mu;
} pool;

static void *work(void *arg)
{
    pool *P = arg;
    for (;;) {
        pthread_mutex_lock(&P->mu);
        size_t i = P->next < P->n ? P->next++ : SIZE_MAX;
        pthread_mutex_unlock(&P->mu);
        if (i == SIZE_MAX)
            return NULL;
        P->fn(P->arg, i);
        pthread_mutex_lock(&P->mu);
        P->done++;
        if (P->progress)
            P->progress(P->arg, P->done, P->n);
        pthread_mutex_unlock(&P->mu);
    }
}

void bt__pool_run(size_t n, int threads, bt__pool_fn fn, bt__pool_progress_fn progress, void *arg)
{
    if (n == 0)
        return;
    pool P = {.n = n, .fn = fn, .progress = progress, .arg = arg};
    pthread_mutex_init(&P.mu, NULL);
    size_t t = threads < 1 ? 1 : (size_t)threads;
    if (t > n)
        t = n;
    if (t > POOL_MAX_THREADS)
        t = POOL_MAX_THREADS;
    pthread_t th[POOL_MAX_THREADS];
    int started = 0;
    for (size_t i = 1; i < t; i++)
        if (pthread_create(&th[started], NULL, work, &P) == 0)
            started++;
    work(&P);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&P.mu);
}

int bt__pool_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}
