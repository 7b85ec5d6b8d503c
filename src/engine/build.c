/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build.c — the build stage: a config's -D defines, compiling one config (or a reference kernel's
 * source) through the kernel cache (a re-tune compiles nothing it compiled before), loading the
 * binary (a stale cache entry is compiled again), and the compile stage of a round on the thread
 * pool with its progress line. Used by the tuner's rounds, its device reference and finals, and
 * by the dispatch of a looked-up config. A Triton source compiles from its config's request
 * (core: bt__triton_request) through the Triton compile pool, and its blob (the CUBIN with its
 * launch metadata) goes to the kernel cache too, keyed also by the bytes of every .py file beside
 * the source (the helpers it may import) and by Triton's version (the backend knows it without
 * Python where its probe record holds), so that a process that finds it there launches it with
 * no Python; it is also kept under a key without the version, which only a process that cannot
 * know the version (no Python or no Triton: nothing could compile it again) looks up. A round
 * builds, in the same pool run, its configs' binaries for the boundary sizes when they depend on
 * the problem (bt__build_round), and a tune that will compile with Triton starts the pool ahead
 * and, for a search that measures every config, their compiles too (bt__build_prestart): one
 * compile per kernel cache key at a time in a process, a second asker waits for the first.
 */
#include "engine/build.h"

#include "core/pool.h"
#include "core/util.h"
#include "engine/kcache.h"
#include "engine/userdata.h"

#include <dirent.h>
#include <pthread.h>
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

static void build_req(const bt_kernel *kn, const bt__compile_req *req, const char *const *ids,
                      int nids, uint64_t salt, bool use_cache, bool keep, bt__entry *e);

/* The compile request of src with defines dp[0..nd) as kn builds it: the names it resolves are
 * the entry (entry, when given, in place of k's), then k's constant-memory symbols. */
static void source_req(const bt_kernel *kn, const bt__ksource *src, const char *entry,
                       const char *const *dp, int nd, char names[][136], const char **np,
                       bt__compile_req *req)
{
    bt__compile_req_of(kn->k, src, dp, nd, names, np, req);
    if (entry && req->nnames)
        snprintf(names[0], 136, "%s", entry);
}

void bt__build_source(const bt_kernel *kn, const bt__ksource *src, const char *entry,
                      const char *const *dp, int nd, bool use_cache, bt__entry *e)
{
    char names[BT__MAX_NAMES][136];
    const char *np[BT__MAX_NAMES];
    bt__compile_req req;
    source_req(kn, src, entry, dp, nd, names, np, &req);
    const char *id = bt_device_get_info(kn->dev)->compiler_version;
    build_req(kn, &req, &id, 1, 0, use_cache, true, e);
}

/* A kernel cache key with salt (when non-zero) made part of it. */
static uint64_t salted(uint64_t key, uint64_t salt)
{
    return salt ? bt__fnv1a(&salt, sizeof salt, key) : key;
}

/* The kernel cache's key of req built by compiler id; salt (when non-zero) is part of it. */
static uint64_t req_key(const bt_kernel *kn, const bt__compile_req *req, const char *id,
                        uint64_t salt)
{
    return salted(bt__kcache_key(kn->iface->name, bt_device_get_info(kn->dev)->name, id, req),
                  salt);
}

/* The folder holding a binary built ahead of time for req (blocktune precompile): 0 the user's
 * kernel cache folder, 1 the installed one, -1 neither. With e, the binary is read into it (a
 * damaged file is a miss) and e says where it came from and what it cost since t0. */
