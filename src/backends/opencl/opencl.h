/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl.h — the OpenCL backend's entry points beyond its vtable (internal): the vtable itself,
 * for the registry, and the CL error-name table, for tests and other layers that print CL codes.
 */
#ifndef BT_BACKENDS_OPENCL_OPENCL_H
#define BT_BACKENDS_OPENCL_OPENCL_H

#include "backends/backend.h"

/* The OpenCL backend (registered in backend.c). */
extern const bt__backend_iface bt__backend_opencl;

/* The name of an OpenCL status code ("CL_BUILD_PROGRAM_FAILURE"), or "CL_UNKNOWN_ERROR" for a code
 * the table does not know. Static string, never NULL. */
const char *bt__cl_error_name(int code);

/* Environment variable that, when set and non-empty, names the only OpenCL library to load
 * (instead of libOpenCL.so.1 then libOpenCL.so). Pointing it at a missing file simulates a machine
 * without OpenCL. */
#define BT__OPENCL_LIBRARY_ENV "BLOCKTUNE_OPENCL_LIBRARY"

#endif
