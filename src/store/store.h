/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.h — the results store (SQLite) and the wisdom layer built on it (internal).
 *
 * The store keeps every measured config of every tune and the winner of every key, each with its
 * provenance (device name and UUID, arch, driver, compiler, blocktune version, kernel source hash,
 * compile options, key, timestamp). It is one SQLite file:
 *   $BLOCKTUNE_CACHE_DIR/blocktune.db, else $XDG_CACHE_HOME/blocktune/blocktune.db,
 *   else ~/.cache/blocktune/blocktune.db.
 *
 * Guarantees (tests/test_store.c checks each):
 *   - WAL journal, busy timeout of 10 s, foreign keys on. Every bt__store_put is its own
 *     transaction, committed before it returns: a tune killed at any point keeps every measurement
 *     whose put returned, and a re-run finds them with bt__store_get (resume).
 *   - Several processes may write one store at once; nothing is lost (writers queue on the lock).
 *   - A winner and its measurement row are written in one transaction (bt__store_put_winner), so
 *     a reader sees either the old winner or the new one with its numbers, never half of it.
 *   - The schema is versioned by PRAGMA user_version and migrated forwards at open; a store made
 *     by a newer blocktune is refused, not damaged.
 *   - Opening for writing (bt__store_open: tunes, import, forget) creates the file when missing and
 *     runs PRAGMA quick_check: a damaged store is refused (BT_CORRUPT, with the path and how to
 *     recover), never written. Opening for reading (bt__store_open_read) never creates a file.
 *   - Every row read back is checked (bt__measurement_check) before anything trusts it: a row with
 *     a value of the wrong type, a time that is not a finite positive number, p20 > median > p80,
 *     an unknown status or a config that is not a JSON object of integers is skipped with a
 *     warning on stderr naming it, as if it were absent (a tune measures it again).
 *   - Every write reports its failure (disk full, a lock held past the busy timeout, a read-only
 *     file) to the caller with the path and SQLite's reason; nothing is dropped silently.
 *
 * Identity of a row: (kernel, source_hash, options, device, key, config_json), where `device` is
 * the device UUID when there is one, else the device name. Look-ups take a `device` string that
 * matches either the UUID or the name of the row, the UUID first.
 *
 * Keys are canonical text: "M=4096,N=4096,K=4096,dtype=fp16" — the problem variables in the
 * spec's order, then the dtype; bt__keyvals_format builds it. Configs are canonical JSON text:
 * {"BLOCK_M":128,"BLOCK_N":64,...} with the parameters in the spec's order.
 *
 * The dispatch table (engine/dispatch.c) is filled a key at a time: the first launch of a key
 * looks its winner up (bt__wisdom_lookup: this store first, then wisdom), so the hot path never
 * calls SQLite.
 */
#ifndef BT_STORE_STORE_H
#define BT_STORE_STORE_H

#include "blocktune.h"
#include "core/space.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct bt__store bt__store;

/* The schema version this build writes (migrations 1..BT__STORE_SCHEMA_VERSION are applied at
 * open). */
#define BT__STORE_SCHEMA_VERSION 2

/* How long a write waits for another process's lock, in ms, unless $BLOCKTUNE_STORE_TIMEOUT_MS
 * says otherwise. */
#define BT__STORE_BUSY_MS 10000

/* One measured config. Strings are borrowed by bt__store_put; the ones bt__store_get and the
 * iterators fill are malloc'd (free with bt__measurement_clear). NULL strings are stored as ''
 * (or SQL NULL for `error`); numbers < 0 (or NaN) mean unknown and are stored as NULL. */
typedef struct bt__measurement {
    char *kernel;
    char *source_hash;       /* hex */
    char *options;           /* compile options */
    char *device_name;
    char *device_uuid;       /* may be empty */
    char *device_arch;       /* "sm_90", "OpenCL 3.0" */
    char *driver;
    char *compiler;          /* "NVRTC 12.4", "OpenCL C 1.2 PoCL" */
    char *blocktune_version;
    char *key;               /* canonical text key */
    char *key_json;          /* the same key as a JSON object */
    char *config_json;       /* canonical config JSON */
    char *status;            /* ok, invalid, compile_failed, resources_exceeded (older rows:
                                resources), launch_failed, wrong_result, timed_out */
    char *error;             /* message when status is not ok; may be NULL */
    double median_ms, p20_ms, p80_ms, min_ms, mad_ms;
    int64_t reps;
    double max_rel_err;
    int64_t regs, local_bytes, smem_bytes;
    double compile_ms;
    double timestamp;        /* unix seconds; 0: now (bt__store_put fills it) */
    double mean_ms;          /* the mean of the timed runs (Kernel Tuner's "time") */
    char *extra_json;        /* a foreign record's own fields (a Kernel Tuner cache entry, every
                                field in its order) as a JSON object; NULL for blocktune's rows */
} bt__measurement;

