/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h — the tuning engine's internal types (internal): per-config entries with typed
 * statuses, timing statistics, the do_bench loop, the result object and the kernel handle's
 * dispatch cache.
 */
#ifndef BT_ENGINE_ENGINE_H
#define BT_ENGINE_ENGINE_H

#include "backends/backend.h"
#include "backends/device.h"
#include "core/cfgstatus.h"
#include "core/plan.h"
#include "engine/host.h"
#include "engine/topts.h"

#include <pthread.h>

/* status.c: the status of a config that failed with st, and what a search strategy is told
 * about a config of status s (BT_OK when it measured). Names: core/cfgstatus.h. */
bt__cfg_status bt__cfg_status_of(bt_status st);
bt_status bt__cfg_status_fail(bt__cfg_status s);

typedef struct bt__stats {
    double median, p20, p80, min, max, mad;
    double mean; /* Kernel Tuner's "time" (the store keeps it for export-kt) */
    int n;
    bool screened; /* the median of a screening measurement (bt__bench_screen), not of the full
                      budgets */
    bool cut;      /* a screening that ended after the estimate's runs: slower than the cut */
} bt__stats;
/* Statistics of n samples (sorted in place). */
void bt__stats_compute(double *t, int n, bt__stats *s);

/* One timed run: pre() (resets, not timed) then the launch into timer. */
typedef struct bt__bench_ops {
    bt_status (*pre)(void *user, bt_diag *diag);
    bt_status (*launch)(void *user, bt__btimer *timer, bt_diag *diag);
    void *user;
    const bt__backend_iface *iface;
    bt__bdev *bdev;
    bool flush;
    /* graph mode (optional): time `reps` back-to-back launches captured in one graph; *ms is per
     * launch. When set, bt__bench times graph replays instead of single launches (no flush). */
    bt_status (*graph)(void *user, int reps, double *ms, bt_diag *diag);
} bt__bench_ops;

/* do_bench (seed 000 §6 done right): estimate from a few timed runs, then warm-up and repetition
 * counts from the time budgets, a cache flush before every timed run, device timers around the
 * launch alone. samples (optional, malloc'd) receives every timed run. BT_TIMEOUT when one run
 * exceeds timeout_ms. */
bt_status bt__bench(const bt__bench_ops *ops, double warmup_ms, double rep_ms, double timeout_ms,
                    bt__stats *out, double **samples, int *nsamples, bt_diag *diag);
/* The same with the estimate kept: *est_ms > 0 is the cost of a run estimated before (no estimate
 * runs now; at least one warm-up run); otherwise it is estimated and *est_ms set. The finals'
 * interleaved rounds of one config estimate it once. */
bt_status bt__bench_est(const bt__bench_ops *ops, double warmup_ms, double rep_ms,
                        double timeout_ms, double *est_ms, bt__stats *out, double **samples,
                        int *nsamples, bt_diag *diag);

/* A screening measurement (the short first look at every config, select.c re-measures the
 * finalists at the full budgets): the warm-up scaled by screen_ms / rep_ms, screen_ms of runs but
 * at least BT__SCREEN_MIN_RUNS and never more than bt__bench would take for rep_ms; no samples.
 * out->screened is set, unless the runs are so slow that it took the full budget's runs. With
 * cut_ms > 0 (not in graph mode), a config whose estimate's runs (EST_RUNS, the first discarded)
 * have a median above cut_ms ends there, those runs its statistics, out->cut set: the measure
 * layer's cut is BT__SCREEN_CUT times the fastest median measured before it, and such a config
 * cannot be a finalist unless the leaders' own re-measurement moves by as much (then it meets the
 * winner as a challenger, select.c). */
#define BT__SCREEN_MIN_RUNS 10
#define BT__SCREEN_CUT 1.25
#define BT__EST_RUNS 5
bt_status bt__bench_screen(const bt__bench_ops *ops, double warmup_ms, double rep_ms,
                           double screen_ms, double cut_ms, double timeout_ms, bt__stats *out,
                           bt_diag *diag);

