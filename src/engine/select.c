/* SPDX-License-Identifier: Apache-2.0 */
/*
 * select.c — choosing the winner: the configs with the best first medians (the finalists, and
 * when the tune screened every config at a short budget those whose screening median is within
 * the screening noise of the cut) are loaded again and re-measured at the full budgets
 * interleaved A B C A B C ... so that drift hits them alike (one decisively slower than the leader
 * leaves after the first round, one clearly slower after the second: the data have decided
 * about it); a
 * config whose first median beats the winner's interleaved one meets it in a rematch (a
 * challenger); the winner's margin over the runner-up is compared with the noise band (a tie when
 * the margin is smaller). Also the time the finals need, which the search leaves them.
 */
#include "engine/tune_ctx.h"

#include "core/util.h"
#include "engine/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many of the best first medians are re-measured interleaved (top_k, 3 by default, at most
 * 16). */
static int finalists_wanted(const bt__tune_opts *o)
{
    int K = o->top_k > 0 ? o->top_k : 3;
    return K > 16 ? 16 : K;
}

/* What re-measuring one config in the finals costs, in seconds: its warm-up + rep, with room for
 * the flushes and launches around them. */
static double remeasure_cost_s(const bt__tune_opts *o)
{
    return (o->warmup_ms + o->rep_ms) * 1.5e-3;
}

/* What is left of the time limit after what came before the search (data, reference, baseline)
 * and the time kept for the final selection, which re-measures the finalists and up to two
 * challengers (and reloads them). At least a sliver, so that the first round always runs. */
double bt__search_time_limit(const bt__tune_opts *o, double spent)
{
    if (o->time_limit_s <= 0)
        return 0;
    double finals = (finalists_wanted(o) + 2) * remeasure_cost_s(o) + 0.1;
    return fmax(o->time_limit_s - spent - finals, 1e-6);
}

static int cmp_entry_median(const void *a, const void *b)
{
    const bt__entry *const *x = a, *const *y = b;
    double mx = (*x)->st.median, my = (*y)->st.median;
    if (mx != my)
        return mx < my ? -1 : 1;
    return *x < *y ? -1 : *x > *y; /* equal medians: the one proposed first (the same order in
                                       every tune, whatever qsort does with ties) */
}

/* The finals' order: by the margin behind the leader on the rounds each shared with it — not by
 * median: the leader's later rounds may drift (a hot GPU's clock falling), so the median of one
 * that left early does not compare with the medians of those that stayed — so the leader, those
 * that left tied with it, those that stayed, those that left slower; on equal margins one that
 * stayed first, then by median. */
static int cmp_finals(const void *a, const void *b)
{
    const bt__entry *const *x = a, *const *y = b;
    if ((*x)->lead_margin != (*y)->lead_margin)
        return (*x)->lead_margin < (*y)->lead_margin ? -1 : 1;
    if ((*x)->left_rounds != (*y)->left_rounds)
        return (*x)->left_rounds ? 1 : -1;
    return cmp_entry_median(a, b);
}

/* The configs that measured, fastest first median first. */
typedef struct finals {
    bt__entry **ok;
    size_t nok;
    size_t loaded; /* ok[0..loaded) are loaded again */
} finals;

/* Loads ok[loaded..want) again for the final measurements; one that no longer loads drops out. */
static void load_finalists(bt__tctx *T, finals *F, size_t want)
{
    while (F->loaded < F->nok && F->loaded < want) {
        bt__load(T, F->ok[F->loaded], true);
        if (F->ok[F->loaded]->status == BT__CS_OK) {
            F->loaded++;
            continue;
        }
        memmove(&F->ok[F->loaded], &F->ok[F->loaded + 1],
                sizeof *F->ok * (F->nok - F->loaded - 1));
        F->nok--;
    }
}

/* The noise band decide() reads between two medians (relative to a's): twice the larger
 * relative MAD as a standard deviation, at least 0.5 %. */
static double noise_band(const bt__stats *a, const bt__stats *b)
{
    double na = 2 * 1.4826 * a->mad / a->median, nb = 2 * 1.4826 * b->mad / b->median;
    return fmax(fmax(na, nb), 0.005);
}

