/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pool.c — the one thread pool (src/core/pool.c): every job runs exactly once whatever the
 * thread count, progress is reported once per job in order, the caller works too, and when no
 * thread can be created the caller runs every job alone.
 */
#include "test_util.h"

#include "core/pool.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define NJOBS 1000

typedef struct tally {
    int runs[NJOBS];
    pthread_t who[NJOBS];
    size_t progress_calls, last_done;
    int out_of_order;
    pthread_mutex_t mu;
} tally;

static void job(void *arg, size_t i)
{
    tally *t = arg;
    pthread_mutex_lock(&t->mu);
    t->runs[i]++;
    t->who[i] = pthread_self();
    pthread_mutex_unlock(&t->mu);
}

static void progress(void *arg, size_t done, size_t n)
{
    tally *t = arg;
    t->progress_calls++; /* serialised by the pool */
    if (done != t->last_done + 1 || n != NJOBS)
        t->out_of_order++;
    t->last_done = done;
}

static void run(tally *t, size_t n, int threads)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    bt__pool_run(n, threads, job, progress, t);
    pthread_mutex_destroy(&t->mu);
}

static void test_every_job_runs_once(void **state)
{
    (void)state;
    static tally t;
    const int threads[] = {1, 2, 3, 8, 200};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        run(&t, NJOBS, threads[k]);
        for (int i = 0; i < NJOBS; i++)
            if (t.runs[i] != 1)
                fail_msg("%d threads: job %d ran %d times", threads[k], i, t.runs[i]);
        assert_int_equal(t.progress_calls, NJOBS);
        assert_int_equal(t.last_done, NJOBS);
        assert_int_equal(t.out_of_order, 0);
    }
}

static void test_one_thread_is_the_caller(void **state)
{
    (void)state;
    static tally t;
    for (int threads = -1; threads <= 1; threads++) {
        run(&t, NJOBS, threads);
        for (int i = 0; i < NJOBS; i++) {
            assert_int_equal(t.runs[i], 1);
            assert_true(pthread_equal(t.who[i], pthread_self()));
        }
    }
    run(&t, 0, 4); /* nothing to do: nothing runs, no progress */
    assert_int_equal(t.progress_calls, 0);
}

/* The address-space limit of this process now plus `extra` bytes: no thread stack fits in it. */
static int limit_address_space(size_t extra)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
            break;
    fclose(f);
    if (!kb)
        return -1;
    struct rlimit rl = {(rlim_t)kb * 1024 + extra, (rlim_t)kb * 1024 + extra};
    return setrlimit(RLIMIT_AS, &rl);
}

static void *nothing(void *arg)
{
    return arg;
}

static void test_no_thread_can_be_created(void **state)
{
    (void)state;
    if (bt_test_sanitized()) {
        printf("# skipped: the sanitizers' allocator cannot run under an address-space limit\n");
        skip();
    }
    static tally t;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (limit_address_space((size_t)1 << 20) != 0)
            _exit(3);
        pthread_t probe;
        if (pthread_create(&probe, NULL, nothing, NULL) == 0)
            _exit(4); /* the limit did not stop thread creation: nothing is tested */
        run(&t, NJOBS, 8);
        for (int i = 0; i < NJOBS; i++)
            if (t.runs[i] != 1 || !pthread_equal(t.who[i], pthread_self()))
                _exit(1);
        _exit(t.progress_calls == NJOBS ? 0 : 2);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 4) {
        printf("# skipped: an address-space limit does not stop pthread_create here\n");
        skip();
    }
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: the C library keeps the stacks of finished threads for new ones, which a
         * forked child inherits and which would let its threads start under the limit */
        cmocka_unit_test(test_no_thread_can_be_created),
        cmocka_unit_test(test_every_job_runs_once),
        cmocka_unit_test(test_one_thread_is_the_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
