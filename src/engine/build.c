/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build.c — the build stage: a config's -D defines, compiling one config (or a reference kernel's
 * source) through the kernel cache (a re-tune compiles nothing it compiled before), loading the
 * binary (a stale cache entry is compiled again), and the compile stage of a round on the thread
 * pool with its progress line. Used by the tuner's rounds, its device reference and finals, and
 * by the dispatch of a looked-up config. A Triton source compiles from its config's request
 * (core: bt__triton_request) through the Triton compile pool, and its blob (the CUBIN with its
 * launch metadata) goes to the kernel cache too, keyed also by the bytes of every .py file beside
 * the source (the helpers it may import), so that a process that finds it there launches it with
 * no Python.
 */
#include "engine/build.h"

#include "core/pool.h"
#include "core/util.h"
#include "engine/kcache.h"
#include "engine/userdata.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A dtype's name in capitals, as the defines spell it (FP16). */
static const char *dtype_upper(bt__dtype t, char *buf, size_t size)
{
    snprintf(buf, size, "%s", bt__dtype_name(t));
    for (char *u = buf; *u; u++)
        if (*u >= 'a' && *u <= 'z')
            *u = (char)(*u - 'a' + 'A');
    return buf;
}

int bt__build_defines_common(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                             int64_t threads, char defs[][96])
{
    int m = bt__problem_defines(k, p, g, defs);
    if (threads > 0)
        snprintf(defs[m++], 96, "BT_THREADS=%lld", (long long)threads);
    snprintf(defs[m++], 96, "BT_WARP_SIZE=%d", g->warp_size > 0 ? g->warp_size : 32);
    char up[32];
    snprintf(defs[m++], 96, "BT_DTYPE_%s=1", dtype_upper(p->dtype, up, sizeof up));
    snprintf(defs[m++], 96, "BT_ELEM_BYTES=%d", bt__dtype_size(p->dtype));
    /* a buffer whose dtype depends on the problem: BT_TYPE_<arg>_<DTYPE> says which it is */
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].dtype_if.e)
            snprintf(defs[m++], 96, "BT_TYPE_%s_%s=1", k->args[i].name,
                     dtype_upper(bt__arg_dtype(k, &k->args[i], p), up, sizeof up));
    return m;
}

int bt__build_defines(const bt_kdesc *k, const bt_config *c, const bt_problem *p, const bt_gpu *g,
                      char defs[][96])
{
    int m = 0;
    for (int i = 0; i < k->space.nparams; i++)
        snprintf(defs[m++], 96, "%s=%lld", k->space.params[i].name, (long long)c->v[i]);
    int64_t grid[3], block[3], dyn;
    bt_diag d;
    int64_t threads = bt__geometry(k, c, p, g, grid, block, &dyn, &d) == BT_OK
                          ? block[0] * block[1] * block[2]
                          : 0;
    return m + bt__build_defines_common(k, p, g, threads, defs + m);
}

static void build_req(const bt_kernel *kn, const bt__compile_req *req, uint64_t salt,
                      bool use_cache, bool keep, bt__entry *e);

void bt__build_source(const bt_kernel *kn, const bt__ksource *src, const char *entry,
                      const char *const *dp, int nd, bool use_cache, bt__entry *e)
{
    const bt_kdesc *k = kn->k;
    /* the names it resolves: the entry (entry, when given, in place of k's), then k's
     * constant-memory symbols */
    char names[BT__MAX_NAMES][136];
    const char *np[BT__MAX_NAMES];
    bt__compile_req req;
    bt__compile_req_of(k, src, dp, nd, names, np, &req);
    if (entry && req.nnames)
        snprintf(names[0], sizeof names[0], "%s", entry);
    build_req(kn, &req, 0, use_cache, true, e);
}

/* Compiles req into e: from the kernel cache when use_cache, into it when keep; salt (when
 * non-zero) is part of the cache key. */
static void build_req(const bt_kernel *kn, const bt__compile_req *req, uint64_t salt,
                      bool use_cache, bool keep, bt__entry *e)
{
    const bt_device_info *di = bt_device_get_info(kn->dev);
    double t0 = bt__now();
    uint64_t key = bt__kcache_key(kn->iface->name, di->name, di->compiler_version, req);
    if (salt)
        key = bt__fnv1a(&salt, sizeof salt, key);
    if (use_cache && bt__kcache_get(key, &e->blob)) {
        e->compile_s = bt__now() - t0;
        e->cached = true;
        return;
    }
    char *log = NULL;
    bt_status st = kn->iface->compile(kn->bdev, req, &e->blob, &log);
    e->compile_s = bt__now() - t0;
    if (st != BT_OK) {
        e->status = BT__CS_COMPILE;
        e->log = log;
        e->error = bt__strdup(bt_strerror(st));
        return;
    }
    if (keep)
        bt__kcache_put(key, &e->blob);
    free(log);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A hash of the names and bytes of every .py file in the folder of path (sorted by name): what a
 * Triton kernel there may import. Never 0. */
static uint64_t py_folder_hash(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    uint64_t h = bt__fnv1a("triton-py-folder", 16, BT__FNV_SEED);
    DIR *D = opendir(slash ? (dir[0] ? dir : "/") : ".");
    char *names[256];
    size_t n = 0;
    for (struct dirent *de; D && (de = readdir(D)) != NULL && n < BT__ARRAY_LEN(names);) {
        size_t len = strlen(de->d_name);
        if (len > 3 && !strcmp(de->d_name + len - 3, ".py") && (names[n] = bt__strdup(de->d_name)))
            n++;
    }
    if (D)
        closedir(D);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char file[1400];
        snprintf(file, sizeof file, "%s/%s", slash ? (dir[0] ? dir : "") : ".", names[i]);
        size_t size = 0;
        char *text = bt__read_file(file, &size);
        h = bt__fnv1a(names[i], strlen(names[i]) + 1, h);
        h = text ? bt__fnv1a(text, size, h) : bt__fnv1a("?", 1, h);
        free(text);
        free(names[i]);
    }
    return h ? h : 1;
}

