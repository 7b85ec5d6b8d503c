/* SPDX-License-Identifier: Apache-2.0 */
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
 *   replay.c   a key the store holds, replayed to the strategy; its stored winner
 *   tune.c     bt__tune: the driver, with one cleanup path
 * A stage calls only the stages above it in this list.
 */
#ifndef BT_ENGINE_TUNE_CTX_H
#define BT_ENGINE_TUNE_CTX_H

#include "engine/build.h"
#include "engine/engine.h"
#include "engine/progress.h"
#include "search/common.h"

#include <pthread.h>

/* --- the data of one problem (pdata.c) -------------------------------------------------------- */
typedef struct bt__pdata {
    bt_problem p;
    bt__hostbuf host[BT__MAX_ARGS];
    bt__bbuf *dev[BT__MAX_ARGS];
    bool owned[BT__MAX_ARGS];
    bt__bbuf *saved[BT__MAX_ARGS]; /* restore_value copies (and the caller's reset_to_zero ones) */
    double *ref[BT__MAX_ARGS]; /* NULL while a device reference's outputs are only on the device
                                  (dref_typed): bt__pdata_ref_host makes it when the host needs it */
    bool have_ref;
    size_t *sample;
    size_t nsample;
    bt__karg scalars[BT__MAX_ARGS];
    /* the reference on the device for the comparison kernel (devcmp.c), uploaded on first use:
     * each output's (every element, or the sampled ones, as doubles), the sampled indices,
     * partial results; or, dref_typed, the device reference's output itself, copied where it
     * ran, in the output's dtype (bt__devcmp_keep_ref: nothing crossed to the host) */
    bt__bbuf *dref[BT__MAX_ARGS];
    bool dref_typed[BT__MAX_ARGS];
    bt__bbuf *didx, *dio;
} bt__pdata;

/* Whether k's reference runs on the device: a baseline config or a reference kernel. */
static inline bool bt__has_devref(const bt_kdesc *k)
{
    return k->ref == BT__REF_CONFIG || k->ref == BT__REF_KERNEL;
}

/* --- a boundary problem (reference.c): its data, its model (which configs apply), its text --- */
typedef struct bt__bprob {
    bt__pdata d;
    bt__model m;
    bool have_model;
    char where[128]; /* "M=17,N=63" */
} bt__bprob;

/* --- a launch geometry (the reference kernel has its own) ------------------------------------- */
typedef struct bt__geom {
    int64_t grid[3], block[3], dyn;
} bt__geom;

/* --- the device reference (reference.c): a baseline config or a reference kernel --------------- */
typedef struct bt__devref {
    bt__entry e;     /* its binary and module (for the tuned problem); e.error when it failed */
    bool kernel;     /* a reference kernel: its own source, entry and geometry */
    bool loaded;     /* e is built and loaded for the tuned problem */
    int runs;        /* problems whose reference outputs it made in this process */
    char name[160];  /* "reference kernel 'vadd_ref'", "baseline config BLOCK=32 ..." */
} bt__devref;

/* --- the comparison kernel on the device (devcmp.c) ------------------------------------------- */
typedef struct bt__devcmp {
    bool tried, ok; /* built and loaded (once per tune, again after a fault); ok: usable */
    bt__bmod *mod;
    bt__bfn *fn[BT__DT__COUNT]; /* bt_verify_<dtype> */
    struct bt__cmp_ahead *ahead; /* its compile started with the tune (bt__devcmp_ahead) */
} bt__devcmp;

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
    /* the reference run on the device (reference.c) and the boundary problems' data, made once
     * per tune (again after a fault); bnd_skip: a boundary problem that could not be made */
    bt__devref dref;
    bt__bprob *bnd[BT__MAX_BOUNDARY];
    bool bnd_skip[BT__MAX_BOUNDARY];
    bt__devcmp cmp; /* outputs compared on the device (devcmp.c) */
    /* the round's binaries for the boundary sizes, built with its own (tag: the boundary's
     * index; the device reference's baseline config among them), taken as they are verified */
    bt__prebuilt *pre;
    size_t npre;
    /* a key the store holds, replayed (replay.c): the stored winner, its margin and tie;
     * replay_end: a round held a config the store does not (the replay ends there) */
    bool replay, replay_end;
    bt_config replay_cfg;
    double replay_margin;
    bool replay_tie;
    /* the watchdog (watchdog.c): the run on the device now and when it is overdue */
    pthread_mutex_t wmu;
    pthread_t wd;
    bool wd_on;
    bt__entry *watch;    /* the entry running (NULL: none) */
    bool watch_rec;      /* its timeout is recorded in the store (a config's, not the reference's) */
    char watch_what[240]; /* what runs, for the long-wait notes */
    double watch_s;      /* its allowance, counted from the device's start of the run */
    double watch_t0;     /* when the watch began, and when the device started the run (0: not yet) */
    double watch_start;
    bt__btimer *watch_timer; /* the launch's timer: tells when the device started it */
    bool watch_marked;   /* recorded as timed out */
    bool watch_handled;  /* the hang handler was called */
    double watch_note;   /* when the next long-wait note is due */
    bool stop;
    struct bt__mpi *mpi; /* spread over MPI ranks (engine/mpi.h), NULL: not */
    /* rank 0 under MPI: runs a round's jobs over the ranks instead of here (bt__mpi_round) */
    bt_status (*mpi_round)(struct bt__tctx *T, bt__entry **jobs, size_t n);
} bt__tctx;