static int precompiled_at(const bt_kernel *kn, const bt__compile_req *req, uint64_t salt,
                          bt__entry *e, double t0)
{
    uint64_t key = req_key(kn, req, BT__KCACHE_PRECOMPILED, salt);
    char *dirs[2] = {bt__kcache_user_dir(), bt__kcache_shipped_dir()};
    int at = -1;
    for (int i = 0; i < 2 && at < 0; i++)
        if (e ? bt__kcache_get_in(dirs[i], key, &e->blob) : bt__kcache_has_in(dirs[i], key))
            at = i;
    free(dirs[0]);
    free(dirs[1]);
    if (e && at >= 0) {
        e->precompiled = at ? "installed" : "user";
        e->cached = true;
        e->compile_s = bt__now() - t0;
    }
    return at;
}

/* Compiles in flight in this process, by kernel cache key: a thread about to compile a key that
 * another thread compiles (a compile started ahead, bt__build_prestart) waits for it and takes
 * its binary from the kernel cache instead of compiling it a second time. */
static pthread_mutex_t inflight_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t inflight_cv = PTHREAD_COND_INITIALIZER;
static uint64_t inflight[256];
static size_t ninflight;

static bool inflight_has(uint64_t key)
{
    for (size_t i = 0; i < ninflight; i++)
        if (inflight[i] == key)
            return true;
    return false;
}

/* Claims key for this thread's compile. wait: first waits while another thread compiles it
 * (*waited says whether it did); else returns false at once when one does. Also false when the
 * table is full (the compile then goes ahead unclaimed). */
static bool inflight_claim(uint64_t key, bool wait, bool *waited)
{
    bool claimed = false;
    *waited = false;
    pthread_mutex_lock(&inflight_mu);
    while (wait && inflight_has(key)) {
        pthread_cond_wait(&inflight_cv, &inflight_mu);
        *waited = true;
    }
    if (!inflight_has(key) && ninflight < BT__ARRAY_LEN(inflight)) {
        inflight[ninflight++] = key;
        claimed = true;
    }
    pthread_mutex_unlock(&inflight_mu);
    return claimed;
}

/* Binaries the compiles started ahead put into the kernel cache during a tune, with their compile
 * seconds: the round that takes one counts it as compiled by this tune, not as found in the
 * kernel cache (bt__build_ahead_end forgets those of its tune). Under inflight_mu. */
typedef struct ahead_key {
    uint64_t key;
    double secs;
    const void *owner;
} ahead_key;
static ahead_key ahead_done[256];
static size_t nahead_done;

static void ahead_done_add(uint64_t key, double secs, const void *owner)
{
    pthread_mutex_lock(&inflight_mu);
    if (nahead_done < BT__ARRAY_LEN(ahead_done))
        ahead_done[nahead_done++] = (ahead_key){key, secs, owner};
    pthread_mutex_unlock(&inflight_mu);
}

/* Whether key was compiled ahead during this tune (its compile seconds into *secs); taken once. */
static bool ahead_done_take(uint64_t key, double *secs)
{
    bool found = false;
    pthread_mutex_lock(&inflight_mu);
    for (size_t i = 0; i < nahead_done && !found; i++)
        if (ahead_done[i].key == key) {
            *secs = ahead_done[i].secs;
            ahead_done[i] = ahead_done[--nahead_done];
            found = true;
        }
    pthread_mutex_unlock(&inflight_mu);
    return found;
}

static void ahead_done_forget(const void *owner)
{
    pthread_mutex_lock(&inflight_mu);
    for (size_t i = 0; i < nahead_done;)
        if (ahead_done[i].owner == owner)
            ahead_done[i] = ahead_done[--nahead_done];
        else
            i++;
    pthread_mutex_unlock(&inflight_mu);
}

static void inflight_release(uint64_t key)
{
    pthread_mutex_lock(&inflight_mu);
    for (size_t i = 0; i < ninflight; i++)
        if (inflight[i] == key) {
            inflight[i] = inflight[--ninflight];
            break;
        }
    pthread_cond_broadcast(&inflight_cv);
    pthread_mutex_unlock(&inflight_mu);
}

/* blob, req's binary, into the kernel cache under each of the compiler identities ids[0..nids)
 * (key: its key under ids[0]). */