/* Where a config was measured under MPI (engine/mpi_*.c): the device, and {"mpi": {"rank",
 * "host"}} for the store row's extra_json. */
typedef struct bt__remote {
    const char *name, *uuid, *driver, *compiler, *extra_json;
} bt__remote;

typedef struct bt__entry {
    bt__cfg_eval ev;
    size_t model_rank; /* 1-based rank by predicted time among valid configs */
    bt__cfg_status status;
    char *error; /* malloc'd */
    char *log;   /* malloc'd compile log (kept when compile failed or warned) */
    double compile_s;
    bool cached;     /* the binary came from the on-disk kernel cache */
    const char *precompiled; /* ...built ahead of time: "user" (kernel cache folder) or
                                "installed" (engine/kcache.h); NULL otherwise */
    bool from_store; /* the measurement came from the results store (not re-measured) */
    bool finalist;   /* re-measured interleaved in the finals (select.c) */
    bool left_rounds;            /* left the finals' interleaved rounds early: clearly slower
                                    than the leader on the rounds it ran, or */
    bool left_tied;              /* decidedly tied with it (inside their noise band by two
                                    standard errors) */
    double lead_margin, lead_noise; /* a finalist's margin behind the leader on the rounds the two
                                       shared (when it left, else at the end: 0 for the leader)
                                       and their noise band: the finals rank by it, whatever the
                                       leader's later rounds drift to */
    bt__kres res;
    bt__blob blob;
    bt__bmod *mod;
    bt__bfn *fn;
    bt__verify ver;
    int boundary_checked;
    int boundary_na; /* boundary sizes outside the config's constraints there (not run) */
    bt__stats st;
    double first_median; /* st.median before the finals re-measured it (select.c) */
    double gbps, tflops, eff; /* from the final median */
    int64_t grid[3], block[3], dyn_smem;
    const bt__remote *remote; /* measured on this MPI rank's device (NULL: not under MPI) */
} bt__entry;

/* What a config to compile must promise beyond a ready one (the ready ones are measured without
 * a compile), for a search that weighs its candidates by cost: its expected improvement of the
 * best time, as a fraction (ln time), less this. A round of 16 waits for its slowest compile,
 * 0.5-3 s with NVRTC for the built-in GEMMs on the H200 (Triton's 1-20 s), against 15-30 ms for a
 * config's screening and verification, so a round that compiles anything costs several that
 * compile nothing; 2 % is about a screening's noise band, below which a measurement decides
 * nothing. An additive threshold, not a factor (bench/NOTES.md 42): late in a search the ready
 * configs' expected improvements are near zero, and a factor of them still let a re-tune compile
 * 9-11 new configs of 64 in test_search's re-tune, the threshold 0.5-1. */
#define BT__COMPILE_GAIN 0.02

