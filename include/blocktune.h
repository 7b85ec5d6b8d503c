/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blocktune.h — the public API of libblocktune.
 *
 * blocktune finds the fastest launch configuration of a GPU kernel: it enumerates a config space,
 * prunes it with an architecture-aware model (plan), compiles, verifies and measures what is left
 * (tune), and dispatches the winner per problem key (launch).
 *
 * Conventions (docs/api.md says them in full):
 *   - Every fallible function returns bt_status (0 = BT_OK, negative = error). Results come back
 *     through out-parameters, which are set to NULL/zero on failure.
 *   - Objects are opaque handles made by bt_<noun>_create/_load/_open/_wrap/_builtin and disposed
 *     of by one verb, bt_<noun>_destroy, which accepts NULL. (The 0.1 names _free and _close
 *     remain as macros unless BT_NO_DEPRECATED is defined.)
 *   - Structs the caller allocates and the library reads or writes (bt_diag, bt_launch_options,
 *     bt_progress) begin with `size_t size`: set it with the _INIT macro, or leave the whole struct
 *     `= {0}` (size 0 means the 0.2.0 layout). The library touches only the fields inside size;
 *     structs grow only at their end. Structs the library owns (bt_gpu, bt_device_info) are
 *     handed out as const pointers and may also grow at their end.
 *   - A bt_diag, where a function takes one (it may be NULL), receives a human-readable account of
 *     the failure: the file, line and column of the offending input where there is one.
 *   - Strings returned as `const char *` are owned by the object they come from and live as long as
 *     it does; strings returned as `char *` are the caller's to free with free().
 *   - blocktune never frees, destroys or synchronises what it did not create (bt_device_wrap_*).
 */
#ifndef BLOCKTUNE_H
#define BLOCKTUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. bt_version() / bt_version_number() give the library's, which may
 * be newer (docs/api.md: SOVERSION policy). */
#define BT_VERSION_MAJOR 0
#define BT_VERSION_MINOR 2
#define BT_VERSION_PATCH 0
#define BT_VERSION_STRING "0.2.0"
#define BT_VERSION_NUMBER ((BT_VERSION_MAJOR << 16) | (BT_VERSION_MINOR << 8) | BT_VERSION_PATCH)

#if defined(BT_BUILDING_LIBRARY) && defined(__GNUC__)
#define BT_API __attribute__((visibility("default")))
#else
#define BT_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Status codes. One list generates the enum, bt_strerror and bt_err_name.
 * ------------------------------------------------------------------------------------------- */
#define BT_STATUS_MAP(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(NOMEM, -1, "out of memory")                                                                  \
    X(INVALID_ARG, -2, "invalid argument")                                                         \
    X(PARSE, -3, "parse error")                                                                    \
    X(NOT_FOUND, -4, "not found")                                                                  \
    X(EVAL, -5, "expression evaluation error")                                                     \
    X(IO, -6, "input/output error")                                                                \
    X(UNSUPPORTED, -7, "not supported")                                                            \
    X(NO_BACKEND, -8, "backend not available")                                                     \
    X(NO_DEVICE, -9, "no such device")                                                             \
    X(BACKEND, -10, "backend error")                                                               \
    X(COMPILE, -11, "compilation failed")                                                          \
    X(RESOURCES, -12, "resources exceeded")                                                        \
    X(LAUNCH, -13, "launch failed")                                                                \
    X(WRONG_RESULT, -14, "wrong result")                                                           \
    X(TIMEOUT, -15, "timed out")                                                                   \
    X(INVALID_CONFIG, -16, "config invalid by rule")                                               \
    X(STORE, -17, "results store error")                                                           \
    X(CORRUPT, -18, "corrupt data")                                                                \
    X(BUDGET, -19, "budget exhausted")                                                             \
    X(FORBIDDEN, -20, "operation forbidden by mode")                                               \
    X(INTERNAL, -21, "internal error")                                                             \
    X(CANCELLED, -22, "cancelled")

typedef enum bt_status {
#define BT__ENUM(name, code, msg) BT_##name = code,
    BT_STATUS_MAP(BT__ENUM)
#undef BT__ENUM
} bt_status;

/* A static description of a status ("compilation failed"). Never NULL. */
BT_API const char *bt_strerror(bt_status s);
/* The status's name ("BT_COMPILE"). Never NULL. */
BT_API const char *bt_err_name(bt_status s);
/* The library's version ("0.2.0") and BT_VERSION_NUMBER as the library was built. */
BT_API const char *bt_version(void);
BT_API unsigned bt_version_number(void);

/* Details of a failure. `file` is empty when the input was not a file; line/column are 1-based and 0
 * when unknown; `field` names the spec field ("params.BLOCK_M") when there is one. Initialise it
 * (BT_DIAG_INIT or `= {0}`): the library reads `size`. */
typedef struct bt_diag {
    size_t size; /* sizeof(bt_diag) as the caller knows it; 0: the 0.2.0 layout */
    char file[512];
    int line;
    int column;
    char field[128];
    char msg[1024];
#ifdef BT__ABI_GROWN /* tests/abi: a field a later library adds (0.2.0 callers never see it) */
    int grown_severity;
#endif
} bt_diag;
#define BT_DIAG_INIT {sizeof(bt_diag), "", 0, 0, "", ""}

/* Formats a diag as one line: "file:line:column: field: message" (parts that are unknown left
 * out) into buf. Returns buf. */
BT_API char *bt_diag_format(const bt_diag *d, char *buf, size_t size);

/* ---------------------------------------------------------------------------------------------
 * Hardware table: the GPUs blocktune knows without a device (data/gpus.json, installed).
 * ------------------------------------------------------------------------------------------- */
typedef enum bt_peak_kind {
    BT_PEAK_FP64 = 0,      /* CUDA-core fp64 */
    BT_PEAK_FP32,          /* CUDA-core fp32 */
    BT_PEAK_FP16,          /* CUDA-core (non tensor) fp16 */
    BT_PEAK_TF32_TC,       /* tensor core, dense */
    BT_PEAK_FP16_TC,
    BT_PEAK_BF16_TC,
    BT_PEAK_FP8_TC,
    BT_PEAK_INT8_TC,       /* TOP/s */
    BT_PEAK_FP64_TC,
    BT_PEAK__COUNT
} bt_peak_kind;

BT_API const char *bt_peak_kind_name(bt_peak_kind k);

typedef struct bt_gpu {
    char name[96];          /* canonical name, e.g. "H200-SXM" */
    char aliases[256];      /* comma-separated loose names ("h200,NVIDIA H200,gh100-141gb") */
    char vendor[32];
    char arch[32];          /* "hopper", "ampere", ... */
    int cc_major, cc_minor; /* compute capability (0 when not CUDA) */
    int sm_count;
    int warp_size;
    int max_threads_per_sm;
    int max_warps_per_sm;
    int max_blocks_per_sm;
    int max_threads_per_block;
    int regs_per_sm;
    int regs_per_block;
    int max_regs_per_thread;
    int reg_alloc_unit;        /* registers are allocated per warp in units of this many */
    int64_t smem_per_sm;
    int64_t smem_per_block;        /* default (no opt-in) */
    int64_t smem_per_block_optin;  /* with cudaFuncAttributeMaxDynamicSharedMemorySize */
    int64_t smem_reserved_per_block; /* system-reserved per block (1 KiB on sm_80+) */
    int64_t l2_bytes;
    int64_t mem_bytes;
    double mem_bw_gbps;        /* GB/s (1e9 B/s) */
    double clock_mhz;          /* boost clock */
    double peak_tflops[BT_PEAK__COUNT]; /* dense, TFLOP/s (int8: TOP/s); 0: no such unit */
    char source[512];          /* where the numbers come from */
} bt_gpu;

typedef struct bt_gpudb bt_gpudb;

