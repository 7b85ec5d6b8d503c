/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dl.c — dlopen/dlsym wrappers with a search over candidate names and directories.
 */
#include "platform/dl.h"

#include "core/util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *bt__dl_open(const char *const *names, const char *const *dirs, bt_diag *diag)
{
    bt__sbuf errs = {0};
    for (const char *const *n = names; *n; n++) {
        void *h = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            bt__sbuf_free(&errs);
            return h;
        }
        const char *e = dlerror();
        bt__sbuf_printf(&errs, "%s%s", errs.len ? "; " : "", e ? e : *n);
        for (const char *const *d = dirs; d && *d; d++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", *d, *n);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h) {
                bt__sbuf_free(&errs);
                return h;
            }
            (void)dlerror();
        }
    }
    bt__diag_set(diag, "%s", errs.s ? errs.s : "library not found");
    bt__sbuf_free(&errs);
    return NULL;
}

void *bt__dl_sym(void *lib, const char *sym, bt_diag *diag)
{
    void *p = dlsym(lib, sym);
    if (!p)
        bt__diag_set(diag, "symbol %s not found", sym);
    return p;
}

void bt__dl_close(void *lib)
{
    if (lib)
        dlclose(lib);
}
