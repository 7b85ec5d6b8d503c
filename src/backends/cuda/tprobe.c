/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tprobe.c — the probe record of a python's Triton (tprobe.h): its path from the python and
 * the environment that decides what it imports, reading it back only while every file it names
 * has the size and mtime it had, and writing it atomically (temporary file + rename).
 */
#include "backends/cuda/tprobe.h"

#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_VERSION 1

static uint64_t str_hash(const char *s, uint64_t h)
{
    return bt__fnv1a(s ? s : "", s ? strlen(s) + 1 : 1, h);
}

/* The record's path for py into buf; false when there is no cache folder. mkdir: create it. */
static bool record_path(const char *py, const char *dir, char *buf, size_t size, bool mkdir_)
{
    uint64_t h = str_hash("blocktune-triton-probe-1", BT__FNV_SEED);
    h = str_hash(py, h);
    h = str_hash(strchr(py, '/') ? "" : getenv("PATH"), h);
    h = str_hash(getenv("PYTHONPATH"), h);
    h = str_hash(dir, h);
    char *cache = bt__cache_dir();
    if (!cache)
        return false;
    char folder[1100];
    snprintf(folder, sizeof folder, "%.1000s/triton", cache);
    free(cache);
    if (mkdir_ && bt__mkdirs(folder, NULL) != BT_OK)
        return false;
    snprintf(buf, size, "%s/probe-%016llx.json", folder, (unsigned long long)h);
    return true;
}

static long long mtime_ns(const struct stat *sb)
{
    return (long long)sb->st_mtim.tv_sec * 1000000000LL + sb->st_mtim.tv_nsec;
}

bool bt__tprobe_read(const char *py, const char *dir, char *out, size_t size)
{
    char path[1200];
    if (!record_path(py, dir, path, sizeof path, false))
        return false;
    json_t *r = json_load_file(path, 0, NULL);
    const json_t *files = json_object_get(r, "files");
    const char *v = json_string_value(json_object_get(r, "triton_version"));
    bool ok = v && *v && json_integer_value(json_object_get(r, "record")) == RECORD_VERSION &&
              json_array_size(files) > 0;
    size_t i;
    const json_t *f;
    json_array_foreach(files, i, f) {
        struct stat sb;
        const char *p = json_string_value(json_object_get(f, "path"));
        if (!ok || !p || stat(p, &sb) != 0 ||
            (json_int_t)sb.st_size != json_integer_value(json_object_get(f, "size")) ||
            mtime_ns(&sb) != json_integer_value(json_object_get(f, "mtime_ns"))) {
            ok = false;
            break;
        }
    }
    if (ok)
        snprintf(out, size, "%s", v);
    json_decref(r);
    return ok;
}

void bt__tprobe_write(const char *py, const char *dir, const char *version, const json_t *files)
{
    char path[1200], tmp[1300];
    if (!version || !json_array_size(files) ||
        !record_path(py, dir, path, sizeof path, true))
        return;
    json_t *list = json_array();
    size_t i;
    const json_t *f;
    json_array_foreach(files, i, f) {
        struct stat sb;
        const char *p = json_string_value(f);
        if (!p || stat(p, &sb) != 0) { /* a file that is not there cannot be checked */
            json_decref(list);
            return;
        }
        json_array_append_new(list, json_pack("{s:s,s:I,s:I}", "path", p, "size",
                                              (json_int_t)sb.st_size, "mtime_ns",
                                              (json_int_t)mtime_ns(&sb)));
    }
    json_t *r = json_pack("{s:i,s:s,s:s,s:o}", "record", RECORD_VERSION, "python", py,
                          "triton_version", version, "files", list);
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    if (r && json_dump_file(r, tmp, JSON_INDENT(1)) == 0 && rename(tmp, path) != 0)
        remove(tmp);
    json_decref(r);
}