/* A winner: the measurement of the selected config plus the selection's numbers. */
typedef struct bt__winner {
    bt__measurement m;
    double margin;           /* runner-up median / winner median - 1 (0 when alone) */
    int tie;                 /* 1: the runner-up is within noise (the winner is the simpler) */
    char *origin;            /* "tuned", or "wisdom:<file>" when imported */
} bt__winner;

/* What identifies a key's rows. options NULL means ""; device is a UUID or a name. */
typedef struct bt__store_ident {
    const char *kernel;
    const char *source_hash;
    const char *options;
    const char *device;
    const char *key;
} bt__store_ident;

/* Sets every number to "unknown" (-1) and every string to NULL. */
void bt__measurement_init(bt__measurement *m);
/* Frees the strings of a measurement filled by the store and re-inits it. */
void bt__measurement_clear(bt__measurement *m);
void bt__winner_clear(bt__winner *w);

/* The default store path: <cache dir>/blocktune.db, malloc'd (free it); NULL when no HOME. */
char *bt__store_default_path(void);
/* The cache directory ($BLOCKTUNE_CACHE_DIR, $XDG_CACHE_HOME/blocktune, ~/.cache/blocktune),
 * malloc'd; NULL when none can be formed. */
char *bt__cache_dir(void);

/* Opens (creating and migrating) the store at path, or at the default path (creating its
 * directories) when path is NULL, for writing, and runs PRAGMA quick_check on it: a store that
 * fails it is refused with BT_CORRUPT (the diag says what is wrong, the path, and how to
 * recover). Close with bt__store_close. Errors name the file. */
bt_status bt__store_open(const char *path, bt__store **out, bt_diag *diag);
/* Opens an existing store (path, or the default path when NULL) for reading: never creates a file
 * or a directory (BT_NOT_FOUND "no store at PATH"), migrates an older schema in place, then makes
 * the connection query_only (every write through it fails), and runs no quick_check (`cache
 * verify` must be able to open a damaged store). */
bt_status bt__store_open_read(const char *path, bt__store **out, bt_diag *diag);
void bt__store_close(bt__store *s);
const char *bt__store_path(const bt__store *s);
/* The raw SQLite handle (for the CLI's reports and the tests). */
struct sqlite3 *bt__store_db(bt__store *s);

/* Inserts or replaces one measurement (upsert on its identity) in its own transaction, committed
 * when this returns BT_OK. */
bt_status bt__store_put(bt__store *s, const bt__measurement *m, bt_diag *diag);
/* The measurement of one config: BT_OK and *out filled (free with bt__measurement_clear), or
 * BT_NOT_FOUND (*out inited). The tuner uses it to skip configs already measured. */
bt_status bt__store_get(bt__store *s, const bt__store_ident *id, const char *config_json,
                        bt__measurement *out, bt_diag *diag);
/* Records the winner of a key: upserts its measurement row and the winner row in one
 * transaction. origin NULL means "tuned". */
bt_status bt__store_put_winner(bt__store *s, const bt__measurement *m, double margin, int tie,
                               const char *origin, bt_diag *diag);
/* The winner of a key (free with bt__winner_clear), or BT_NOT_FOUND. */
bt_status bt__store_get_winner(bt__store *s, const bt__store_ident *id, bt__winner *out,
                               bt_diag *diag);

/* Calls cb for each winner of `kernel` (NULL: all) on `device` (UUID or name; NULL: all), in
 * (kernel, device, key) order. The winner passed to cb is valid during the call only. A nonzero
 * return of cb stops the walk and is returned. */
typedef int (*bt__winner_cb)(const bt__winner *w, void *user);
bt_status bt__store_winners(bt__store *s, const char *kernel, const char *device,
                            bt__winner_cb cb, void *user, bt_diag *diag);
/* Calls cb for each measurement of the key of winner-ident `id` with status ok, fastest first,
 * at most `limit` (0: all). */
typedef int (*bt__measurement_cb)(const bt__measurement *m, void *user);
bt_status bt__store_top(bt__store *s, const bt__store_ident *id, int limit,
                        bt__measurement_cb cb, void *user, bt_diag *diag);
/* Calls cb for every measurement of `kernel` and `key` (any status, any source hash and compile
 * options) on `device` (UUID or name; NULL: every device), oldest first. A nonzero return of cb
 * stops the walk and is returned. */
