/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.c — the device layer: loads each registered backend once per process, as far as a call
 * needs (opening or wrapping a CUDA device loads CUDA alone; a listing, the default device or an
 * unknown id loads them all), lists the devices of those that load (with the default marked), and
 * opens devices by id into bt_device handles that carry the backend vtable, its context and the
 * opened backend device.
 *
 * Backends are never unloaded: their contexts live until exit, so a bt_device can be used from any
 * thread at any time without reference counting on the registry.
 */
#include "backends/device.h"

#include "core/hwdb.h"
#include "core/util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct bt_device {
    const bt__backend_iface *iface;
    void *ctx;
    bt__bdev *bdev;
    bt_device_info info;
    /* a device wrapped around the caller's objects (bt_device_wrap_*): what a reopen wraps again */
    bool wrapped;
    int ordinal;
    void *native[3];
    /* backend devices given back by reopens (device_release), freed with the device: a launch in
     * flight in another thread may still hold one */
    bt__bdev **released;
    int nreleased;
    bool offline; /* bt__device_offline: compiles only; bdev is freed by offline_free */
};

/* One registered backend after its load attempt. */
typedef struct backend_slot {
    const bt__backend_iface *iface;
    void *ctx;         /* NULL when it did not load */
    char reason[1024]; /* why it did not load (or why some device was skipped) */
} backend_slot;

/* One listed device. */
typedef struct device_slot {
    backend_slot *backend;
    bt_device_info info;
} device_slot;

/* The registry, under g_mu: backends are loaded in the table's order and only as far as a call
 * needs (opening "cuda:0" loads CUDA alone, not OpenCL's driver too), so g_devices grows. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static backend_slot *g_backends;
static int g_nbackends;
static int g_nloaded; /* backends 0 .. g_nloaded-1 have been loaded */
static device_slot *g_devices;
static size_t g_ndevices;
static bt_status g_status = BT_OK; /* BT_NOMEM when the registry itself could not be built */

void bt__device_merge_table(bt_device_info *info)
{
    /* The device's name picks a hardware-table row by canonical name or alias only (a loose match
     * could give an "NVIDIA L40" the L40S's peaks). Fields the device left 0 and every peak come
     * from the row; what the device reported wins. */
    bt_gpudb *db = NULL;
    if (bt_gpudb_load_default(&db, NULL) != BT_OK)
        return;
    const bt_gpu *row = bt__gpudb_find_exact(db, info->name);
    if (row) {
        bt_gpu *p = &info->props;
        snprintf(info->table_row, sizeof info->table_row, "%s", row->name);
#define FILL(f)                                                                                    \
    if (!p->f)                                                                                     \
        p->f = row->f;
        FILL(cc_major) FILL(cc_minor) FILL(sm_count) FILL(warp_size) FILL(max_threads_per_sm)
        FILL(max_warps_per_sm) FILL(max_blocks_per_sm) FILL(max_threads_per_block)
        FILL(regs_per_sm) FILL(regs_per_block) FILL(max_regs_per_thread) FILL(reg_alloc_unit)
        FILL(smem_per_sm) FILL(smem_per_block) FILL(smem_per_block_optin)
        FILL(smem_reserved_per_block) FILL(l2_bytes) FILL(mem_bytes) FILL(mem_bw_gbps)
        FILL(clock_mhz)
#undef FILL
        if (!p->arch[0])
            snprintf(p->arch, sizeof p->arch, "%s", row->arch);
        for (int i = 0; i < BT_PEAK__COUNT; i++)
            p->peak_tflops[i] = row->peak_tflops[i];
        snprintf(p->source, sizeof p->source, "device; peaks from the hardware table row %s",
                 row->name);
    }
    bt_gpudb_destroy(db);
}