static void keep_binary(const bt_kernel *kn, const bt__compile_req *req, const char *const *ids,
                        int nids, uint64_t salt, uint64_t key, const bt__blob *blob)
{
    for (int i = 0; i < nids; i++)
        bt__kcache_put(i ? req_key(kn, req, ids[i], salt) : key, blob);
}

/* Compiles req into e: from the kernel cache when use_cache (looked up under the compiler
 * identity ids[0]; a compile of the same key in flight on another thread is waited for), into
 * it when keep (under each of ids[0..nids)). */
static void build_req(const bt_kernel *kn, const bt__compile_req *req, const char *const *ids,
                      int nids, uint64_t salt, bool use_cache, bool keep, bt__entry *e)
{
    double t0 = bt__now(), secs;
    uint64_t key = req_key(kn, req, ids[0], salt);
    if (use_cache && bt__kcache_get(key, &e->blob)) {
        e->compile_s = bt__now() - t0;
        e->cached = true;
        if (ahead_done_take(key, &secs)) { /* compiled by this tune, ahead of its round */
            e->cached = false;
            e->compile_s = secs;
        }
        return;
    }
    if (use_cache && precompiled_at(kn, req, salt, e, t0) >= 0)
        return;
    bool waited = false, claimed = use_cache && inflight_claim(key, true, &waited);
    if (waited && bt__kcache_get(key, &e->blob)) { /* another thread compiled it meanwhile */
        if (claimed)
            inflight_release(key);
        e->compile_s = bt__now() - t0;
        e->cached = !ahead_done_take(key, &secs);
        if (!e->cached)
            e->compile_s = secs;
        return;
    }
    char *log = NULL;
    bt_status st = kn->iface->compile(kn->bdev, req, &e->blob, &log);
    e->compile_s = bt__now() - t0;
    if (st == BT_OK && keep)
        keep_binary(kn, req, ids, nids, salt, key, &e->blob);
    if (claimed)
        inflight_release(key);
    if (st != BT_OK) {
        e->status = BT__CS_COMPILE;
        e->log = log;
        e->error = bt__strdup(bt_strerror(st));
        return;
    }
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

/* The compiler identities a Triton binary is kept under in the kernel cache, the one to look up
 * first: "Triton <version>" and "Triton", or only "Triton" when the version cannot be known
 * (start: starting the pool to learn it; else only from what is known without Python). Returns
 * how many, 0 when !start and the version is not known without Python. */
static int triton_ids(const bt_kernel *kn, bool start, char *buf, size_t size, const char *ids[2])
{
    bt_diag d = {0};
    bt_status st = kn->iface->xcompiler_id
                       ? kn->iface->xcompiler_id("triton", start, buf, size, &d)
                       : BT_UNSUPPORTED;
    if (st == BT_NOT_FOUND && !start)
        return 0;
    int n = 0;
    if (st == BT_OK)
        ids[n++] = buf;
    ids[n++] = "Triton";
    return n;
}

/* A Triton config's compile request at p (names: the entry, then the spec's arguments, which the
 * blob's launch metadata maps Triton's parameters onto) into *req and *text (malloc'd); BT_OK or
 * the reason in d. */
static bt_status triton_req(const bt_kernel *kn, const bt_config *c, const bt_problem *p,
                            const char **names, bt__compile_req *req, char **text, bt_diag *d)
{
    const bt_device_info *di = bt_device_get_info(kn->dev);
    bt_status st = bt__triton_request(kn->k, kn->src, c, p, &di->props, text, d);
    const bt_kdesc *k = kn->k;
    names[0] = k->entry;
    for (int i = 0; i < k->nargs && i < BT__MAX_ARGS; i++)
        names[1 + i] = k->args[i].name;
    *req = (bt__compile_req){.lang = "triton", .src = *text, .names = names,
                             .nnames = 1 + k->nargs};
    return st;
}

/* A Triton source: the config's compile request to the backend, through the kernel cache keyed
 * also by the .py files beside the source and by Triton's version. */
static void build_triton(const bt_kernel *kn, const bt_problem *p, bt__entry *e, bool use_cache)
{
    char *text = NULL, idbuf[64];
    const char *names[1 + BT__MAX_ARGS], *ids[2];
    bt__compile_req req;
    bt_diag d = {0};
    if (triton_req(kn, &e->ev.cfg, p, names, &req, &text, &d) != BT_OK) {
        e->status = BT__CS_COMPILE;
        e->error = bt__strdup(d.msg);
        return;
    }
    uint64_t salt = py_folder_hash(kn->src->path);
    /* Triton's version, when the backend knows it without Python; else a binary built ahead of
     * time is taken before Python is started to learn it (a first launch needs none then) */
    int nids = triton_ids(kn, false, idbuf, sizeof idbuf, ids);
    if (nids == 0 && use_cache && precompiled_at(kn, &req, salt, e, bt__now()) >= 0) {
        free(text);
        return;
    }
    if (nids == 0)
        nids = triton_ids(kn, true, idbuf, sizeof idbuf, ids);
    build_req(kn, &req, ids, nids, salt, use_cache, true, e);
    free(text);
}

/* A config to compile, its weight (bt__model_compile_weight) and its place in the given order. */
typedef struct weighed {
    double w;
    size_t pos;
} weighed;

static int cmp_weighed(const void *a, const void *b)
{
    const weighed *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The order in which to compile n configs whose evaluations ev(i) gives: the heaviest first
 * (the longest compiles start first, so that a round of parallel compiles does not wait on one
 * started last), ties in the given order, into order[0..n) (NULL when nothing is known of their
 * weights, or no memory: the given order). malloc'd. */
static size_t *compile_order(const bt_kdesc *k, size_t n,
                             const bt__cfg_eval *(*ev)(const void *, size_t), const void *arg)
{
    weighed *w = n > 1 ? malloc(sizeof *w * n) : NULL;
    size_t *order = w ? malloc(sizeof *order * n) : NULL;
    bool any = false;
    for (size_t i = 0; order && i < n; i++) {
        w[i] = (weighed){bt__model_compile_weight(k, ev(arg, i)), i};
        any |= w[i].w > 0;
    }
    if (!any) {
        free(w);
        free(order);
        return NULL;
    }
    qsort(w, n, sizeof *w, cmp_weighed);
    for (size_t i = 0; i < n; i++)
        order[i] = w[i].pos;
    free(w);
    return order;
}

static const bt__cfg_eval *job_ev(const void *arg, size_t i)
{
    return &((bt__entry *const *)arg)[i]->ev;
}

static const bt__cfg_eval *cand_ev(const void *arg, size_t i)
{
    return &((const bt__cfg_eval *)arg)[i];
}

void bt__build_order(const bt_kdesc *k, bt__entry **jobs, size_t n)
{
    size_t *order = compile_order(k, n, job_ev, jobs);
    bt__entry **sorted = order ? malloc(sizeof *sorted * n) : NULL;
    for (size_t i = 0; sorted && i < n; i++)
        sorted[i] = jobs[order[i]];
    if (sorted)
        memcpy(jobs, sorted, sizeof *jobs * n);
    free(sorted);
    free(order);
}

/* Compiles started ahead of a tune's first round (bt__build_prestart): threads that take the
 * configs in order and compile each one no other thread has compiled or is compiling into the
 * kernel cache. */
struct bt__ahead {
    const bt_kernel *kn;
    bt_problem p;
    bt_config *cfg;
    size_t n, next;
    uint64_t salt;
    bool stop;
    pthread_mutex_t mu;
    pthread_t th[64];
    int nth;
};

static void ahead_one(bt__ahead *A, const bt_config *c)
{
    const bt_kernel *kn = A->kn;
    char *text = NULL, idbuf[64];
    const char *names[1 + BT__MAX_ARGS], *ids[2];
    bt__compile_req req;
    bt_diag d = {0};
    if (triton_req(kn, c, &A->p, names, &req, &text, &d) == BT_OK) {
        int nids = triton_ids(kn, true, idbuf, sizeof idbuf, ids);
        uint64_t key = req_key(kn, &req, ids[0], A->salt);
        bool waited;
        if (!bt__kcache_has(key) && precompiled_at(kn, &req, A->salt, NULL, 0) < 0 &&
            inflight_claim(key, false, &waited)) {
            bt__blob blob = {0};
            char *log = NULL;
            double t0 = bt__now();
            if (kn->iface->compile(kn->bdev, &req, &blob, &log) == BT_OK) {
                keep_binary(kn, &req, ids, nids, A->salt, key, &blob);
                ahead_done_add(key, bt__now() - t0, A);
            }
            inflight_release(key); /* a failure is met again, with its log, by the round */
            free(blob.data);
            free(log);
        }
    }
    free(text);
}

static void *ahead_main(void *arg)
{
    bt__ahead *A = arg;
    for (;;) {
        pthread_mutex_lock(&A->mu);
        size_t i = A->stop ? A->n : A->next++;
        pthread_mutex_unlock(&A->mu);
        if (i >= A->n)
            return NULL;
        ahead_one(A, &A->cfg[i]);
    }
}

bt__ahead *bt__build_prestart(const bt_kernel *kn, const bt_problem *p, const bt_config *first,
                              const bt__cfg_eval *cands, size_t n, size_t nahead, int threads)
{
    if (strcmp(kn->src->lang, "triton") || !kn->iface->xcompiler_start)
        return NULL;
    char idbuf[64];
    const char *ids[2];
    bool known = triton_ids(kn, false, idbuf, sizeof idbuf, ids) == 2; /* else Python knows it */
    uint64_t salt = py_folder_hash(kn->src->path);
    bool need = false;
    for (size_t i = 0; i < n && !need; i++) {
        char *text = NULL;
        const char *names[1 + BT__MAX_ARGS];
        bt__compile_req req;
        bt_diag d = {0};
        /* a binary of the kernel cache (under the version), or one built ahead of time */
        need = triton_req(kn, &cands[i].cfg, p, names, &req, &text, &d) == BT_OK &&
               !(known && bt__kcache_has(req_key(kn, &req, ids[0], salt))) &&
               precompiled_at(kn, &req, salt, NULL, 0) < 0;
        free(text);
    }
    if (!need)
        return NULL;
    kn->iface->xcompiler_start("triton");
    if (nahead > n)
        nahead = n;
    bt__ahead *A = nahead ? calloc(1, sizeof *A) : NULL;
    if (A)
        A->cfg = malloc(sizeof *A->cfg * (nahead + 1));
    if (!A || !A->cfg) {
        free(A);
        return NULL;
    }
    A->kn = kn;
    A->p = *p;
    A->salt = salt;
    if (first) /* the device reference's baseline config: the first binary the tune needs */
        A->cfg[A->n++] = *first;
    size_t *order = compile_order(kn->k, nahead, cand_ev, cands); /* the heaviest first */
    for (size_t j = 0; j < nahead; j++) {
        size_t i = order ? order[j] : j;
        if (!first || memcmp(&cands[i].cfg, first, sizeof *first))
            A->cfg[A->n++] = cands[i].cfg;
    }
    free(order);
    pthread_mutex_init(&A->mu, NULL);
    int want = threads < 1 ? 1 : threads > 64 ? 64 : threads;
    while (A->nth < want && (size_t)A->nth < A->n &&
           pthread_create(&A->th[A->nth], NULL, ahead_main, A) == 0)
        A->nth++;
    return A;
}

void bt__build_ahead_end(bt__ahead *A)
{
    if (!A)
        return;
    pthread_mutex_lock(&A->mu);
    A->stop = true; /* what is being compiled ends; nothing new starts */
    pthread_mutex_unlock(&A->mu);
    for (int i = 0; i < A->nth; i++)
        pthread_join(A->th[i], NULL);
    ahead_done_forget(A);
    pthread_mutex_destroy(&A->mu);
    free(A->cfg);
    free(A);
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

/* A config's compile request at p as kn builds it, with the storage it points into (the
 * defines, the names it resolves, a Triton request's text: freed by the caller, also on
 * failure). */
typedef struct cfg_req {
    bt__compile_req req;
    char defs[BT__MAX_DEFINES][96], names[BT__MAX_NAMES][136], *text;
    const char *dp[BT__MAX_DEFINES];
    const char *np[BT__MAX_NAMES > 1 + BT__MAX_ARGS ? BT__MAX_NAMES : 1 + BT__MAX_ARGS];
} cfg_req;

static bt_status cfg_req_make(const bt_kernel *kn, const bt_config *c, const bt_problem *p,
                              cfg_req *r, bt_diag *diag)
{
    r->text = NULL;
    if (!strcmp(kn->src->lang, "triton"))
        return triton_req(kn, c, p, r->np, &r->req, &r->text, diag);
    const bt_device_info *di = bt_device_get_info(kn->dev);
    int nd = bt__build_defines(kn->k, c, p, &di->props, r->defs);
    for (int i = 0; i < nd; i++)
        r->dp[i] = r->defs[i];
    source_req(kn, kn->src, kn->k->entry, r->dp, nd, r->names, r->np, &r->req);
    return BT_OK;
}

size_t bt__build_ready(const bt_kernel *kn, const bt_problem *p, const bt__cfg_eval *cands,
                       size_t n, bool *ready)
{
    memset(ready, 0, n * sizeof *ready);
    char *dirs[2] = {bt__kcache_user_dir(), bt__kcache_shipped_dir()};
    size_t nready = 0;
    if (!dirs[0] && !dirs[1]) /* the kernel cache is off */
        return 0;
    const bt_device_info *di = bt_device_get_info(kn->dev);
    const char *dev = di->name, *be = kn->iface->name;
    bool triton = !strcmp(kn->src->lang, "triton");
    char idbuf[64];
    const char *ids[2] = {NULL, NULL};
    /* Triton's version only when known without starting Python (else only what was built
     * ahead of time, under its own identity, is found) */
    int nids = triton ? triton_ids(kn, false, idbuf, sizeof idbuf, ids) : 1;
    if (!triton)
        ids[0] = di->compiler_version;
    uint64_t salt = triton ? py_folder_hash(kn->src->path) : 0;
    const char *head_src = NULL;
    uint64_t head = 0, head_pre = 0;
    for (size_t i = 0; i < n; i++) {
        cfg_req R;
        bt_diag d = {0};
        if (cfg_req_make(kn, &cands[i].cfg, p, &R, &d) != BT_OK) {
            free(R.text);
            continue;
        }
        const bt__compile_req req = R.req;
        if (req.src != head_src || triton) { /* a Triton request's text is the config's own */
            head_src = req.src;
            head = nids ? bt__kcache_key_head(be, dev, ids[0], &req) : 0;
            head_pre = bt__kcache_key_head(be, dev, BT__KCACHE_PRECOMPILED, &req);
        }
        uint64_t key = salted(bt__kcache_key_tail(head, &req), salt),
                 pre = salted(bt__kcache_key_tail(head_pre, &req), salt);
        ready[i] = (nids && bt__kcache_has_in(dirs[0], key)) || bt__kcache_has_in(dirs[0], pre) ||
                   bt__kcache_has_in(dirs[1], pre);
        nready += ready[i];
        free(R.text);
    }
    free(dirs[0]);
    free(dirs[1]);
    return nready;
}

bt_status bt__build_precompile(const bt_kernel *kn, const bt_problem *p, const bt_config *c,
                               const char *dir, bool (*claim)(uint64_t key, void *user),
                               void *user, bool *had, bt_diag *diag)
{
    *had = false;
    cfg_req R;
    bt_status st = cfg_req_make(kn, c, p, &R, diag);
    if (st != BT_OK) {
        free(R.text);
        return st;
    }
    const bt__compile_req req = R.req;
    uint64_t salt = !strcmp(kn->src->lang, "triton") ? py_folder_hash(kn->src->path) : 0;
    uint64_t key = req_key(kn, &req, BT__KCACHE_PRECOMPILED, salt);
    if ((claim && !claim(key, user)) || bt__kcache_has_in(dir, key)) {
        *had = true;
    } else {
        bt__blob blob = {0};
        char *log = NULL;
        st = kn->iface->compile(kn->bdev, &req, &blob, &log);
        if (st != BT_OK)
            bt__diag_set(diag, "%s: %.700s", bt_strerror(st), log && *log ? log : "no log");
        else
            st = bt__kcache_put_in(dir, key, &blob, true, diag);
        free(blob.data);
        free(log);
    }
    free(R.text);
    return st;
}

typedef struct build_job {
    const bt_kernel *kn;
    const bt_problem *p;
    bt__entry **jobs;
    size_t n;
    bt__prebuilt *pre;
    const char *stage;
    double t0;
    bool show;
} build_job;

static void build_one(void *arg, size_t i)
{
    build_job *J = arg;
    if (i < J->n)
        bt__build(J->kn, J->p, J->jobs[i], true);
    else
        bt__build(J->kn, &J->pre[i - J->n].p, &J->pre[i - J->n].e, true);
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

void bt__build_round(const bt_kernel *kn, const bt_problem *p, bt__entry **jobs, size_t n,
                     bt__prebuilt *pre, size_t npre, int threads, const char *stage,
                     bool show_progress)
{
    build_job J = {kn, p, jobs, n, pre, stage, bt__now(), show_progress && isatty(2)};
    bt__pool_run(n + npre, threads, build_one, build_progress, &J);
}

void bt__build_all(const bt_kernel *kn, const bt_problem *p, bt__entry **jobs, size_t n,
                   int threads, const char *stage, bool show_progress)
{
    bt__build_round(kn, p, jobs, n, NULL, 0, threads, stage, show_progress);
}

bool bt__prebuilt_take(const bt_kernel *kn, bt__prebuilt *pre, size_t npre, int tag,
                       const bt_config *cfg, bt__entry *e)
{
    int np = kn->k->space.nparams;
    for (size_t i = 0; i < npre; i++) {
        bt__prebuilt *b = &pre[i];
        if (b->taken || b->tag != tag ||
            memcmp(b->e.ev.cfg.v, cfg->v, sizeof cfg->v[0] * (size_t)np))
            continue;
        memset(e, 0, sizeof *e);
        *e = b->e;
        memset(&b->e, 0, sizeof b->e);
        b->taken = true;
        return true;
    }
    return false;
}

void bt__prebuilt_free(bt__prebuilt *pre, size_t npre)
{
    for (size_t i = 0; i < npre; i++) {
        free(pre[i].e.error);
        free(pre[i].e.log);
        free(pre[i].e.blob.data);
    }
    free(pre);
}

bt_status bt__build_load(const bt_kernel *kn, const bt_problem *p, bt__entry *e, bt_diag *diag)
{
    const bt__backend_iface *I = kn->iface;
    bt_status st = I->module_load(kn->bdev, e->blob.data, e->blob.size, &e->mod, diag);
    if (st == BT_CORRUPT && e->cached) { /* a stale cache entry: compile again */
        free(e->blob.data);
        e->blob.data = NULL;
        e->cached = false;
        e->precompiled = NULL;
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
