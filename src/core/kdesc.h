/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kdesc.h — the in-memory kernel description that a JSON spec loads into (internal).
 *
 * One format serves the built-in kernels (kernels/specs/NAME.json, compiled into the library) and
 * users' kernels. The description holds the config space, the constraint and model expressions
 * (all parsed once against one symbol table), the launch geometry, the arguments and the
 * verification settings. See docs/spec.md for the JSON format.
 *
 * Symbol slots, in this order: the parameters (slot i = parameter i), the problem variables,
 * `elem_bytes`, then the device symbols of bt__dev_syms (smem_per_block, sm_count, ...).
 */
#ifndef BT_CORE_KDESC_H
#define BT_CORE_KDESC_H

#include "blocktune.h"
#include "core/expr.h"
#include "core/space.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum bt__dtype {
    BT__DT_FP32 = 0,
    BT__DT_FP16,
    BT__DT_BF16,
    BT__DT_FP64,
    BT__DT_FP8,
    BT__DT_INT8,
    BT__DT_INT32,
    BT__DT_INT64,
    BT__DT__COUNT
} bt__dtype;

const char *bt__dtype_name(bt__dtype t);
int bt__dtype_size(bt__dtype t);
/* Parses "fp32"/"float32"/"float", "fp16"/"half", "bf16", ...; false if unknown. */
bool bt__dtype_parse(const char *s, bt__dtype *out);

/* An expression with where it came from in the spec (for diagnostics). */
typedef struct bt__kexpr {
    bt__expr *e;   /* NULL when the field was absent */
    char field[96];
    int line, col; /* position of the string in the spec file */
} bt__kexpr;

typedef enum bt__rule {
    BT__RULE_POW2_TILES = 0, /* every tile parameter is a power of two */
    BT__RULE_TC_DIMS,        /* tensor-core dot: BLOCK_K >= 16 and BLOCK_M, BLOCK_N >= 16 */
    BT__RULE_WARP_WIDTH,     /* the inner tile width is a multiple of warp_size */
    BT__RULE_SMEM,           /* smem (stages included) <= per-block limit (opt-in) */
    BT__RULE_THREADS,        /* threads per block <= max_threads_per_block */
    BT__RULE_NUM_WARPS,      /* num_warps in {1,2,4,8,16,32} */
    BT__RULE_STAGES,         /* num_stages >= 1 */
    BT__RULE_FITS_SM,        /* at least one block fits on an SM (smem, threads; registers only
                                when counted exactly by a compiler: plan --exact) */
    BT__RULE_SMEM_STATIC,    /* static smem <= the default per-block size (CUDA: 48 KiB) */
    BT__RULE_ACC_REGS,       /* the accumulator alone fits the registers a thread may have
                                (accumulator_bytes / 4 / threads <= max_regs_per_thread; not
                                for tensor-core kernels from cc 10 on: tensor memory) */
    BT__RULE__COUNT
} bt__rule;

const char *bt__rule_name(bt__rule r);
/* Resolves a rule set name ("triton", "cuda", "limits") or a comma-separated list of rule names
 * into a mask; false with a diag naming the unknown word. */
bool bt__rules_parse(const char *text, uint32_t *mask, bt_diag *diag);

typedef enum bt__compute_unit {
    BT__UNIT_SIMT = 0, /* CUDA cores */
    BT__UNIT_TENSOR,   /* tensor cores (tf32 for fp32 when allow_tf32) */
} bt__compute_unit;

typedef enum bt__kind {
    BT__KIND_GENERIC = 0,
    BT__KIND_GEMM,
    BT__KIND_ROWWISE, /* softmax, layernorm: a row per program */
    BT__KIND_REDUCTION,
    BT__KIND_POINTWISE,
} bt__kind;

typedef struct bt__tile {
    int param;       /* parameter index */
    int dim_slot;    /* slot of the problem variable it tiles */
    bool reduction;  /* K-like: tiles a reduction loop rather than the grid */
} bt__tile;

typedef enum bt__init_kind {
    BT__INIT_NORMAL = 0, /* mean a, stddev b */
    BT__INIT_UNIFORM,    /* [a, b) */
    BT__INIT_INT,        /* integers in [a, b] */
    BT__INIT_IOTA,       /* a + i*b */
    BT__INIT_CONST,      /* a */
    BT__INIT_POISON,     /* outputs: NaN (floats) / 0xFF bytes (integers) */
} bt__init_kind;

typedef enum bt__arg_role {
    BT__KARG_BUFFER = 0,
    BT__KARG_SCALAR,
    BT__KARG_LOCAL, /* dynamic local memory (OpenCL __local pointer) of `size` bytes */
    BT__KARG_TMAP,  /* a tensor map (TMA) over a buffer argument, passed by value (CUDA) */
} bt__arg_role;

#define BT__TMAP_RANK_MAX 5
#define BT__MAX_TMAPS 4 /* tensormap arguments per kernel */