struct bt_result {
    const bt_kdesc *k;
    bt__config_obj winner_cfg; /* what bt_result_winner hands out */
    bt_problem problem;
    bt_device_info dev;
    bt_plan *plan;
    bt__entry *e;
    size_t n;
    size_t not_measured;
    int winner, runner_up;
    double margin, noise;
    bool tie;
    int finalists, rounds;
    int challengers; /* configs added to the finals by a first median below the winner's */
    int promoted;    /* configs added to the finals because their screening median was within
                        the screening noise of the cut (select.c) */
    int not_promoted;/* configs within it that did not fit (16 finalists, time limit) */
    int left_early;  /* finalists that left the interleaved rounds early (select.c): clearly
                        slower, or decidedly tied with the leader (left_tied of them) */
    int left_tied;
    int screened;    /* configs whose median was a screening one when the finals began */
    int screen_cut;  /* of them, screenings that ended after the estimate's runs (bench.c) */
    int rounds_run;  /* the finals' interleaved rounds that ran (of rounds; select.c) */
    double t_total, t_compile, t_verify, t_measure;
    double t_data; /* the problem's data and reference (and the device reference's build) */
    double t_finals; /* the part of t_measure spent in the finals (select.c, replay.c) */
    double t_ref;    /* the part of t_data spent on the device reference (its build and run on
                        the tuned problem's data, reading its outputs back) */
    double t_ref_upload; /* the part of t_data spent copying the host reference to the device for
                            the comparison kernel (bt__devcmp_upload_refs) */
    /* a source compiled in another process (Triton's pool; backend.h xcompiler_times): xc_known
     * (the kernel's language is), whether this process started it (xc_embedder: through the
     * embedder's bt_triton_pool_starter), its start-to-ready (-1: not ready or none) and the
     * compile seconds it reported during this tune */
    bool xc_known, xc_started, xc_embedder;
    double xc_ready_s, xc_compile_s;
    int compile_threads;
    int cached;     /* configs whose binary came from the kernel cache */
    int recoveries; /* device faults survived (context rebuilt) */
    int from_store; /* configs whose measurement came from the results store */
    int dev_compares; /* outputs compared with the reference on the device (devcmp.c) */
    int refs_kept;    /* problems whose device reference's outputs stayed on the device (devcmp.c
                         bt__devcmp_keep_ref), not read back */
    int replayed;     /* configs whose stored outcome was replayed, nothing run (replay.c) */
    /* the search (src/search): the strategy, why it stopped, in how many rounds, the effective
     * measurement budget (0: none) and the wall time of the search */
    char strategy[32];
    char stop[32];
    uint64_t search_rounds;
    int round_size; /* configs a round proposes (compile_threads, or all for exhaustive) */
    int ready;      /* valid configs whose binaries were ready when the search began (the kernel
                       cache's, from an earlier tune): the search weighed them cheaper, a config
                       to compile having to promise BT__COMPILE_GAIN more (measure.c) */
    size_t budget;
    double t_search;
    double target_ms; /* the search's target time in effect (0: none) */
    char graph_note[200];
    char stored_only[300]; /* why this tune measured nothing new (only the store's rows) */
    char verify_note[1024]; /* a boundary size not verified, and why ("": none) */
    char source_hash[20];
    char timestamp[40];
    bt__tune_opts opts;
    char reference[200]; /* what the outputs were checked against: set once that check ran */
    /* the results store (record.c): its path ("" when the tune keeps nothing), whether it was
     * refused at open, the rows this tune wrote, the writes that failed, and the first failure */
    char store_path[256];
    bool store_refused;
    int stored, store_failed;
    char store_error[1024];
    struct bt__famres *fam; /* a front door's tune across families (engine/fam.h); NULL: none */
};

/* A dispatch cache entry: the key values and the compiled winner, with the launch geometry and
 * scalar arguments already evaluated for the problem that created it (reused when a later problem
 * has the same values for every variable, the common case; re-evaluated otherwise). */
typedef struct bt__dispatch {
    /* what a launch reads, first and together (few cache lines between the driver's calls) */
    uint64_t hash;
    int nkv;
    bool has_tmaps;
    int64_t kv[BT__MAX_PROBLEM + 1]; /* key variables' values, then the dtype */
    bt__bfn *fn;
    uint32_t grid[3], block[3];
    size_t dyn;
    int64_t pvals[BT__MAX_PROBLEM];
    bt__karg args[BT__MAX_ARGS]; /* scalars and local sizes; buffers filled per launch */
    size_t need[BT__MAX_ARGS];   /* bytes each buffer argument needs for the problem */
    int8_t dtype[BT__MAX_ARGS];  /* its bt__dtype */
    /* the backend's prepared launch (launch_rec_make), when it made one: what a launch reads
     * instead of fn, grid, block, dyn and args */
    bool has_rec;
    _Alignas(16) unsigned char rec[BT__LREC_BYTES];
    /* the rest */
    bt__bmod *mod;
    bt_config cfg;
    bt__tmap_req tm[BT__MAX_TMAPS]; /* tensor maps, encoded per launch over its buffers */
} bt__dispatch;

