/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wisdom_files.c — the shipped wisdom (the files of wisdom/, compiled into the library and
 * installed) is what a fresh install dispatches, so every file committed there must load and
 * every entry must be one the library can use: each file imports into a store (the strict parser
 * of `blocktune cache import`, all of its entries); each entry names a built-in kernel, its key
 * holds exactly that kernel's key variables (positive integers, flags 0/1) and a dtype it has,
 * its config exactly the parameters of the kernel — or, for a front door's choice, a valid
 * family index and that family's parameters — with values from their lists, and its source hash
 * is the kernel's current one (a stale entry would be skipped silently at run time). The front
 * door's hashes come from a `gemm` handle on the CUDA device (the mock driver in CI): its own, or
 * one from before a family was appended that cannot run the entry's key.
 */
#include "backends/cuda/cuda.h"
#include "core/family.h"
#include "core/kdesc.h"
#include "engine/engine.h"
#include "engine/fam.h"

#include <dirent.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Fails with the entry's place when cond is false. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char m_[512];                                                                          \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                                  \
            fail_msg("%s entries[%zu]: %s", file, idx, m_);                                        \
        }                                                                                          \
    } while (0)

/* The config object c holds exactly k's parameters, each with a value from its list. */
static void check_params(const char *file, size_t idx, const bt_kdesc *k, json_t *c, int skip)
{
    CHECK((int)json_object_size(c) - skip == k->space.nparams, "config has %zu members, %s has %d "
          "parameters", json_object_size(c) - (size_t)skip, k->name, k->space.nparams);
    for (int i = 0; i < k->space.nparams; i++) {
        const bt__param *pa = &k->space.params[i];
        json_t *v = json_object_get(c, pa->name);
        CHECK(json_is_integer(v), "config.%s missing or not an integer", pa->name);
        bool in = false;
        for (int j = 0; j < pa->nvalues; j++)
            in |= pa->values[j] == json_integer_value(v);
        CHECK(in, "config.%s = %lld is not one of its values", pa->name,
              (long long)json_integer_value(v));
    }
}

/* Whether h is a current source hash of kernel k for an entry with key `key` measured on arch
 * (sm_*: CUDA, else OpenCL): for a front door's (config has "family"), one of the hashes its
 * handle on cuda:0 takes a stored choice for that key under (bt__fam_hashes: its own, or one from
 * before a family appended since that cannot run the key); *want gets the newest. */
static bool current_hash(const bt_kdesc *k, json_t *key, const char *arch, bool front,
                         const char *h, char want[24])
{
    if (front) {
        bt_diag d;
        bt_device *dev = NULL;
        bt_kernel *kn = NULL;
        bt_problem *p = NULL;
        if (bt_device_open("cuda:0", &dev, &d) != BT_OK || bt_kernel_create(dev, k, &kn, &d))
            fail_msg("a %s handle on cuda:0 for its front-door hash: %s", k->name, d.msg);
        assert_int_equal(bt_problem_create(k, &p), BT_OK);
        const char *name;
        json_t *v;
        json_object_foreach(key, name, v) {
            bt_status st = json_is_string(v) ? bt_problem_set_dtype(p, json_string_value(v), &d)
                                             : bt_problem_set(p, name, json_integer_value(v), &d);
            assert_int_equal(st, BT_OK);
        }
        const char *hs[BT__MAX_FAMILIES];
        int n = bt__fam_hashes(kn, p, hs);
        bool found = false;
        for (int i = 0; i < n; i++)
            found |= h && !strcmp(h, hs[i]);
        snprintf(want, 24, "%s", hs[0]);
        bt_problem_destroy(p);
        bt_kernel_destroy(kn);
        bt_device_destroy(dev);
        return found;
    }
    const bt__ksource *s = bt__kdesc_source(k, strncmp(arch, "sm_", 3) ? "opencl" : "cuda");
    assert_non_null(s);
    snprintf(want, 24, "%016llx", (unsigned long long)bt__kdesc_source_hash(k, s));
    return h && !strcmp(h, want);
}

