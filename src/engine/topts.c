/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topts.c — the public tune options object (bt_tune_options): made with every default, one
 * setter per option with its range checked, copied (strings included) where a kernel keeps it.
 * The engine reads the bt__tune_opts inside (topts.h).
 */
#include "engine/topts.h"

#include "core/util.h"
#include "store/store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void bt__tune_opts_default(bt__tune_opts *o)
{
    memset(o, 0, sizeof *o);
    o->warmup_ms = 25;
    o->rep_ms = 100;
    o->screen_ms = -1; /* rep_ms / 8 */
    o->verify_boundary = 1;
    o->top_k = 3;
    o->rounds = 5;
    o->seed = 1;
    o->timeout_s = 10;
    o->mode = bt__tune_mode_from_env();
}

bt_status bt_tune_options_create(bt_tune_options **out)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return BT_NOMEM;
    bt__tune_opts_default(&(*out)->o);
    return BT_OK;
}

void bt_tune_options_destroy(bt_tune_options *o)
{
    if (!o)
        return;
    free(o->strategy);
    free(o->rules);
    free(o->store);
    free(o);
}

/* *slot = a copy of s (NULL stays NULL), and the engine's pointer at it. */
static bt_status set_string(char **slot, const char **field, const char *s)
{
    char *copy = NULL;
    if (s && !(copy = bt__strdup(s)))
        return BT_NOMEM;
    free(*slot);
    *slot = copy;
    *field = copy;
    return BT_OK;
}

bt_status bt__tune_options_clone(const bt_tune_options *src, bt_tune_options **dst)
{
    bt_tune_options *c = NULL;
    if (bt_tune_options_create(&c))
        return BT_NOMEM;
    c->o = src->o;
    c->o.strategy = c->o.rules = c->o.store = NULL;
    if (set_string(&c->strategy, &c->o.strategy, src->o.strategy) ||
        set_string(&c->rules, &c->o.rules, src->o.rules) ||
        set_string(&c->store, &c->o.store, src->o.store)) {
        bt_tune_options_destroy(c);
        return BT_NOMEM;
    }
    bt_tune_options_destroy(*dst);
    *dst = c;
    return BT_OK;
}

double bt__screen_ms(const bt__tune_opts *o)
{
    double s = o->screen_ms < 0 ? o->rep_ms / 8 : o->screen_ms;
    return s > 0 && s < o->rep_ms ? s : 0;
}

/* A number in [lo, hi] (NaN never is). */
static bool in_range(double v, double lo, double hi) { return v >= lo && v <= hi; }

#define SETTER(field, type, lo, hi)                                                                \
    bt_status bt_tune_options_set_##field(bt_tune_options *o, type v)                             \
    {                                                                                              \
        if (!o || !in_range((double)v, lo, hi))                                                    \
            return BT_INVALID_ARG;                                                                 \
        o->o.field = v;                                                                            \
        return BT_OK;                                                                              \
    }
SETTER(warmup_ms, double, 0, 60000)
SETTER(rep_ms, double, 0, 60000)
SETTER(screen_ms, double, 0, 60000)
SETTER(budget, int, 0, 1e9)
SETTER(time_limit_s, double, 0, 1e9)
SETTER(exhaustive_max, int, 0, 1e9)
SETTER(target_ms, double, -INFINITY, 1e9)
SETTER(within_pct, double, 0, 1e6)
SETTER(threads, int, 0, 4096)
SETTER(verify_boundary, int, 0, 1)
SETTER(top_k, int, 1, 1000)
SETTER(rounds, int, 1, 1000)
SETTER(progress, int, 0, 1)
SETTER(timeout_s, double, 0.001, 3600)
SETTER(graph, int, 0, 1)
#undef SETTER

bt_status bt_tune_options_set_seed(bt_tune_options *o, uint64_t seed)
{
    if (!o)
        return BT_INVALID_ARG;
    o->o.seed = seed;
    return BT_OK;
}

bt_status bt_tune_options_set_mode(bt_tune_options *o, bt_tune_mode mode)
{
    if (!o || (mode != BT_MODE_TUNE && mode != BT_MODE_WISDOM_ONLY && mode != BT_MODE_RETUNE))
        return BT_INVALID_ARG;
    o->o.mode = mode;
    return BT_OK;
}

bt_status bt_tune_options_set_strategy(bt_tune_options *o, const char *name)
{
    return o ? set_string(&o->strategy, &o->o.strategy, name) : BT_INVALID_ARG;
}

bt_status bt_tune_options_set_rules(bt_tune_options *o, const char *rules)
{
    return o ? set_string(&o->rules, &o->o.rules, rules) : BT_INVALID_ARG;
}

bt_status bt_tune_options_set_store(bt_tune_options *o, const char *path)
{
    return o ? set_string(&o->store, &o->o.store, path) : BT_INVALID_ARG;
}

bt_status bt_tune_options_set_progress_cb(bt_tune_options *o, bt_progress_fn fn, void *user)
{
    if (!o)
        return BT_INVALID_ARG;
    o->o.progress_cb = fn;
    o->o.progress_user = user;
    return BT_OK;
}

#ifdef BT__ABI_GROWN
bt_status bt_tune_options_set_grown_knob(bt_tune_options *o, int v)
{
    return o && v >= 0 ? BT_OK : BT_INVALID_ARG;
}
#endif