bt_status bt__store_rows(bt__store *s, const char *kernel, const char *device, const char *key,
                         bt__measurement_cb cb, void *user, bt_diag *diag);
/* Checks a measurement read back: known status; key and a config that is a non-empty JSON object
 * of integers; every number finite, times > 0 (median required when ok), p20 <= median <= p80 and
 * min <= median when given, reps >= 1; extra_json a JSON object. With `winner`, the status must be
 * ok. False with the first problem in why (e.g. "median_ms -5 is not a positive time"). */
bool bt__measurement_check(const bt__measurement *m, bool winner, char *why, size_t size);
/* Rows skipped by the checks above since the store was opened (each was warned about). */
int64_t bt__store_bad_rows(const bt__store *s);

/* The recorded header of a space imported from another tool (a Kernel Tuner cache: device_name,
 * kernel_name, problem_size, tune_params_keys, tune_params in their order, objective, any other
 * field; everything but `cache`) for the rows of id, as a JSON object. put replaces it (inside the
 * caller's transaction when one is open); get takes the newest for kernel/device/key (any source
 * hash), BT_NOT_FOUND when there is none (free *header_json). */
bt_status bt__store_put_space(bt__store *s, const bt__store_ident *id, const char *header_json,
                              const char *origin, bt_diag *diag);
bt_status bt__store_get_space(bt__store *s, const char *kernel, const char *device,
                              const char *key, char **header_json, bt_diag *diag);

/* Counts rows: measurements and winners. */
bt_status bt__store_counts(bt__store *s, int64_t *measurements, int64_t *winners, bt_diag *diag);

/* Deletes the rows of a selector: "all", a kernel name (exact), or else a key substring. With
 * dry_run nothing is deleted; either way *nmeas and *nwin say how many rows match. */
bt_status bt__store_forget(bt__store *s, const char *selector, int dry_run, int64_t *nmeas,
                           int64_t *nwin, bt_diag *diag);
/* Integrity: PRAGMA integrity_check, every winner has its measurement row with status ok, and
 * every row passes bt__measurement_check. BT_OK when all hold, else BT_CORRUPT with the problems
 * listed in report (malloc'd, may be NULL) and diag. */
bt_status bt__store_verify(bt__store *s, char **report, bt_diag *diag);

/* Puts a measurement and, when `winner`, its winner row: inside the caller's transaction when one
 * is open (wisdom import), else in one of its own. origin "wisdom:<file>" marks imported rows. */
bt_status bt__store_put_row_internal(bt__store *s, const bt__measurement *m, int winner,
                                     double margin, int tie, const char *origin, bt_diag *diag);

/* Explicit transactions for batches (wisdom import). begin is BEGIN IMMEDIATE. */
bt_status bt__store_begin(bt__store *s, bt_diag *diag);
bt_status bt__store_commit(bt__store *s, bt_diag *diag);
void bt__store_rollback(bt__store *s);

/* ---------------------------------------------------------------------------------------------
 * Keys
 * ------------------------------------------------------------------------------------------- */
#define BT__KEY_MAX 16

/* A problem key: named integer variables (spec order) and a dtype. */
typedef struct bt__keyvals {
    int n;
    char names[BT__KEY_MAX][BT_NAME_MAX];
    int64_t v[BT__KEY_MAX];
    char dtype[24];
} bt__keyvals;

/* "M=4096,N=4096,K=4096,dtype=fp16" (dtype left out when empty). */
void bt__keyvals_format(const bt__keyvals *k, char *buf, size_t size);
/* {"M":4096,...,"dtype":"fp16"}, malloc'd. */
char *bt__keyvals_json(const bt__keyvals *k);
/* Parses the canonical text form; BT_PARSE on anything else. */
bt_status bt__keyvals_parse(const char *text, bt__keyvals *out);
/* How far a tuned key b is from a wanted key a, for the nearest-size look-up (docs/wisdom.md):
 * tier 0 when b has a's other keys (it differs in at most one variable, var, where b has value):
 * d = |a - b| there, vLLM's rule for M; tier 1 otherwise: d = the sum over variables of
 * |log2(a) - log2(b)| (values below 1 count as 1). tier -1 when not comparable: different
 * variable names or order, or a different dtype. The same key: tier 0, d 0. */
typedef struct bt__kdist {
    int tier;
    double d;
    int64_t value;
    int var; /* -1: none (the same key, or tier 1) */
} bt__kdist;
bt__kdist bt__keyvals_distance(const bt__keyvals *a, const bt__keyvals *b);
/* x is closer than y: a lower tier, else a smaller d, else (tier 0) the earlier variable, else
 * the smaller value (a tie between M=2048 and M=4096 for M=3072 goes to 2048, as in vLLM's files,
 * whose M keys are in increasing order). */