/* Loads backend s and reads its devices' info into g_devices. */
static void load_one(backend_slot *s)
{
    if (s->iface->api_version != BT__BACKEND_API_VERSION) {
        snprintf(s->reason, sizeof s->reason,
                 "built for backend API version %d, this library speaks %d",
                 s->iface->api_version, BT__BACKEND_API_VERSION);
        return;
    }
    bt_diag d = {0};
    bt_status st = s->iface->load(&s->ctx, &d);
    if (st != BT_OK) {
        s->ctx = NULL;
        snprintf(s->reason, sizeof s->reason, "%.1000s", d.msg[0] ? d.msg : bt_strerror(st));
        return;
    }
    int count = s->iface->device_count(s->ctx);
    for (int i = 0; i < count; i++) {
        device_slot *grown = realloc(g_devices, (g_ndevices + 1) * sizeof *grown);
        if (!grown) {
            g_status = BT_NOMEM;
            return;
        }
        g_devices = grown;
        device_slot *ds = &g_devices[g_ndevices];
        memset(ds, 0, sizeof *ds);
        bt_diag dd = {0};
        st = s->iface->device_info(s->ctx, i, &ds->info, &dd);
        if (st != BT_OK) {
            /* Listed no further; the reason stays for a listing with no device. */
            snprintf(s->reason, sizeof s->reason, "device %d: %.900s", i,
                     dd.msg[0] ? dd.msg : bt_strerror(st));
            continue;
        }
        ds->backend = s;
        /* The layer owns id/backend/index so that every backend spells them alike. */
        snprintf(ds->info.id, sizeof ds->info.id, "%s:%d", s->iface->name, i);
        snprintf(ds->info.backend, sizeof ds->info.backend, "%s", s->iface->name);
        ds->info.index = i;
        ds->info.is_default = 0;
        bt__device_merge_table(&ds->info);
        g_ndevices++;
    }
}

static bool any_gpu(void)
{
    for (size_t i = 0; i < g_ndevices; i++)
        if (g_devices[i].info.is_gpu)
            return true;
    return false;
}

/* The backends' table (made once; nothing loaded). Caller holds g_mu. */
static void table_locked(void)
{
    if (!g_backends && g_status == BT_OK) {
        const bt__backend_iface *const *table = bt__backends();
        int n = 0;
        while (table[n])
            n++;
        g_backends = calloc(n ? (size_t)n : 1, sizeof *g_backends);
        if (!g_backends) {
            g_status = BT_NOMEM;
            return;
        }
        for (int b = 0; b < n; b++)
            g_backends[b].iface = table[b];
        g_nbackends = n;
    }
}

/* Loads the backends up to index `upto` (-1: all) in the table's order, and on while none loaded
 * has a GPU (the default device, the first GPU, else the first device, may lie further on);
 * marks the default once it is known. Caller holds g_mu. */
static bt_status load_upto_locked(int upto)
{
    table_locked();
    if (upto < 0 || upto >= g_nbackends)
        upto = g_nbackends - 1;
    while (g_status == BT_OK && g_nloaded < g_nbackends && (g_nloaded <= upto || !any_gpu()))
        load_one(&g_backends[g_nloaded++]);
    bool known = any_gpu() || g_nloaded == g_nbackends;
    size_t def = 0;
    for (size_t i = 0; i < g_ndevices; i++)
        g_devices[i].info.is_default = 0;
    for (size_t i = 0; i < g_ndevices; i++)
        if (g_devices[i].info.is_gpu) {
            def = i;
            break;
        }
    if (known && g_ndevices)
        g_devices[def].info.is_default = 1;
    return g_status;
}

/* The table index of the backend a device id starts with ("cuda" of "cuda:1"), -1 when it names
 * none (the default device, an unknown name: every backend is loaded). Caller holds g_mu. */
static int backend_of_id(const char *id)
{
    table_locked();
    if (!id)
        return -1;
    size_t len = strcspn(id, ":");
    for (int i = 0; i < g_nbackends; i++)
        if (strlen(g_backends[i].iface->name) == len &&
            !strncasecmp(g_backends[i].iface->name, id, len))
            return i;
    return -1;
}

static bt_status ensure_loaded(void)
{
    pthread_mutex_lock(&g_mu);
    bt_status st = load_upto_locked(-1);
    pthread_mutex_unlock(&g_mu);
    return st;
}

