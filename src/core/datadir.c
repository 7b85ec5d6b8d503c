/* SPDX-License-Identifier: Apache-2.0 */
/*
 * datadir.c — where the installed data folder is (gpus.json, wisdom/, kernels/): found relative
 * to the library itself (or to the program a static library is linked into), so that an install
 * moved to another prefix reads its own data, never another install's; the configured absolute
 * folder only when no data sits next to the binary (a build tree).
 */
#include "core/datadir.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef BT_INSTALL_DATADIR
#define BT_INSTALL_DATADIR "/usr/local/share/blocktune"
#endif
#ifndef BT_DATADIR_FROM_LIB /* the data folder relative to the library's folder */
#define BT_DATADIR_FROM_LIB "../share/blocktune"
#endif
#ifndef BT_DATADIR_FROM_BIN /* relative to a program's folder (static linking) */
#define BT_DATADIR_FROM_BIN "../share/blocktune"
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_dir[4096];

/* dir/rel when it holds gpus.json. */
static int try_dir(const char *dir, size_t len, const char *rel)
{
    char probe[4200];
    snprintf(probe, sizeof probe, "%.*s/%s/gpus.json", (int)len, dir, rel);
    if (access(probe, R_OK) != 0)
        return 0;
    snprintf(g_dir, sizeof g_dir, "%.*s/%s", (int)len, dir, rel);
    return 1;
}

static void find(void)
{
    Dl_info info;
    if (dladdr((void *)&bt__data_dir, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash && (try_dir(info.dli_fname, (size_t)(slash - info.dli_fname),
                              BT_DATADIR_FROM_LIB) ||
                      try_dir(info.dli_fname, (size_t)(slash - info.dli_fname),
                              BT_DATADIR_FROM_BIN)))
            return;
    }
    snprintf(g_dir, sizeof g_dir, "%s", BT_INSTALL_DATADIR);
}

const char *bt__data_dir(void)
{
    pthread_once(&g_once, find);
    return g_dir;
}