bool bt__kdist_closer(const bt__kdist *x, const bt__kdist *y);

/* ---------------------------------------------------------------------------------------------
 * Wisdom files (wisdom.c; format in docs/wisdom.md)
 * ------------------------------------------------------------------------------------------- */
#define BT__WISDOM_FORMAT "blocktune-wisdom"
#define BT__WISDOM_FORMAT_VERSION 1

typedef struct bt__wisdom_export_opts {
    const char *kernel;    /* NULL: all kernels */
    const char *device;    /* UUID or name; NULL: all devices (a file must then hold only one:
                              use the directory export) */
    int top_k;             /* 0/1: winners only; k > 1: also the k-1 fastest ok runners-up */
} bt__wisdom_export_opts;

/* Writes the winners of one device as a wisdom document into *out (malloc'd). When opts->device
 * is NULL the store must hold one device only, else BT_INVALID_ARG names them. */
bt_status bt__wisdom_export_string(bt__store *s, const bt__wisdom_export_opts *opts, char **out,
                                   bt_diag *diag);
/* The same, written atomically to path. */
bt_status bt__wisdom_export_file(bt__store *s, const bt__wisdom_export_opts *opts,
                                 const char *path, bt_diag *diag);
/* One file per device in dir (created): <sanitized device name>.json. *nfiles says how many. */
bt_status bt__wisdom_export_dir(bt__store *s, const bt__wisdom_export_opts *opts, const char *dir,
                                int *nfiles, bt_diag *diag);

/* Imports a wisdom document in one transaction: on any error nothing changes and the diag names
 * name:line:column (name stands for the file). *nentries (may be NULL) gets the count. */
bt_status bt__wisdom_import_string(bt__store *s, const char *text, const char *name,
                                   int *nentries, bt_diag *diag);
bt_status bt__wisdom_import_file(bt__store *s, const char *path, int *nentries, bt_diag *diag);
/* Every *.json of dir, all in one transaction. */
bt_status bt__wisdom_import_dir(bt__store *s, const char *dir, int *nentries, bt_diag *diag);

/* An in-memory set of wisdom entries (user or shipped), for the lookup. */
typedef struct bt__wisdom bt__wisdom;
bt__wisdom *bt__wisdom_new(void);
void bt__wisdom_free(bt__wisdom *w);
size_t bt__wisdom_count(const bt__wisdom *w);
/* Adds the entries of a document (validated as for import; all or nothing). */
bt_status bt__wisdom_add_string(bt__wisdom *w, const char *text, const char *name, bt_diag *diag);
/* Adds every *.json of dir (a missing dir adds nothing and is not an error). */
bt_status bt__wisdom_add_dir(bt__wisdom *w, const char *dir, bt_diag *diag);
/* Adds a file, or every *.json of a folder; a path that is not there is BT_NOT_FOUND. */
bt_status bt__wisdom_add_path(bt__wisdom *w, const char *path, bt_diag *diag);
/* Entry i (NULL past the end) and its rank (0: the key's winner). */
const bt__measurement *bt__wisdom_at(const bt__wisdom *w, size_t i, int *rank);
/* The user's wisdom: every file of $BLOCKTUNE_USER_WISDOM_DIR, else <cache dir>/wisdom. With
 * names (nnames of them), only the documents that name one of those kernels in quotes are parsed
 * (a document that does not cannot hold an entry for them: a kernel's first lookup parses its
 * own); NULL: every document. */
bt_status bt__wisdom_load_user(bt__wisdom **out, const char *const *names, size_t nnames,
                               bt_diag *diag);
/* The shipped wisdom: $BLOCKTUNE_WISDOM_DIR when set (tests), else the installed
 * <datadir>/blocktune/wisdom plus the files of wisdom/ compiled into the library; names as for
 * bt__wisdom_load_user. */
bt_status bt__wisdom_load_shipped(bt__wisdom **out, const char *const *names, size_t nnames,
                                  bt_diag *diag);

/* Where a looked-up config came from (bt__wisdom_source_name gives the strings). */
typedef enum bt__wisdom_source {
    BT__SRC_STORE = 0,     /* "store": this store, exact key */
    BT__SRC_USER,          /* "user-wisdom": exact key */
    BT__SRC_SHIPPED,       /* "shipped-wisdom": exact key */
    BT__SRC_NEAREST,       /* "nearest-size": same device, nearest key (bt__kdist_closer) */
    BT__SRC_SAME_ARCH,     /* "same-arch": another device of the same arch */
    BT__SRC_DEFAULT,       /* "default": nothing found; use the kernel's default config */
} bt__wisdom_source;
const char *bt__wisdom_source_name(bt__wisdom_source s);

