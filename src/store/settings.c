/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settings.c — process-wide settings an embedder makes through the public API instead of the
 * environment: the cache folder, the wisdom folders, the precompiled binaries' folder, the
 * default mode and where the decisions log goes (a callback). Each, when set, wins over its
 * environment variable; NULL / unset goes back to the environment. Guarded by one lock; the strings are copies.
 */
#include "store/store.h"

#include "core/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_cache_dir, *g_user_wisdom, *g_shipped_wisdom, *g_precompiled;
static int g_mode = -1; /* -1: $BLOCKTUNE_MODE */
static bt_log_fn g_log_fn;
static void *g_log_user;

/* *slot = a copy of v (NULL clears it). */
static bt_status set_path(char **slot, const char *v)
{
    char *copy = NULL;
    if (v && v[0] && !(copy = bt__strdup(v)))
        return BT_NOMEM;
    pthread_mutex_lock(&g_lock);
    free(*slot);
    *slot = copy;
    pthread_mutex_unlock(&g_lock);
    return BT_OK;
}

static char *get_path(char *const *slot)
{
    pthread_mutex_lock(&g_lock);
    char *v = *slot ? bt__strdup(*slot) : NULL;
    pthread_mutex_unlock(&g_lock);
    return v;
}

bt_status bt_set_cache_dir(const char *dir) { return set_path(&g_cache_dir, dir); }

bt_status bt_set_wisdom_dirs(const char *user_dir, const char *shipped_dir)
{
    bt_status st = set_path(&g_user_wisdom, user_dir);
    return st ? st : set_path(&g_shipped_wisdom, shipped_dir);
}

bt_status bt_set_precompiled_dir(const char *dir) { return set_path(&g_precompiled, dir); }

bt_status bt_set_default_mode(int mode)
{
    if (mode != -1 && mode != BT_MODE_TUNE && mode != BT_MODE_WISDOM_ONLY &&
        mode != BT_MODE_RETUNE)
        return BT_INVALID_ARG;
    pthread_mutex_lock(&g_lock);
    g_mode = mode;
    pthread_mutex_unlock(&g_lock);
    return BT_OK;
}

void bt_set_log_callback(bt_log_fn fn, void *user)
{
    pthread_mutex_lock(&g_lock);
    g_log_fn = fn;
    g_log_user = user;
    pthread_mutex_unlock(&g_lock);
}

char *bt__setting_cache_dir(void) { return get_path(&g_cache_dir); }
char *bt__setting_user_wisdom(void) { return get_path(&g_user_wisdom); }
char *bt__setting_shipped_wisdom(void) { return get_path(&g_shipped_wisdom); }
char *bt__setting_precompiled_dir(void) { return get_path(&g_precompiled); }

int bt__setting_mode(void)
{
    pthread_mutex_lock(&g_lock);
    int m = g_mode;
    pthread_mutex_unlock(&g_lock);
    return m;
}

bool bt__setting_log(bt_log_fn *fn, void **user)
{
    pthread_mutex_lock(&g_lock);
    *fn = g_log_fn;
    *user = g_log_user;
    pthread_mutex_unlock(&g_lock);
    return *fn != NULL;
}