typedef struct bt__argspec {
    char name[BT_NAME_MAX];
    bt__arg_role role;
    bool dtype_is_problem; /* "dtype": "T" — follows the problem's dtype */
    bt__dtype dtype;
    /* "dtype": {"if": EXPR, "then": DT, "else": DT}: EXPR over problem variables picks the
     * element type per problem (e.g. an output in fp32 or in the inputs' type); dtype_if.e is
     * NULL otherwise. "T" in either branch follows the problem's dtype. */
    bt__kexpr dtype_if;
    bt__dtype dtype_then, dtype_else;
    bool then_is_problem, else_is_problem;
    bt__kexpr size;        /* buffer: elements; local: bytes; scalar: value */
    bt__init_kind init;
    double init_a, init_b;
    bool output, reset_to_zero, restore_value;
    /* "kind": "constant": read-only data in constant memory, otherwise a buffer (role BUFFER):
     * on CUDA the __constant__ symbol `symbol` of the module (the argument's name unless given),
     * filled before each launch and not a kernel parameter; on OpenCL a __constant pointer
     * argument */
    bool cmem;
    char symbol[128];
    /* input data read from a file (raw binary in the argument's dtype, or .npy), resolved
     * against the spec's directory; NULL: made by `init` */
    char *file;
    /* the expected output (same formats) when the reference is "answers"; NULL otherwise */
    char *answer;
    /* tensor maps: the buffer argument mapped, its dimensions (elements, innermost first; dense
     * row-major strides), the box copied per request (may use parameters) and the swizzle span */
    int tm_buffer, tm_rank, tm_swizzle;
    bt__kexpr tm_dims[BT__TMAP_RANK_MAX], tm_box[BT__TMAP_RANK_MAX];
} bt__argspec;

typedef enum bt__ref_kind {
    BT__REF_NONE = 0,
    BT__REF_HOST,   /* a host reference built into the library (built-in kernels) */
    BT__REF_CONFIG, /* a baseline config of the same kernel */
    BT__REF_KERNEL, /* a separate reference kernel in the spec */
    BT__REF_ANSWERS, /* expected outputs read from files (one problem's sizes) */
} bt__ref_kind;

#define BT__MAX_ARGS 32
#define BT__MAX_TILES 8
#define BT__MAX_PROBLEM 16
#define BT__MAX_BOUNDARY 16
#define BT__MAX_DTYPES 8
#define BT__MAX_PDEFINES 16       /* "defines": problem values passed as -D */
#define BT__MAX_CONSTRAINTS 4096
#define BT__MAX_SOURCES 64        /* files in one "sources" list */
#define BT__MAX_CONFIGS 1000000   /* an explicit "configs" list */
#define BT__MAX_GRID_DIV 8        /* factors a grid dimension's problem size is divided by */
#define BT__MAX_ENTRY 127         /* characters of "entry" ("matmul<float, tile_size_x>") */
#define BT__MAX_LANGS 8           /* source languages in one "sources" object */
#define BT__LANG_MAX 16           /* characters of a language name, NUL included */
#define BT__TARGET_MAX 32         /* characters of a compile target name, NUL included */

/* A kernel's source in one language ("cuda", "opencl"; a backend says which it compiles: the
 * spec names no backend), the files of a list already concatenated in order, and the compile
 * target it needs ("sm_90a"; empty: the device's own). */
typedef struct bt__ksource {
    char lang[BT__LANG_MAX];
    char *text;
    char *path; /* the file, absolute, for a language compiled from its file (triton); else NULL */
    char target[BT__TARGET_MAX];
} bt__ksource;

/* A -D define whose value is an expression over problem variables, evaluated per problem. */
typedef struct bt__pdefine {
    char name[BT_NAME_MAX];
    bt__kexpr value;
} bt__pdefine;

typedef struct bt__tolerance {
    double rtol, atol;
} bt__tolerance;

typedef struct bt__kfamily bt__kfamily; /* core/family.h */

struct bt_kdesc {
    char *name;
    char *description;
    char *file; /* spec path, or "<builtin>/gemm.json" */
    char *dir;  /* directory of the spec, for relative sources */

    /* sources by language, in the spec's order (none: a spec for planning only) */
    bt__ksource src[BT__MAX_LANGS];
    int nsrc;
    char *entry;
    char *options; /* extra compiler options, may be NULL */

    int ndtypes;
    bt__dtype dtypes[BT__MAX_DTYPES]; /* allowed; dtypes[0] is the default */
    bool allow_tf32;

    int nproblem;
    char problem_names[BT__MAX_PROBLEM][BT_NAME_MAX];
    int64_t problem_defaults[BT__MAX_PROBLEM];

    bt__space space;
    bt_config *configs; /* explicit config list (Triton-style); NULL: the cartesian space */
    size_t nconfigs;

    bt__symtab *syms;
    int slot_problem0, slot_elem_bytes, slot_dev0, nslots;

    bt__kexpr *constraints;
    int nconstraints;
    uint32_t rules;
    char rules_name[64];

