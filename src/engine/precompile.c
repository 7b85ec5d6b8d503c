/* SPDX-License-Identifier: Apache-2.0 */
/*
 * precompile.c — bt_precompile (`blocktune precompile`): the binary of every winner that wisdom
 * holds, built with no device for the GPU the wisdom was tuned on (its hardware-table row) and
 * kept where a first launch on such a GPU looks for it (engine/kcache.h, under the precompiled
 * compiler identity), so that a wisdom-only first launch loads instead of compiling. Each entry
 * goes through the same lookup a launch makes (kernel.c's resolve, a front door's stored family
 * choice) on a compile-only device of that GPU, and through the build layer's own request, so
 * the key is the one a launch computes; an entry a launch would never take (another source,
 * another kernel, a key the spec does not have) is listed with the reason. Compiles run on every
 * core; a binary already in the folder is not built again.
 */
#include "engine/build.h"

#include "backends/device.h"
#include "core/pool.h"
#include "core/util.h"
#include "engine/fam.h"
#include "engine/kcache.h"
#include "store/store.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#define MAX_PATHS 64
#define MAX_KERNELS 64

struct bt_precompile_options {
    char *paths[MAX_PATHS];
    int npaths;
    const bt_kdesc *kernels[MAX_KERNELS];
    int nkernels;
    char *gpu;
    char *out;
    int threads;
    int progress;
    int prune;
};

typedef enum line_state { L_SKIPPED, L_PENDING, L_COMPILED, L_PRESENT, L_FAILED } line_state;

typedef struct pline {
    char *kernel, *device, *key, *config;
    line_state state;
    char why[600];
    /* a pending build */
    bt_kernel *kn; /* borrowed: the door's family or the kernel itself */
    bt_problem p;
    bt_config c;
    double seconds;
} pline;

struct bt_precompile_result {
    pline *l;
    size_t n;
    char *dir;
    double seconds;
    int pruned; /* binaries of no entry removed (set_prune) */
};

/* --- options ------------------------------------------------------------------------------ */

bt_status bt_precompile_options_create(bt_precompile_options **out)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? BT_OK : BT_NOMEM;
}

void bt_precompile_options_destroy(bt_precompile_options *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->npaths; i++)
        free(o->paths[i]);
    free(o->gpu);
    free(o->out);
    free(o);
}

bt_status bt_precompile_options_add_wisdom(bt_precompile_options *o, const char *path)
{
    if (!o || !path || !*path || o->npaths == MAX_PATHS)
        return BT_INVALID_ARG;
    return (o->paths[o->npaths] = bt__strdup(path)) ? (o->npaths++, BT_OK) : BT_NOMEM;
}

bt_status bt_precompile_options_add_kernel(bt_precompile_options *o, const bt_kdesc *k)
{
    if (!o || !k || o->nkernels == MAX_KERNELS)
        return BT_INVALID_ARG;
    o->kernels[o->nkernels++] = k;
    return BT_OK;
}

bt_status bt_precompile_options_set_gpu(bt_precompile_options *o, const char *gpu)
{
    return o ? bt__strset(&o->gpu, gpu && *gpu ? gpu : NULL) : BT_INVALID_ARG;
}

bt_status bt_precompile_options_set_output(bt_precompile_options *o, const char *dir)
{
    return o ? bt__strset(&o->out, dir && *dir ? dir : NULL) : BT_INVALID_ARG;
}

bt_status bt_precompile_options_set_threads(bt_precompile_options *o, int threads)
{
    if (!o || threads < 0)
        return BT_INVALID_ARG;
    o->threads = threads;
    return BT_OK;
}

bt_status bt_precompile_options_set_prune(bt_precompile_options *o, int on)
{
    if (!o)
        return BT_INVALID_ARG;
    o->prune = on != 0;
    return BT_OK;
}

bt_status bt_precompile_options_set_progress(bt_precompile_options *o, int on)
{
    if (!o)
        return BT_INVALID_ARG;
    o->progress = on != 0;
    return BT_OK;
}

/* --- the devices and kernels entries need --------------------------------------------------- */

typedef struct target {
    char name[128]; /* the device name as wisdom spells it */
    bt_device *dev; /* NULL: why says why */
    char why[560];
} target;

typedef struct kslot {
    const target *t;
    char name[BT_NAME_MAX];
    bt_kdesc *own; /* a built-in loaded here */
    bt_kernel *kn; /* NULL: why says why */
    char why[400];
} kslot;