/* Loads the hardware table: $BLOCKTUNE_DATA_DIR/gpus.json if it exists, else the installed
 * <datadir>/blocktune/gpus.json, else the copy compiled into the library. A table that exists but
 * is malformed is an error, not skipped. Free *out with bt_gpudb_destroy. */
BT_API bt_status bt_gpudb_load_default(bt_gpudb **out, bt_diag *diag);
/* Loads a user's table (same JSON format, docs/gpus.md). Errors name file:line:column. */
BT_API bt_status bt_gpudb_load_file(const char *path, bt_gpudb **out, bt_diag *diag);
/* Adds the rows of `path` to db, replacing rows of the same name (user overlay); an alias the
 * file gives its rows is taken from the table's rows. All or nothing: on failure db is unchanged. */
BT_API bt_status bt_gpudb_merge_file(bt_gpudb *db, const char *path, bt_diag *diag);
BT_API void bt_gpudb_destroy(bt_gpudb *db);
BT_API size_t bt_gpudb_count(const bt_gpudb *db);
BT_API const bt_gpu *bt_gpudb_at(const bt_gpudb *db, size_t i);
/* Loose lookup: case, spaces, '-', '_' and a leading "NVIDIA", "GeForce" or "Tesla" are ignored;
 * a canonical name, then an alias, must match exactly, else a unique prefix, else a unique part of
 * a name or alias is accepted. An unknown or ambiguous name fails with BT_NOT_FOUND and a diag that
 * lists the closest (or the matching) rows. *out points into db. */
BT_API bt_status bt_gpudb_find(const bt_gpudb *db, const char *name, const bt_gpu **out,
                               bt_diag *diag);
/* Where row i came from: the file that defined it (the last overlay that did), or the name of
 * the built-in copy; owned by db (NULL past the end). */
BT_API const char *bt_gpudb_origin(const bt_gpudb *db, size_t i);
/* Writes the rows (only one: `only`, a row of db; NULL: all) as a gpus.json document
 * (docs/gpus.md) and a newline: what bt_gpudb_load_file and bt_gpudb_merge_file read back.
 * BT_IO when the write fails. */
BT_API bt_status bt_gpudb_write_json(const bt_gpudb *db, const bt_gpu *only, FILE *f);

/* ---------------------------------------------------------------------------------------------
 * Devices: every device of every backend that loaded (OpenCL, CUDA), with properties read from the
 * device. Backends are loaded at run time; one that is absent is simply not listed.
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_device_info {
    char id[32];               /* "opencl:0", "cuda:0" — what --device takes */
    char backend[16];          /* "opencl", "cuda" */
    int index;                 /* index within the backend */
    char name[128];            /* as the device reports it */
    char vendor[64];
    char platform[128];        /* OpenCL platform name; "CUDA" for the CUDA backend */
    char api_version[96];      /* "OpenCL 3.0 PoCL 5.0 ..."; "CUDA 13.0" */
    char driver_version[64];
    char compiler_version[96]; /* "OpenCL C 1.2 PoCL"; "NVRTC 13.0" */
    char uuid[40];             /* hex, empty when unknown */
    int is_gpu;
    int is_default;            /* the device bt_device_open(NULL) picks: a GPU first, then a CPU */
    char table_row[96];        /* name of the matching hardware-table row, empty if none */
    bt_gpu props;              /* hardware-table fields read from the device; peaks and whatever
                                  the device cannot report come from the matching table row.
                                  Last, so that bt_gpu and bt_device_info grow at the end
                                  together (docs/api.md, ABI rules) */
} bt_device_info;

/* An opened device: a context and a queue/stream of one backend's device. */
typedef struct bt_device bt_device;

/* Lists every device of every backend that loads, in backend registry order and device
 * order within each. Backends are loaded once per process (thread-safe) and stay loaded until
 * exit. Exactly one device has is_default set when there is any. The list is an object
 * (bt_device_list_destroy), never an array of structs, so that bt_device_info can grow. Returns
 * BT_OK also when there are no devices; then, and whenever a backend did not load, diag->msg
 * (when diag is non-NULL) says why each backend did not load ("opencl: no OpenCL ICD loader
 * ..."), and is empty otherwise. */
typedef struct bt_device_list bt_device_list;
BT_API bt_status bt_devices_list(bt_device_list **out, bt_diag *diag);
BT_API size_t bt_device_list_count(const bt_device_list *l);
/* The i-th device's information, owned by the list (NULL past the end). */
BT_API const bt_device_info *bt_device_list_at(const bt_device_list *l, size_t i);
BT_API void bt_device_list_destroy(bt_device_list *l);
/* Opens a device by id: "opencl:0", "cuda:1", a bare backend name for its first device, or NULL /
 * "default" for the default device. BT_NO_DEVICE when there is no such device: the diag lists the
 * ids that exist, or why no backend loaded. Each open gets its own context and queue; close with
 * bt_device_destroy. */
BT_API bt_status bt_device_open(const char *id, bt_device **out, bt_diag *diag);
BT_API void bt_device_destroy(bt_device *d);
/* The device's information (owned by d). */
BT_API const bt_device_info *bt_device_get_info(const bt_device *d);

/* ---------------------------------------------------------------------------------------------
 * Kernels: a kernel description (a spec: source, parameters, constraints, rules, geometry,
 * arguments, model formulas). Built-in kernels are specs compiled into the library.
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_kdesc bt_kdesc;

/* Loads a JSON spec (docs/spec.md). Every error names file:line:column and the field; nothing is
 * half-loaded. Relative source paths resolve against the spec's directory. */
BT_API bt_status bt_kdesc_load_file(const char *path, bt_kdesc **out, bt_diag *diag);
/* The same from a string; `name` stands for the file in diagnostics. */
BT_API bt_status bt_kdesc_load_string(const char *json, const char *name, bt_kdesc **out,
                                      bt_diag *diag);
/* A built-in kernel by name, any case: one of bt_kdesc_builtin_names() ("gemm", "softmax", ...).
 * BT_NOT_FOUND (diag lists them) for any other name. */
BT_API bt_status bt_kdesc_builtin(const char *name, bt_kdesc **out, bt_diag *diag);
/* Names of the built-in kernels, sorted, NULL-terminated, static: the specs of kernels/specs/
 * that the library embeds, so that a spec added there is built in. */
BT_API const char *const *bt_kdesc_builtin_names(void);
BT_API void bt_kdesc_destroy(bt_kdesc *k);
BT_API const char *bt_kdesc_name(const bt_kdesc *k);

/* A config: one value per parameter of the kernel's space, in the space's parameter order.
 * Opaque: made by bt_kdesc_parse_config (the caller's, bt_config_destroy) or owned by the object
 * that returns it (bt_result_winner). */
typedef struct bt_config bt_config;
BT_API int bt_config_count(const bt_config *c);
/* The i-th parameter's name (owned by the kernel description) and value. */
BT_API const char *bt_config_name(const bt_config *c, int i);
BT_API int64_t bt_config_value(const bt_config *c, int i);
/* A parameter's value by (case-insensitive) name; BT_NOT_FOUND names the parameters. */
BT_API bt_status bt_config_get(const bt_config *c, const char *name, int64_t *value,
                               bt_diag *diag);
/* "BLOCK_M=64,BLOCK_N=128" (what bt_kdesc_parse_config reads) or {"BLOCK_M": 64, ...}, owned by
 * c (valid until the next call of the same function on c, or c's end). */
BT_API const char *bt_config_text(const bt_config *c);
BT_API const char *bt_config_json(const bt_config *c);
BT_API void bt_config_destroy(bt_config *c);

/* Problem: values of the kernel's problem variables (M, N, K, n, rows, cols...) and its dtype.
 * Variables not set keep the spec's defaults. */