typedef struct bt__lookup_query {
    const char *kernel;
    const char *source_hash;  /* NULL: any (entries of another source hash are otherwise stale) */
    const char *options;      /* NULL: "" */
    const char *device_name;
    const char *device_uuid;  /* may be NULL */
    const char *arch;
    const bt__keyvals *key;
    /* Optional: whether another key's config (a nearest size, the same architecture) is valid
     * for this key; a candidate it refuses is passed over for the next nearest (NULL: any). */
    bool (*fits)(void *user, const char *config_json);
    void *fits_user;
} bt__lookup_query;

typedef struct bt__lookup_result {
    bt__wisdom_source source;
    char *config_json;        /* malloc'd; NULL for BT__SRC_DEFAULT */
    char matched_key[256];    /* the key the config was tuned for */
    char matched_device[128];
    double distance;          /* bt__keyvals_distance(key, matched_key).d */
    double median_ms;         /* of the matched entry (-1 when unknown) */
} bt__lookup_result;

/* Lookup order: store (exact key) -> user wisdom -> shipped wisdom (exact key) -> nearest problem
 * size on the same device (over all three) -> the same arch (exact key, then nearest) -> default.
 * store, user and shipped may each be NULL. Logs the decision (bt__decision_log). Free
 * out->config_json. BT_OK always unless the store fails (then the lookup goes on without it and
 * the diag says why). */
bt_status bt__wisdom_lookup(bt__store *store, const bt__wisdom *user, const bt__wisdom *shipped,
                            const bt__lookup_query *q, bt__lookup_result *out, bt_diag *diag);

/* vllm.c: the winners of kernel (NULL: every kernel) on device (NULL: every device) whose key has
 * M, E and N, in vLLM's fused-MoE layout: one file per (E, N, device, dtype, block shape) in dir,
 * named as vLLM's get_config_file_name names it, mapping M to the config (docs/wisdom.md#vllm).
 * BT_NOT_FOUND when no winner fits; BT_INVALID_ARG when two groups of keys would share a file. */
bt_status bt__wisdom_export_vllm_dir(bt__store *s, const char *kernel, const char *device,
                                     const char *dir, int *nfiles, bt_diag *diag);
/* vLLM's file name: "E=<E>,N=<N>,device_name=<device, spaces as _>[,dtype=<dtype>]
 * [,block_shape=[<bn>,<bk>]].json" (dtype "" and a zero block size leave theirs out); false when
 * the device name cannot be a file name or buf is too small. */
bool bt__vllm_file_name(const char *device, int64_t e, int64_t n, const char *dtype,
                        int64_t block_n, int64_t block_k, char *buf, size_t size);

/* ---------------------------------------------------------------------------------------------
 * Settings made through the public API (settings.c): each wins over its environment variable;
 * NULL / -1 / false when unset. The strings are malloc'd copies.
 * ------------------------------------------------------------------------------------------- */
char *bt__setting_cache_dir(void);
char *bt__setting_user_wisdom(void);
char *bt__setting_shipped_wisdom(void);
char *bt__setting_precompiled_dir(void);
int bt__setting_mode(void);
bool bt__setting_log(bt_log_fn *fn, void **user);

/* ---------------------------------------------------------------------------------------------
 * Decisions log and modes
 * ------------------------------------------------------------------------------------------- */
/* Prints one line "blocktune: <text>" when BLOCKTUNE_LOG is set: to stderr for "1" (or any value
 * that is not a path), appended to the file for a value containing '/'. */
void bt__decision_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool bt__decision_log_enabled(void);

/* The modes are the public bt_tune_mode. Parses "tune", "wisdom-only", "retune"; BT_INVALID_ARG
 * (naming them) otherwise. */
bt_status bt__tune_mode_parse(const char *text, bt_tune_mode *out, bt_diag *diag);
/* $BLOCKTUNE_MODE, else tune (an invalid value gives tune here: bt__tune_mode_env_check is where
 * it is refused). */
bt_tune_mode bt__tune_mode_from_env(void);
/* BT_INVALID_ARG naming the variable, its value and the valid modes when $BLOCKTUNE_MODE is set to
 * something that is not a mode; BT_OK otherwise. */
bt_status bt__tune_mode_env_check(bt_diag *diag);

#endif
