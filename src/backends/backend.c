/*
 * backend.c — the registry of compute backends: the table bt__backends() returns.
 *
 * Backends are listed in preference order (the device layer numbers devices and picks the default
 * in this order). Adding a backend is one line in BT__BACKEND_LIST: X(cuda) names the vtable
 * `bt__backend_cuda`, which its own file defines.
 */
#include "backends/backend.h"

#define BT__BACKEND_LIST(X) X(opencl)

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

const bt__backend_iface *const *bt__backends(void)
{
    return backends;
}