typedef struct ctx {
    const bt_precompile_options *o;
    bt_gpudb *db;
    bt__wisdom *w;
    target t[16];
    int nt;
    kslot k[128];
    int nk;
} ctx;

/* The compile-only device for wisdom's device name (a table row by that name, or o->gpu). */
static const target *target_of(ctx *C, const char *name)
{
    for (int i = 0; i < C->nt; i++)
        if (!strcmp(C->t[i].name, name))
            return &C->t[i];
    if (C->nt == (int)BT__ARRAY_LEN(C->t))
        return NULL;
    target *t = &C->t[C->nt++];
    snprintf(t->name, sizeof t->name, "%s", name);
    bt_diag d = {0};
    const bt_gpu *g = NULL;
    if (bt_gpudb_find(C->db, C->o->gpu ? C->o->gpu : name, &g, &d) != BT_OK) {
        snprintf(t->why, sizeof t->why, "no GPU of the hardware table for '%s' (--gpu names one): "
                 "%.250s", C->o->gpu ? C->o->gpu : name, d.msg);
        return t;
    }
    bt_status st = BT_UNSUPPORTED;
    bt__sbuf why = {0};
    for (const bt__backend_iface *const *b = bt__backends(); *b && st != BT_OK; b++) {
        if (!(*b)->offline_device)
            continue;
        bt_diag bd = {0};
        if ((st = bt__device_offline(*b, g, name, &t->dev, &bd)) != BT_OK)
            bt__sbuf_printf(&why, "%s%s: %s", why.len ? "; " : "", (*b)->name, bd.msg);
    }
    if (st != BT_OK)
        snprintf(t->why, sizeof t->why, "no backend compiles for %s without a device (%.250s)",
                 g->name, why.s ? why.s : "none can");
    bt__sbuf_free(&why);
    return t;
}

/* The kernel `name` on target t, made once: a kernel of o, else a built-in; in wisdom-only mode,
 * with no results store, reading C's wisdom alone. */
static kslot *kernel_of(ctx *C, const target *t, const char *name)
{
    for (int i = 0; i < C->nk; i++)
        if (C->k[i].t == t && !strcmp(C->k[i].name, name))
            return &C->k[i];
    if (C->nk == (int)BT__ARRAY_LEN(C->k))
        return NULL;
    kslot *s = &C->k[C->nk++];
    s->t = t;
    snprintf(s->name, sizeof s->name, "%s", name);
    const bt_kdesc *k = NULL;
    for (int i = 0; i < C->o->nkernels && !k; i++)
        if (!strcmp(bt_kdesc_name(C->o->kernels[i]), name))
            k = C->o->kernels[i];
    bt_diag d = {0};
    if (!k && bt_kdesc_builtin(name, &s->own, &d) != BT_OK) {
        snprintf(s->why, sizeof s->why, "not a built-in kernel (give its spec: --spec FILE)");
        return s;
    }
    if (!k)
        k = s->own;
    if (bt_kernel_create(t->dev, k, &s->kn, &d) != BT_OK) {
        snprintf(s->why, sizeof s->why, "%.390s", d.msg);
        return s;
    }
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.mode = BT_MODE_WISDOM_ONLY;
    o.store = "none";
    bt__kernel_set_opts(s->kn, &o);
    s->kn->wisdom_loaded = true; /* the door's wisdom: C's (its families read the door's) */
    s->kn->shipped_wisdom = C->w;
    return s;
}

static void kslot_free(kslot *s)
{
    if (s->kn) {
        s->kn->shipped_wisdom = NULL; /* C's */
        bt_kernel_destroy(s->kn);
    }
    bt_kdesc_destroy(s->own);
}

/* The problem of key (a JSON object) for k into *p. */
static bool problem_of(const bt_kdesc *k, const char *key, bt_problem *p, char *why, size_t size)
{
    bt_problem *q = NULL;
    json_t *o = json_loads(key, 0, NULL);
    bool ok = o && json_is_object(o) && bt_problem_create(k, &q) == BT_OK;
    const char *name;
    json_t *v;
    bt_diag d = {0};
    json_object_foreach(o, name, v) {
        if (!ok)
            break;
        if (json_is_string(v) && !strcmp(name, "dtype"))
            ok = bt_problem_set_dtype(q, json_string_value(v), &d) == BT_OK;
        else if (json_is_integer(v))
            ok = bt_problem_set(q, name, json_integer_value(v), &d) == BT_OK;
        else
            ok = false, snprintf(d.msg, sizeof d.msg, "'%s' is not an integer", name);
    }
    if (ok)
        *p = *q;
    else
        snprintf(why, size, "the key does not fit the spec: %.400s", d.msg[0] ? d.msg : key);
    bt_problem_destroy(q);
    json_decref(o);
    return ok;
}

