/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.c — a key the store already holds, tuned again: when the store has this key's winner
 * (same kernel, source hash, options, device and key) and a row for as many of the plan's valid
 * configs as the search may measure (its budget, or all of them), the tune measures nothing new:
 * no data, no reference, no compile or run. The strategy runs as it would and each proposal is
 * answered with the stored outcome (a round whose configs are not all stored ends the replay:
 * what follows would be new measurements); the winner is the stored one, with the margin and tie
 * decided when it was selected (the runner-up a full-budget row before a screening one). The
 * report says what was replayed and that nothing ran here.
 * --mode retune (BT_MODE_RETUNE) measures everything again.
 */
#include "engine/tune_ctx.h"

#include "core/util.h"
#include "engine/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_cfg(const bt_config *a, const bt_config *b)
{
    return a->nparams == b->nparams &&
           !memcmp(a->v, b->v, sizeof a->v[0] * (size_t)(a->nparams > 0 ? a->nparams : 0));
}

/* The key's stored winner (its config into *cfg, margin and tie); false when there is none or
 * its row did not measure. */
static bool stored_winner(bt__tctx *T, bt_config *cfg, double *margin, bool *tie)
{
    bt_result *r = T->r;
    bt__keyvals kv;
    bt__problem_keyvals(r->k, &r->problem, &kv);
    char key[512];
    bt__keyvals_format(&kv, key, sizeof key);
    bt__store_ident id;
    bt__record_ident(r, key, &id);
    bt__winner w;
    if (bt__store_get_winner(T->store, &id, &w, NULL) != BT_OK)
        return false;
    bool ok = w.m.status && bt__cfg_status_parse(w.m.status) == BT__CS_OK &&
              bt__config_from_json(r->k, w.m.config_json, cfg);
    *margin = w.margin;
    *tie = w.tie != 0;
    bt__winner_clear(&w);
    return ok;
}

bool bt__replay_ready(bt__tctx *T)
{
    bt_result *r = T->r;
    if (!T->store || T->o.mode != BT_MODE_TUNE || T->caller || T->kn->stored_only[0] ||
        !stored_winner(T, &T->replay_cfg, &T->replay_margin, &T->replay_tie))
        return false;
    size_t need = r->budget && r->budget < r->plan->ncand ? r->budget : r->plan->ncand, held = 0;
    bool winner_valid = false;
    for (size_t i = 0; i < r->plan->ncand && (held < need || !winner_valid); i++) {
        bt__entry probe = {.ev = r->plan->cand[i]};
        probe.ev.reasons = NULL;
        bool is_winner = same_cfg(&probe.ev.cfg, &T->replay_cfg);
        winner_valid |= is_winner;
        if ((held < need || is_winner) && bt__record_get(T->store, r, &probe))
            held++;
        free(probe.error);
    }
    T->replay = winner_valid && held >= need;
    return T->replay;
}

/* The entry of the stored winner among the replayed ones, appended from the store when the
 * replay ended before the strategy proposed it; -1 when it cannot be. */
static int winner_entry(bt__tctx *T)
{
    bt_result *r = T->r;
    for (size_t i = 0; i < r->n; i++)
        if (same_cfg(&r->e[i].ev.cfg, &T->replay_cfg))
            return r->e[i].status == BT__CS_OK ? (int)i : -1;
    for (size_t c = 0; c < r->plan->ncand; c++) {
        if (!same_cfg(&r->plan->cand[c].cfg, &T->replay_cfg))
            continue;
        if (r->n >= T->cap) {
            size_t ncap = T->cap ? T->cap * 2 : 8;
            bt__entry *ne = realloc(r->e, sizeof *ne * ncap);
            if (!ne)
                return -1;
            r->e = ne;
            T->cap = ncap;
        }
        bt__entry *e = &r->e[r->n];
        memset(e, 0, sizeof *e);
        e->ev = r->plan->cand[c];
        e->ev.reasons = NULL;
        e->model_rank = c + 1;
        if (!bt__record_get(T->store, r, e) || e->status != BT__CS_OK) {
            free(e->error);
            return -1;
        }
        r->from_store++;
        r->replayed++;
        return (int)r->n++;
    }
    return -1;
}

void bt__replay_select(bt__tctx *T)
{
    bt_result *r = T->r;
    r->winner = winner_entry(T);
    if (r->winner < 0)
        return;
    /* the runner-up as select.c had it: a finalist (a full-budget row) before a row whose median
     * is a screening one, then the fastest median */
    const bt__entry *w = &r->e[r->winner], *ru = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const bt__entry *e = &r->e[i];
        if ((int)i == r->winner || e->status != BT__CS_OK)
            continue;
        if (!ru || (ru->st.screened && !e->st.screened) ||
            (ru->st.screened == e->st.screened && e->st.median < ru->st.median))
            ru = e;
    }
    if (!ru)
        return;
    r->runner_up = (int)(ru - r->e);
    r->margin = T->replay_margin;
    r->tie = T->replay_tie;
    /* the noise band of the two rows, as select.c draws it */
    double na = 2 * 1.4826 * w->st.mad / w->st.median, nb = 2 * 1.4826 * ru->st.mad / ru->st.median;
    r->noise = fmax(fmax(isfinite(na) ? na : 0, isfinite(nb) ? nb : 0), 0.005);
}