/* The dispatch table: open addressing over entries that never change once published (a re-tune
 * publishes a new one), so that launches read it without a lock. Slots and the table pointer are
 * read with acquire and written with release, under the kernel's lock. */
typedef struct bt__dtab {
    size_t cap; /* a power of two */
    bt__dispatch *slot[];
} bt__dtab;

/* What a writer took out of use (a replaced entry with its module, an outgrown table, a reset's
 * entries): kept until the kernel is destroyed, since a launch in another thread may hold it. */
typedef struct bt__retired {
    struct bt__retired *next;
    void *mem;
    bt__bmod *mod;  /* an entry's module, freed on bdev, the backend device that loaded it */
    bt__bdev *bdev;
} bt__retired;

struct bt_kernel {
    bt_device *dev;
    const bt__backend_iface *iface;
    bt__bdev *bdev;
    const bt_kdesc *k;
    bt__dtab *tab;        /* the dispatch table, NULL: empty */
    struct bt__famk *fam; /* a front door's families (engine/fam.h); NULL: none */
    /* what the launch path reads of k, copied together at create: the key's problem values,
     * the buffers' argument indices in order */
    int8_t nkey, nproblem, nargs, nbuf;
    bool key_dtype, has_cmem, wrapped; /* wrapped: bt_device_is_wrapped(dev) */
    int8_t key_idx[BT__MAX_PROBLEM];
    int8_t buf_arg[BT__MAX_ARGS];
    const bt__ksource *src; /* k's source that this backend compiles (bt__backend_source) */
    uint64_t src_hash;      /* bt__kdesc_source_hash of it: keys the store and wisdom */
    bt__tune_opts opts;         /* what a first launch tunes with (strings in opts_obj) */
    bt_tune_options *opts_obj;  /* bt_kernel_set_options' copy (NULL: the defaults) */
    pthread_mutex_t lock; /* serialises the dispatch table's writers (launches take none) */
    size_t ntab;
    bt__retired *retired;
    pthread_mutex_t tune_lock;
    /* constant memory belongs to the module: a kernel with constant-memory arguments (has_cmem)
     * enqueues each launch's copy and the launch together, under this lock */
    pthread_mutex_t cmem_lock;
    int tunes;
    struct bt__store *store; /* results store (lazily opened, see record.c) */
    bool store_tried, wisdom_loaded;
    char store_error[1024]; /* why the store could not be opened ("" when it was, or is "none") */
    bool lost; /* a fault poisoned the device for the rest of this process */
    bt_hang_handler hang_handler;
    void *hang_user;
    char stored_only[300]; /* non-empty: tunes measure nothing new, for this reason (record.c) */
    struct bt__wisdom *user_wisdom, *shipped_wisdom;
    pthread_mutex_t wisdom_lock; /* guards wisdom_loaded and the two above */
    bt_kernel *door; /* a family's front door, whose wisdom it reads (NULL: none) */
};

struct bt_buffer {
    bt_device *dev;
    bt__bbuf *b;
    size_t bytes;
    bool borrowed; /* wraps the caller's memory (bt_buffer_wrap) */
    int dtype;     /* bt__dtype from bt_buffer_set_dtype, -1: none declared */
};

/* --- launch.c: the launch path ----------------------------------------------------------------- */
/* What a first launch tunes on: the caller's buffers and how (bt_launch_options). */
typedef struct bt__tune_on {
    bt_buffer *const *buffers;
    int nbuffers;
    void *stream;     /* the caller's stream (NULL: the device's own) */
    bool in_place;    /* allow_tune_in_place */
    bool no_tune;
} bt__tune_on;
/* Scratch copies (device to device, ordered after on->stream) of on's wrapped buffers unless
 * in_place: *bufs points at the buffers to tune on (scratch, or on->buffers). */
