/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ktcache.h — Kernel Tuner cache files (internal): reading one into a config space plus one record
 * per recorded config, and writing one back.
 *
 * A Kernel Tuner cache is a JSON object (optionally gzip-compressed) with a header
 * (device_name, kernel_name, problem_size, tune_params_keys, tune_params, objective) and `cache`:
 * one entry per measured config, keyed by the comma-joined parameter values in tune_params_keys
 * order. An entry holds the parameter values, `time` (ms, the mean of `times`) or a failure string
 * ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig"), `compile_time`,
 * `benchmark_time` (ms) and optional metrics (GFLOP/s, GB/s, ...).
 *
 * The space is tune_params in tune_params_keys order (values in the order listed), so a record's
 * index is its config's index in bt__space. Configs of the cartesian space that have no entry did
 * not pass Kernel Tuner's restrictions: they are invalid (bt__ktcache_find returns NULL). Entries
 * with a failure string are valid configs whose measurement failed.
 *
 * Parameter values must be integers (or booleans, read as 0/1): blocktune spaces are integer.
 *
 * Nothing of a file is lost: the header (every field but `cache`, in its order) and each entry
 * (every field, in its order) are kept as JSON text beside the numbers read from them, and
 * written back as they were. Kernel Tuner writes `time` as the mean of `times` (ms), failures as
 * the strings above in place of the time, and per entry `compile_time`, `verification_time`,
 * `benchmark_time`, `strategy_time`, `framework_time` (ms), its metrics, and `timestamp`.
 *
 * Reading streams the file (jsonin.h): a file over the input limit is refused with a message, and
 * memory stays bounded whatever the file.
 */
#ifndef BT_STORE_KTCACHE_H
#define BT_STORE_KTCACHE_H

#include "blocktune.h"
#include "core/recspace.h"
#include "core/space.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What happened to a recorded config. */
typedef enum bt__kt_fail {
    BT__KT_OK = 0,
    BT__KT_INVALID,        /* "InvalidConfig": rejected when run (e.g. too many threads) */
    BT__KT_COMPILE_FAILED, /* "CompilationFailedConfig" */
    BT__KT_RUNTIME_FAILED, /* "RuntimeFailedConfig" */
    BT__KT_OTHER_FAILED,   /* any other string: kept verbatim in the record's fail_text */
} bt__kt_fail;

/* "InvalidConfig", ... ("" for BT__KT_OK, "FailedConfig" for BT__KT_OTHER_FAILED). */
const char *bt__kt_fail_name(bt__kt_fail f);
/* The bt_status a failure maps to: BT_INVALID_CONFIG, BT_COMPILE, BT_LAUNCH, BT_BACKEND (other);
 * BT_OK for BT__KT_OK. */
bt_status bt__kt_fail_status(bt__kt_fail f);

#define BT__KT_MAX_METRICS 4

/* One recorded config. Numbers that the entry does not hold are NAN. */
typedef struct bt__kt_record {
    uint64_t index; /* config index in the cache's space */
    bt__kt_fail fail;
    char fail_text[32]; /* the failure string as recorded ("" when fail == BT__KT_OK) */
    double time_ms;     /* NAN when failed */
    double *times;      /* malloc'd, ntimes entries (may be NULL) */
    int ntimes;
    double compile_ms, verification_ms, benchmark_ms, strategy_ms, framework_ms;
    int nmetrics; /* further numeric fields: "GFLOP/s", "GB/s", ... */
    char metric_name[BT__KT_MAX_METRICS][24];
    double metric[BT__KT_MAX_METRICS];
    char timestamp[48]; /* "" if absent */
    char *entry_json;   /* malloc'd: the whole entry as read (every field, in order); NULL for a
                           record built by the caller (then written from the fields above) */
    char *key_text;     /* malloc'd: the entry's key as read ("16,1,True"); NULL: from the config */
} bt__kt_record;

typedef struct bt__ktcache {
    char device_name[128];
    char kernel_name[128];
    char objective[32];      /* "time" unless the file says otherwise */
    char *problem_size_json; /* malloc'd compact JSON of problem_size ("null" when absent) */
    char *header_json;       /* malloc'd: every field but `cache`, in order, as read; NULL for a
                                cache built by bt__ktcache_create (then written from the above) */
    bt__space space;         /* tune_params in tune_params_keys order */
    bt__kt_record *recs;     /* malloc'd, sorted by index */
    size_t nrecs;
    size_t nfailed;      /* records with fail != BT__KT_OK */
    bool has_best;       /* false when every record failed */
    uint64_t best_index; /* fastest successful record */
    double best_ms;
} bt__ktcache;

/* Reads a cache file: plain JSON, or gzip (detected from the magic bytes, not the name).
 * On failure *out is NULL and diag names the file and, for malformed JSON, line:column; for a
 * well-formed file with a wrong field, the field (e.g. `cache["16,1,1"].time`). The caller frees
 * the result with bt__ktcache_free. */
bt_status bt__ktcache_load(const char *path, bt__ktcache **out, bt_diag *diag);
/* The same from memory (plain or gzip bytes); `name` stands for the file in diagnostics. */
bt_status bt__ktcache_load_mem(const void *data, size_t size, const char *name, bt__ktcache **out,
                               bt_diag *diag);
void bt__ktcache_free(bt__ktcache *c);

/* An empty cache over a space (copied) for exporting results: fill recs with bt__ktcache_add. */
bt_status bt__ktcache_create(const bt__space *space, const char *device_name,
                             const char *kernel_name, bt__ktcache **out);
/* Adds (a copy of) a record; keeps recs sorted, replaces a record of the same index, updates best
 * and nfailed. `r->times` and `r->entry_json` are copied. */
bt_status bt__ktcache_add(bt__ktcache *c, const bt__kt_record *r);

/* Replaces the records of an empty cache with recs[0..n) (malloc'd; the cache owns them and what
 * they point to from now on, even on failure): sorted by index, and of records with the same index
 * the last one kept; updates best and nfailed. O(n log n). BT_INVALID_ARG when an index is not in
 * the space or the cache has records. */
bt_status bt__ktcache_adopt(bt__ktcache *c, bt__kt_record *recs, size_t n);

/* The record of config `index`, or NULL when the config has no entry (invalid). O(log n). */
const bt__kt_record *bt__ktcache_find(const bt__ktcache *c, uint64_t index);

/* The cache as a recorded space (core/recspace.h) for simulation: a record's cost is its
 * compile_time + benchmark_time, its failure the status bt__kt_fail_status gives. *out reads c,
 * which must outlive it. */
void bt__ktcache_recspace(const bt__ktcache *c, bt__recspace *out);

/* Writes the cache in Kernel Tuner's format (header, then one entry per line, the file ending in
 * "}\n}" as Kernel Tuner closes it); gzip when `path` ends in ".gz". Written atomically (temp
 * file + rename). A record's entry_json, key_text and the header_json are written as they are;
 * a record without them is written from its fields, keyed by its config. */
bt_status bt__ktcache_write(const bt__ktcache *c, const char *path, bt_diag *diag);
/* The plain JSON text of the cache; the caller frees it. NULL on allocation failure. */
char *bt__ktcache_dump(const bt__ktcache *c);

#endif