/* The standard error of a median of s->n runs: 1.2533 sigma / sqrt(n), sigma = 1.4826 MAD. */
static double median_se(const bt__stats *s)
{
    return s->n > 0 ? 1.2533 * 1.4826 * s->mad / sqrt((double)s->n) : INFINITY;
}

/* Whether s is slower than the leader l by more than k noise bands (k = 1: decide() could not
 * call them tied) and by more than 2k standard errors of the difference of the two medians (so
 * more runs would not reverse it), each with 5 runs or more. k = 1: clearly slower; k = 3:
 * decisively, so that after one interleaved round drift between the two measurements could not
 * make it. */
static bool slower(const bt__stats *s, const bt__stats *l, double k)
{
    if (s->n < 5 || l->n < 5 || !(l->median > 0))
        return false;
    double d = s->median - l->median, se_s = median_se(s), se_l = median_se(l);
    return d > k * noise_band(l, s) * l->median && d > 2 * k * sqrt(se_s * se_s + se_l * se_l);
}

/* Whether s is tied with the leader l, decidedly: the difference of their medians, two standard
 * errors of it added, is inside their noise band, so more runs would still call them tied
 * (decide() could not call either faster). Each with 5 runs or more. */
static bool tied(const bt__stats *s, const bt__stats *l)
{
    if (s->n < 5 || l->n < 5 || !(l->median > 0))
        return false;
    double d = fabs(s->median - l->median), se_s = median_se(s), se_l = median_se(l);
    return d + 2 * sqrt(se_s * se_s + se_l * se_l) < noise_band(l, s) * l->median;
}

/* e's margin behind the leader, statistics s against l's, and their noise band. */
static void set_lead(bt__entry *e, const bt__stats *s, const bt__stats *l)
{
    e->lead_margin = (s->median - l->median) / l->median;
    e->lead_noise = noise_band(l, s);
}

/* Re-measures f[0..n) interleaved, A B C A B C ... over up to R rounds of 1/R of the budgets
 * each, and replaces each one's statistics with the pooled samples. After the first round a
 * config decisively slower than the leader (the fastest pooled median) leaves, from the second
 * on one clearly slower, or one decidedly tied with it: the data have decided about it, and its
 * statistics are those of the rounds it ran; the rounds end when only the leader is left, after
 * two rounds at least (*ran: the rounds that ran).
 * Returns how many left early, *ntied (when given) how many of them tied. */
static int interleave(bt__tctx *T, bt__entry **f, int n, int R, int *ran, int *ntied)
{
    double *pool_t[16] = {0}, est[16] = {0}; /* each one's run cost, estimated once */
    int pool_n[16] = {0};
    bool out[16] = {false};
    bt__stats st[16];
    int left = 0, round = 0;
    if (n > 16)
        n = 16;
    for (int i = 0; i < n; i++)
        f[i]->left_rounds = f[i]->left_tied = false;
    if (ntied)
        *ntied = 0;
    /* the leader runs two rounds at least (its median pools two benches), alone when every
     * other finalist has left */
    for (; round < R && (n == 1 || left < n - 1 || round < 2); round++) {
        for (int i = 0; i < n; i++) {
            if (out[i])
                continue;
            T->cur_e = f[i];
            double *smp = NULL;
            int ns = 0;
            bt__stats tmp;
            bt_diag d = {0};
            if (bt__bench_est(&T->ops, T->o.warmup_ms / R, T->o.rep_ms / R,
                              T->o.timeout_s * 1e3, &est[i], &tmp, &smp, &ns, &d) == BT_OK &&
                smp) {
                double *grown = realloc(pool_t[i], sizeof(double) * (size_t)(pool_n[i] + ns));
                if (grown) {
                    memcpy(grown + pool_n[i], smp, sizeof(double) * (size_t)ns);
                    pool_t[i] = grown;
                    pool_n[i] += ns;
                }
            }
            free(smp);
        }
        if (round == R - 1)
            continue;
        /* the pooled statistics so far (the pools' order does not matter: sorted in place) */
        int lead = -1;
        for (int i = 0; i < n; i++) {
            st[i].n = 0;
            if (pool_n[i] >= 5 && !out[i]) {
                bt__stats_compute(pool_t[i], pool_n[i], &st[i]);
                if (lead < 0 || st[i].median < st[lead].median)
                    lead = i;
            }
        }
        for (int i = 0; i < n && lead >= 0; i++) {
            if (i == lead || out[i] || !st[i].n)
                continue;
            bool tie = round && tied(&st[i], &st[lead]);
            if (!tie && !slower(&st[i], &st[lead], round ? 1 : 3))
                continue;
            out[i] = true;
            left++;
            f[i]->left_rounds = true;
            f[i]->left_tied = tie;
            if (tie && ntied)
                (*ntied)++;
            set_lead(f[i], &st[i], &st[lead]);
        }
    }
    if (ran)
        *ran = round;
    int lead = -1;
    for (int i = 0; i < n; i++) {
        if (pool_n[i] >= 5)
            bt__stats_compute(pool_t[i], pool_n[i], &f[i]->st);
        free(pool_t[i]);
        if (!out[i] && (lead < 0 || f[i]->st.median < f[lead]->st.median))
            lead = i;
    }
    for (int i = 0; i < n && lead >= 0; i++) /* the stayers' margins at the end */
        if (!out[i])
            set_lead(f[i], &f[i]->st, &f[lead]->st);
    return left;
}