/* Writes "name: reason; name: reason" for the backends that did not load into diag->msg. */
static void backend_reasons(bt_diag *diag)
{
    if (!diag)
        return;
    bt__sbuf b = {0};
    for (int i = 0; i < g_nbackends; i++)
        if (!g_backends[i].ctx || g_backends[i].reason[0])
            bt__sbuf_printf(&b, "%s%s: %s", b.len ? "; " : "", g_backends[i].iface->name,
                            g_backends[i].reason[0] ? g_backends[i].reason : "no device");
    if (g_nbackends == 0)
        bt__sbuf_printf(&b, "no backend is built into this library");
    bt__diag_set(diag, "%s", b.s ? b.s : "");
    bt__sbuf_free(&b);
}

struct bt_device_list {
    bt_device_info *infos;
    size_t n;
};

size_t bt_device_list_count(const bt_device_list *l) { return l ? l->n : 0; }

const bt_device_info *bt_device_list_at(const bt_device_list *l, size_t i)
{
    return l && i < l->n ? &l->infos[i] : NULL;
}

void bt_device_list_destroy(bt_device_list *l)
{
    if (!l)
        return;
    free(l->infos);
    free(l);
}

bt_status bt_devices_list(bt_device_list **out, bt_diag *diag)
{
    if (!out) {
        bt__diag_set(diag, "bt_devices_list: NULL out");
        return BT_INVALID_ARG;
    }
    *out = NULL;
    pthread_mutex_lock(&g_mu);
    bt_status st = load_upto_locked(-1);
    if (st != BT_OK) {
        pthread_mutex_unlock(&g_mu);
        bt__diag_set(diag, "out of memory while loading the backends");
        return st;
    }
    if (diag)
        bt__diag_clear(diag);
    backend_reasons(diag);
    bt_device_list *l = calloc(1, sizeof *l);
    if (!l || (g_ndevices && !(l->infos = malloc(g_ndevices * sizeof *l->infos)))) {
        pthread_mutex_unlock(&g_mu);
        free(l);
        return BT_NOMEM;
    }
    for (size_t i = 0; i < g_ndevices; i++)
        l->infos[i] = g_devices[i].info;
    l->n = g_ndevices;
    pthread_mutex_unlock(&g_mu);
    *out = l;
    return BT_OK;
}

/* The device slot an id names, NULL when none. */
static device_slot *find_device(const char *id)
{
    if (!id || !*id || bt__streq_nocase(id, "default")) {
        for (size_t i = 0; i < g_ndevices; i++)
            if (g_devices[i].info.is_default)
                return &g_devices[i];
        return NULL;
    }
    for (size_t i = 0; i < g_ndevices; i++)
        if (bt__streq_nocase(id, g_devices[i].info.id))
            return &g_devices[i];
    /* A bare backend name: its first device. */
    for (size_t i = 0; i < g_ndevices; i++)
        if (bt__streq_nocase(id, g_devices[i].info.backend))
            return &g_devices[i];
    return NULL;
}

bt_status bt_device_open(const char *id, bt_device **out, bt_diag *diag)
{
    if (!out) {
        bt__diag_set(diag, "bt_device_open: NULL out");
        return BT_INVALID_ARG;
    }
    *out = NULL;
    pthread_mutex_lock(&g_mu);
    bt_status st = load_upto_locked(backend_of_id(id)); /* "cuda:0": CUDA alone */
    device_slot *ds = st == BT_OK ? find_device(id) : NULL;
    if (st == BT_OK && !ds && g_nloaded < g_nbackends) /* a backend of the id found none */
        st = load_upto_locked(-1), ds = st == BT_OK ? find_device(id) : NULL;
    if (st != BT_OK) {
        pthread_mutex_unlock(&g_mu);
        bt__diag_set(diag, "out of memory while loading the backends");
        return st;
    }
    if (g_ndevices == 0) {
        backend_reasons(diag);
        pthread_mutex_unlock(&g_mu);
        bt__diag_prefix(diag, "no devices: ");
        return BT_NO_DEVICE;
    }
    if (!ds) {
        bt__sbuf b = {0};
        for (size_t i = 0; i < g_ndevices; i++)
            bt__sbuf_printf(&b, "%s%s (%s)", i ? ", " : "", g_devices[i].info.id,
                            g_devices[i].info.name);
        pthread_mutex_unlock(&g_mu);
        bt__diag_set(diag, "unknown device '%s'; the devices are: %s", id, b.s ? b.s : "");
        bt__sbuf_free(&b);
        return BT_NO_DEVICE;
    }
    bt_device *d = calloc(1, sizeof *d);
    if (!d) {
        pthread_mutex_unlock(&g_mu);
        return BT_NOMEM;
    }
    d->iface = ds->backend->iface;
    d->ctx = ds->backend->ctx;
    d->info = ds->info;
    pthread_mutex_unlock(&g_mu);
    st = d->iface->device_open(d->ctx, d->info.index, &d->bdev, diag);
    if (st != BT_OK) {
        bt__diag_prefix(diag, "%s: ", d->info.id);
        free(d);
        return st;
    }
    *out = d;
    return BT_OK;
}