typedef struct bt_problem bt_problem;
BT_API bt_status bt_problem_create(const bt_kdesc *k, bt_problem **out);
BT_API void bt_problem_destroy(bt_problem *p);
/* Sets a variable by (case-insensitive) name. BT_NOT_FOUND names the variables that exist. */
BT_API bt_status bt_problem_set(bt_problem *p, const char *name, int64_t value, bt_diag *diag);
/* Sets the dtype ("fp32", "fp16", "bf16", ...); BT_INVALID_ARG if the kernel does not allow it. */
BT_API bt_status bt_problem_set_dtype(bt_problem *p, const char *dtype, bt_diag *diag);

/* ---------------------------------------------------------------------------------------------
 * Plan: the analytic model over the whole space, for a GPU of the hardware table (no device).
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_plan bt_plan;

/* Leading size: BT_PLAN_OPTIONS_INIT, or `= {0}` (the 0.2.0 layout). */
typedef struct bt_plan_options {
    size_t size;
    const char *rules;          /* rule set override (NULL: the kernel's own) */
    const bt_config *only;      /* evaluate this one config only (NULL: whole space) */
    int exact;                  /* compile every candidate for the GPU's arch (NVRTC) */
} bt_plan_options;
#define BT_PLAN_OPTIONS_INIT {sizeof(bt_plan_options), NULL, NULL, 0}

BT_API bt_status bt_plan_create(const bt_kdesc *k, const bt_problem *p, const bt_gpu *gpu,
                                const bt_plan_options *opts, bt_plan **out, bt_diag *diag);
BT_API void bt_plan_destroy(bt_plan *plan);
/* Writers. Table: the tile size analysis table (one row per valid config: shared memory,
 * registers, blocks per SM and what limits them, occupancy, waves, tile efficiency), eliminated
 * configs with their reasons, roofline, advice.
 * all != 0 lists every eliminated config (default: the first 20 and a count). */
BT_API bt_status bt_plan_write_table(const bt_plan *plan, FILE *f, int all);
BT_API bt_status bt_plan_write_json(const bt_plan *plan, FILE *f);
BT_API bt_status bt_plan_write_csv(const bt_plan *plan, FILE *f);

/* Parses "k=v,k=v" (keys case-insensitive) into a new config of k's space (k must outlive it;
 * bt_config_destroy). Every parameter must be given; unknown or missing keys are named in the
 * diag. */
BT_API bt_status bt_kdesc_parse_config(const bt_kdesc *k, const char *text, bt_config **out,
                                       bt_diag *diag);

/* ---------------------------------------------------------------------------------------------
 * Tuning and dispatch on a device.
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_kernel bt_kernel;
typedef struct bt_result bt_result;
typedef struct bt_buffer bt_buffer;

/* How the first launch of a key finds its config (docs/wisdom.md). */
typedef enum bt_tune_mode {
    BT_MODE_TUNE = 0,     /* look up the store and wisdom; measure only what is missing */
    BT_MODE_WISDOM_ONLY,  /* never measure at run time: store, wisdom, nearest size, same arch,
                             else the model's best config */
    BT_MODE_RETUNE,       /* measure again, even what the store holds */
} bt_tune_mode;

/* Tune options: an opaque object with a setter per option (new options are new setters, so a
 * program built against an older header keeps working). Made with every default set; a setter
 * refuses a value out of range (BT_INVALID_ARG). One object may serve several tunes and kernels
 * (bt_kernel_set_options copies it); strings are copied. */
typedef struct bt_tune_options bt_tune_options;
BT_API bt_status bt_tune_options_create(bt_tune_options **out);
BT_API void bt_tune_options_destroy(bt_tune_options *o);
/* Warm-up and measurement budgets per config, ms (defaults 25 and 100; each at most 60000). */
BT_API bt_status bt_tune_options_set_warmup_ms(bt_tune_options *o, double ms);
BT_API bt_status bt_tune_options_set_rep_ms(bt_tune_options *o, double ms);
/* Screening budget, ms (default rep_ms / 8 = 12.5; at most 60000; 0: no screening): every config
 * is first measured with this repetition budget (at least 10 runs, never more than the full
 * budget gives) after a warm-up scaled alike; the finalists — the top_k best screening medians
 * and every config within the screening noise of the slowest of them (two standard errors of
 * the medians' difference, each median's at least 0.5 %; docs/tune-json.md) — are re-measured at the full budgets interleaved, and the winner,
 * margin and tie are decided on those. A budget not below rep_ms means no screening. */
BT_API bt_status bt_tune_options_set_screen_ms(bt_tune_options *o, double ms);
/* Search strategy by name ("exhaustive", "random", "model", "coordinate", "anneal", "forest";
 * bt_strategy_name lists them); NULL: exhaustive when the plan has at most exhaustive_max valid
 * configs, else forest. An unknown name fails the tune with BT_INVALID_ARG. */
BT_API bt_status bt_tune_options_set_strategy(bt_tune_options *o, const char *name);
/* Measure at most this many configs, failures included (0, the default: exhaustive measures
 * every valid config; any other strategy stops after 64 unless a time limit is set). */
BT_API bt_status bt_tune_options_set_budget(bt_tune_options *o, int configs);
/* The whole tune aims to end within this (0: no limit): the search gets what is left after the
 * data and reference and after the time kept for the final re-measurement, and starts no round
 * that the costliest round so far says would end past it; the first round always runs. Also
 * the limit of the tune a first launch triggers (bt_kernel_set_options). */
BT_API bt_status bt_tune_options_set_time_limit_s(bt_tune_options *o, double seconds);
/* The default strategy is exhaustive up to this many valid configs (0: 128). */
BT_API bt_status bt_tune_options_set_exhaustive_max(bt_tune_options *o, int configs);
/* Stop the search once a config's median is within within_pct % of target_ms (ms, finite); < 0:
 * the plan's roofline floor; 0 (default): no target. The budget and the time limit still apply. */
BT_API bt_status bt_tune_options_set_target_ms(bt_tune_options *o, double ms);
BT_API bt_status bt_tune_options_set_within_pct(bt_tune_options *o, double pct);
/* Compile threads (0: all cores); also the search's round size. */
BT_API bt_status bt_tune_options_set_threads(bt_tune_options *o, int threads);
/* Also verify at the spec's boundary problem sizes (default 1). */
BT_API bt_status bt_tune_options_set_verify_boundary(bt_tune_options *o, int on);
/* Finalists re-measured interleaved A B C A B C ... (default 3), in this many rounds (8;
 * a finalist clearly slower than the leader leaves after the second). */
BT_API bt_status bt_tune_options_set_top_k(bt_tune_options *o, int k);
BT_API bt_status bt_tune_options_set_rounds(bt_tune_options *o, int rounds);
/* Rule set override (NULL: the kernel's own). */
BT_API bt_status bt_tune_options_set_rules(bt_tune_options *o, const char *rules);
/* Seeds the input data and the search strategy (default 1). */
BT_API bt_status bt_tune_options_set_seed(bt_tune_options *o, uint64_t seed);
/* 1: a progress line on stderr when it is a terminal (default 0). */
BT_API bt_status bt_tune_options_set_progress(bt_tune_options *o, int on);
/* A config whose single run exceeds this is recorded as timed out (default 10; above 0, at most
 * 3600). */
BT_API bt_status bt_tune_options_set_timeout_s(bt_tune_options *o, double seconds);
/* Results store (SQLite): NULL = the default ($BLOCKTUNE_CACHE_DIR/blocktune.db, else
 * ~/.cache/blocktune/), "none" = keep nothing, else a path. */
