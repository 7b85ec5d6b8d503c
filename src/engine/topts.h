/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topts.h — the tune options as the engine reads them (internal): the struct behind the opaque
 * bt_tune_options of the public API (its setters are in topts.c), with the meaning of each
 * field. Strings are borrowed from the bt_tune_options that holds them.
 */
#ifndef BT_ENGINE_TOPTS_H
#define BT_ENGINE_TOPTS_H

#include "blocktune.h"

typedef struct bt__tune_opts {
    double warmup_ms;   /* warm-up budget per config (default 25) */
    double rep_ms;      /* measurement budget per config (default 100) */
    double screen_ms;   /* the screening budget (ms): every config is first measured with this
                           repetition budget (at least 10 runs, never more than rep_ms gives)
                           after a warm-up scaled alike (warmup_ms * screen_ms / rep_ms); the
                           finalists, and every config within the screening noise of the
                           cut, are then re-measured at the full budgets interleaved (select.c).
                           < 0 (default): rep_ms / 8; 0, or >= rep_ms: no screening (every
                           config at the full budgets) */
    const char *strategy; /* search strategy by name ("exhaustive", "random", "model",
                             "coordinate", "anneal", "forest"; `blocktune tune --help` lists them);
                             NULL: exhaustive when the plan has at most exhaustive_max valid
                             configs, else forest. Borrowed: must outlive the tune. An unknown
                             name fails the tune with BT_INVALID_ARG */
    int budget;         /* measure at most this many configs, failures included (0: exhaustive
                           measures every valid config; any other strategy stops after 64
                           unless time_limit_s is set) */
    double time_limit_s;/* the whole tune aims to end within this (0: no limit): the search
                           gets what is left after the data and reference and after the time
                           kept for the final re-measurement, and starts no round that the
                           costliest round so far says would end past it; the first round
                           always runs */
    int exhaustive_max; /* the default strategy is exhaustive up to this many valid configs
                           (0: 128) */
    double target_ms;   /* stop the search once a config's median is within within_pct % of
                           this time (ms); < 0: the plan's roofline floor; 0: no target. The
                           budget and the time limit still apply */
    double within_pct;  /* tolerance of target_ms in percent (0: reach the target itself) */
    int threads;        /* compile threads (0: all cores); also the search's round size: the
                           strategy proposes this many configs at a time, compiled in parallel */
    int verify_boundary;/* also verify at the spec's boundary problem sizes (default 1) */
    int top_k;          /* finalists re-measured interleaved A B C A B C ... (default 3) */
    int rounds;         /* interleaved rounds of the finals (default 8) */
    const char *rules;  /* rule set override (NULL: the kernel's own) */
    uint64_t seed;      /* seeds the input data and the search strategy (default 1): the same
                           seed and round size (threads) propose the same configs */
    int progress;       /* 1: a progress line on stderr when it is a terminal */
    double timeout_s;   /* a config whose single run exceeds this is recorded as timed out (10) */
    const char *store;  /* results store (SQLite): NULL = the default
                           ($BLOCKTUNE_CACHE_DIR/blocktune.db ...), "none" = keep nothing */
    bt_tune_mode mode;  /* default: $BLOCKTUNE_MODE, else BT_MODE_TUNE */
    int graph;          /* 1: time replays of graph-captured launches (CUDA), for kernels shorter
                           than ~20 us where launch gaps dominate; no cache flush between them */
    const void *mpi_comm; /* an MPI_Comm *: the tune spread over its ranks (engine/mpi.h) */
    int mpi_flags;        /* BT_MPI_MIXED_DEVICES: ranks' devices may be of other models */
    bt_progress_fn progress_cb; /* after every search round; non-zero cancels (BT_CANCELLED) */
    void *progress_user;
} bt__tune_opts;


/* The screening budget in effect (ms): screen_ms, or rep_ms / 8 by default; 0 when there is no
 * screening (screen_ms 0, or not below rep_ms). */
double bt__screen_ms(const bt__tune_opts *o);

/* Every option at its default (the mode from $BLOCKTUNE_MODE). */
void bt__tune_opts_default(bt__tune_opts *o);

/* The options within their bounds (NaN never is): the per-config budgets, the timeout, the time
 * limit and the target; diag names the first one out of bounds, its flag and its range. */
bt_status bt__tune_opts_check(const bt__tune_opts *o, bt_diag *diag);

/* The public options object: the engine's struct and the strings it points at, owned; error:
 * why the last setter refused its value (bt_tune_options_error). */
struct bt_tune_options {
    bt__tune_opts o;
    char *strategy, *rules, *store;
    char error[300];
};
/* A copy of src (strings included) into *dst, made or replaced; BT_NOMEM leaves *dst as it was. */
bt_status bt__tune_options_clone(const bt_tune_options *src, bt_tune_options **dst);

#endif
