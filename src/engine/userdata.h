/* SPDX-License-Identifier: Apache-2.0 */
/*
 * userdata.h — what a spec of the user's own brings to a tune beyond the built-in kernels
 * (internal): problem defines among a config's -D defines, the names a compile resolves (C++ and
 * template entries, __constant__ symbols), constant memory filled before each launch, input data
 * read from files and expected outputs read from files. The tuner, the dispatch path and
 * plan --exact call these at the few places they apply.
 */
#ifndef BT_ENGINE_USERDATA_H
#define BT_ENGINE_USERDATA_H

#include "backends/backend.h"
#include "core/kdesc.h"
#include "engine/host.h"

#include <stdbool.h>
#include <stdint.h>

/* The spec's "defines" evaluated for problem p as "NAME=value" into defs (room for
 * BT__MAX_PDEFINES); returns how many. A define that cannot be evaluated is left out (plan has
 * said why: bt__model_init evaluates them too). */
int bt__problem_defines(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g, char defs[][96]);

/* The compile request of source src of k (a source of k: its text and target) with the given
 * defines and k's options, resolving k's names (backend.h: compile): the entry, then "&symbol"
 * for each constant-memory argument, written into names with ptrs[i] pointing at names[i]. */
#define BT__MAX_NAMES (1 + BT__MAX_ARGS) /* each name fits 136 bytes: BT__MAX_ENTRY, "&" symbol */
void bt__compile_req_of(const bt_kdesc *k, const bt__ksource *src, const char *const *defines,
                        int ndefines, char names[][136], const char *ptrs[],
                        bt__compile_req *req);

/* Before a launch of mod: each constant-memory argument's buffer (args[i].u.buf, as many bytes as
 * its size at problem p) is copied into the module's __constant__ symbol and args[i] becomes
 * BT__ARG_NONE — on a backend with module_set_global (CUDA). Elsewhere (OpenCL) it stays the
 * buffer argument that a __constant pointer parameter takes. */
bt_status bt__cmem_bind(const bt_kdesc *k, const bt__backend_iface *I, bt__bdev *D, bt__bmod *mod,
                        const bt_problem *p, const bt_gpu *g, bt__karg *args, bt_diag *diag);

/* The contents of input argument a, the spec's argument number `arg`: read from its file
 * (converted to the buffer's dtype), else made by its initialiser from the streams (seed, arg,
 * chunk) on every core (bt__hostbuf_fill: the same values on any number of threads). */
bt_status bt__arg_fill(const bt__argspec *a, bt__hostbuf *hb, uint64_t seed, int arg,
                       bt_diag *diag);

/* "reference": {"answers": ...}: every output's expected values read from its file into ref[i]
 * (host[i] has the output's count and dtype). caller: the tune runs on the caller's buffers,
 * whose inputs are not the ones the answers belong to (BT_UNSUPPORTED, saying so). */
bt_status bt__answers_load(const bt_kdesc *k, const bt__hostbuf *host, double **ref, bool caller,
                           bt_diag *diag);

#endif
