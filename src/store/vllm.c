/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vllm.c — the store's winners in vLLM's fused-MoE config layout (docs/wisdom.md#vllm): one file
 * per (E, N, device, dtype, block shape), named as vLLM's lookup names the file it opens, mapping
 * each batch size M (a string key) to the winner's BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps and
 * num_stages. The facts come from vLLM's fused_moe.py (get_config_file_name, get_moe_configs,
 * try_get_optimal_moe_config); tests/python/vllm_lookup.py reads what we write the same way.
 */
#include "store/store.h"

#include "core/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

/* One output file: its name, the keys that fill it (all but M: one group), and M -> config. */
typedef struct vfile {
    char name[512];
    char group[600]; /* kernel, device and the key without M */
    json_t *rows;
} vfile;

typedef struct vctx {
    vfile *f;
    size_t n;
    size_t skipped; /* winners with no place in vLLM's layout */
    bt_diag *diag;
} vctx;

static bool kv_get(const bt__keyvals *kv, const char *name, int64_t *v)
{
    for (int i = 0; i < kv->n; i++)
        if (bt__streq_nocase(kv->names[i], name)) {
            *v = kv->v[i];
            return true;
        }
    return false;
}

/* vLLM's dtype selector for our dtype: "" for none (fp16 and bf16 files carry none). False when
 * vLLM has no name for it. */
static bool vllm_dtype(const char *dt, const char **out)
{
    static const char *map[][2] = {{"", ""}, {"fp16", ""}, {"bf16", ""}, {"fp32", "float32"},
                                   {"fp8", "fp8_w8a8"}};
    for (size_t i = 0; i < BT__ARRAY_LEN(map); i++)
        if (!strcmp(dt, map[i][0])) {
            *out = map[i][1];
            return true;
        }
    return false;
}

/* The winner's config in vLLM's names (each also taken under blocktune's gemm name); NULL when
 * it lacks one (GROUP_SIZE_M alone defaults to 1). */
static json_t *vllm_config(const char *config_json)
{
    static const char *names[][2] = {{"BLOCK_SIZE_M", "BLOCK_M"}, {"BLOCK_SIZE_N", "BLOCK_N"},
                                     {"BLOCK_SIZE_K", "BLOCK_K"}, {"GROUP_SIZE_M", "GROUP_M"},
                                     {"num_warps", "num_warps"},  {"num_stages", "num_stages"}};
    json_t *cfg = json_loads(config_json, 0, NULL), *o = json_object();
    for (size_t i = 0; cfg && o && i < BT__ARRAY_LEN(names); i++) {
        json_t *v = json_object_get(cfg, names[i][0]);
        if (!v)
            v = json_object_get(cfg, names[i][1]);
        if (json_is_integer(v))
            json_object_set_new(o, names[i][0], json_integer(json_integer_value(v)));
        else if (!v && i == 3)
            json_object_set_new(o, names[i][0], json_integer(1));
        else {
            json_decref(o);
            o = NULL;
        }
    }
    json_decref(cfg);
    return o;
}

bool bt__vllm_file_name(const char *device, int64_t e, int64_t n, const char *dtype,
                        int64_t block_n, int64_t block_k, char *buf, size_t size)
{
    char dev[160];
    snprintf(dev, sizeof dev, "%s", device);
    for (char *c = dev; *c; c++)
        if (*c == ' ')
            *c = '_'; /* vLLM replaces spaces, and nothing else */
    if (!dev[0] || strchr(dev, '/'))
        return false;
    char bs[64] = "";
    if (block_n && block_k)
        snprintf(bs, sizeof bs, ",block_shape=[%lld,%lld]", (long long)block_n, (long long)block_k);
    int w = snprintf(buf, size, "E=%lld,N=%lld,device_name=%s%s%s%s.json", (long long)e,
                     (long long)n, dev, dtype[0] ? ",dtype=" : "", dtype, bs);
    return w > 0 && (size_t)w < size;
}

/* The group of a winner: its kernel, device and key without M. */
static void group_of(const bt__winner *w, const bt__keyvals *kv, char *buf, size_t size)
{
    bt__keyvals rest = *kv;
    rest.n = 0;
    for (int i = 0; i < kv->n; i++)
        if (!bt__streq_nocase(kv->names[i], "M")) {
            snprintf(rest.names[rest.n], sizeof rest.names[rest.n], "%s", kv->names[i]);
            rest.v[rest.n++] = kv->v[i];
        }
    char key[400];
    bt__keyvals_format(&rest, key, sizeof key);
    snprintf(buf, size, "%s [%s] on %s", w->m.kernel, key, w->m.device_name);
}