/* A Triton source: the config's compile request to the backend (names: the entry, then the
 * spec's arguments, which the blob's launch metadata maps Triton's parameters onto), through the
 * kernel cache keyed also by the .py files beside the source. */
static void build_triton(const bt_kernel *kn, const bt_problem *p, bt__entry *e, bool use_cache)
{
    const bt_device_info *di = bt_device_get_info(kn->dev);
    char *text = NULL;
    bt_diag d = {0};
    if (bt__triton_request(kn->k, kn->src, &e->ev.cfg, p, &di->props, &text, &d) != BT_OK) {
        e->status = BT__CS_COMPILE;
        e->error = bt__strdup(d.msg);
        return;
    }
    const bt_kdesc *k = kn->k;
    const char *names[1 + BT__MAX_ARGS];
    names[0] = k->entry;
    for (int i = 0; i < k->nargs && i < BT__MAX_ARGS; i++)
        names[1 + i] = k->args[i].name;
    bt__compile_req req = {.lang = "triton", .src = text, .names = names, .nnames = 1 + k->nargs};
    build_req(kn, &req, py_folder_hash(kn->src->path), use_cache, true, e);
    free(text);
}

bool bt__build_per_problem(const bt_kernel *kn)
{
    return kn->k->npdefines > 0 || !strcmp(kn->src->lang, "triton");
}

void bt__build(const bt_kernel *kn, const bt_problem *p, bt__entry *e, bool use_cache)
{
    if (!strcmp(kn->src->lang, "triton")) {
        build_triton(kn, p, e, use_cache);
        return;
    }
    const bt_device_info *di = bt_device_get_info(kn->dev);
    char defs[BT__MAX_DEFINES][96];
    const char *dp[BT__MAX_DEFINES];
    int nd = bt__build_defines(kn->k, &e->ev.cfg, p, &di->props, defs);
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    bt__build_source(kn, kn->src, kn->k->entry, dp, nd, use_cache, e);
}

typedef struct build_job {
    const bt_kernel *kn;
    const bt_problem *p;
    bt__entry **jobs;
    const char *stage;
    double t0;
    bool show;
} build_job;

static void build_one(void *arg, size_t i)
{
    build_job *J = arg;
    bt__build(J->kn, J->p, J->jobs[i], true);
}

/* The progress line: done/total, elapsed and ETA. */
static void build_progress(void *arg, size_t done, size_t total)
{
    build_job *J = arg;
    if (!J->show)
        return;
    double el = bt__now() - J->t0;
    double eta = done ? el / (double)done * (double)(total - done) : 0;
    fprintf(stderr, "\r\033[K%s %zu/%zu  elapsed %.1f s  ETA %.0f s", J->stage, done, total, el,
            eta);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

void bt__build_all(const bt_kernel *kn, const bt_problem *p, bt__entry **jobs, size_t n,
                   int threads, const char *stage, bool show_progress)
{
    build_job J = {kn, p, jobs, stage, bt__now(), show_progress && isatty(2)};
    bt__pool_run(n, threads, build_one, build_progress, &J);
}

bt_status bt__build_load(const bt_kernel *kn, const bt_problem *p, bt__entry *e, bt_diag *diag)
{
    const bt__backend_iface *I = kn->iface;
    bt_status st = I->module_load(kn->bdev, e->blob.data, e->blob.size, &e->mod, diag);
    if (st == BT_CORRUPT && e->cached) { /* a stale cache entry: compile again */
        free(e->blob.data);
        e->blob.data = NULL;
        e->cached = false;
        bt__build(kn, p, e, false);
        st = e->status == BT__CS_PENDING || e->status == BT__CS_OK
                 ? I->module_load(kn->bdev, e->blob.data, e->blob.size, &e->mod, diag)
                 : BT_COMPILE;
    }
    if (!st)
        st = I->function_get(kn->bdev, e->mod, kn->k->entry, &e->fn, &e->res, diag);
    if (!st && I->function_set_dyn_smem) {
        const bt_gpu *g = &bt_device_get_info(kn->dev)->props;
        int64_t g3[3], b3[3], dyn = 0;
        bt_diag gd; /* a geometry that does not evaluate fails at launch, with its message */
        if (bt__geometry(kn->k, &e->ev.cfg, p, g, g3, b3, &dyn, &gd) == BT_OK && dyn > 0)
            st = I->function_set_dyn_smem(kn->bdev, e->fn, (size_t)dyn, diag);
    }
    return st;
}
