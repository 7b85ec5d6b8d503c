/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build.h — the build stage (internal; build.c): a config's -D defines, compiling one config
 * through the kernel cache, loading it, and compiling many on the thread pool. The tuner's rounds
 * and the dispatch of a looked-up config (kernel.c) both build through it.
 */
#ifndef BT_ENGINE_BUILD_H
#define BT_ENGINE_BUILD_H

#include "engine/engine.h"

/* The -D defines of a config: every parameter, BT_THREADS, BT_WARP_SIZE, BT_DTYPE_<T>,
 * BT_ELEM_BYTES, and BT_TYPE_<arg>_<DTYPE> for each buffer whose dtype depends on the problem.
 * defs must hold BT__MAX_DEFINES entries. Returns how many. */
#define BT__MAX_DEFINES (BT_MAX_PARAMS + 8 + BT__MAX_ARGS + BT__MAX_PDEFINES)
int bt__build_defines(const bt_kdesc *k, const bt_config *c, const bt_problem *p, const bt_gpu *g,
                      char defs[][96]);
/* The defines after the parameters, for any compile of k at p (the reference kernel's too):
 * the problem's defines, BT_THREADS (when threads > 0), BT_WARP_SIZE, BT_DTYPE_<T>,
 * BT_ELEM_BYTES, BT_TYPE_<arg>_<DTYPE>. Returns how many. */
int bt__build_defines_common(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                             int64_t threads, char defs[][96]);
/* Compiles src (kn's, or a reference kernel's) with defines dp into e->blob, through the kernel
 * cache when use_cache, resolving entry and kn's constant-memory symbols: sets compile_s and
 * cached; a compile error sets status BT__CS_COMPILE, log and error. */
void bt__build_source(const bt_kernel *kn, const bt__ksource *src, const char *entry,
                      const char *const *dp, int nd, bool use_cache, bt__entry *e);
/* Whether a config's binary depends on the problem beyond the key's dtype: problem defines, or
 * a Triton source (Triton specializes integer arguments on their values). */
bool bt__build_per_problem(const bt_kernel *kn);
/* Compiles config e->ev.cfg for problem p into e->blob (through the kernel cache when use_cache):
 * sets compile_s and cached; a compile error sets status BT__CS_COMPILE, log and error. */
void bt__build(const bt_kernel *kn, const bt_problem *p, bt__entry *e, bool use_cache);
/* Compiles jobs[0..n) on the thread pool (threads in all); `stage` names the progress line, shown
 * when show_progress and stderr is a terminal. */
void bt__build_all(const bt_kernel *kn, const bt_problem *p, bt__entry **jobs, size_t n,
                   int threads, const char *stage, bool show_progress);

/* Reorders jobs[0..n) for compiling them in parallel: the heaviest first by the model's compile
 * weight (core/model.h bt__model_compile_weight), ties (and a kernel without tiles) in their
 * order, so that a round does not wait on the longest compile started last. */
void bt__build_order(const bt_kdesc *k, bt__entry **jobs, size_t n);
/* A binary built ahead, with a round's, for another problem (a boundary size of a kernel compiled
 * per problem), until the verification that needs it takes it: tag (the caller's: which
 * problem), the problem, and in e the config (e.ev.cfg) and what its build gave. */
typedef struct bt__prebuilt {
    int tag;
    bt_problem p;
    bt__entry e;
    bool taken;
} bt__prebuilt;
/* bt__build_all, and pre[0..npre) built in the same pool run (so every compile of the round is
 * under way at once: a Triton kernel's boundary sizes are compiles too). */
void bt__build_round(const bt_kernel *kn, const bt_problem *p, bt__entry **jobs, size_t n,
                     bt__prebuilt *pre, size_t npre, int threads, const char *stage,
                     bool show_progress);
/* Moves the binary built ahead for config cfg and tag into *e (zeroed first); false when there is
 * none (then nothing changes). */
bool bt__prebuilt_take(const bt_kernel *kn, bt__prebuilt *pre, size_t npre, int tag,
                       const bt_config *cfg, bt__entry *e);
/* Frees what pre[0..npre) holds that was not taken, and pre. */
void bt__prebuilt_free(bt__prebuilt *pre, size_t npre);

/* Before a tune of kn at p whose search may compile the configs cands[0..n): a compiler that runs
 * in another process (a Triton source's pool) is started in the background when one of them has
 * no binary built ahead of time and is not in the kernel cache (or the compiler's identity, part
 * of the cache's key, cannot be known without it); a tune that finds all of them starts nothing.
 * When it starts, the compiles of `first` (the device reference's baseline config, or NULL) and
 * of cands[0..nahead) (the heaviest first, as bt__build_order) start too, on `threads` threads,
 * into the kernel cache, so that they run
 * while the tune makes its data: the round that asks for one of them then waits for it rather
 * than compiling it again. NULL when none started; else bt__build_ahead_end ends them. */
typedef struct bt__ahead bt__ahead;
bt__ahead *bt__build_prestart(const bt_kernel *kn, const bt_problem *p, const bt_config *first,
                              const bt__cfg_eval *cands, size_t n, size_t nahead, int threads);
/* Lets the compiles under way end, starts no more, and frees A (NULL: nothing). */
void bt__build_ahead_end(bt__ahead *A);
/* Whether each of cands[0..n)'s binaries at p is ready without a compile: in the kernel cache
 * under the compiler that builds it, or built ahead of time (the user's kernel cache folder or
 * the installed one), into ready[0..n); returns how many are. Files are only looked up (a
 * damaged one is found out by the build). The source is hashed once for a CUDA C or OpenCL
 * kernel; a Triton config's request is made anew for each. 0 with the kernel cache off. */
size_t bt__build_ready(const bt_kernel *kn, const bt_problem *p, const bt__cfg_eval *cands,
                       size_t n, bool *ready);
/* blocktune precompile (engine/precompile.c): config c's binary at p, built by kn's device (an
 * offline one) into folder dir, compressed, under the key a first launch on such a GPU looks up
 * (BT__KCACHE_PRECOMPILED); *had when dir held it already or claim (when given) says another
 * job builds that key (nothing compiled). BT_OK, or the compile's status with its log in diag. */
bt_status bt__build_precompile(const bt_kernel *kn, const bt_problem *p, const bt_config *c,
                               const char *dir, bool (*claim)(uint64_t key, void *user),
                               void *user, bool *had, bt_diag *diag);
/* Loads e's binary (a stale kernel-cache binary is compiled again), gets its function and sets
 * its dynamic shared memory for p. On failure e->mod may still be set (the caller frees it). */
bt_status bt__build_load(const bt_kernel *kn, const bt_problem *p, bt__entry *e, bt_diag *diag);

#endif