BT_API bt_status bt_tune_options_set_store(bt_tune_options *o, const char *path);
/* Default: $BLOCKTUNE_MODE, else BT_MODE_TUNE. */
BT_API bt_status bt_tune_options_set_mode(bt_tune_options *o, bt_tune_mode mode);
/* 1: time replays of graph-captured launches (CUDA), for kernels shorter than ~20 us. */
BT_API bt_status bt_tune_options_set_graph(bt_tune_options *o, int on);
/* Spread each tune over the ranks of an MPI communicator (docs/mpi.md): comm points at an
 * MPI_Comm (the caller's, which must outlive the options); NULL: not. Every rank tunes the same
 * kernel and problem with the same options, each on its own device; rank 0 runs the search and
 * alone writes the store, the other ranks measure their share of each round, and every rank gets
 * the winner. Devices of another model than rank 0's are refused unless flags holds
 * BT_MPI_MIXED_DEVICES. BT_UNSUPPORTED in a library built without MPI (cmake -DBT_MPI=ON). */
#define BT_MPI_MIXED_DEVICES 1
BT_API bt_status bt_tune_options_set_mpi_comm(bt_tune_options *o, const void *comm, int flags);
/* Why the last setter of o that refused its value did (a sentence naming the option, its
 * `blocktune tune` flag where it has one, and its range); "" after a setter that took its value. */
BT_API const char *bt_tune_options_error(const bt_tune_options *o);
/* For a command line started by an MPI launcher (what `blocktune tune` does; docs/mpi.md). With
 * more than one rank: MPI initialised, o spread over MPI_COMM_WORLD with flags (as
 * bt_tune_options_set_mpi_comm), the device this rank opens (its local rank's of the default
 * backend, unless *device was given) into devbuf, and on ranks other than 0 stdout closed and
 * progress off. *role: 0 not under MPI, 1 rank 0 (reports), 2 another rank (writes nothing).
 * Returns 0, or an exit status after saying why on stderr (a build without MPI says how to get
 * it). bt_mpi_cli_end ends MPI when bt_mpi_cli_begin started it, and returns rc. */
BT_API int bt_mpi_cli_begin(bt_tune_options *o, int flags, const char **device, char *devbuf,
                            size_t size, int *role);
BT_API int bt_mpi_cli_end(const bt_tune_options *o, int rc);

/* Progress of a tune, passed to the progress callback after every search round (and once when
 * the search ends). Leading size: the library fills only what the caller's size holds; fields
 * are added at the end. */
typedef struct bt_progress {
    size_t size;
    int configs_done;     /* configs measured (failures included) */
    int configs_planned;  /* the budget, or the valid configs of an exhaustive search; 0 when
                             only time limits the search */
    int rounds;           /* search rounds so far */
    double elapsed_s;     /* since the tune began */
    double time_left_s;   /* until the time limit (-1: no limit) */
    double best_ms;       /* best median so far (0: none yet) */
#ifdef BT__ABI_GROWN /* tests/abi: a field a later library adds */
    double grown_extra;
#endif
} bt_progress;
/* Returns non-zero to cancel: the tune stops after the round in flight and returns BT_CANCELLED
 * (its measurements stay in the store, so the next tune resumes). Called on the tuning thread. */
typedef int (*bt_progress_fn)(const bt_progress *p, void *user);
BT_API bt_status bt_tune_options_set_progress_cb(bt_tune_options *o, bt_progress_fn fn,
                                                 void *user);
#ifdef BT__ABI_GROWN /* tests/abi: an option a later library adds */
BT_API bt_status bt_tune_options_set_grown_knob(bt_tune_options *o, int v);
#endif

/* A tunable kernel on a device. `k` must outlive the kernel. Thread-safe for launch. */
BT_API bt_status bt_kernel_create(bt_device *dev, const bt_kdesc *k, bt_kernel **out,
                                  bt_diag *diag);
BT_API void bt_kernel_destroy(bt_kernel *kn);

/* Tunes for a problem on generated data (seeded random inputs): compile (in parallel), verify,
 * measure, select. The result holds the full table; the winner also enters the kernel's dispatch
 * cache. A tune that measured nothing successfully still returns BT_OK with a result saying why;
 * only failures of the machinery (device lost, out of memory) return an error. */
BT_API bt_status bt_kernel_tune(bt_kernel *kn, const bt_problem *p, const bt_tune_options *o,
                                bt_result **out, bt_diag *diag);

/* Launches for a problem with the caller's buffers, given in the order of the spec's buffer
 * arguments, constant-memory ones included (scalars and local memory come from the spec; a
 * constant-memory buffer is copied into the kernel's __constant__ array before the launch on
 * CUDA). Every buffer is checked first (count, device, size, declared dtype; see
 * bt_kernel_launch_ex). The first launch for a new key looks up the store and wisdom, else tunes
 * on the caller's data (inputs are read, outputs poisoned and then rewritten by the winner;
 * reset_to_zero / restore_value are honoured; wrapped buffers are copied first, see
 * bt_launch_options); later launches find the key in memory and launch the compiled winner. Safe
 * from several threads. Asynchronous: see bt_device_sync. */
BT_API bt_status bt_kernel_launch(bt_kernel *kn, const bt_problem *p, bt_buffer *const *buffers,
                                  int nbuffers, bt_diag *diag);
/* How many tunes this kernel has run (a cached launch does not add one). */
BT_API int bt_kernel_tune_count(const bt_kernel *kn);
/* 1 when a fault (CUDA: illegal address, trap) has poisoned the device for the rest of this
 * process. Everything measured before is in the store: a new process resumes the tune
 * (`blocktune tune` starts one to do so). */
BT_API int bt_kernel_device_lost(const bt_kernel *kn);
/* The options of the tune a first launch of a new key runs (and of bt_kernel_tune with NULL
 * options): copied from o. */
BT_API void bt_kernel_set_options(bt_kernel *kn, const bt_tune_options *o);
/* Called (from a watchdog thread) when a run on the device has not finished after three times
 * timeout_s of running (counted from when the device starts it: a CPU device compiles a binary
 * at its first launch): the config is already recorded as timed out in the store (at timeout_s;
 * a run that ends before the handler is due only timed out). A kernel that never ends cannot be
 * stopped from the host, so the handler decides: `blocktune tune` ends the process and a new one
 * resumes past the config; with no handler the tune keeps waiting. */
typedef void (*bt_hang_handler)(void *user);
BT_API void bt_kernel_set_hang_handler(bt_kernel *kn, bt_hang_handler h, void *user);
/* Later tunes of kn measure nothing new: only what the store holds is verified and reported,
 * with why (copied) in the report; NULL or "" measures as usual. For a supervisor that gave up
 * restarting crashed tunes, or whose time limit has passed. */
BT_API void bt_kernel_set_stored_only(bt_kernel *kn, const char *why);

/* What runs on the device now, for a supervisor that forks the process that tunes (what
 * `blocktune tune` does): a tune notes each config (stored: its in-flight row, whose error is
 * BT_INFLIGHT_ERROR, is in the store before its first run on a device that can crash the process;
 * a resumed tune never runs it again) and the reference before they run. The note lives in this
 * process unless bt_inflight_share gives it a page of bt_inflight_size() bytes (mapped
 * MAP_SHARED before the fork, so the supervisor reads what the dead process noted; NULL: back to
 * a private note). bt_inflight_get returns the kind and, when the pointers are not NULL, whether
 * it is stored and what it is (text owned by the note). */
#define BT_INFLIGHT_ERROR "the process died while running this config"
typedef enum bt_inflight_kind {
    BT_INFLIGHT_NONE = 0,
    BT_INFLIGHT_CONFIG,    /* a config */
    BT_INFLIGHT_REFERENCE, /* the reference (a baseline config or a reference kernel) */
} bt_inflight_kind;
BT_API size_t bt_inflight_size(void);
BT_API void bt_inflight_share(void *page);
BT_API void bt_inflight_clear(void);
BT_API bt_inflight_kind bt_inflight_get(int *stored, const char **what);

