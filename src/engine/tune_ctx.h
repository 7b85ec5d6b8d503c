/*
 * tune_ctx.h — what the stages of one tune share (internal to src/engine): the data of a problem,
 * the tuning context, and each stage's entry points. The stages, lowest first:
 *   status.c   a config's status and marking an entry failed
 *   build.c    compile one config through the kernel cache, load it; the compile stage on a pool
 *              (build.h: kernel.c builds a looked-up config through it too)
 *   pdata.c    a problem's host data, device buffers and reference outputs; one run of a config
 *   verify.c   one config checked on one problem's data; the boundary problems; the baseline
 *   measure.c  a search round (load → verify → measure) under the watchdog; recovery after a fault
 *   select.c   finalists re-measured interleaved, challengers, margin, noise band, tie
 *   tune.c     bt__tune: the driver, with one cleanup path
 * A stage calls only the stages above it in this list.
 */
#ifndef BT_ENGINE_TUNE_CTX_H
#define BT_ENGINE_TUNE_CTX_H

#include "engine/build.h"
#include "engine/engine.h"
#include "search/common.h"

#include <pthread.h>

/* --- the data of one problem (pdata.c) -------------------------------------------------------- */
typedef struct bt__pdata {
    bt_problem p;
    bt__hostbuf host[BT__MAX_ARGS];
    bt__bbuf *dev[BT__MAX_ARGS];
    bool owned[BT__MAX_ARGS];
    bt__bbuf *saved[BT__MAX_ARGS]; /* restore_value copies (and the caller's reset_to_zero ones) */
    double *ref[BT__MAX_ARGS];
    bool have_ref;
    size_t *sample;
    size_t nsample;
    bt__karg scalars[BT__MAX_ARGS];
} bt__pdata;

/* --- the tuning context ----------------------------------------------------------------------- */
typedef struct bt__tctx {
    bt_kernel *kn;
    const bt_kdesc *k;
    const bt__backend_iface *I;
    bt__bdev *D; /* kn->bdev: replaced when a fault reopens the device */
    const bt_gpu *g;
    bt__tune_opts o;
    bt_result *r;
    struct bt__store *store; /* NULL: nothing is recorded */
    double t0;               /* the tune's start */
    /* the problem tuned and its data */
    const bt_problem *p;
    bt__pdata *main;
    bool caller;       /* main holds the caller's buffers (lost with a faulted device) */
    bt__bench_ops ops; /* measures cur_e on main */
    bt__entry *cur_e;
    /* the search */
    bt__idxmap cand; /* space index -> position in plan->cand (the valid configs) */
    size_t cap;      /* of r->e */
    double t_search0;
    size_t rounds;
    bt_diag *sdiag; /* why the search failed (device lost, out of memory) */
    /* the watchdog: the entry on the device now and when it is overdue */
    pthread_mutex_t wmu;
    pthread_t wd;
    bool wd_on;
    bt__entry *watch;
    double deadline;
    bool stop;
} bt__tctx;

/* --- status.c: marks e failed with status s and message msg -------------------------------- */
void bt__entry_fail(bt__entry *e, bt__cfg_status s, const char *msg);

/* --- pdata.c ---------------------------------------------------------------------------------- */
/* Prepares inputs and the host reference for a problem. caller: the caller's buffers (may be
 * NULL; then inputs are generated from the seed). On failure d holds nothing. */
bt_status bt__pdata_init(bt__tctx *T, bt__pdata *d, const bt_problem *p, uint64_t seed,
                         bt_buffer *const *caller, int ncaller, bt_diag *diag);
void bt__pdata_free(bt__tctx *T, bt__pdata *d);
/* Before every run, outside the timed region: reset_to_zero and restore_value. */
bt_status bt__pdata_pre_run(bt__tctx *T, bt__pdata *d, bt_diag *diag);
/* The caller's buffers back to what the caller gave (their restore copies), then a sync. */
void bt__pdata_give_back(bt__tctx *T, bt__pdata *d);
/* One launch of e on d (timer may be NULL); an empty grid launches nothing. */
bt_status bt__run(bt__tctx *T, const bt__entry *e, bt__pdata *d, bt__btimer *timer,
                  bt_diag *diag);
/* `reps` back-to-back launches of e on d replayed from a graph; *ms per launch. */
bt_status bt__run_graph(bt__tctx *T, const bt__entry *e, bt__pdata *d, int reps, double *ms,
                        bt_diag *diag);

/* --- verify.c --------------------------------------------------------------------------------- */
/* Poisons d's outputs, runs e once and compares every output with the reference into v. A status
 * other than BT_OK is a failure of the device call itself (v then says nothing). */
bt_status bt__verify_on(bt__tctx *T, const bt__entry *e, bt__pdata *d, bt__verify *v,
                        bt_diag *diag);
/* Boundary problem b of the kernel: the tuned problem with the boundary's values, into *bp, and
 * its text ("M=17,N=63") into where. */
void bt__boundary_problem(const bt__tctx *T, int b, bt_problem *bp, char *where, size_t size);
/* Compiles, loads and runs the reference ("config" kind) baseline on d, whose outputs become d's
 * reference; it is not a measured entry (the strategy may still propose it). */
bt_status bt__baseline(bt__tctx *T, bt__pdata *d, bt_diag *diag);

/* --- measure.c -------------------------------------------------------------------------------- */
/* Starts the watchdog thread (a tune without one runs unguarded); bt__watchdog_stop ends it. */
void bt__watchdog_start(bt__tctx *T);
void bt__watchdog_stop(bt__tctx *T);
/* Commits an entry's outcome to the store at once (a failure to store is said, not fatal). */
void bt__record(bt__tctx *T, const bt__entry *e);
/* Still to be verified or measured here: pending, or measured earlier and kept in the store. */
bool bt__in_play(const bt__entry *e);
/* Loads e for the problem tuned; on failure e is marked (and recorded when rec). */
void bt__load(bt__tctx *T, bt__entry *e, bool rec);
/* Unloads every entry's module (the binaries stay). */
void bt__unload_all(bt__tctx *T);
/* The bench closure over the problem's data (T->ops: measures T->cur_e), graph mode when asked
 * for and possible (r->graph_note says which). */
void bt__bench_setup(bt__tctx *T);
/* The search over the plan's valid configs with strategy strat, in rounds of compile_threads
 * configs (load → verify → measure each), within r->budget, time_limit_s (0: none) and the
 * target. diag: why it failed, or a boundary problem that could not be made (not fatal). */
bt_status bt__search(bt__tctx *T, const bt__strategy *strat, double time_limit_s, bt_diag *diag);

/* --- select.c --------------------------------------------------------------------------------- */
/* The search's share of the whole tune's time limit (0: none), `spent` seconds having gone before
 * the search. */
double bt__search_time_limit(const bt__tune_opts *o, double spent);
/* The finals: the best first medians re-measured interleaved, challengers, the winner with its
 * margin, noise band and tie; finalists' statistics and the winner go to the store. */
void bt__select(bt__tctx *T);

#endif