/* A first measurement can be lucky (a kernel whose times come in two modes): while the best
 * config not re-measured has a first median below the winner's — its interleaved one, or its own
 * first one when that is lower (a GPU that warmed between the first measurements and the finals,
 * its clock falling at its power cap, raises every interleaved median: a config is compared with
 * the winner's measurement of the same kind) — it meets the winner in an interleaved rematch (at
 * most 8 such challengers), so that the winner is not slower than a config measured alike; with a
 * time limit, only while the tune has time left for it. Returns the number of finalists,
 * challengers included. */
static int challenge(bt__tctx *T, finals *F, int K, int R)
{
    for (int extra = 0; extra < 8; extra++) {
        /* a rematch re-measures two configs: not past the time limit */
        if (T->o.time_limit_s > 0 &&
            bt__now() - T->t0 + 2 * remeasure_cost_s(&T->o) > T->o.time_limit_s)
            break;
        load_finalists(T, F, (size_t)K + 1);
        if ((size_t)K >= F->nok ||
            F->ok[K]->st.median >= fmin(F->ok[0]->st.median, F->ok[0]->first_median))
            break;
        bt__entry *pair[2] = {F->ok[0], F->ok[K]};
        int tie = 0;
        T->r->left_early += interleave(T, pair, 2, R, NULL, &tie);
        T->r->left_tied += tie;
        double x = pair[0]->lead_margin; /* > 0: the challenger beat the leader by it */
        for (int j = 1; j < K && x > 0; j++) /* the others' margins, behind the new leader */
            F->ok[j]->lead_margin = (1 + F->ok[j]->lead_margin) * (1 + x) - 1;
        K++;
        T->r->challengers++;
        qsort(F->ok, (size_t)K, sizeof *F->ok, cmp_finals);
    }
    return K;
}

/* Half the width of the interval a screening median stands for (ms): two standard errors of
 * the median, and at least decide()'s 0.5 % noise floor (drift between measurements taken one
 * after another). */
static double screen_halfwidth(const bt__stats *s)
{
    return fmax(2 * median_se(s), 0.005 * s->median);
}

/* Configs whose screening median is within the screening noise of the cut (the slowest of the K
 * finalists) join the finals: their median is above the cut's by at most the two half-widths
 * combined (sqrt(wc^2 + wk^2), two standard errors of the difference), so the screening cannot
 * tell which side of the cut they are on. They are moved to ok[K..] (the others stay fastest
 * first behind them), at most to 16 finalists and, with a time limit, while the tune has time to
 * re-measure them. Returns the number of finalists. */