bt_status bt__device_offline(const bt__backend_iface *I, const bt_gpu *g, const char *name,
                             bt_device **out, bt_diag *diag)
{
    *out = NULL;
    if (!I->offline_device || !I->offline_target) {
        bt__diag_set(diag, "the %s backend cannot compile without a device", I->name);
        return BT_UNSUPPORTED;
    }
    bt__offline_target t;
    bt_status st = I->offline_target(g, NULL, NULL, &t, diag);
    if (st != BT_OK)
        return st;
    bt_device *d = calloc(1, sizeof *d);
    if (!d)
        return BT_NOMEM;
    if ((st = I->offline_device(g, &d->bdev, diag)) != BT_OK) {
        free(d);
        return st;
    }
    d->iface = I;
    d->offline = true;
    bt_device_info *info = &d->info;
    snprintf(info->id, sizeof info->id, "%s:offline", I->name);
    snprintf(info->backend, sizeof info->backend, "%s", I->name);
    snprintf(info->name, sizeof info->name, "%s", name && *name ? name : g->name);
    snprintf(info->compiler_version, sizeof info->compiler_version, "%s %s", t.compiler,
             t.version);
    snprintf(info->table_row, sizeof info->table_row, "%s", g->name);
    info->is_gpu = 1;
    info->props = *g;
    *out = d;
    return BT_OK;
}

void bt_device_destroy(bt_device *d)
{
    if (!d)
        return;
    if (d->offline) {
        d->iface->offline_free(d->bdev);
        free(d);
        return;
    }
    if (d->bdev) /* NULL after a reopen that failed */
        d->iface->device_close(d->bdev);
    for (int i = 0; i < d->nreleased; i++)
        d->iface->device_close(d->released[i]);
    free(d->released);
    free(d);
}

bt_status bt__device_reopen(bt_device *d, bt_diag *diag)
{
    bt__bdev *old = d->bdev;
    if (old && d->iface->device_release) { /* given back now, freed with the device */
        bt__bdev **r = realloc(d->released, sizeof *r * (size_t)(d->nreleased + 1));
        if (!r)
            return BT_NOMEM;
        d->released = r;
        d->iface->device_release(old);
        r[d->nreleased++] = old;
    } else if (old) {
        d->iface->device_close(old);
    }
    __atomic_store_n(&d->bdev, NULL, __ATOMIC_RELEASE);
    int idx;
    bt__bdev *nb = NULL;
    bt_status st = d->wrapped
                       ? d->iface->device_wrap(d->ctx, d->ordinal, d->native, &nb, &idx, diag)
                       : d->iface->device_open(d->ctx, d->info.index, &nb, diag);
    __atomic_store_n(&d->bdev, st == BT_OK ? nb : NULL, __ATOMIC_RELEASE);
    return st;
}

