/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quality.c — measurement quality on a CUDA device: five independent tunes of the same kernel and
 * problem (no store, a fresh kernel each time) must pick the same winner or call a tie within the
 * noise band; and blocktune's reported median of the winner must match an independent
 * measurement: CUDA events recorded around each launch by this program, after the same L2 flush.
 *
 *   usage: quality [N]       (vector_add with n = N, default 2^26; prints JSON)
 */
#include "engine/engine.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*ev_create_t)(void **, unsigned);
typedef int (*ev_record_t)(void *, void *);
typedef int (*ev_sync_t)(void *);
typedef int (*ev_elapsed_t)(float *, void *, void *);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);
typedef int (*memset_t)(unsigned long long, unsigned, size_t);
typedef int (*alloc_t)(unsigned long long *, size_t);
typedef int (*retain_t)(void **, int);
typedef int (*setcur_t)(void *);

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : (1LL << 26);
    bt_diag d = {0};
    bt_device *dev;
    if (bt_device_open("cuda:0", &dev, &d)) {
        printf("SKIPPED: %s\n", d.msg);
        return 77;
    }
    bt_kdesc *k;
    bt_kdesc_builtin("vector_add", &k, &d);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_problem_set(p, "n", n, &d);
    char winners[5][256];
    double medians[5], margins[5];
    int ties[5];
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.store = "none";
    bt_kernel *keep = NULL;
    bt_config last;
    for (int t = 0; t < 5; t++) {
        bt_kernel *kn;
        bt_kernel_create(dev, k, &kn, &d);
        bt_result *r;
        if (bt__kernel_tune_opts(kn, p, &o, &r, &d) || r->winner < 0) {
            fprintf(stderr, "tune: %s\n", d.msg);
            return 1;
        }
        bt_config c = r->e[r->winner].ev.cfg;
        snprintf(winners[t], sizeof winners[t], "BLOCK_SIZE=%lld num_warps=%lld VEC=%lld",
                 (long long)c.v[0], (long long)c.v[1], (long long)c.v[2]);
        medians[t] = r->e[r->winner].st.median;
        margins[t] = r->margin;
        ties[t] = r->tie;
        last = c;
        bt_result_destroy(r);
        if (t < 4)
            bt_kernel_destroy(kn);
        else
            keep = kn;
    }
    int same = 1;
    for (int t = 1; t < 5; t++)
        same &= !strcmp(winners[t], winners[0]);
    printf("{\"n\": %lld,\n \"tunes\": [", n);
    for (int t = 0; t < 5; t++)
        printf("%s{\"winner\": \"%s\", \"median_ms\": %.5f, \"margin\": %.4f, \"tie\": %d}", t ? ", " : "",
               winners[t], medians[t], margins[t], ties[t]);
    printf("],\n \"same_winner\": %d,\n", same);

    /* the independent measurement of the last winner: our own events around our own launches */
    bt_buffer *b[3];
    for (int i = 0; i < 3; i++)
        bt_buffer_create(dev, (size_t)n * 4, &b[i], &d);
    bt_kernel_launch(keep, p, b, 3, &d); /* dispatched from the tune: no new tune */
    bt_device_sync(dev, &d);
    bt__dispatch e = {0};
    bt__dkey key;
    bt__dispatch_key(keep, p, &key);
    if (!bt__dispatch_find(keep, &key, &e)) {
        fprintf(stderr, "no dispatch entry after the launch\n");
        return 1;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ev_create_t evc = (ev_create_t)dlsym(lib, "cuEventCreate");
    ev_record_t evr = (ev_record_t)dlsym(lib, "cuEventRecord");
    ev_sync_t evs = (ev_sync_t)dlsym(lib, "cuEventSynchronize");
    ev_elapsed_t eve = (ev_elapsed_t)dlsym(lib, "cuEventElapsedTime");
    launch_t L = (launch_t)dlsym(lib, "cuLaunchKernel");
    memset_t ms = (memset_t)dlsym(lib, "cuMemsetD32_v2");
    alloc_t al = (alloc_t)dlsym(lib, "cuMemAlloc_v2");
    retain_t rt = (retain_t)dlsym(lib, "cuDevicePrimaryCtxRetain");
    setcur_t sc = (setcur_t)dlsym(lib, "cuCtxSetCurrent");
    void *ctx;
    if (!evc || !evr || !evs || !eve || !L || !ms || !al || !rt || !sc || rt(&ctx, 0) || sc(ctx)) {
        printf(" \"independent\": null}\n");
        return 1;
    }
    unsigned long long flush;
    size_t fbytes = (size_t)bt_device_get_info(dev)->props.l2_bytes * 2;
    al(&flush, fbytes);
    void *fn = *(void **)e.fn;
    unsigned long long px = *(unsigned long long *)b[0]->b, py = *(unsigned long long *)b[1]->b,
                       pz = *(unsigned long long *)b[2]->b;
    void *params[4] = {&px, &py, &pz, &n};
    double t[200];
    for (int i = 0; i < 220; i++) {
        void *e0, *e1;
        evc(&e0, 0);
        evc(&e1, 0);
        ms(flush, (unsigned)i, fbytes / 4);
        evr(e0, NULL);
        L(fn, e.grid[0], 1, 1, e.block[0], 1, 1, 0, NULL, params, NULL);
        evr(e1, NULL);
        evs(e1);
        float ms_f;
        eve(&ms_f, e0, e1);
        if (i >= 20)
            t[i - 20] = ms_f;
    }
    qsort(t, 200, sizeof *t, cmpd);
    double ind = (t[99] + t[100]) / 2;
    printf(" \"independent_median_ms\": %.5f, \"blocktune_median_ms\": %.5f, \"difference\": %.4f,\n",
           ind, medians[4], (medians[4] - ind) / ind);
    printf(" \"winner_config\": \"BLOCK_SIZE=%lld num_warps=%lld VEC=%lld\"}\n", (long long)last.v[0],
           (long long)last.v[1], (long long)last.v[2]);
    return 0;
}
