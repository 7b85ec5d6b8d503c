/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record.c — the engine's side of the results store: canonical keys, configs read back from
 * JSON, entries to and from store rows (statuses by their names, status.c; a stored row is used
 * only when it passed the store's checks and its config belongs to the kernel's space), the
 * kernel's store and wisdom (opened lazily, once), and what a tune's result says about storing:
 * every write that failed, or a store that was refused; the note of what runs on the device now
 * (read by a supervisor after a crash) and a tune that only reports what the store holds.
 */
#include "engine/record.h"

#include "core/family.h"
#include "core/util.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bt__problem_keyvals(const bt_kdesc *k, const bt_problem *p, bt__keyvals *kv)
{
    memset(kv, 0, sizeof *kv);
    for (int i = 0; i < k->nkey && kv->n < BT__KEY_MAX; i++) {
        int s = k->key_slots[i] - k->slot_problem0;
        snprintf(kv->names[kv->n], BT_NAME_MAX, "%s", k->problem_names[s]);
        kv->v[kv->n++] = p->values[s];
    }
    if (k->key_dtype)
        snprintf(kv->dtype, sizeof kv->dtype, "%s", bt__dtype_name(p->dtype));
}

bool bt__config_from_json(const bt_kdesc *k, const char *text, bt_config *c)
{
    json_t *o = json_loads(text ? text : "", 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return false;
    }
    memset(c, 0, sizeof *c);
    c->nparams = k->space.nparams;
    bool ok = json_object_size(o) == (size_t)k->space.nparams;
    for (int i = 0; ok && i < k->space.nparams; i++) {
        json_t *v = json_object_get(o, k->space.params[i].name);
        ok = json_is_integer(v) && bt__space_value_pos(&k->space, i, json_integer_value(v)) >= 0;
        if (ok)
            c->v[i] = json_integer_value(v);
    }
    json_decref(o);
    return ok;
}

bool bt__config_from_stored(const bt_kdesc *k, const char *text, const char *source, bt_config *c)
{
    if (bt__config_from_json(k, text, c))
        return true;
    fprintf(stderr, "blocktune: ignoring the config %.300s found in %s for %s: it is not a config "
                    "of the kernel's space (every parameter, each with one of its values); the "
                    "key is tuned instead\n", text ? text : "(none)", source, k->name);
    return false;
}

void bt__device_arch(const bt_device_info *d, char *buf, size_t size)
{
    if (d->props.cc_major)
        snprintf(buf, size, "sm_%d%d", d->props.cc_major, d->props.cc_minor);
    else
        snprintf(buf, size, "%.40s", d->api_version);
}

const char *bt__device_key(const bt_device_info *d)
{
    return d->uuid[0] ? d->uuid : d->name;
}

void bt__record_ident(const bt_result *r, const char *key, bt__store_ident *id)
{
    id->kernel = r->k->name;
    id->source_hash = r->source_hash;
    id->options = r->k->options ? r->k->options : "";
    id->device = bt__device_key(&r->dev);
    id->key = key;
}

/* The row's extra_json (malloc'd; NULL: none): the MPI rank's provenance when measured there,
 * and "screening": true when the median is a screening one (the short budget, not re-measured in
 * the finals), so that a later tune or replay reading the row knows which budget it came from. */