bt_status bt__scratch_copies(bt_kernel *kn, const bt__tune_on *on, bt_buffer *scratch[],
                             bt_buffer *const **bufs, bt_diag *diag);
void bt__scratch_free(const bt__tune_on *on, bt_buffer *scratch[]);

/* --- tune.c: the tuner behind bt_kernel_tune and the first launch of a key -------------------- */
/* The measurement budget of a default tune of k's non-exhaustive search (no budget, no time
 * limit): BT__SEARCH_DEFAULT_BUDGET_MODEL when its spec declares a model kind (the analytic model
 * ranks the configs first), else BT__SEARCH_DEFAULT_BUDGET (search/strategy.h). */
size_t bt__default_budget(const bt_kdesc *k);
/* The tuner behind bt_kernel_tune and the first launch of a key: caller_bufs (may be NULL) are
 * the caller's buffers in buffer-argument order. On success the winner is in the dispatch table. */
bt_status bt__tune(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                   bt_buffer *const *caller_bufs, int ncaller, bt_result **out, bt_diag *diag);

/* tune.c: the winner's config (a copy) and median; 0 when there is none. */
int bt__result_winner(const bt_result *r, bt_config *cfg, double *median_ms);

/* --- dispatch.c: the dispatch table ---------------------------------------------------------- */
/* A problem's dispatch key: every key variable's value, then the dtype (-1 when not in the key). */
typedef struct bt__dkey {
    int n;
    int64_t v[BT__MAX_PROBLEM + 1];
    uint64_t hash;
} bt__dkey;
void bt__dispatch_key(const bt_kernel *kn, const bt_problem *p, bt__dkey *key);
/* Copies the key's entry into *out; false when there is none. */
bool bt__dispatch_find(bt_kernel *kn, const bt__dkey *key, bt__dispatch *out);
/* The entry of key in place, without a lock (the launch path's way: nothing copied); NULL when
 * there is none. It stays valid until the kernel is destroyed, even once a re-tune or a reset
 * has replaced it. */
const bt__dispatch *bt__dispatch_get(const bt_kernel *kn, const bt__dkey *key);
/* The backend device to launch on (NULL once the device was lost to a fault). */
static inline bt__bdev *bt__kernel_bdev(const bt_kernel *kn)
{
    return __atomic_load_n(&kn->bdev, __ATOMIC_ACQUIRE);
}
/* The bytes (elements of the spec's size expression × the dtype's size, at least one element)
 * and dtype of every buffer argument of k for p, slots filled for p, into need[i] / dtype[i]. */
bt_status bt__buffer_needs(const bt_kdesc *k, const bt_problem *p, const int64_t *slots,
                           size_t need[], int8_t dtype[], bt_diag *diag);
/* Evaluates the launch of e->cfg for p into e (geometry, non-buffer arguments, buffer needs). */
bt_status bt__dispatch_eval(const bt_kernel *kn, const bt_problem *p, bt__dispatch *e,
                            bt_diag *diag);
/* Publishes the winner for p's key, replacing an older one, whose entry and module are kept
 * until the kernel is destroyed (takes ownership of mod). */
bt_status bt__dispatch_put(bt_kernel *kn, const bt_problem *p, const bt_config *cfg, bt__bmod *mod,
                           bt__bfn *fn);
/* After a device fault: empties the table (its entries and their modules, dead on the device,
 * are kept until the kernel is destroyed) and reopens the device; when it cannot be reopened the
 * kernel is marked lost. */
bt_status bt__dispatch_reset(bt_kernel *kn, bt_diag *diag);
/* Frees every entry, retired ones too, with its module, and the tables (bt_kernel_destroy). */
void bt__dispatch_free(bt_kernel *kn);