/* What a first launch of l's key takes, as kernel.c looks it up: into l (pending) or why not. */
static void resolve(ctx *C, pline *l, const bt__measurement *m)
{
    const target *t = target_of(C, m->device_name);
    if (!t || !t->dev) {
        snprintf(l->why, sizeof l->why, "%s", t ? t->why : "too many devices");
        return;
    }
    kslot *s = kernel_of(C, t, m->kernel);
    if (!s || !s->kn) {
        snprintf(l->why, sizeof l->why, "%s", s ? s->why : "too many kernels");
        return;
    }
    bt_kernel *kn = s->kn;
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)kn->src_hash);
    /* a front door's own rows (its own kernel's, under its own source hash) are its self
     * family's, taken where a key goes to that family */
    bool door = kn->fam && strcmp(m->source_hash, hash) != 0;
    bt_problem p;
    if (!problem_of(kn->k, m->key_json, &p, l->why, sizeof l->why))
        return;
    /* a door's choice: under its hash, or one from before a family this key cannot run */
    const char *now[BT__MAX_FAMILIES] = {hash};
    int nnow = door ? bt__fam_hashes(kn, &p, now) : 1, i = 0;
    while (i < nnow && strcmp(m->source_hash, now[i]))
        i++;
    if (i == nnow) {
        snprintf(l->why, sizeof l->why, "tuned for another source of '%s' (hash %s, now %s): a "
                 "launch never takes it", m->kernel, m->source_hash, now[0]);
        return;
    }
    bt_config c;
    bool found = false, exact = false;
    bt_diag d = {0};
    int f = -1;
    if (kn->fam) /* the front door's stored choice comes first */
        bt__fam_stored(kn, &p, NULL, &f, &c, &found, &exact);
    if (door && found && exact) { /* built by that family */
        bt_problem fp;
        bt__family_problem(kn->k, f, &p, &fp);
        p = fp;
        kn = bt__fam_kernel(kn, f);
    } else if (door) {
        found = false;
    } else if (kn->fam && found) {
        snprintf(l->why, sizeof l->why, "a launch of this key takes the front door's choice "
                 "(family %s) instead", kn->k->fam[f].name);
        return;
    } else if (kn->fam && (bt__fam_unstored(kn, &p, &f, &d) != BT_OK || f < 0 ||
                           !kn->k->fam[f].self)) {
        snprintf(l->why, sizeof l->why, "a launch of this key goes to %s%s, not to the front "
                 "door's own kernel%s%.300s", f >= 0 ? "family " : "another family",
                 f >= 0 ? kn->k->fam[f].name : "", d.msg[0] ? ": " : "", d.msg);
        return;
    } else {
        bt_source src = BT_SOURCE_MODEL;
        if (bt__resolve(kn, &p, &c, &src, &found, &d) != BT_OK)
            found = false;
        found = found && (src == BT_SOURCE_USER_WISDOM || src == BT_SOURCE_SHIPPED_WISDOM);
    }
    if (!found) {
        snprintf(l->why, sizeof l->why, "a launch of this key does not take this entry%s%.400s",
                 d.msg[0] ? ": " : "", d.msg);
        return;
    }
    l->kn = kn;
    l->p = p;
    l->c = c;
    l->state = L_PENDING;
}

typedef struct job {
    pline **todo;
    size_t n;
    const char *dir;
    double t0;
    bool show;
    pthread_mutex_t mu; /* guards keys */
    uint64_t *keys;     /* the binaries claimed so far: entries that share one build it once */
    size_t nkeys;
} job;

static bool claim(uint64_t key, void *user)
{
    job *J = user;
    pthread_mutex_lock(&J->mu);
    bool mine = true;
    for (size_t i = 0; i < J->nkeys && mine; i++)
        mine = J->keys[i] != key;
    if (mine)
        J->keys[J->nkeys++] = key; /* room for every entry: one claim each */
    pthread_mutex_unlock(&J->mu);
    return mine;
}