static void check_entry(const char *file, size_t idx, json_t *e, const char *arch)
{
    const char *kname = json_string_value(json_object_get(e, "kernel"));
    bt_kdesc *k = NULL;
    bt_diag d;
    CHECK(kname && bt_kdesc_builtin(kname, &k, &d) == BT_OK, "kernel '%s' is not a built-in",
          kname ? kname : "(none)");
    /* the key: the kernel's key variables in order, then dtype */
    json_t *key = json_object_get(e, "key");
    CHECK(json_is_object(key), "no key object");
    CHECK(json_object_size(key) == (size_t)k->nkey + k->key_dtype, "key has %zu members, %s's "
          "key %d", json_object_size(key), kname, k->nkey + k->key_dtype);
    for (int i = 0; i < k->nkey; i++) {
        const char *name = k->problem_names[k->key_slots[i] - k->slot_problem0];
        json_t *v = json_object_get(key, name);
        CHECK(json_is_integer(v) && json_integer_value(v) >= 0, "key.%s missing or negative", name);
        CHECK(json_integer_value(v) > 0 || !strcmp(name, "OUT_FP32"), "key.%s is 0", name);
    }
    if (k->key_dtype) {
        const char *dt = json_string_value(json_object_get(key, "dtype"));
        bool ok = false;
        for (int i = 0; dt && i < k->ndtypes; i++)
            ok |= !strcmp(bt__dtype_name(k->dtypes[i]), dt);
        CHECK(ok, "key.dtype '%s' is not one of %s's", dt ? dt : "(none)", kname);
    }
    /* the config: the kernel's parameters, or a family index and that family's */
    json_t *c = json_object_get(e, "config"), *fam = json_object_get(c, "family");
    CHECK(json_is_object(c), "no config object");
    if (fam) {
        CHECK(k->nfam > 0 && json_is_integer(fam) && json_integer_value(fam) >= 0 &&
                  json_integer_value(fam) < k->nfam,
              "config.family is not an index into %s's families", kname);
        check_params(file, idx, k->fam[json_integer_value(fam)].k, c, 1);
    } else
        check_params(file, idx, k, c, 0);
    char want[24];
    const char *h = json_string_value(json_object_get(e, "source_hash"));
    CHECK(current_hash(k, key, arch, fam != NULL, h, want), "source_hash %s, %s's current one %s "
          "(stale: tune it again, bench/experiments/h200_wisdom.sh)", h ? h : "(none)", kname,
          want);
    bt_kdesc_destroy(k);
}

static void check_file(const char *path, const char *db)
{
    /* 1. it imports, all of its entries */
    bt_store *s = NULL;
    bt_diag d;
    int n = -1;
    unlink(db);
    assert_int_equal(bt_store_open(db, BT_STORE_CREATE, &s, &d), BT_OK);
    if (bt_wisdom_import(s, path, &n, &d) != BT_OK)
        fail_msg("%s does not import: %s", path, d.msg);
    bt_store_destroy(s);
    /* 2. every entry well formed */
    json_error_t err;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!doc)
        fail_msg("%s:%d:%d: %s", path, err.line, err.column, err.text);
    const char *file = path, *arch = json_string_value(json_object_get(doc, "arch"));
    size_t idx = 0;
    json_t *entries = json_object_get(doc, "entries");
    CHECK(arch && json_array_size(entries) > 0, "no arch, or no entries");
    CHECK((size_t)n == json_array_size(entries), "imported %d of %zu entries", n,
          json_array_size(entries));
    json_t *e;
    json_array_foreach(entries, idx, e)
        check_entry(path, idx, e, arch);
    json_decref(doc);
}

static void test_every_shipped_file_loads_and_is_current(void **state)
{
    (void)state;
    char dir[1200], tmp[] = "/tmp/bt-wisdom-files-XXXXXX", db[64];
    snprintf(dir, sizeof dir, "%s/wisdom", BT_SOURCE_DIR);
    assert_non_null(mkdtemp(tmp));
    snprintf(db, sizeof db, "%s/s.db", tmp);
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int files = 0;
    for (struct dirent *de; (de = readdir(dp));) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
            continue;
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        check_file(path, db);
        files++;
    }
    closedir(dp);
    unlink(db);
    rmdir(tmp);
    assert_true(files > 0);
}

int main(void)
{
    /* the front door's hash from a handle on the mock driver, with no store or wisdom of ours */
    setenv(BT__CUDA_LIBRARY_ENV, BT_MOCK_CUDA, 1);
    setenv("BLOCKTUNE_CACHE_DIR", "/nonexistent/bt-wisdom-files", 1);
    /* Every backend loaded, as before devices loaded only their own: under ASan, LeakSanitizer's
     * walk of the threads at exit crashes on this process's dynamic TLS when only the mock CUDA
     * driver and NVRTC are loaded ("Tracer caught signal 11", after every check passed; Debian
     * 12's gcc 12 sanitizer runtime and glibc 2.36). Not a leak and not ours to fix here. */
    bt_device_list *all = NULL;
    bt_devices_list(&all, NULL);
    bt_device_list_destroy(all);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_shipped_file_loads_and_is_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