/* --- status.c -------------------------------------------------------------------------------- */
/* Marks e failed with status s and message msg. */
void bt__entry_fail(bt__entry *e, bt__cfg_status s, const char *msg);
/* Frees what e holds (its module, binary and texts) and clears it. */
void bt__entry_drop(bt__tctx *T, bt__entry *e);
/* Commits an entry's outcome to the store at once (a failure to store is said, not fatal), which
 * replaces its in-flight row; the in-flight note is cleared. */
void bt__record(bt__tctx *T, const bt__entry *e);
/* The same, the in-flight note kept: the watchdog's record of a run that is still going (the
 * process may yet die in it, and the note must then still name it). */
void bt__record_outcome(bt__tctx *T, const bt__entry *e);
/* Before config e's first run: on a device that can crash this process (a CPU device runs
 * kernels in-process) it is recorded in the store as in flight (launch_failed: the process died
 * while running it), so that a tune resumed after a crash never runs it again; its real outcome
 * replaces the row. The in-flight note (record.h) names it for a supervisor. */
void bt__record_inflight(bt__tctx *T, const bt__entry *e);
/* The device can crash this process (a CPU device). */
bool bt__device_in_process(const bt__tctx *T);

/* --- pdata.c ---------------------------------------------------------------------------------- */
/* Checks problem p (what: "" for the tuned problem, else e.g. "boundary size n=17") before
 * anything runs: every buffer's size evaluates to at least one element (an error names the
 * argument, its size and the problem variables in it), and its data fits the device's memory and
 * the host's (an error says both numbers). mem: also check the memory (the tuner's own data). */
bt_status bt__problem_check(const bt__tctx *T, const bt_problem *p, const char *what, bool mem,
                            bt_diag *diag);
/* Prepares inputs and the host reference for a problem. caller: the caller's buffers (may be
 * NULL; then inputs are generated from the seed). On failure d holds nothing. */
bt_status bt__pdata_init(bt__tctx *T, bt__pdata *d, const bt_problem *p, uint64_t seed,
                         bt_buffer *const *caller, int ncaller, bt_diag *diag);
void bt__pdata_free(bt__tctx *T, bt__pdata *d);
/* d->ref[i] on the host (for a comparison there, or a message): made from the device's typed
 * copy (dref_typed) when it is not there yet; BT_OK when it is there. */
bt_status bt__pdata_ref_host(bt__tctx *T, bt__pdata *d, int i, bt_diag *diag);
/* Before every run, outside the timed region: reset_to_zero and restore_value. */
bt_status bt__pdata_pre_run(bt__tctx *T, bt__pdata *d, bt_diag *diag);
/* The caller's buffers back to what the caller gave (their restore copies), then a sync. */
void bt__pdata_give_back(bt__tctx *T, bt__pdata *d);
/* One launch of e on d (timer may be NULL); an empty grid launches nothing. geo: the geometry
 * (the reference kernel's), NULL: e's config's. */
bt_status bt__run(bt__tctx *T, const bt__entry *e, bt__pdata *d, bt__btimer *timer,
                  bt_diag *diag);