/* kernel.c: the config a first launch of p takes without measuring (store, wisdom; in
 * wisdom-only mode nearest size, same arch, the model), *found false when none applies. */
bt_status bt__resolve(bt_kernel *kn, const bt_problem *p, bt_config *c, bt_source *src,
                      bool *found, bt_diag *diag);
/* Whether config c (tuned for another key: cj names it in the log) is valid for p under the
 * spec's constraints and rules; one that is not is logged. */
bool bt__config_fits(bt_kernel *kn, const bt_problem *p, const bt_config *c, const char *cj);
/* A kernel and a problem: what a lookup's validity test (bt__lookup_query.fits) is given. */
typedef struct bt__fits_ctx {
    bt_kernel *kn;
    const bt_problem *p;
} bt__fits_ctx;
typedef bool (*bt__fits_fn)(void *user, const char *config_json);
/* kernel.c: a looked-up config, compiled (not measured), into the dispatch table. */
bt_status bt__dispatch_config(bt_kernel *kn, const bt_problem *p, const bt_config *c,
                              bt_diag *diag);
/* launch.c: the first launch of a key (under the tune lock, so that one thread tunes it): store
 * and wisdom first (not in retune mode), then a tune on `on` (not in wisdom-only mode or with
 * no_tune); *e is the key's entry. */
bt_status bt__first_launch(bt_kernel *kn, const bt_problem *p, const bt__dkey *key,
                           const bt__tune_on *on, bt__dispatch *e, bt_diag *diag);
/* Compiles one config (through the kernel cache) into a loaded module and function (the caller
 * frees mod), with no verification or measurement: a looked-up config, bt_choice_function. The
 * compiled blob goes to *blob (caller frees data) when blob is non-NULL. */
bt_status bt__load_config(bt_kernel *kn, const bt_problem *p, const bt_config *c, bt__bmod **mod,
                          bt__bfn **fn, bt__blob *blob, bt_diag *diag);

/* --- args.c: a config's launch for a problem ------------------------------------------------ */
/* Geometry (grid, block, dynamic shared memory) of config c for problem p. */
bt_status bt__geometry(const bt_kdesc *k, const bt_config *c, const bt_problem *p, const bt_gpu *g,
                       int64_t grid[3], int64_t block[3], int64_t *dyn_smem, bt_diag *diag);
/* A scalar or local-memory argument's value as a launch argument, typed as its spec says.
 * BT_INVALID_ARG when an int32 scalar does not fit. */
bt_status bt__scalar_karg(const bt__argspec *a, int64_t v, bt__karg *out, bt_diag *diag);
/* Storage for one encoded tensor map (what a BT__ARG_TMAP argument points at). */
typedef struct bt__tmap_blob {
    _Alignas(64) unsigned char b[BT__TMAP_BYTES];
} bt__tmap_blob;
/* The requests of k's tensormap arguments for config c at problem p, in argument order. */
bt_status bt__tmap_reqs(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                        const bt_gpu *g, bt__tmap_req out[BT__MAX_TMAPS], bt_diag *diag);
/* Encodes each tensormap argument over the buffer already in args[its buffer] into store[j]
 * (the j-th tensor map) and points args[i] at it; store must outlive the launch call. */
bt_status bt__tmap_bind(const bt_kdesc *k, const bt__backend_iface *I, bt__bdev *D,
                        const bt__tmap_req *reqs, bt__karg *args, bt__tmap_blob *store,
                        bt_diag *diag);

/* --- kernel.c: the options as a struct (what the tests and the CLI's internals use; the strings
 * are borrowed and must outlive the kernel / the tune) ---------------------------------------- */
void bt__kernel_set_opts(bt_kernel *kn, const bt__tune_opts *o);
bt_status bt__kernel_tune_opts(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                               bt_result **out, bt_diag *diag);

#endif
