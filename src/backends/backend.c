/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend.c — the registry of compute backends: the table bt__backends() returns, what a kernel
 * takes from a backend through its declared identity (the source in a language it compiles, the
 * occupancy rules that know a GPU), and the sanitizer settings that every backend's vendor
 * libraries need.
 *
 * Backends are listed in preference order (the device layer numbers devices and picks the default
 * in this order): CUDA first, so that an NVIDIA GPU is driven through its native API rather than
 * through NVIDIA's OpenCL. Adding a backend is one line in BT__BACKEND_LIST: X(cuda) names the
 * vtable `bt__backend_cuda`, which its own file defines.
 */
#include "backends/backend.h"

#include "core/kdesc.h"

#define BT__BACKEND_LIST(X) X(cuda) X(opencl)

#define BT__BACKEND_DECLARE(n) extern const bt__backend_iface bt__backend_##n;
BT__BACKEND_LIST(BT__BACKEND_DECLARE)
#undef BT__BACKEND_DECLARE

/* clang-format off */
static const bt__backend_iface *const backends[] = {
#define BT__BACKEND_ENTRY(n) &bt__backend_##n,
    BT__BACKEND_LIST(BT__BACKEND_ENTRY)
#undef BT__BACKEND_ENTRY
    NULL,
};
/* clang-format on */

const bt__backend_iface *const *bt__backends(void) { return backends; }

const bt__ksource *bt__backend_source(const bt__backend_iface *I, const bt_kdesc *k)
{
    for (const char *const *l = I->languages; l && *l; l++) {
        const bt__ksource *s = bt__kdesc_source(k, *l);
        if (s)
            return s;
    }
    return NULL;
}

int bt__backend_occupancy(const bt_gpu *g, const bt__kres *res, int threads, int64_t dyn_smem,
                          const char **limiter)
{
    for (const bt__backend_iface *const *b = backends; *b; b++) {
        int n = (*b)->occupancy ? (*b)->occupancy(g, res, threads, dyn_smem, limiter) : -1;
        if (n >= 0)
            return n;
    }
    return -1;
}

/* Sanitizer builds only. Defined here because this object is linked whenever any backend is; the
 * sanitizer runtime picks the functions up by name.
 *  - Vendor runtimes (PoCL and the LLVM inside it, NVIDIA's OpenCL, libcuda, NVRTC) keep state
 *    alive until exit without freeing it, which LeakSanitizer reports and which fails every test
 *    that compiles. Their leaks are theirs: suppress leaks whose stack runs through them.
 *  - The CUDA driver maps memory inside the range AddressSanitizer protects as its shadow gap, and
 *    cuInit then fails (CUDA_ERROR_OUT_OF_MEMORY) unless that protection is off. */
#if defined(__SANITIZE_ADDRESS__)
#define BT__ASAN_HOOKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BT__ASAN_HOOKS 1
#endif
#endif
#ifdef BT__ASAN_HOOKS
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl\nleak:libLLVM\nleak:libclang\nleak:libOpenCL\nleak:libnvidia-\n"
           "leak:libcuda\nleak:libnvrtc\n";
}
__attribute__((visibility("default"), used)) const char *__asan_default_options(void)
{
    return "protect_shadow_gap=0";
}
#endif
