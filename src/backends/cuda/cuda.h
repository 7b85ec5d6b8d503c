/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda.h — the CUDA backend's entry points beyond its vtable (internal): the vtable itself, for
 * the registry, the CUresult naming used in its diagnostics, and its environment override.
 *
 * The backend runs over the CUDA driver API (libcuda.so.1, loaded with dlopen) and compiles with
 * NVRTC (nvrtc.h). Each opened device is the device's primary context (shared by every opening
 * of the same GPU in the process, and by any other CUDA code in it) and a non-blocking stream of
 * its own, so that its work is ordered only with itself.
 *
 * Sticky errors. A kernel that faults (CUDA_ERROR_ILLEGAL_ADDRESS 700, ASSERT 710, HARDWARE_STACK
 * _ERROR 714, ILLEGAL_INSTRUCTION 715, MISALIGNED_ADDRESS 716, INVALID_ADDRESS_SPACE 717,
 * INVALID_PC 718, LAUNCH_FAILED 719, LAUNCH_TIMEOUT 702, ...) leaves the context unusable: every
 * later driver call in it fails the same way, and only a new process gets the GPU back. The
 * backend reports the call that met the error with BT_LAUNCH and the driver's words
 * ("cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was
 * encountered"), then marks the device lost: every later call on any bt__bdev of that GPU returns
 * BT_LAUNCH with "context lost after <that first error>" without touching the driver, and frees
 * only release host memory. Isolating candidate kernels (a child process per risky launch) is the
 * engine's business; the backend only guarantees a clean, explained failure. compile() does not
 * use the context and keeps working.
 */
#ifndef BT_BACKENDS_CUDA_CUDA_H
#define BT_BACKENDS_CUDA_CUDA_H

#include "backends/backend.h"

/* The CUDA backend (registered in backend.c, before OpenCL). */
extern const bt__backend_iface bt__backend_cuda;

/* Environment variable that, when set and non-empty, names the only CUDA driver library to load
 * (instead of libcuda.so.1). Pointing it at a missing file simulates a machine without CUDA. */
#define BT__CUDA_LIBRARY_ENV "BLOCKTUNE_CUDA_LIBRARY"

/* The name of a CUresult ("CUDA_ERROR_ILLEGAL_ADDRESS") from blocktune's own table of the codes
 * it handles (the driver's cuGetErrorName is preferred where it answers), static, never NULL:
 * "CUDA_ERROR_UNKNOWN_CODE" for a code the table lacks. */
const char *bt__cuda_error_name(int code);

/* offline.c: whether a CUDA compile for GPU g can run here (g has a compute capability, NVRTC
 * loads); BT_UNSUPPORTED or BT_NO_BACKEND with the reason. */
bt_status bt__cuda_offline_check(const bt_gpu *g, bt_diag *diag);
/* The vtable's offline entries (offline.c; backend.h says what each does) and its occupancy rules
 * over a compiled function (occupancy.c: bt__cuda_occupancy, -1 for a GPU without a compute
 * capability). */
bt_status bt__cuda_offline_target(const bt_gpu *g, const char *lang, const char *want,
                                  bt__offline_target *out, bt_diag *diag);
bt_status bt__cuda_offline_compile(const bt_gpu *g, const bt__compile_req *req, bt__kres *res,
                                   char **log, bt_diag *diag);
int bt__cuda_occupancy_of(const bt_gpu *g, const bt__kres *res, int threads, int64_t dyn_smem,
                          const char **limiter);

/* The "triton" language (triton.c, over the compile pool of tpool.h): compile for a device of
 * compute capability major.minor whose opt-in shared memory per block is max_shared (the blob of
 * the CUBIN Triton built, its entry named as the Python function, with its launch metadata:
 * req->names[1..] are the spec's arguments in order), and the offline entries. */
bt_status bt__cuda_triton_compile(int major, int minor, size_t max_shared,
                                  const bt__compile_req *req, bt__blob *out, char **log);
bt_status bt__cuda_triton_target(const bt_gpu *g, const char *want, bt__offline_target *out,
                                 bt_diag *diag);
bt_status bt__cuda_triton_offline(const bt_gpu *g, const bt__compile_req *req, bt__kres *res,
                                  char **log, bt_diag *diag);
/* The vtable's xcompiler entries (backend.h) for "triton": the pool's version, its start in the
 * background, what it cost. */
bt_status bt__cuda_xcompiler_id(const char *lang, bool start, char *buf, size_t size,
                                bt_diag *diag);
void bt__cuda_xcompiler_start(const char *lang);
bt_status bt__cuda_xcompiler_times(const char *lang, bt__xcompiler_times *out);

/* The architecture name of a compute capability ("hopper" for 9.0), static, "unknown" when the
 * major version is not one blocktune knows. */
const char *bt__cuda_arch_name(int cc_major, int cc_minor);

#endif