static int promote(bt__tctx *T, finals *F, int K)
{
    const bt__stats *cut = &F->ok[K - 1]->st;
    double wk = screen_halfwidth(cut);
    bt__entry **rest = malloc(sizeof *rest * (F->nok - (size_t)K + 1));
    if (!rest)
        return K;
    size_t nrest = 0;
    int n = K;
    for (size_t j = (size_t)K; j < F->nok; j++) {
        bt__entry *e = F->ok[j];
        double wc = screen_halfwidth(&e->st);
        bool near = (e->st.screened || cut->screened) &&
                    e->st.median - cut->median <= sqrt(wc * wc + wk * wk);
        bool time = T->o.time_limit_s <= 0 ||
                    bt__now() - T->t0 + (n + 1) * remeasure_cost_s(&T->o) <= T->o.time_limit_s;
        if (near && n < 16 && time) {
            F->ok[n++] = e;
            T->r->promoted++;
            continue;
        }
        T->r->not_promoted += near;
        rest[nrest++] = e;
    }
    memcpy(&F->ok[n], rest, sizeof *rest * nrest);
    free(rest);
    return n;
}

/* The winner, the runner-up, the margin between them and the noise band (twice the larger
 * relative MAD as a standard deviation, at least 0.5 %): a tie when the margin is inside it. */
static void decide(bt_result *r, const finals *F, int K)
{
    r->winner = (int)(F->ok[0] - r->e);
    if (F->nok < 2)
        return;
    r->runner_up = (int)(F->ok[1] - r->e);
    if (K > 1) {
        /* the margin measured on the rounds the runner-up shared with the leader */
        r->margin = F->ok[1]->lead_margin;
        r->noise = F->ok[1]->lead_noise;
    } else {
        double a = F->ok[0]->st.median, b = F->ok[1]->st.median;
        r->margin = (b - a) / a;
        r->noise = noise_band(&F->ok[0]->st, &F->ok[1]->st);
    }
    r->tie = r->margin < r->noise;
}

/* The finalists' interleaved statistics replace their first ones in the store; the winner row. */
static void store_finals(bt__tctx *T, const finals *F)
{
    bt_result *r = T->r;
    for (int f = 0; f < r->finalists; f++)
        if (F->ok[f] != &r->e[r->winner])
            bt__record(T, F->ok[f]);
    bt_diag d = {0};
    if (r->winner >= 0 && bt__record_put(T->store, r, &r->e[r->winner], true, &d) != BT_OK)
        fprintf(stderr, "blocktune: the winner could not be stored: %s\n", d.msg);
}

void bt__select(bt__tctx *T)
{
    bt_result *r = T->r;
    finals F = {calloc(r->n + 1, sizeof *F.ok), 0, 0};
    for (size_t i = 0; i < r->n && F.ok; i++)
        if (r->e[i].status == BT__CS_OK) {
            F.ok[F.nok++] = &r->e[i];
            r->screened += r->e[i].st.screened;
        }
    if (F.ok && F.nok)
        qsort(F.ok, F.nok, sizeof *F.ok, cmp_entry_median);
    int K = finalists_wanted(&T->o);
    /* the finalists are loaded again (a binary that no longer loads drops out) */
    if (F.ok)
        load_finalists(T, &F, (size_t)K);
    if (F.ok && F.nok) {
        if ((size_t)K > F.nok)
            K = (int)F.nok;
        K = promote(T, &F, K);
        load_finalists(T, &F, (size_t)K);
        if ((size_t)K > F.nok)
            K = (int)F.nok;
        int R = T->o.rounds > 0 ? T->o.rounds : 8;
        for (size_t i = 0; i < F.nok; i++) /* before the finals replace the finalists' */
            F.ok[i]->first_median = F.ok[i]->st.median;
        r->finalists = K;
        r->rounds = K > 1 ? R : 0;
        if (K == 1 && F.ok[0]->st.screened) /* alone: still measured at the full budgets */
            interleave(T, F.ok, 1, 1, NULL, NULL);
        if (K > 1) {
            int tie = 0;
            r->left_early += interleave(T, F.ok, K, R, &r->rounds_run, &tie);
            r->left_tied += tie;
            qsort(F.ok, (size_t)K, sizeof *F.ok, cmp_finals);
            r->finalists = challenge(T, &F, K, R);
        }
        decide(r, &F, r->finalists);
        for (int f = 0; f < r->finalists; f++) F.ok[f]->finalist = true; /* the reports mark them */
    }
    if (F.ok && T->store)
        store_finals(T, &F);
    free(F.ok);
}
