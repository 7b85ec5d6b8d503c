/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topts.c — the public tune options object (bt_tune_options): made with every default, one
 * setter per option with its range checked, copied (strings included) where a kernel keeps it.
 * The engine reads the bt__tune_opts inside (topts.h).
 */
#include "engine/topts.h"

#include "core/util.h"
#include "store/store.h"

#include <float.h>
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
    o->rounds = 8;
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

/* The bounds of the per-config budgets (blocktune tune --help, docs/tune-json.md): warm-up and
 * measurement each at most a minute per config, a run's timeout at most an hour. */
#define MAX_BUDGET_MS 60000.0
#define MAX_TIMEOUT_S 3600.0

bt_status bt__tune_opts_check(const bt__tune_opts *o, bt_diag *diag)
{
    const struct {
        const char *name, *flag, *what, *unit;
        double v, lo, hi;
        bool lo_open;
    } b[] = {
        {"warmup_ms", "--warmup-ms", "the warm-up budget per config", "ms", o->warmup_ms, 0,
         MAX_BUDGET_MS, false},
        {"rep_ms", "--rep-ms", "the measurement budget per config", "ms", o->rep_ms, 0,
         MAX_BUDGET_MS, false},
        {"screen_ms", "--screen-ms", "the screening budget per config (< 0: rep_ms / 8)", "ms",
         o->screen_ms, -INFINITY, MAX_BUDGET_MS, true},
        {"timeout_s", "--timeout", "a run's timeout", "s", o->timeout_s, 0, MAX_TIMEOUT_S, true},
        {"time_limit_s", "--time-limit", "the time limit", "s", o->time_limit_s, 0, 1e9, false},
        {"within_pct", "--within", "the target's tolerance", "%", o->within_pct, 0, 1e6, false},
    };
    for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
        if (b[i].v <= b[i].hi && (b[i].lo_open ? b[i].v > b[i].lo : b[i].v >= b[i].lo))
            continue; /* (NaN is neither) */
        bt__diag_set(diag, "%s (%s) is %g %s: %s is %s %g %s and at most %g %s", b[i].name,
                     b[i].flag, b[i].v, b[i].unit, b[i].what, b[i].lo_open ? "above" : "at least",
                     b[i].lo, b[i].unit, b[i].hi, b[i].unit);
        return BT_INVALID_ARG;
    }
    if (!isfinite(o->target_ms)) {
        bt__diag_set(diag, "target_ms (--target-ms) is %g: a time in ms, or < 0 for the roofline",
                     o->target_ms);
        return BT_INVALID_ARG;
    }
    return BT_OK;
}

double bt__screen_ms(const bt__tune_opts *o)
{
    double s = o->screen_ms < 0 ? o->rep_ms / 8 : o->screen_ms;
    return s > 0 && s < o->rep_ms ? s : 0;
}

/* A number in [lo, hi] (NaN never is). */
static bool in_range(double v, double lo, double hi) { return v >= lo && v <= hi; }

/* A setter refused v for field (its options with v in place: t): why, into o->error, in the words
 * of bt__tune_opts_check where it has the field's bounds. */
static bt_status refuse(bt_tune_options *o, const bt__tune_opts *t, const char *field, double v,
                        double lo, double hi)
{
    bt_diag d = {0};
    if (bt__tune_opts_check(t, &d) == BT_OK || !strstr(d.msg, field))
        snprintf(d.msg, sizeof d.msg, "%s is %g: it is at least %g and at most %g", field, v, lo,
                 hi);
    snprintf(o->error, sizeof o->error, "%.290s", d.msg);
    return BT_INVALID_ARG;
}

#define SETTER(field, type, lo, hi)                                                                \
    bt_status bt_tune_options_set_##field(bt_tune_options *o, type v)                             \
    {                                                                                              \
        if (!o)                                                                                    \
            return BT_INVALID_ARG;                                                                 \
        if (!in_range((double)v, lo, hi)) {                                                        \
            bt__tune_opts t = o->o;                                                                \
            t.field = v;                                                                           \
            return refuse(o, &t, #field, (double)v, lo, hi);                                      \
        }                                                                                          \
        o->o.field = v;                                                                            \
        o->error[0] = '\0';                                                                        \
        return BT_OK;                                                                              \
    }
SETTER(warmup_ms, double, 0, MAX_BUDGET_MS)
SETTER(rep_ms, double, 0, MAX_BUDGET_MS)
SETTER(screen_ms, double, 0, MAX_BUDGET_MS)
SETTER(budget, int, 0, 1e9)
SETTER(time_limit_s, double, 0, 1e9)
SETTER(exhaustive_max, int, 0, 1e9)
SETTER(target_ms, double, -DBL_MAX, DBL_MAX) /* finite, as the tune checks */
SETTER(within_pct, double, 0, 1e6)
SETTER(threads, int, 0, 4096)
SETTER(verify_boundary, int, 0, 1)
SETTER(top_k, int, 1, 1000)
SETTER(rounds, int, 1, 1000)
SETTER(progress, int, 0, 1)
SETTER(graph, int, 0, 1)
#undef SETTER

/* (0, MAX_TIMEOUT_S]: what the engine accepts */
bt_status bt_tune_options_set_timeout_s(bt_tune_options *o, double s)
{
    if (!o)
        return BT_INVALID_ARG;
    if (!(s > 0 && s <= MAX_TIMEOUT_S)) {
        bt__tune_opts t = o->o;
        t.timeout_s = s;
        return refuse(o, &t, "timeout_s", s, 0, MAX_TIMEOUT_S);
    }
    o->o.timeout_s = s;
    o->error[0] = '\0';
    return BT_OK;
}

const char *bt_tune_options_error(const bt_tune_options *o)
{
    return o ? o->error : "";
}

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
