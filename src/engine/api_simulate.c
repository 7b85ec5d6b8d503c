/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_simulate.c — the public calls that judge search strategies on recorded spaces
 * (bt_simulation_*): options with setters, a space added from a Kernel Tuner cache file or from a
 * results store's measurements of one kernel and key, each chosen strategy run on it at once
 * (search/simulate.c), and the writers of simulate_report.c. What `blocktune simulate` does.
 */
#include "engine/api_store.h"
#include "engine/simulation.h"

#include "core/util.h"
#include "store/ktcache.h"
#include "store/ktinterop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bt_status bt_simulation_create(bt_simulation **out)
{
    if (!out)
        return BT_INVALID_ARG;
    bt_simulation *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    s->o = (bt__sim_options){.runs = 100, .seed = 1, .jobs = 1};
    *out = s;
    return BT_OK;
}

void bt_simulation_destroy(bt_simulation *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->spaces[i].name);
    free(s->spaces);
    free(s->strategy);
    free(s);
}

bt_status bt_simulation_set_strategy(bt_simulation *s, const char *name)
{
    if (!s)
        return BT_INVALID_ARG;
    if (name && !bt__streq_nocase(name, "all") && !bt__strategy_find(name))
        return BT_INVALID_ARG;
    char *copy = name && !bt__streq_nocase(name, "all") ? bt__strdup(name) : NULL;
    if (name && !bt__streq_nocase(name, "all") && !copy)
        return BT_NOMEM;
    free(s->strategy);
    s->strategy = copy;
    return BT_OK;
}

bt_status bt_simulation_set_runs(bt_simulation *s, uint64_t runs)
{
    if (!s || runs == 0 || runs > 1000000)
        return BT_INVALID_ARG;
    s->o.runs = runs;
    return BT_OK;
}

bt_status bt_simulation_set_budget(bt_simulation *s, uint64_t budget)
{
    if (!s)
        return BT_INVALID_ARG;
    s->o.budget = budget;
    return BT_OK;
}

bt_status bt_simulation_set_seed(bt_simulation *s, uint64_t seed)
{
    if (!s)
        return BT_INVALID_ARG;
    s->o.seed = seed;
    return BT_OK;
}

bt_status bt_simulation_set_time_limit_s(bt_simulation *s, double seconds)
{
    if (!s || !(seconds >= 0) || seconds > 1e12)
        return BT_INVALID_ARG;
    s->o.time_limit_s = seconds;
    return BT_OK;
}

bt_status bt_simulation_set_jobs(bt_simulation *s, int jobs)
{
    if (!s || jobs < 1 || jobs > 64)
        return BT_INVALID_ARG;
    s->o.jobs = jobs;
    return BT_OK;
}

bt_status bt_simulation_set_full(bt_simulation *s, int on)
{
    if (!s)
        return BT_INVALID_ARG;
    s->o.full = on != 0;
    return BT_OK;
}

size_t bt_simulation_count(const bt_simulation *s) { return s ? s->n : 0; }

/* Runs the chosen strategies on the recorded space of c and adds it under name. */
static bt_status run_space(bt_simulation *s, const bt__ktcache *c, const char *name,
                           bt_diag *diag)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        bt__sim_space *g = realloc(s->spaces, cap * sizeof *g);
        if (!g)
            return BT_NOMEM;
        s->spaces = g, s->cap = cap;
    }
    bt__sim_space *sp = &s->spaces[s->n];
    memset(sp, 0, sizeof *sp);
    snprintf(sp->kernel, sizeof sp->kernel, "%s", c->kernel_name);
    snprintf(sp->device, sizeof sp->device, "%s", c->device_name);
    bt__recspace rs;
    bt__ktcache_recspace(c, &rs);
    bt__sim_space_info_of(&rs, &sp->info);
    size_t nall = 0;
    const bt__strategy *const *all = bt__strategies(&nall);
    for (size_t i = 0; i < nall && sp->nrows < BT__SIM_MAX_STRATEGIES; i++) {
        if (s->strategy && !bt__streq_nocase(s->strategy, all[i]->name))
            continue;
        bt__sim_row *r = &sp->rows[sp->nrows++];
        bt_diag d = BT_DIAG_INIT;
        r->s = all[i];
        r->st = bt__simulate(&rs, all[i], &s->o, &r->stats, NULL, &d);
        if (r->st == BT_UNSUPPORTED) {
            snprintf(r->why, sizeof r->why, "%s: %.1100s", all[i]->name, d.msg);
        } else if (r->st != BT_OK) {
            bt__diag_set(diag, "%s", d.msg);
            return r->st;
        }
    }
    if (!(sp->name = bt__strdup(name)))
        return BT_NOMEM;
    s->n++;
    return BT_OK;
}

bt_status bt_simulation_add_file(bt_simulation *s, const char *path, bt_diag *diag)
{
    if (!s || !path)
        return BT_INVALID_ARG;
    bt__ktcache *c = NULL;
    bt_status st = bt__ktcache_load(path, &c, diag);
    if (st == BT_OK)
        st = run_space(s, c, path, diag);
    bt__ktcache_free(c);
    return st;
}

bt_status bt_simulation_add_store(bt_simulation *s, bt_store *store, const char *kernel,
                                  const char *key, const char *device, const char *name,
                                  bt_diag *diag)
{
    if (!s || !store || !kernel || !key)
        return BT_INVALID_ARG;
    bt__ktcache *c = NULL;
    int nrows = 0;
    bt_status st = bt__kt_from_store(bt__store_handle(store), kernel, device, key, &c, &nrows,
                                     diag);
    if (st == BT_OK) {
        char *label = NULL;
        if (!name) {
            const char *p = bt_store_path(store);
            size_t len = strlen(p) + 7;
            if ((label = malloc(len)))
                snprintf(label, len, "store:%s", p);
        }
        st = name || label ? run_space(s, c, name ? name : label, diag) : BT_NOMEM;
        free(label);
    }
    bt__ktcache_free(c);
    return st;
}