static char *row_extra(const bt__entry *e, bool *nomem)
{
    const char *remote = e->remote ? e->remote->extra_json : NULL;
    *nomem = false;
    if (!e->st.screened || e->status != BT__CS_OK) {
        char *copy = remote ? bt__strdup(remote) : NULL;
        *nomem = remote && !copy;
        return copy;
    }
    json_t *x = remote ? json_loads(remote, 0, NULL) : json_object();
    if (!json_is_object(x)) {
        json_decref(x);
        x = json_object();
    }
    json_object_set_new(x, "screening", json_true());
    char *out = json_dumps(x, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(x);
    *nomem = !out;
    return out;
}

bool bt__row_screened(const char *extra_json)
{
    if (!extra_json || !strstr(extra_json, "\"screening\""))
        return false;
    json_t *x = json_loads(extra_json, 0, NULL);
    bool yes = json_is_true(json_object_get(x, "screening"));
    json_decref(x);
    return yes;
}

bt_status bt__record_put(bt__store *s, bt_result *r, const bt__entry *e, bool winner,
                         bt_diag *diag)
{
    bt__keyvals kv;
    bt__problem_keyvals(r->k, &r->problem, &kv);
    char key[512];
    bt__keyvals_format(&kv, key, sizeof key);
    char *kj = bt__keyvals_json(&kv);
    char *cj = bt__config_json(&r->k->space, &e->ev.cfg);
    char arch[48];
    bt__device_arch(&r->dev, arch, sizeof arch);
    bt__measurement m;
    bt__measurement_init(&m);
    m.kernel = (char *)r->k->name;
    m.source_hash = (char *)r->source_hash;
    m.options = r->k->options ? r->k->options : (char *)"";
    m.device_name = (char *)r->dev.name;
    m.device_uuid = (char *)r->dev.uuid;
    m.device_arch = arch;
    m.driver = (char *)r->dev.driver_version;
    /* a Triton kernel's module names its compiler ("Triton 3.6.0"), else the device's */
    m.compiler = e->res.compiler[0] ? (char *)e->res.compiler : (char *)r->dev.compiler_version;
    m.blocktune_version = (char *)bt_version();
    m.key = key;
    m.key_json = kj;
    m.config_json = cj;
    m.status = (char *)bt__cfg_status_name(e->status);
    m.error = e->error;
    m.median_ms = e->st.median;
    m.p20_ms = e->st.p20;
    m.p80_ms = e->st.p80;
    m.min_ms = e->st.min;
    m.mad_ms = e->st.mad;
    m.reps = e->st.n;
    m.max_rel_err = e->ver.max_rel_err;
    m.regs = e->res.regs_per_thread;
    m.local_bytes = e->res.local_bytes;
    m.smem_bytes = e->ev.smem ? e->ev.smem : e->ev.dyn_smem;
    m.compile_ms = e->compile_s * 1e3;
    m.mean_ms = e->st.n > 0 && e->st.mean > 0 ? e->st.mean : -1; /* -1: not known */
    if (e->remote) { /* measured on an MPI rank's device (engine/mpi_root.c) */
        m.device_name = (char *)e->remote->name;
        m.device_uuid = (char *)e->remote->uuid;
        m.driver = (char *)e->remote->driver;
        m.compiler = (char *)e->remote->compiler;
    }
    bool nomem;
    char *extra = row_extra(e, &nomem);
    m.extra_json = extra;
    bt_status st = !(kj && cj && !nomem) ? BT_NOMEM
                   : winner ? bt__store_put_winner(s, &m, r->margin, r->tie, NULL, diag)
                            : bt__store_put(s, &m, diag);
    free(kj);
    free(cj);
    free(extra);
    if (st == BT_OK) {
        r->stored++;
    } else if (r->store_failed++ == 0) {
        snprintf(r->store_error, sizeof r->store_error, "%s%.1000s",
                 winner ? "the winner: " : "", diag && diag->msg[0] ? diag->msg : bt_strerror(st));
    }
    return st;
}

bool bt__record_get(bt__store *s, const bt_result *r, bt__entry *e)
{
    bt__keyvals kv;
    bt__problem_keyvals(r->k, &r->problem, &kv);
    char key[512];
    bt__keyvals_format(&kv, key, sizeof key);
    char *cj = bt__config_json(&r->k->space, &e->ev.cfg);
    if (!cj)
        return false;
    bt__store_ident id;
    bt__record_ident(r, key, &id);
    bt__measurement m;
    bt__measurement_init(&m);
    bt_status st = bt__store_get(s, &id, cj, &m, NULL);
    free(cj);
    if (st != BT_OK)
        return false;
    bt__cfg_status cs = bt__cfg_status_parse(m.status);
    bool used = cs != BT__CS_PENDING && cs != BT__CS_SKIPPED;
    if (used) {
        e->status = cs;
        e->from_store = true;
        if (m.error && m.error[0]) {
            free(e->error);
            e->error = bt__strdup(m.error);
        }
        e->st.median = m.median_ms;
        e->st.p20 = m.p20_ms;
        e->st.p80 = m.p80_ms;
        e->st.min = m.min_ms;
        e->st.mad = m.mad_ms;
        e->st.mean = m.mean_ms > 0 ? m.mean_ms : 0; /* rows before schema 2 have none */
        e->st.n = (int)m.reps;
        e->st.screened = cs == BT__CS_OK && bt__row_screened(m.extra_json);
        e->ver.max_rel_err = m.max_rel_err;
    }
    bt__measurement_clear(&m);
    return used;
}

bt__store *bt__kernel_store(bt_kernel *kn, const bt__tune_opts *o)
{
    if (kn->store_tried)
        return kn->store;
    kn->store_tried = true;
    const char *path = o ? o->store : NULL;
    if (path && !strcmp(path, "none"))
        return NULL;
    bt_diag d = {0};
    if (bt__store_open(path, &kn->store, &d) != BT_OK) {
        /* tuning goes on without a store; say so once here, and in every tune's result */
        fprintf(stderr, "blocktune: results store not used, nothing will be kept: %s\n", d.msg);
        snprintf(kn->store_error, sizeof kn->store_error, "%s", d.msg);
        kn->store = NULL;
    }
    return kn->store;
}

bt__store *bt__record_store(bt_kernel *kn, const bt__tune_opts *o, bt_result *r)
{
    bt__store *s = bt__kernel_store(kn, o);
    if (s) {
        snprintf(r->store_path, sizeof r->store_path, "%s", bt__store_path(s));
    } else if (kn->store_error[0]) {
        r->store_refused = true;
        char *def = o && o->store ? NULL : bt__store_default_path();
        snprintf(r->store_path, sizeof r->store_path, "%s",
                 o && o->store ? o->store : def ? def : "");
        free(def);
        snprintf(r->store_error, sizeof r->store_error, "%s", kn->store_error);
    }
    return s;
}

bool bt__result_store_note(const bt_result *r, char *buf, size_t size)
{
    if (r->store_refused)
        snprintf(buf, size, "NOT STORED: the results store %s was not used, so nothing of this "
                            "tune is kept (a re-run measures everything again): %s",
                 r->store_path, r->store_error);
    else if (r->store_failed)
        snprintf(buf, size, "NOT STORED: %d of %d writes to the results store %s failed (those "
                            "measurements are lost; a re-run measures them again); the first: %s",
                 r->store_failed, r->store_failed + r->stored, r->store_path, r->store_error);
    else
        return false;
    return true;
}

json_t *bt__result_store_json(const bt_result *r)
{
    if (!r->store_path[0])
        return json_null(); /* --store none: nothing was meant to be kept */
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "path", json_string(r->store_path));
    json_object_set_new(o, "used", json_boolean(!r->store_refused));
    json_object_set_new(o, "stored", json_integer(r->stored));
    json_object_set_new(o, "failed", json_integer(r->store_failed));
    json_object_set_new(o, "error", r->store_error[0] ? json_string(r->store_error) : json_null());
    return o;
}