BT_API bt_status bt_device_sync(bt_device *d, bt_diag *diag);
BT_API bt_status bt_buffer_create(bt_device *d, size_t bytes, bt_buffer **out, bt_diag *diag);
BT_API void bt_buffer_destroy(bt_buffer *b);
BT_API bt_status bt_buffer_write(bt_buffer *b, size_t off, const void *src, size_t n, bt_diag *diag);
BT_API bt_status bt_buffer_read(bt_buffer *b, size_t off, void *dst, size_t n, bt_diag *diag);

/* ---------------------------------------------------------------------------------------------
 * Embedding: an engine's own device objects (docs/api.md, "Bring your own device").
 *
 * blocktune never frees, destroys, releases below its own references, or synchronises what it did
 * not create: a wrapped context, queue, stream or memory stays the caller's, and must outlive
 * the bt_device / bt_buffer wrapping it. A wrapped device still gets a queue/stream of
 * blocktune's own in the caller's context, for tuning (before it reads the caller's buffers it
 * orders that queue after the caller's stream with an event; it never waits on the host for
 * the caller's stream).
 * ------------------------------------------------------------------------------------------- */

/* Wraps a CUDA context: cu_context is a CUcontext (the caller's, borrowed: never destroyed,
 * popped or synchronised), or NULL for the primary context of device `ordinal` (the one the CUDA
 * runtime and PyTorch use; retained here and released by bt_device_destroy). With a context,
 * ordinal may be -1 (any) or the device the context must belong to. */
BT_API bt_status bt_device_wrap_cuda(int ordinal, void *cu_context, bt_device **out,
                                     bt_diag *diag);
/* Wraps an OpenCL context and device (cl_context, cl_device_id; the context must hold the device)
 * and, optionally, the caller's in-order cl_command_queue of that context (NULL: none), which
 * becomes the device's default queue for launches. blocktune takes a reference (clRetain*) on the
 * context and queue and drops it at bt_device_destroy; it never finishes the caller's queue. */
BT_API bt_status bt_device_wrap_opencl(void *cl_context, void *cl_device_id,
                                       void *cl_command_queue, bt_device **out, bt_diag *diag);
/* 1 when d wraps a caller's objects (bt_device_wrap_*). */
BT_API int bt_device_is_wrapped(const bt_device *d);

/* Wraps device memory of d: a CUdeviceptr (as an integer) or a cl_mem (cast to uint64_t), of
 * `bytes` bytes. Memory of another device or context, a pointer the driver does not know, or a
 * range past the end of its allocation is refused (BT_INVALID_ARG, the diag naming both sides).
 * bt_buffer_destroy frees only the wrapper. */
BT_API bt_status bt_buffer_wrap(bt_device *d, uint64_t native, size_t bytes, bt_buffer **out,
                                bt_diag *diag);
/* The buffer's size in bytes (0 for NULL). */
BT_API size_t bt_buffer_size(const bt_buffer *b);
/* Declares the element type of a buffer ("fp32", "fp16", ...): a launch then refuses it for an
 * argument of another dtype. Buffers without one are checked by size only. */
BT_API bt_status bt_buffer_set_dtype(bt_buffer *b, const char *dtype, bt_diag *diag);

/* CUDA's special streams, as cuda.h spells them (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD): a
 * bt_launch_options.stream of NULL means the device's own stream, not the legacy default one. */
#define BT_CUDA_STREAM_LEGACY ((void *)0x1)
#define BT_CUDA_STREAM_PER_THREAD ((void *)0x2)

/* Options of one launch. Leading size (docs/api.md, ABI rules): fill with BT_LAUNCH_OPTIONS_INIT
 * or set size = sizeof(bt_launch_options); `= {0}` means the 0.2.0 layout. */
typedef struct bt_launch_options {
    size_t size;
    void *stream;            /* CUstream / cudaStream_t or cl_command_queue of the device's
                                context; NULL: the device's own (a wrapped OpenCL device's
                                own is the caller's queue when it gave one) */
    int allow_tune_in_place; /* a first launch that tunes runs the candidates on the caller's
                                wrapped buffers (outputs overwritten, then rewritten by the
                                winner; inputs restored when the spec says restore_value). 0:
                                it tunes on scratch copies of wrapped buffers and leaves them
                                untouched until the winner's launch */
    int no_tune;             /* 1: a key that neither memory, the store nor wisdom has fails
                                with BT_NOT_FOUND instead of tuning (a hot path that must not
                                block) */
#ifdef BT__ABI_GROWN /* tests/abi: an option a later library adds (0..10) */
    int grown_priority;
#endif
} bt_launch_options;
#define BT_LAUNCH_OPTIONS_INIT {sizeof(bt_launch_options), NULL, 0, 0}

/* bt_kernel_launch with options (NULL: the defaults). Before anything is enqueued, every buffer
 * is checked: the count, the device (a buffer of another device is refused), the size against
 * the spec's size expression for the problem (a short buffer names the argument and both sizes)
 * and, where bt_buffer_set_dtype gave one, the dtype. */
BT_API bt_status bt_kernel_launch_ex(bt_kernel *kn, const bt_problem *p,
                                     bt_buffer *const *buffers, int nbuffers,
                                     const bt_launch_options *lo, bt_diag *diag);

/* ---------------------------------------------------------------------------------------------
 * Lookup without launching: the config a launch would use, for engines with their own launcher.
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_choice bt_choice;

/* Where a choice came from (docs/wisdom.md). */
typedef enum bt_source {
    BT_SOURCE_MEMORY = 0,     /* this kernel's dispatch table (launched or tuned before) */
    BT_SOURCE_STORE,          /* the results store, exact key */
    BT_SOURCE_USER_WISDOM,    /* the user's wisdom, exact key */
    BT_SOURCE_SHIPPED_WISDOM, /* the wisdom installed with blocktune, exact key */
    BT_SOURCE_NEAREST_SIZE,   /* wisdom-only: the same device's nearest problem size */
    BT_SOURCE_SAME_ARCH,      /* wisdom-only: another device of the same architecture */
    BT_SOURCE_MODEL,          /* wisdom-only: nothing stored; the model's best config */
    BT_SOURCE_TUNED,          /* measured now, on generated data (tune mode) */
} bt_source;
BT_API const char *bt_source_name(bt_source s);

/* The config a launch of p would use, with its launch geometry, and where it came from: the
 * dispatch table, the store and wisdom as a first launch looks them up; in wisdom-only mode the
 * nearest size, the same architecture, then the model — never compiling or measuring. In tune
 * mode a key found nowhere is tuned on generated data (as bt_kernel_tune), unless no_tune is
 * set (then BT_NOT_FOUND). A lookup does not enter the dispatch table. Free with
 * bt_choice_destroy. */
BT_API bt_status bt_kernel_lookup(bt_kernel *kn, const bt_problem *p, int no_tune,
                                  bt_choice **out, bt_diag *diag);
BT_API bt_source bt_choice_source(const bt_choice *c);
/* The config's parameters: count, names, values (in the space's order), owned by c. */
BT_API int bt_choice_nparams(const bt_choice *c);
BT_API const char *bt_choice_param_name(const bt_choice *c, int i);
BT_API int64_t bt_choice_param_value(const bt_choice *c, int i);
/* The value of a parameter by (case-insensitive) name: BT_NOT_FOUND names the parameters. */
BT_API bt_status bt_choice_param(const bt_choice *c, const char *name, int64_t *value,
                                 bt_diag *diag);
/* The config as JSON ({"BLOCK_SIZE": 256, ...}), owned by c. */
BT_API const char *bt_choice_config_json(const bt_choice *c);
/* Grid (in blocks), block (in threads) and dynamic shared memory (bytes) for the problem. */
BT_API void bt_choice_geometry(const bt_choice *c, uint32_t grid[3], uint32_t block[3],
                               size_t *dyn_smem);
