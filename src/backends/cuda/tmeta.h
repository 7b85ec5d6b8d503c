/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tmeta.h — a Triton kernel's launch metadata (internal; tmeta.c): what Triton's own launcher
 * knows of a compiled kernel (entry, shared memory, warps, CTAs per cluster, the two scratch
 * areas, the launch parameters in order), taken from the compile pool's answer, kept in the
 * module blob as a versioned text section (blob.h) so that a cached blob launches with no Python,
 * and applied at launch: the spec's arguments mapped onto the kernel's parameters in Triton's
 * order (constexprs and specialized scalars removed, integers at the width Triton chose), the
 * scratch pointers appended, the grid's x multiplied by num_ctas. docs/triton.md describes the
 * convention (Triton 3.6's make_launcher in triton/backends/nvidia/driver.py).
 */
#ifndef BT_BACKENDS_CUDA_TMETA_H
#define BT_BACKENDS_CUDA_TMETA_H

#include "backends/backend.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The section's format version: a blob whose section has another is refused (BT_CORRUPT), so
 * that a cache entry of another blocktune compiles again instead of launching wrongly. */
#define BT__TMETA_VERSION 1
#define BT__TMETA_MAX_PARAMS 40 /* launch parameters, the two scratch pointers included */
#define BT__TMETA_MAX_CONSTS 40 /* spec arguments compiled in as constants */

typedef enum bt__tparam_kind {
    BT__TP_PTR = 0,  /* a buffer's device address */
    BT__TP_INT,      /* a signed integer of `size` bytes */
    BT__TP_UINT,     /* an unsigned one */
    BT__TP_FLOAT,    /* fp32 (4) or fp64 (8) */
    BT__TP_SCRATCH   /* global_scratch (scratch 0) or profile_scratch (1) */
} bt__tparam_kind;

typedef struct bt__tparam {
    char name[64];
    int arg;        /* the spec argument it takes (index), or for BT__TP_SCRATCH which one */
    uint8_t kind;   /* bt__tparam_kind */
    uint8_t size;   /* bytes: 1, 2, 4 or 8 */
    bool div16;     /* compiled assuming a 16-byte aligned address / a multiple of 16 */
} bt__tparam;

typedef struct bt__tconst {
    char name[64];
    int arg;        /* the spec argument compiled in as this value */
    int64_t value;
} bt__tconst;

typedef struct bt__tmeta {
    char triton_version[32]; /* "3.6.0" */
    char kernel[128];        /* the CUBIN's entry */
    char key[72];            /* the compile pool's cache key (hex sha256) */
    uint32_t shared;         /* dynamic shared memory per block, bytes */
    int num_warps, num_ctas;
    uint32_t cluster[3];
    uint64_t scratch_size[2], scratch_align[2]; /* per CTA: global_scratch, profile_scratch */
    bool cooperative, pdl;   /* launch attributes Triton would set */
    int nparams;
    bt__tparam p[BT__TMETA_MAX_PARAMS];
    int nconsts;
    bt__tconst c[BT__TMETA_MAX_CONSTS];
} bt__tmeta;

/* The metadata of a compile pool answer (docs/triton.md#answers) for a kernel whose spec
 * arguments are args[0..nargs) in order: each launch_args entry mapped onto the argument of its
 * name, each argument absent from them onto its compiled value in the answer's constexprs.
 * BT_COMPILE with the reason in msg when the answer does not fit (a parameter no argument
 * names, an argument neither passed nor constant, a type the launch cannot pass, too many). */
bt_status bt__tmeta_from_answer(const json_t *a, const char *const *args, int nargs,
                                bt__tmeta *m, char *msg, size_t size);

/* The section's text (malloc'd JSON with "version"), NULL when out of memory. */
char *bt__tmeta_text(const bt__tmeta *m);

/* Parses a section (n bytes, not necessarily NUL-terminated) into *m. BT_CORRUPT with the reason
 * for a malformed one or another version. */
bt_status bt__tmeta_parse(const char *text, size_t n, bt__tmeta *m, bt_diag *diag);

/* The launch geometry Triton uses for a grid of programs: checks block is (32 * num_warps, 1, 1)
 * and multiplies the grid's x by num_ctas into out. BT_INVALID_ARG naming fn otherwise. */
bt_status bt__tmeta_grid(const bt__tmeta *m, const char *fn, const uint32_t grid[3],
                         const uint32_t block[3], uint32_t out[3], bt_diag *diag);

/* Bytes of scratch area `which` (0 global, 1 profile) a launch over grid (the programs, before
 * num_ctas) needs: grid * num_ctas * size; 0 when the kernel needs none. */
uint64_t bt__tmeta_scratch_bytes(const bt__tmeta *m, int which, const uint32_t grid[3]);

/* The kernel parameters of one launch in Triton's order: params[i] points into vals[i] (at least
 * BT__TMETA_MAX_PARAMS each), *np gets their count. args[0..nargs) are the spec's arguments in
 * order, addr[i] the device address of a buffer argument i; scratch[0..1] the scratch pointers
 * (0: none). Checks what the compile assumed of the values: a constant argument has its compiled
 * value, a 16-byte divisible pointer or integer is one, an integer fits the width Triton gave
 * it. BT_INVALID_ARG naming fn and the argument otherwise. */
bt_status bt__tmeta_params(const bt__tmeta *m, const char *fn, const bt__karg *args, int nargs,
                           const uint64_t *addr, const uint64_t scratch[2], uint64_t *vals,
                           void **params, int *np, bt_diag *diag);

#endif