void bt__kernel_wisdom(bt_kernel *kn, const bt__wisdom **user, const bt__wisdom **shipped)
{
    if (kn->door) /* a front door's family: the door's, parsed once for all of them */
        kn = kn->door;
    pthread_mutex_lock(&kn->wisdom_lock);
    if (!kn->wisdom_loaded) {
        kn->wisdom_loaded = true;
        /* the documents that name this kernel or, for a front door, one of its families */
        const char *names[1 + BT__MAX_FAMILIES];
        size_t n = 0;
        names[n++] = kn->k->name;
        for (int f = 0; f < kn->k->nfam && n < BT__ARRAY_LEN(names); f++)
            names[n++] = kn->k->fam[f].name;
        bt_diag d = {0};
        if (bt__wisdom_load_user(&kn->user_wisdom, names, n, &d) != BT_OK)
            bt__decision_log("user wisdom not loaded: %s", d.msg);
        if (bt__wisdom_load_shipped(&kn->shipped_wisdom, names, n, &d) != BT_OK)
            bt__decision_log("shipped wisdom not loaded: %s", d.msg);
    }
    *user = kn->user_wisdom;
    *shipped = kn->shipped_wisdom;
    pthread_mutex_unlock(&kn->wisdom_lock);
}

static bt__inflight own_note;
static bt__inflight *note = &own_note;

void bt__inflight_share(bt__inflight *page)
{
    note = page ? page : &own_note;
}

void bt__inflight_note(bt__inflight_kind kind, bool stored, const char *fmt, ...)
{
    note->kind = BT__INFLIGHT_NONE;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note->what, sizeof note->what, fmt, ap);
    va_end(ap);
    note->stored = stored;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    note->kind = kind;
}

void bt__inflight_clear(void)
{
    note->kind = BT__INFLIGHT_NONE;
}

const bt__inflight *bt__inflight_get(void)
{
    return note;
}

void bt__kernel_stored_only(bt_kernel *kn, const char *why)
{
    if (kn)
        snprintf(kn->stored_only, sizeof kn->stored_only, "%s", why ? why : "");
}