/* What kernel argument i (the spec's argument order) is, for an engine that builds the launch's
 * parameters itself. */
typedef enum bt_arg_kind {
    BT_ARG_END = -1,   /* past the last argument */
    BT_ARG_BUFFER = 0, /* device memory: the engine's own pointer / cl_mem */
    BT_ARG_INT32,      /* scalars: the value in *ivalue (exact) and *fvalue */
    BT_ARG_INT64,
    BT_ARG_FLOAT32,
    BT_ARG_FLOAT64,
    BT_ARG_LOCAL,      /* OpenCL dynamic local memory: *ivalue bytes (a NULL __local argument) */
    BT_ARG_OTHER,      /* something blocktune fills itself (a tensor map, constant memory, every
                          argument of a Triton kernel, whose parameters follow Triton's calling
                          convention): launch such a kernel with bt_kernel_launch_ex */
} bt_arg_kind;
/* Argument i's kind and, for a scalar or local size, its value for the problem. Either pointer
 * may be NULL. */
BT_API bt_arg_kind bt_choice_arg(const bt_choice *c, int i, int64_t *ivalue, double *fvalue);
/* Compiles the config (through the kernel cache; in any mode: the caller asked for it) on the
 * first call. The native function (CUfunction, cl_kernel) and the binary (CUBIN or PTX; the
 * OpenCL program binary) are owned by c and live until bt_choice_destroy. The kernel's
 * arguments are the spec's, in order (docs/spec.md). */
BT_API bt_status bt_choice_function(bt_choice *c, void **native_fn, bt_diag *diag);
BT_API bt_status bt_choice_binary(bt_choice *c, const void **data, size_t *size, bt_diag *diag);
/* Frees c (and its module). A choice must not outlive its kernel. */
BT_API void bt_choice_destroy(bt_choice *c);

/* The result: the tune report as text (candidates with their measured times, eliminated and
 * failed configs with their reasons, the winner and its margin), or JSON (docs/tune-json.md). */
BT_API bt_status bt_result_write_table(const bt_result *r, FILE *f);
BT_API bt_status bt_result_write_json(const bt_result *r, FILE *f);
/* One row per measured config, every column of the text table and the numbers behind it
 * (RFC 4180 quoting; docs/report.md#csv). */
BT_API bt_status bt_result_write_csv(const bt_result *r, FILE *f);
/* One self-contained HTML page: roofline, time against each parameter, eliminations by rule,
 * candidates, failures, provenance (docs/report.md). */
BT_API bt_status bt_result_write_html(const bt_result *r, FILE *f);
/* 1 and the winner's config (owned by r) and median (ms) when there is a winner, else 0. Either
 * pointer may be NULL. */
BT_API int bt_result_winner(const bt_result *r, const bt_config **cfg, double *median_ms);
/* The winner's throughput: *rate in GB/s when *memory_bound (a memory-bound problem, or a low
 * intensity when the device's peaks are unknown), else TFLOP/s, and *efficiency its fraction of
 * the roofline. Returns 1 when the peaks are known (the efficiency means something), 0 when not,
 * -1 when there is no winner (nothing set). Any pointer may be NULL. */
BT_API int bt_result_winner_rate(const bt_result *r, double *rate, int *memory_bound,
                                 double *efficiency);
/* How many configs the tune ran or took from the store (measured or failed); 0 when the model
 * eliminated every config before anything ran. */
BT_API size_t bt_result_count(const bt_result *r);
/* 1 and the sentence the report prints (into buf) when something of the tune was not stored (a
 * write failed, the store was refused), 0 when all was. */
BT_API int bt_result_store_note(const bt_result *r, char *buf, size_t size);
/* The time limit the report shows (a supervisor that restarted a tune with what was left of the
 * user's limit shows the user's). */
BT_API void bt_result_set_time_limit_s(bt_result *r, double seconds);
BT_API void bt_result_destroy(bt_result *r);

/* ---------------------------------------------------------------------------------------------
 * The results store and wisdom (docs/wisdom.md): what `blocktune cache` does, for embedders.
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_store bt_store;
enum {
    BT_STORE_READONLY = 1, /* never writes, never creates (BT_NOT_FOUND when there is no store) */
    BT_STORE_CREATE = 2,   /* creates the file (and its folders) when missing */
};
/* Opens the store at path (NULL: the default, <cache dir>/blocktune.db) with BT_STORE_* flags
 * (0: read-write, and it must exist: BT_NOT_FOUND otherwise). A store that fails its integrity
 * check is refused for writing (BT_CORRUPT); read-only opens still work, so bt_store_verify can
 * say what is wrong. */
BT_API bt_status bt_store_open(const char *path, unsigned flags, bt_store **out, bt_diag *diag);
BT_API void bt_store_destroy(bt_store *s);
BT_API const char *bt_store_path(const bt_store *s);
BT_API bt_status bt_store_counts(bt_store *s, int64_t *measurements, int64_t *winners,
                                 bt_diag *diag);
/* The winners of `kernel` (NULL: every kernel), in (kernel, device, key) order. */
typedef struct bt_winner_list bt_winner_list;
BT_API bt_status bt_store_winners(bt_store *s, const char *kernel, bt_winner_list **out,
                                  bt_diag *diag);
BT_API size_t bt_winner_list_count(const bt_winner_list *l);
/* The i-th winner's kernel, problem key ("M=4096,N=4096,dtype=fp16"), config as JSON, device
 * name, provenance ("tuned", "wisdom:<file>") and median (ms); owned by the list. */
BT_API const char *bt_winner_list_kernel(const bt_winner_list *l, size_t i);
BT_API const char *bt_winner_list_key(const bt_winner_list *l, size_t i);
BT_API const char *bt_winner_list_config(const bt_winner_list *l, size_t i);
BT_API const char *bt_winner_list_device(const bt_winner_list *l, size_t i);
BT_API const char *bt_winner_list_origin(const bt_winner_list *l, size_t i);
BT_API double bt_winner_list_median_ms(const bt_winner_list *l, size_t i);
BT_API void bt_winner_list_destroy(bt_winner_list *l);
/* Deletes the rows of a selector: "all", a kernel name, or else a key substring (dry_run: counts
 * only). *measurements / *winners (may be NULL) say how many rows match. */
BT_API bt_status bt_store_forget(bt_store *s, const char *selector, int dry_run,
                                 int64_t *measurements, int64_t *winners, bt_diag *diag);
/* Integrity: BT_OK when every check holds, else BT_CORRUPT with the problems in *report
 * (malloc'd, may be NULL; free it) and the diag. */
BT_API bt_status bt_store_verify(bt_store *s, char **report, bt_diag *diag);

/* The Triton compile pool (docs/triton.md#the-compile-pool). A tune or plan that compiles a Triton
 * kernel starts it once per process by spawning `$BLOCKTUNE_PYTHON -m blocktune.triton_compile`
 * (Python starts, imports Triton, forks its workers). A process that already runs Python with
 * Triton imported (the blocktune Python package does this) may start it itself, e.g. by forking:
 * start(fd, workers, ctx) makes a process that serves the pool's protocol on fd (as its standard
 * input and output; python/blocktune/triton_compile.py's run_pool) and returns its pid, or a value
 * <= 0 to have it spawned as usual. It is called on a thread of the library's while the pool
 * starts, at most once per pool; the library keeps the socket's other end, closes fd in this
 * process when start returns, and waits for the process at exit. NULL restores the spawn. */
typedef int (*bt_triton_pool_start_fn)(int fd, int workers, void *ctx);
BT_API void bt_triton_pool_starter(bt_triton_pool_start_fn start, void *ctx);