bt_status bt__run_geom(bt__tctx *T, const bt__entry *e, const bt__geom *geo, bt__pdata *d,
                       bt__btimer *timer, bt_diag *diag);
/* `reps` back-to-back launches of e on d replayed from a graph; *ms per launch. */
bt_status bt__run_graph(bt__tctx *T, const bt__entry *e, bt__pdata *d, int reps, double *ms,
                        bt_diag *diag);

/* --- watchdog.c ------------------------------------------------------------------------------- */
/* Starts the watchdog thread (a tune without one runs unguarded); bt__watchdog_stop ends it. */
void bt__watchdog_start(bt__tctx *T);
void bt__watchdog_stop(bt__tctx *T);
/* Watches e's runs from now until bt__watch_end: past `seconds` of the device running them e is
 * marked timed out (and recorded when rec), past three times that it is hung (the hang handler).
 * first: the first launch of a binary here, whose time counts from when the device starts it
 * (bt__watch_timer), where the backend tells: PoCL compiles a binary at its first launch; until
 * then BT__FIRST_LAUNCH_S apply. what: the long-wait notes' text ("verifying config ..."). */
#define BT__FIRST_LAUNCH_S 600.0
void bt__watch_begin(bt__tctx *T, bt__entry *e, bool rec, double seconds, bool first,
                     const char *what);
/* The watched launch was enqueued with timer t (freed only after bt__watch_end). */
void bt__watch_timer(bt__tctx *T, bt__btimer *t);
void bt__watch_end(bt__tctx *T);

/* --- devcmp.c --------------------------------------------------------------------------------- */
/* Compares output i of d, as e's run left it on the device, with d's reference (no reference:
 * checks every element is finite) into v, on the device: the comparison kernel built on first
 * use, d's reference uploaded on first use. BT_UNSUPPORTED: not possible on this device (or the
 * kernel failed: the rest of the tune compares on the host); the caller reads the output back and
 * compares on the host. Another status: the device call failed with the device lost. */
bt_status bt__devcmp_output(bt__tctx *T, bt__pdata *d, int i, double rtol, double atol,
                            bt__verify *v, bt_diag *diag);
/* Starts compiling the comparison kernel on a thread of its own when the kernel cache lacks it
 * and the tune will verify on the device, so that the first verification does not wait for the
 * compiler (the tune's start; cmp_ready and bt__devcmp_free wait for it). */
void bt__devcmp_ahead(bt__tctx *T);
/* The comparison module unloaded (the tune ends, or a fault lost the device). */
void bt__devcmp_free(bt__tctx *T);
/* d's host reference copied to the device now, when the tune will compare there (not on the
 * first comparison: the tuned problem's data phase calls it, so that the copy counts as making
 * the reference, once, and each verification as comparing; its time in T->r->t_ref_upload;
 * BT_OK with nothing done otherwise, and when a copy fails without losing the device: nothing is
 * kept and the first comparison tries again, falling back to the host as before). */
bt_status bt__devcmp_upload_refs(bt__tctx *T, bt__pdata *d, bt_diag *diag);
/* d's device copies of its reference (bt__pdata_free calls it). */
void bt__devcmp_pdata_free(bt__tctx *T, bt__pdata *d);
/* After the device reference ran on d (its outputs poisoned first): when the comparison kernel
 * is available and every output is a float type, whose poison is a NaN, each output is scanned
 * on the device; with no non-finite element in any (so none was left unwritten) each is copied
 * into d->dref[i] in its own dtype (dref_typed) and *kept is set: d's reference is then on the
 * device alone. Otherwise *kept is false and nothing is kept (the caller reads the outputs back
 * and checks them on the host). A status other than BT_OK: a device call failed. */
bt_status bt__devcmp_keep_ref(bt__tctx *T, bt__pdata *d, bool *kept, bt_diag *diag);

/* --- verify.c --------------------------------------------------------------------------------- */
/* Poisons d's outputs (with the dtype's poison, or with zero bytes), runs e once (with geometry
 * geo, NULL: its config's) timed from when the device starts it (bt__watch_timer) and, when
 * read, reads every output back into d->host. */
bt_status bt__run_poisoned(bt__tctx *T, const bt__entry *e, const bt__geom *geo, bt__pdata *d,
                           bool zeros, bool read, bt_diag *diag);
