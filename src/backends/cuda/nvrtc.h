/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvrtc.h — CUDA C++ compilation through NVRTC without a device (internal): used by the CUDA
 * backend's compile() and by `blocktune plan --exact`, which compiles every candidate for a GPU of
 * the hardware table on a machine that has NVRTC but no GPU (or no driver at all).
 *
 * NVRTC is loaded once per process, on first use, independently of the CUDA driver: from
 * $BLOCKTUNE_NVRTC_LIBRARY when set, else libnvrtc.so.13, libnvrtc.so.12 then libnvrtc.so, each
 * tried on the loader's search path and then in $CUDA_HOME/lib64, $CUDA_PATH/lib64,
 * /usr/local/cuda/lib64, /usr/local/cuda/targets/x86_64-linux/lib and /usr/lib/x86_64-linux-gnu.
 * Every function here is thread-safe: NVRTC programs are independent objects.
 */
#ifndef BT_BACKENDS_CUDA_NVRTC_H
#define BT_BACKENDS_CUDA_NVRTC_H

#include "backends/backend.h"
#include "blocktune.h"

#include <stdbool.h>
#include <stdint.h>

/* Environment variable naming the only NVRTC library to load (a missing file simulates a machine
 * without NVRTC). */
#define BT__NVRTC_LIBRARY_ENV "BLOCKTUNE_NVRTC_LIBRARY"

/* A compile target's name: "sm_XY" for compute capability X.Y, "sm_XYa" for its
 * architecture-specific variant (sm_90a: wgmma, setmaxnreg and the like), which only that exact
 * architecture runs. bt__nvrtc_target_parse reads one back (false when `target` is not such a
 * name). */
void bt__nvrtc_target_name(int cc_major, int cc_minor, bool arch_specific, char *buf, size_t size);
bool bt__nvrtc_target_parse(const char *target, int *cc_major, int *cc_minor, bool *arch_specific);

/* Whether NVRTC loaded (loading it on the first call). When not, diag->msg says why. */
bool bt__nvrtc_available(bt_diag *diag);

/* NVRTC's version (13, 0). BT_NO_BACKEND (reason in diag) when NVRTC did not load. */
bt_status bt__nvrtc_version(int *major, int *minor, bt_diag *diag);

/* The name of an nvrtcResult ("NVRTC_ERROR_COMPILATION"), static, never NULL. */
const char *bt__nvrtc_error_name(int code);

/* Compiles CUDA C++ source to a CUBIN for compute capability cc_major.cc_minor (its
 * architecture-specific variant, "sm_90a", when arch_specific). The NVRTC options are
 * "-arch=sm_XY" or "--gpu-architecture=sm_XYa" (unless options name an architecture
 * themselves), "-DNAME=value" per define (a define may hold spaces: each option is passed
 * whole), "-default-device", "--std=c++17",
 * "-lineinfo", "--ptxas-options=-v" (so that the log carries the resource usage that
 * bt__nvrtc_resources reads), then options split on whitespace.
 *
 * On success *cubin holds a malloc'd CUBIN (the caller frees cubin->data). *log (when log is
 * non-NULL) always receives a malloc'd log, never NULL, also on failure, where it starts with the
 * NVRTC call and status that failed. Returns BT_COMPILE for source or option errors (the log names
 * the line: "kernel.cu(3): error: ..."), BT_UNSUPPORTED for an architecture this NVRTC cannot
 * target, BT_NO_BACKEND without NVRTC, BT_INVALID_ARG for a malformed define; diag->msg gets a one
 * line summary. */
bt_status bt__nvrtc_compile(const char *src, const char *const *defines, int ndefines,
                            const char *options, int cc_major, int cc_minor, bool arch_specific,
                            bt__blob *cubin, char **log, bt_diag *diag);

/* bt__nvrtc_compile that also resolves `names` as the source spells them — a kernel
 * ("matmul_kernel", "matmul<float, TILE>"; macros expand) or "&symbol" for a __device__ /
 * __constant__ variable — with NVRTC name expressions: on success *lowered (when non-NULL)
 * receives nnames malloc'd strings, each name as the CUBIN has it (the C++ mangled name, or the
 * name itself for extern "C"), freed with bt__nvrtc_names_free. A name the source does not have
 * fails the compile (BT_COMPILE, the log names it). */
bt_status bt__nvrtc_compile_named(const char *src, const char *const *defines, int ndefines,
                                  const char *options, int cc_major, int cc_minor,
                                  bool arch_specific, const char *const *names, int nnames,
                                  char ***lowered, bt__blob *cubin, char **log, bt_diag *diag);
void bt__nvrtc_names_free(char **names, int n);

/* Reads the resource usage of kernel `entry` (its name in the CUBIN: the extern "C" name or the
 * mangled one) from a compile log made with ptxas -v: registers per thread, spill bytes (stores
 * plus loads), static shared memory and stack frame bytes. Any out-pointer may be NULL; values
 * the log does not mention are 0 (ptxas leaves out "N bytes smem" when there is none). Returns
 * BT_NOT_FOUND when the log has no "Used N registers" line for entry, BT_INVALID_ARG for NULL
 * log or entry; the out-values are then -1. */
bt_status bt__nvrtc_resources(const char *log, const char *entry, int *regs, int64_t *spill_bytes,
                              int64_t *static_smem, int64_t *stack);

/* Registers, stack frame and static shared memory of `entry` read from a CUBIN's ELF sections
 * (.nv.info EIATTR_REGCOUNT / EIATTR_FRAME_SIZE, .nv.shared.<entry>), for when the compile log has
 * no ptxas report. BT_NOT_FOUND when the entry or its register count is not there, BT_CORRUPT for
 * a malformed file. */
bt_status bt__cubin_resources(const void *cubin, size_t size, const char *entry, int *regs,
                              int64_t *frame, int64_t *static_smem);

#endif