/* Wraps the caller's objects with backend `name`'s device_wrap (see blocktune.h). */
static bt_status device_wrap(const char *name, int ordinal, void *const native[3], bt_device **out,
                             bt_diag *diag)
{
    if (!out) {
        bt__diag_set(diag, "bt_device_wrap_%s: NULL out", name);
        return BT_INVALID_ARG;
    }
    *out = NULL;
    pthread_mutex_lock(&g_mu);
    bt_status st = load_upto_locked(backend_of_id(name));
    pthread_mutex_unlock(&g_mu);
    if (st != BT_OK)
        return st;
    backend_slot *b = NULL; /* the slots stay where they are; a loaded one is not changed */
    for (int i = 0; i < g_nbackends; i++)
        if (!strcmp(g_backends[i].iface->name, name))
            b = &g_backends[i];
    if (!b || !b->ctx) {
        bt__diag_set(diag, "the %s backend did not load: %s", name,
                     b && b->reason[0] ? b->reason : "not built in");
        return BT_NO_BACKEND;
    }
    if (!b->iface->device_wrap || !b->iface->buf_wrap || !b->iface->launch_on) {
        bt__diag_set(diag, "the %s backend cannot wrap a caller's device", name);
        return BT_UNSUPPORTED;
    }
    bt_device *d = calloc(1, sizeof *d);
    if (!d)
        return BT_NOMEM;
    int idx = -1;
    st = b->iface->device_wrap(b->ctx, ordinal, native, &d->bdev, &idx, diag);
    pthread_mutex_lock(&g_mu);
    device_slot *ds = NULL;
    for (size_t i = 0; st == BT_OK && i < g_ndevices; i++)
        if (g_devices[i].backend == b && g_devices[i].info.index == idx)
            ds = &g_devices[i];
    if (ds)
        d->info = ds->info;
    pthread_mutex_unlock(&g_mu);
    if (st == BT_OK && !ds) {
        b->iface->device_close(d->bdev);
        bt__diag_set(diag, "%s device %d is not listed (bt_devices_list)", name, idx);
        st = BT_NO_DEVICE;
    }
    if (st != BT_OK) {
        bt__diag_prefix(diag, "wrapping a %s device: ", name);
        free(d);
        return st;
    }
    d->iface = b->iface;
    d->ctx = b->ctx;
    d->wrapped = true;
    d->ordinal = idx;
    memcpy(d->native, native, sizeof d->native);
    *out = d;
    return BT_OK;
}

bt_status bt_device_wrap_cuda(int ordinal, void *cu_context, bt_device **out, bt_diag *diag)
{
    void *native[3] = {cu_context, NULL, NULL};
    if (!cu_context && ordinal < 0) {
        bt__diag_set(diag, "bt_device_wrap_cuda: a context or a device ordinal >= 0");
        if (out)
            *out = NULL;
        return BT_INVALID_ARG;
    }
    return device_wrap("cuda", ordinal, native, out, diag);
}

bt_status bt_device_wrap_opencl(void *cl_context, void *cl_device_id, void *cl_command_queue,
                                bt_device **out, bt_diag *diag)
{
    void *native[3] = {cl_context, cl_device_id, cl_command_queue};
    return device_wrap("opencl", -1, native, out, diag);
}

int bt_device_is_wrapped(const bt_device *d) { return d && d->wrapped; }

int bt__device_lost(const bt_device *d)
{
    return d->iface->device_lost && d->bdev && d->iface->device_lost(d->bdev);
}

const bt_device_info *bt_device_get_info(const bt_device *d)
{
    return d ? &d->info : NULL;
}

const bt__backend_iface *bt__device_iface(const bt_device *d)
{
    return d ? d->iface : NULL;
}

bt__bdev *bt__device_bdev(const bt_device *d)
{
    return d ? __atomic_load_n(&d->bdev, __ATOMIC_ACQUIRE) : NULL;
}

int bt__device_backends_loaded(void)
{
    pthread_mutex_lock(&g_mu);
    int n = g_nloaded;
    pthread_mutex_unlock(&g_mu);
    return n;
}

int bt__device_backend_count(void)
{
    ensure_loaded();
    return g_nbackends;
}

int bt__device_backend_status(int i, const char **name, const char **reason)
{
    ensure_loaded();
    if (i < 0 || i >= g_nbackends)
        return 0;
    if (name)
        *name = g_backends[i].iface->name;
    if (reason)
        *reason = g_backends[i].ctx ? NULL : g_backends[i].reason;
    return 1;
}