static void build_one(void *arg, size_t i)
{
    job *J = arg;
    pline *l = J->todo[i];
    bool had = false;
    bt_diag d = {0};
    double t0 = bt__now();
    bt_status st = bt__build_precompile(l->kn, &l->p, &l->c, J->dir, claim, J, &had, &d);
    l->seconds = bt__now() - t0;
    l->state = st != BT_OK ? L_FAILED : had ? L_PRESENT : L_COMPILED;
    if (st != BT_OK)
        snprintf(l->why, sizeof l->why, "%.590s", d.msg);
}

static void progress(void *arg, size_t done, size_t total)
{
    job *J = arg;
    if (!J->show)
        return;
    double el = bt__now() - J->t0;
    fprintf(stderr, "\r\033[Kprecompile %zu/%zu  elapsed %.1f s  ETA %.0f s", done, total, el,
            done ? el / (double)done * (double)(total - done) : 0.0);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* Removes the binaries of dir ("<16 hex digits>.bin") whose key is not among keys[0..n): what
 * an older wisdom or kernel source left. Returns how many. */
static int prune(const char *dir, const uint64_t *keys, size_t n)
{
    DIR *D = opendir(dir);
    int removed = 0;
    for (struct dirent *de; D && (de = readdir(D)) != NULL;) {
        char *end;
        unsigned long long k = strtoull(de->d_name, &end, 16);
        if (end != de->d_name + 16 || strcmp(end, ".bin"))
            continue;
        bool keep = false;
        for (size_t i = 0; i < n && !keep; i++)
            keep = keys[i] == k;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (!keep && unlink(path) == 0)
            removed++;
    }
    if (D)
        closedir(D);
    return removed;
}

/* The entries of C->w into r's lines: each winner resolved as a launch would. */
static bt_status lines_of(ctx *C, bt_precompile_result *r)
{
    size_t n = 0;
    int rank;
    for (size_t i = 0; bt__wisdom_at(C->w, i, &rank); i++)
        n += rank == 0;
    r->l = calloc(n ? n : 1, sizeof *r->l);
    if (!r->l)
        return BT_NOMEM;
    const bt__measurement *m;
    for (size_t i = 0; (m = bt__wisdom_at(C->w, i, &rank)) != NULL; i++) {
        if (rank != 0)
            continue;
        pline *l = &r->l[r->n++];
        l->kernel = bt__strdup(m->kernel);
        l->device = bt__strdup(m->device_name);
        l->key = bt__strdup(m->key);
        l->config = bt__strdup(m->config_json);
        if (!l->kernel || !l->device || !l->key || !l->config)
            return BT_NOMEM;
        resolve(C, l, m);
    }
    return BT_OK;
}

bt_status bt_precompile(const bt_precompile_options *o, bt_precompile_result **out, bt_diag *diag)
{
    if (!out || !o)
        return BT_INVALID_ARG;
    *out = NULL;
    ctx C = {.o = o};
    bt_precompile_result *r = calloc(1, sizeof *r);
    if (!r)
        return BT_NOMEM;
    double t0 = bt__now();
    bt_status st = BT_OK;
    r->dir = o->out ? bt__strdup(o->out) : bt__kcache_user_dir();
    if (!r->dir) {
        bt__diag_set(diag, "the kernel cache is off (BLOCKTUNE_NO_KERNEL_CACHE): give an output "
                     "folder");
        st = BT_INVALID_ARG;
    }
    if (st == BT_OK && o->npaths) {
        if (!(C.w = bt__wisdom_new()))
            st = BT_NOMEM;
        for (int i = 0; st == BT_OK && i < o->npaths; i++)
            st = bt__wisdom_add_path(C.w, o->paths[i], diag);
    } else if (st == BT_OK) {
        st = bt__wisdom_load_shipped(&C.w, NULL, 0, diag);
    }
    if (st == BT_OK)
        st = bt_gpudb_load_default(&C.db, diag);
    const bt_gpu *g;
    if (st == BT_OK && o->gpu && (st = bt_gpudb_find(C.db, o->gpu, &g, diag)) != BT_OK)
        bt__diag_prefix(diag, "--gpu: ");
    if (st == BT_OK)
        st = bt__mkdirs(r->dir, diag);
    if (st == BT_OK)
        st = lines_of(&C, r);
    pline **todo = st == BT_OK ? calloc(r->n ? r->n : 1, sizeof *todo) : NULL;
    if (st == BT_OK && !todo)
        st = BT_NOMEM;
    size_t nt = 0;
    for (size_t i = 0; st == BT_OK && i < r->n; i++)
        if (r->l[i].state == L_PENDING)
            todo[nt++] = &r->l[i];
    job J = {todo, nt, r->dir, bt__now(), o->progress && isatty(2), PTHREAD_MUTEX_INITIALIZER,
             NULL, 0};
    if (st == BT_OK && !(J.keys = malloc(sizeof *J.keys * (nt ? nt : 1))))
        st = BT_NOMEM;
    if (st == BT_OK)
        bt__pool_run(nt, o->threads > 0 ? o->threads : bt__pool_cores(), build_one, progress,
                     &J);
    if (st == BT_OK && o->prune)
        r->pruned = prune(r->dir, J.keys, J.nkeys);
    free(J.keys);
    free(todo);
    for (int i = 0; i < C.nk; i++)
        kslot_free(&C.k[i]);
    for (int i = 0; i < C.nt; i++)
        bt_device_destroy(C.t[i].dev);
    bt__wisdom_free(C.w);
    bt_gpudb_destroy(C.db);
    r->seconds = bt__now() - t0;
    if (st != BT_OK) {
        bt_precompile_result_destroy(r);
        return st;
    }
    *out = r;
    return BT_OK;
}

/* --- the result ----------------------------------------------------------------------------- */

void bt_precompile_result_counts(const bt_precompile_result *r, int *compiled, int *present,
                                 int *skipped, int *failed)
{
    int n[5] = {0};
    for (size_t i = 0; r && i < r->n; i++)
        n[r->l[i].state]++;
    if (compiled)
        *compiled = n[L_COMPILED];
    if (present)
        *present = n[L_PRESENT];
    if (skipped)
        *skipped = n[L_SKIPPED];
    if (failed)
        *failed = n[L_FAILED];
}

const char *bt_precompile_result_dir(const bt_precompile_result *r) { return r ? r->dir : NULL; }

bt_status bt_precompile_result_write(const bt_precompile_result *r, FILE *f, int all)
{
    if (!r || !f)
        return BT_INVALID_ARG;
    static const char *const name[] = {"skipped", "pending", "compiled", "present", "FAILED"};
    for (size_t i = 0; i < r->n; i++) {
        const pline *l = &r->l[i];
        if (!all && (l->state == L_COMPILED || l->state == L_PRESENT))
            continue;
        /* without all, entries skipped for the same reason are one line with their count */
        size_t same = 0;
        bool first = true;
        for (size_t j = 0; !all && l->state == L_SKIPPED && j < r->n; j++)
            if (r->l[j].state == L_SKIPPED && !strcmp(r->l[j].why, l->why)) {
                first = first && j >= i;
                same++;
            }
        if (!first)
            continue;
        if (same > 1)
            fprintf(f, "%-8s %zu entries, the first %s on %s, %s: %s", name[l->state], same,
                    l->kernel, l->device, l->key, l->config);
        else
            fprintf(f, "%-8s %s on %s, %s: %s", name[l->state], l->kernel, l->device, l->key,
                    l->config);
        if (l->state == L_COMPILED)
            fprintf(f, " (%.2f s)", l->seconds);
        if (l->why[0])
            fprintf(f, "\n         %s", l->why);
        fputc('\n', f);
    }
    int c, p, s, x;
    bt_precompile_result_counts(r, &c, &p, &s, &x);
    fprintf(f, "%zu wisdom winners: %d compiled, %d there already (built before or for another "
               "entry), %d skipped, %d failed in %.1f s; binaries in %s", r->n, c, p, s, x,
            r->seconds, r->dir);
    if (r->pruned)
        fprintf(f, "; %d binaries of no entry removed", r->pruned);
    fputc('\n', f);
    return ferror(f) ? BT_IO : BT_OK;
}

void bt_precompile_result_destroy(bt_precompile_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->l[i].kernel);
        free(r->l[i].device);
        free(r->l[i].key);
        free(r->l[i].config);
    }
    free(r->l);
    free(r->dir);
    free(r);
}