/* Precompiled binaries (docs/wisdom.md#precompiled, `blocktune precompile`): the binary of every
 * winner of wisdom files, built with no device for the GPU each was tuned on (the hardware-table
 * row of its device name, or the one set_gpu names) and kept where a first launch on such a GPU
 * looks before it compiles: the user's kernel cache folder by default, or an output folder that
 * a package installs as <datadir>/precompiled (bt_set_precompiled_dir). Each entry is looked up
 * as a launch of its key would look it up; one a launch would not take (another source, an
 * unknown kernel or GPU) is skipped with the reason. CUDA C and Triton sources (Triton with its
 * compiler installed); a backend without an offline compiler (OpenCL) skips its entries. */
typedef struct bt_precompile_options bt_precompile_options;
BT_API bt_status bt_precompile_options_create(bt_precompile_options **out);
BT_API void bt_precompile_options_destroy(bt_precompile_options *o);
/* A wisdom file or a folder of them (each call adds one); none: the shipped wisdom. */
BT_API bt_status bt_precompile_options_add_wisdom(bt_precompile_options *o, const char *path);
/* A kernel that is not built in, by its spec (borrowed until bt_precompile returns). */
BT_API bt_status bt_precompile_options_add_kernel(bt_precompile_options *o, const bt_kdesc *k);
/* The hardware-table row to build for, whatever device the wisdom names (NULL: each file's). */
BT_API bt_status bt_precompile_options_set_gpu(bt_precompile_options *o, const char *gpu);
/* The folder to write (made when missing; NULL: the user's kernel cache folder). */
BT_API bt_status bt_precompile_options_set_output(bt_precompile_options *o, const char *dir);
/* Compile threads (0: every core) and a progress line on standard error when it is a terminal. */
BT_API bt_status bt_precompile_options_set_threads(bt_precompile_options *o, int threads);
BT_API bt_status bt_precompile_options_set_progress(bt_precompile_options *o, int on);
/* After the build, remove the output folder's binaries that no entry of this run uses (a
 * folder of precompiled binaries alone: a package's, never the kernel cache). */
BT_API bt_status bt_precompile_options_set_prune(bt_precompile_options *o, int on);
typedef struct bt_precompile_result bt_precompile_result;
/* Fails only when nothing could be tried (a wisdom file that does not parse, a folder that
 * cannot be made); entries that fail to compile are counted and listed in the result. */
BT_API bt_status bt_precompile(const bt_precompile_options *o, bt_precompile_result **out,
                               bt_diag *diag);
/* Winners compiled now, found already built, skipped (with a reason) and failed to compile. */
BT_API void bt_precompile_result_counts(const bt_precompile_result *r, int *compiled,
                                        int *present, int *skipped, int *failed);
/* The folder written (owned by r). */
BT_API const char *bt_precompile_result_dir(const bt_precompile_result *r);
/* One line per failed entry and per reason entries were skipped for (all: every entry), then a
 * summary. */
BT_API bt_status bt_precompile_result_write(const bt_precompile_result *r, FILE *f, int all);
BT_API void bt_precompile_result_destroy(bt_precompile_result *r);

/* Imports a wisdom file or a Kernel Tuner cache (.json, .json.gz), or every *.json of a folder,
 * in one transaction: on any error nothing changes. *entries (may be NULL) gets the count. */
BT_API bt_status bt_wisdom_import(bt_store *s, const char *path, int *entries, bt_diag *diag);
typedef enum bt_wisdom_format {
    BT_WISDOM_BLOCKTUNE = 0, /* blocktune's wisdom (docs/wisdom.md) */
    BT_WISDOM_VLLM,          /* vLLM's fused-GEMM config files (one per N, K, dtype) */
    BT_WISDOM_KERNEL_TUNER,  /* a Kernel Tuner cache of one kernel and key (.json or .json.gz) */
    BT_WISDOM_T4,            /* T4 results (the auto-tuning results schema Kernel Tuner ships) of
                                one kernel and key; export only */
} bt_wisdom_format;
/* "Kernel Tuner cache", "T4 results, schema 1.0.0", ...: what a format is, for messages. */
BT_API const char *bt_wisdom_format_name(bt_wisdom_format format);
/* bt_wisdom_import that also says what the file was (*format: BT_WISDOM_KERNEL_TUNER for a Kernel
 * Tuner cache, else BT_WISDOM_BLOCKTUNE; may be NULL). */
BT_API bt_status bt_wisdom_import_ex(bt_store *s, const char *path, bt_wisdom_format *format,
                                     int *entries, bt_diag *diag);
/* Exports the winners of `kernel` (NULL: all; required for vLLM and Kernel Tuner) on `device`
 * (a name or UUID; NULL: every device) to path: a file, or for blocktune's format with several
 * devices and for vLLM a folder (created). `key` picks the key of a Kernel Tuner export (NULL:
 * the store must hold one). *files (may be NULL) gets the number of files written. */
BT_API bt_status bt_wisdom_export(bt_store *s, bt_wisdom_format format, const char *kernel,
                                  const char *device, const char *key, const char *path,
                                  int *files, bt_diag *diag);
/* Options of an export: an object with a setter per option, every one unset when made. Strings
 * are copied. */
typedef struct bt_wisdom_export_options bt_wisdom_export_options;
BT_API bt_status bt_wisdom_export_options_create(bt_wisdom_export_options **out);
BT_API void bt_wisdom_export_options_destroy(bt_wisdom_export_options *o);
/* The kernel (NULL: all; the Kernel Tuner and T4 formats need one), the device (a name or
 * UUID; NULL: every device), the key of a Kernel Tuner or T4 export (NULL: the store must hold
 * one). */
BT_API bt_status bt_wisdom_export_options_set_kernel(bt_wisdom_export_options *o,
                                                     const char *kernel);
BT_API bt_status bt_wisdom_export_options_set_device(bt_wisdom_export_options *o,
                                                     const char *device);
BT_API bt_status bt_wisdom_export_options_set_key(bt_wisdom_export_options *o, const char *key);
/* blocktune's format: each key's winner and the k-1 fastest ok runners-up (1 to 1000; default
 * 1, the winners only). */
BT_API bt_status bt_wisdom_export_options_set_top_k(bt_wisdom_export_options *o, int k);
/* bt_wisdom_export with options (NULL: none set). path "-" writes blocktune's format (one
 * device) or T4 results to standard output; a Kernel Tuner cache needs a file. *files gets the
 * files written, *rows (Kernel Tuner, T4) the configs or results in them; either may be NULL. */
BT_API bt_status bt_wisdom_export_ex(bt_store *s, bt_wisdom_format format,
                                     const bt_wisdom_export_options *o, const char *path,
                                     int *files, int *rows, bt_diag *diag);
/* What `blocktune cache list` prints: the winners as a table (kernel, device, key, median,
 * margin, config; ties and imported winners marked) and a line of counts, or as a JSON document
 * (blocktune-cache-list/1, docs/report.md#cache-list). */
BT_API bt_status bt_store_write_winners_table(bt_store *s, FILE *f, bt_diag *diag);
BT_API bt_status bt_store_write_winners_json(bt_store *s, FILE *f, bt_diag *diag);
/* What `blocktune cache show` prints: every measurement of the keys containing `key`, per key
 * its provenance and its rows (ok ones fastest first, winners marked '*', failures with their
 * error). *rows (may be NULL) gets how many; none is not an error. */
BT_API bt_status bt_store_write_measurements(bt_store *s, const char *key, FILE *f, size_t *rows,
                                             bt_diag *diag);