    /* model */
    bt__kind kind;
    bt__compute_unit unit;
    bt__kexpr smem, regs, threads, acc_bytes, tensor_core, vector_ok, traffic, perf;
    bt__kexpr static_smem; /* the static part of smem (default: smem - launch.local_mem) */
    int vector_bytes;
    int inner_tile; /* parameter index of the innermost tile width, -1 if none */
    bt__tile tiles[BT__MAX_TILES];
    int ntiles;
    int p_num_warps, p_num_stages, p_num_ctas; /* parameter indices, -1 if absent */

    /* launch geometry (from "grid"/"block", or from parameters named block_size_x/y/z and
     * "problem_size" / "grid_div") */
    bt__kexpr grid[3], block[3], dyn_smem;
    bt__pdefine pdefines[BT__MAX_PDEFINES];
    int npdefines;
    bt__kexpr flops, bytes;

    /* arguments and verification */
    bt__argspec args[BT__MAX_ARGS];
    int nargs;
    int key_slots[BT__MAX_PROBLEM]; /* problem variables in the tuning key */
    int nkey;
    bool key_dtype;
    bt__tolerance tol[BT__DT__COUNT];
    bt__ref_kind ref;
    char ref_host[BT_NAME_MAX];
    /* the host reference's argument and problem-variable names as this spec spells them
     * ("reference": {"host": ..., "names": {"x": "x_ptr"}}): pairs (the reference's, the spec's) */
    char ref_names[8][2][BT_NAME_MAX];
    int nref_names;
    bt_config ref_config;
    bt__ksource ref_src[BT__MAX_LANGS]; /* the reference kernel's sources by language */
    int nref_src;
    char *ref_entry;
    bt__kexpr ref_grid[3], ref_block[3];
    int nboundary;
    int64_t boundary[BT__MAX_BOUNDARY][BT__MAX_PROBLEM]; /* -1 = keep the default */

    /* "families": the specs this one is the front door to (core/family.h); NULL: none */
    bt__kfamily *fam;
    int nfam;
};

struct bt_problem {
    const bt_kdesc *k;
    int64_t values[BT__MAX_PROBLEM];
    bt__dtype dtype;
};

/* Device symbols available to every expression, in slot order after elem_bytes. */
typedef struct bt__dev_sym {
    const char *name;
    int64_t (*get)(const bt_gpu *g);
} bt__dev_sym;
const bt__dev_sym *bt__dev_syms(int *count);

/* The element type of argument a for problem p (the problem's dtype for "T", a fixed type, or
 * the branch its "if" picks). */
bt__dtype bt__arg_dtype(const bt_kdesc *k, const bt__argspec *a, const bt_problem *p);

/* k's source in language lang, NULL when it has none. */
const bt__ksource *bt__kdesc_source(const bt_kdesc *k, const char *lang);
/* The Triton compile request (docs/triton.md#requests) of config c of k for problem p on GPU g
 * (may be NULL), from k's "triton" source s: source, entry, signature (buffers as pointers, every
 * buffer divisible by 16), constexprs (the parameters that are not launch options, and the
 * "defines"), integer scalars in "specialize" with their values, and the launch options
 * (num_warps, num_stages, num_ctas, maxnreg) from the parameters of those roles. A malloc'd JSON
 * object text into *out (triton_req.c). */
bt_status bt__triton_request(const bt_kdesc *k, const bt__ksource *s, const bt_config *c,
                             const bt_problem *p, const bt_gpu *g, char **out, bt_diag *diag);

/* The hash that keys what is measured of k compiled from source s (stores, wisdom, the kernel
 * cache): the source text, then k's compiler options. */
uint64_t bt__kdesc_source_hash(const bt_kdesc *k, const bt__ksource *s);

/* Number of configs in the kernel's space (the explicit list, or the cartesian product). */
uint64_t bt__kdesc_count(const bt_kdesc *k);
void bt__kdesc_config_at(const bt_kdesc *k, uint64_t i, bt_config *out);

/* Parses "k=v,k=v" (keys case-insensitive) into a config of k's space (bt_kdesc_parse_config
 * makes the public object around it). Every parameter must be given. */
bt_status bt__kdesc_parse_config(const bt_kdesc *k, const char *text, bt_config *out,
                                 bt_diag *diag);
/* Fills the symbol slots for a config, a problem and a GPU (slots has k->nslots entries). */
void bt__kdesc_fill_slots(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                          const bt_gpu *g, int64_t *slots);
/* The same into a caller's array of BT__STACK_SLOTS entries: BT_INTERNAL (nothing filled) when k
 * has more symbols than that. */
#define BT__STACK_SLOTS 256
bt_status bt__kdesc_stack_slots(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                                const bt_gpu *g, int64_t slots[BT__STACK_SLOTS]);

/* Evaluates a kexpr; on error fills diag with field, position and message. */
bt_status bt__kexpr_eval(const bt_kdesc *k, const bt__kexpr *x, const int64_t *slots,
                         int64_t *out, bt_diag *diag);

/* The "defines" of k evaluated for problem p (and GPU g, may be NULL) as "NAME=value" into defs
 * (BT__MAX_PDEFINES entries); *n gets how many. An evaluation error names the define. */
bt_status bt__kdesc_pdefines(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                             char defs[][96], int *n, bt_diag *diag);

#endif