/* Poisons d's outputs, runs e once and compares every output with the reference into v (on the
 * device where it can, devcmp.c; else read back and on the host). A status other than BT_OK is a
 * failure of the device call itself (v then says nothing). */
bt_status bt__verify_on(bt__tctx *T, const bt__entry *e, bt__pdata *d, bt__verify *v,
                        bt_diag *diag);
/* Boundary problem b of the kernel: the tuned problem with the boundary's values, into *bp, and
 * its text ("M=17,N=63") into where. */
void bt__boundary_problem(const bt__tctx *T, int b, bt_problem *bp, char *where, size_t size);

/* --- reference.c ------------------------------------------------------------------------------ */
/* The device reference of a "config" or reference-kernel spec: built and loaded for the tuned
 * problem (a compile error is said with the compiler's log). BT_OK at once for other kinds. */
bt_status bt__devref_prepare(bt__tctx *T, bt_diag *diag);
void bt__devref_free(bt__tctx *T);
/* A problem's data (bt__pdata_init) with its reference: the host reference or the answers, or
 * the device reference run once on the data with poisoned outputs, every output read back (one
 * it left unwritten is an error). where: the problem's text for messages ("" for the tuned one). */
bt_status bt__problem_data(bt__tctx *T, bt__pdata *d, const bt_problem *p, uint64_t seed,
                           bt_buffer *const *caller, int ncaller, const char *where,
                           bt_diag *diag);
/* Boundary problem b, its data made on first use and kept for the tune (until a fault); NULL
 * when it cannot be made (T->sdiag says why; the size is skipped) or, with *st set and T->sdiag
 * saying why, on a failure that stops the tune (the device reference failed there). */
bt__bprob *bt__boundary_data(bt__tctx *T, int b, bt_status *st);
/* Frees every boundary problem's data (a fault lost it, or the tune ends). */
void bt__boundary_free(bt__tctx *T);

/* --- measure.c -------------------------------------------------------------------------------- */
/* Still to be verified or measured here: pending, or measured earlier and kept in the store. */
bool bt__in_play(const bt__entry *e);
/* One config of a round, alone on the device (its binary built or failed): loaded, verified at
 * the problem and the boundary sizes, measured unless the store had it; outcomes recorded.
 * Returns what stops the search (the device lost for good). */
bt_status bt__run_config(bt__tctx *T, bt__entry *e);
/* Loads e for the problem tuned; on failure e is marked (and recorded when rec). */
void bt__load(bt__tctx *T, bt__entry *e, bool rec);
/* Unloads every entry's module (the binaries stay). */
void bt__unload_all(bt__tctx *T);
/* The bench closure over the problem's data (T->ops: measures T->cur_e), graph mode when asked
 * for and possible (r->graph_note says which). */
void bt__bench_setup(bt__tctx *T);
/* The search over the plan's valid configs with strategy strat, in rounds of compile_threads
 * configs (load → verify → measure each; exhaustive with no time limit: one round of them all),
 * within r->budget, time_limit_s (0: none) and the
 * target; with kn->stored_only, only what the store holds, in one round. diag: why it failed, or
 * a boundary size not verified (not fatal: also in r->verify_note). */
bt_status bt__search(bt__tctx *T, const bt__strategy *strat, double time_limit_s, bt_diag *diag);

/* --- replay.c --------------------------------------------------------------------------------- */
/* Whether this tune replays the store (sets T->replay): its mode is tune, no caller's buffers, the
 * store holds the key's winner, a valid config of the plan, and rows for as many valid configs as
 * the search may measure. Then no data, reference or device run is made (measure.c answers the
 * strategy's rounds from the store). */
bool bt__replay_ready(bt__tctx *T);
/* After a replayed search: the stored winner (appended from the store when the replay ended before
 * it), the runner-up among the replayed rows, the stored margin and tie, the rows' noise band. */
void bt__replay_select(bt__tctx *T);

/* --- select.c --------------------------------------------------------------------------------- */
/* The search's share of the whole tune's time limit (0: none), `spent` seconds having gone before
 * the search. */
double bt__search_time_limit(const bt__tune_opts *o, double spent);
/* The finals: the best first medians re-measured interleaved, challengers, the winner with its
 * margin, noise band and tie; finalists' statistics and the winner go to the store. */
void bt__select(bt__tctx *T);

#endif