/* ---------------------------------------------------------------------------------------------
 * Reports: one self-contained HTML page over several tunes (docs/report.md), what `blocktune
 * report` writes: tune JSON files (bt_result_write_json), the keys of a results store, peers.
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_report bt_report;
BT_API bt_status bt_report_create(bt_report **out);
BT_API void bt_report_destroy(bt_report *r);
/* Adds the tune of a JSON file that bt_result_write_json wrote, or each key's tune of a sweep's
 * document (docs/tune-json.md#sweeps). Errors name file:line:column; on error nothing is added. */
BT_API bt_status bt_report_add_tune_file(bt_report *r, const char *path, bt_diag *diag);
/* Adds one tune per (kernel, device, key) of the store that holds measurements, selected by
 * kernel (exact), key (a substring) and device (name or UUID), each NULL for any; *added (may be
 * NULL) gets how many (0 is not an error). The store keeps measurements only: the roofline and
 * the eliminated configs come from the plan made again (a built-in kernel, on a device that is
 * here or in the hardware table). */
BT_API bt_status bt_report_add_store(bt_report *r, bt_store *s, const char *kernel,
                                     const char *key, const char *device, size_t *added,
                                     bt_diag *diag);
/* Other tools' timings of the same problems, drawn beside the tunes (docs/report.md#peers). */
BT_API bt_status bt_report_set_peers_file(bt_report *r, const char *path, bt_diag *diag);
/* The page's title (NULL: "blocktune report"); copied. */
BT_API bt_status bt_report_set_title(bt_report *r, const char *title);
/* The page names every tune added so far as coming from source (copied; default: the file, or
 * "store:PATH"): for documents the caller wrote to files of its own. */
BT_API bt_status bt_report_set_source(bt_report *r, const char *source);
/* How many tunes the page holds. */
BT_API size_t bt_report_count(const bt_report *r);
/* The page to f, or to the file at path written whole or not at all (atomically). */
BT_API bt_status bt_report_write_html(const bt_report *r, FILE *f, bt_diag *diag);
BT_API bt_status bt_report_write_html_file(const bt_report *r, const char *path, bt_diag *diag);

/* ---------------------------------------------------------------------------------------------
 * Simulation: the search strategies judged on recorded spaces, with no device (docs/search.md),
 * what `blocktune simulate` does. A recorded space is a Kernel Tuner cache, or a results store's
 * measurements of one kernel and key: a "measurement" returns the recorded time and costs the
 * recorded compile + benchmark time; a config with no record is invalid; a recorded failure
 * fails. Each strategy runs `runs` times with seeds seed, seed+1, ...
 * ------------------------------------------------------------------------------------------- */
typedef struct bt_simulation bt_simulation;
/* Made with every default: all strategies, 100 runs, seed 1, a budget of every recorded config,
 * no time limit, 1 job. */
BT_API bt_status bt_simulation_create(bt_simulation **out);
BT_API void bt_simulation_destroy(bt_simulation *s);
/* One strategy by name (bt_strategy_name), or NULL / "all" for every one; BT_INVALID_ARG for an
 * unknown name. Setters apply to the spaces added after them. */
BT_API bt_status bt_simulation_set_strategy(bt_simulation *s, const char *name);
/* Seeded runs per strategy (1 to 1000000). */
BT_API bt_status bt_simulation_set_runs(bt_simulation *s, uint64_t runs);
/* Measurements per run (0: as many as there are recorded configs). */
BT_API bt_status bt_simulation_set_budget(bt_simulation *s, uint64_t budget);
BT_API bt_status bt_simulation_set_seed(bt_simulation *s, uint64_t seed);
/* Simulated seconds per run (0: none). */
BT_API bt_status bt_simulation_set_time_limit_s(bt_simulation *s, double seconds);
/* Threads running the runs (1 to 64); the results do not depend on it. */
BT_API bt_status bt_simulation_set_jobs(bt_simulation *s, int jobs);
/* 1: run every run to its budget (by default a run stops once no reported number can change;
 * the numbers are the same). */
BT_API bt_status bt_simulation_set_full(bt_simulation *s, int on);
/* Adds the space of a Kernel Tuner cache file (.json or .json.gz) and runs the strategies on it.
 * Errors name file:line:column. */
BT_API bt_status bt_simulation_add_file(bt_simulation *s, const char *path, bt_diag *diag);
/* Adds the space of store's measurements of kernel for the problem key (canonical text, as
 * bt_winner_list_key gives it) on device (a name or UUID; NULL: every device), named `name` in
 * the reports (NULL: "store:PATH"), and runs the strategies on it. BT_NOT_FOUND when there is no
 * such row. */
BT_API bt_status bt_simulation_add_store(bt_simulation *s, bt_store *store, const char *kernel,
                                         const char *key, const char *device, const char *name,
                                         bt_diag *diag);
BT_API size_t bt_simulation_count(const bt_simulation *s);
/* Markdown: per space its facts and a row per strategy (measurements to within 2/5/10 % of the
 * best, median and p90; runs within 5 %; best found after 10..1000 measurements; simulated time
 * to 5 %) with the verdict against random sampling, then a summary when there are several; or
 * one JSON document of the same numbers. */
BT_API bt_status bt_simulation_write_table(const bt_simulation *s, FILE *f);
BT_API bt_status bt_simulation_write_json(const bt_simulation *s, FILE *f);

/* ---------------------------------------------------------------------------------------------
 * Strategies, backends, settings.
 * ------------------------------------------------------------------------------------------- */
/* The search strategies (bt_tune_options_set_strategy takes the names); NULL past the end. */
BT_API int bt_strategy_count(void);
BT_API const char *bt_strategy_name(int i);
BT_API const char *bt_strategy_description(int i);
/* The backends built in (asking loads them all; opening or wrapping a device loads only its
 * backend and those before it): 1 when backend i loaded, 0 when not (*reason, if
 * non-NULL, says why: "no OpenCL ICD loader ..."), -1 past the end. *name gets its name. */
BT_API int bt_backend_count(void);
BT_API int bt_backend_status(int i, const char **name, const char **reason);

/* The decisions log (what a first launch looked up, dispatched or tuned, one line each without
 * the newline) goes to fn instead of stderr / $BLOCKTUNE_LOG; NULL goes back to those. Called
 * from the thread that decided, under no lock of the library's. */
typedef void (*bt_log_fn)(const char *line, void *user);
BT_API void bt_set_log_callback(bt_log_fn fn, void *user);
/* The cache folder (store, kernel cache, user wisdom) instead of $BLOCKTUNE_CACHE_DIR and the
 * defaults; NULL goes back to them. Affects stores and kernels opened afterwards. */
BT_API bt_status bt_set_cache_dir(const char *dir);
/* The user's and the shipped wisdom folders instead of $BLOCKTUNE_USER_WISDOM_DIR and
 * $BLOCKTUNE_WISDOM_DIR (NULL: those, or the defaults). Kernels created afterwards read them. */
BT_API bt_status bt_set_wisdom_dirs(const char *user_dir, const char *shipped_dir);
/* The folder of installed binaries built ahead of time (bt_precompile) instead of
 * $BLOCKTUNE_PRECOMPILED_DIR and <datadir>/precompiled; NULL goes back to them. */
BT_API bt_status bt_set_precompiled_dir(const char *dir);
/* The default mode of new tune options and kernels (a bt_tune_mode), instead of $BLOCKTUNE_MODE;
 * -1 goes back to it. */
BT_API bt_status bt_set_default_mode(int mode);

/* The 0.1 disposal names, for source compatibility (the ABI has only the _destroy ones). */
#ifndef BT_NO_DEPRECATED
#define bt_gpudb_free bt_gpudb_destroy
#define bt_device_close bt_device_destroy
#define bt_kdesc_free bt_kdesc_destroy
#define bt_problem_free bt_problem_destroy
#define bt_plan_free bt_plan_destroy
#define bt_result_free bt_result_destroy
#endif

#ifdef __cplusplus
}
#endif
#endif /* BLOCKTUNE_H */