static int collect(const bt__winner *w, void *user)
{
    vctx *c = user;
    bt__keyvals kv;
    int64_t m, e, n, bn = 0, bk = 0;
    const char *dt;
    char name[512], group[600];
    if (bt__keyvals_parse(w->m.key, &kv) != BT_OK || !kv_get(&kv, "M", &m) ||
        !kv_get(&kv, "E", &e) || !kv_get(&kv, "N", &n) || !vllm_dtype(kv.dtype, &dt)) {
        c->skipped++;
        return 0;
    }
    kv_get(&kv, "block_shape_n", &bn);
    kv_get(&kv, "block_shape_k", &bk);
    json_t *cfg = vllm_config(w->m.config_json);
    if (!cfg || !bt__vllm_file_name(w->m.device_name, e, n, dt, bn, bk, name, sizeof name)) {
        json_decref(cfg);
        c->skipped++;
        return 0;
    }
    group_of(w, &kv, group, sizeof group);
    size_t i = 0;
    while (i < c->n && strcmp(c->f[i].name, name))
        i++;
    if (i < c->n && strcmp(c->f[i].group, group)) {
        json_decref(cfg);
        bt__diag_set(c->diag, "%s and %s would share vLLM's file %s: vLLM names its files by E, "
                     "N, device, dtype and block shape only (export one with --kernel or "
                     "--device, or tune one value of the other key variables)",
                     c->f[i].group, group, name);
        return BT_INVALID_ARG;
    }
    if (i == c->n) {
        vfile *nf = realloc(c->f, (c->n + 1) * sizeof *nf);
        if (!nf) {
            json_decref(cfg);
            return BT_NOMEM;
        }
        c->f = nf;
        memset(&c->f[i], 0, sizeof c->f[i]);
        snprintf(c->f[i].name, sizeof c->f[i].name, "%s", name);
        snprintf(c->f[i].group, sizeof c->f[i].group, "%s", group);
        c->f[i].rows = json_object();
        c->n++;
    }
    char mk[32];
    snprintf(mk, sizeof mk, "%lld", (long long)m);
    json_object_set_new(c->f[i].rows, mk, cfg);
    return 0;
}

static int cmp_mkey(const void *a, const void *b)
{
    long long x = strtoll(*(const char *const *)a, NULL, 10);
    long long y = strtoll(*(const char *const *)b, NULL, 10);
    return (x > y) - (x < y);
}

/* One file: M keys sorted as numbers, as vLLM's own files are. */
static bt_status write_file(const char *dir, const vfile *v, bt_diag *diag)
{
    size_t n = json_object_size(v->rows), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    if (!keys)
        return BT_NOMEM;
    const char *k;
    json_t *val;
    json_object_foreach(v->rows, k, val) keys[i++] = k;
    qsort(keys, n, sizeof *keys, cmp_mkey);
    json_t *sorted = json_object();
    for (i = 0; sorted && i < n; i++)
        json_object_set(sorted, keys[i], json_object_get(v->rows, keys[i]));
    free(keys);
    char *text = sorted ? json_dumps(sorted, JSON_INDENT(4) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(sorted);
    if (!text)
        return BT_NOMEM;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, v->name);
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps's terminator becomes the file's last newline */
    bt_status st = bt__write_file_atomic(path, text, len + 1, diag);
    free(text);
    return st;
}

bt_status bt__wisdom_export_vllm_dir(bt__store *s, const char *kernel, const char *device,
                                     const char *dir, int *nfiles, bt_diag *diag)
{
    if (nfiles)
        *nfiles = 0;
    vctx c = {.diag = diag};
    bt_status st = bt__store_winners(s, kernel, device, collect, &c, diag);
    if (st == BT_OK && c.n == 0) {
        bt__diag_set(diag, "no winners%s%s to export in vLLM's layout (%zu without it): a key "
                     "needs the variables M, E and N, a dtype of fp16, bf16, fp32 or fp8, and a "
                     "config with BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps and "
                     "num_stages (GROUP_SIZE_M optional)", kernel ? " of " : "",
                     kernel ? kernel : "", c.skipped);
        st = BT_NOT_FOUND;
    }
    if (st == BT_OK && mkdir(dir, 0755) != 0 && errno != EEXIST) {
        bt__diag_set(diag, "cannot create directory %s: %s", dir, strerror(errno));
        st = BT_IO;
    }
    for (size_t i = 0; st == BT_OK && i < c.n; i++)
        if ((st = write_file(dir, &c.f[i], diag)) == BT_OK && nfiles)
            (*nfiles)++;
    for (size_t i = 0; i < c.n; i++)
        json_decref(c.f[i].rows);
    free(c.f);
    return st;
}
