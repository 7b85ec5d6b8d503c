/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi_root.c — rank 0's side of a tune spread over MPI ranks (BT_MPI builds): once every rank
 * has said its device is ready (of rank 0's model unless mixed devices are allowed), each round's
 * configs are dealt out in turn to the ranks that serve and to rank 0 itself; rank 0 runs its own
 * share, takes each outcome as it comes back, records it with the measuring rank's device in its
 * provenance, and waits until every config of the round has its outcome. A rank that died (its
 * process gone on this host, or silent past a config's allowance) or stopped serving gives its
 * configs to another rank, or to rank 0; a config whose second rank died too fails.
 */
#include "engine/mpi_int.h"

#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct round {
    bt__tctx *T;
    struct bt__mpi *M;
    bt__entry **jobs;
    size_t n;
    int *owner;   /* the rank holding job i, -1: none (done, or queued here) */
    int *died;    /* ranks that held job i and were lost */
    bool *here;   /* queued for rank 0 */
    size_t away;  /* jobs held by other ranks */
} round;

/* HELLO from every rank that is alive; one whose device is of another model stops the tune
 * (unless allowed), one that could not make its data serves no more in this tune. */
static bt_status collect_hellos(bt__tctx *T, bt_diag *diag)
{
    struct bt__mpi *M = T->mpi;
    double t0 = bt__now(), allow = bt__mpi_allowance(T);
    for (;;) {
        int missing = 0;
        for (int p = 1; p < M->size; p++)
            missing += !M->dead[p] && !M->peer[p].hello;
        if (!missing)
            break;
        int from;
        char *b;
        size_t n;
        if (!bt__mpi_next(M, -1, 1.0, &from, &b, &n)) {
            if (bt__now() - t0 > allow) {
                for (int p = 1; p < M->size; p++)
                    if (!M->dead[p] && !M->peer[p].hello) {
                        fprintf(stderr, "blocktune: MPI rank %d said nothing for %.0f s: "
                                        "taken for dead\n", p, allow);
                        M->dead[p] = true;
                    }
            }
            continue;
        }
        const bt__msg_hdr *h = (const bt__msg_hdr *)b;
        if (h->kind == BT__MSG_HELLO && n >= sizeof *h + sizeof(bt__msg_hello)) {
            bt__mpi_peer *q = &M->peer[from];
            memcpy(&q->h, b + sizeof *h, sizeof q->h);
            q->h.why[sizeof q->h.why - 1] = q->h.host[sizeof q->h.host - 1] = '\0';
            q->h.name[sizeof q->h.name - 1] = '\0';
            q->hello = true;
            q->pid = h->pid;
            q->out = h->status != BT_OK;
            if (q->out)
                fprintf(stderr, "blocktune: MPI rank %d (%s) cannot serve this tune: %s\n", from,
                        q->h.host, q->h.why);
        }
        free(b);
    }
    for (int p = 1; p < M->size; p++) {
        bt__mpi_peer *q = &M->peer[p];
        if (M->dead[p] || !q->hello)
            continue;
        if (q->h.name[0] && strcmp(q->h.name, M->peer[0].h.name) && !M->mixed) {
            bt__diag_set(diag, "MPI rank %d (host %s) has a '%s', rank 0 a '%s': timings of "
                         "different models are not comparable, so the tune is refused "
                         "(allow it with --mpi-mixed-devices, or BT_MPI_MIXED_DEVICES)",
                         p, q->h.host, q->h.name, M->peer[0].h.name);
            return BT_UNSUPPORTED;
        }
        bt__mpi_set_prov(M, p);
    }
    M->hellos = true;
    return BT_OK;
}

/* Sends jobs sel[0..k) to rank p. */
static bt_status give(round *R, int p, const size_t *sel, size_t k)
{
    bt__msg_job *w = malloc(sizeof *w * (k ? k : 1));
    if (!w)
        return BT_NOMEM;
    for (size_t i = 0; i < k; i++) {
        bt__entry *e = R->jobs[sel[i]];
        w[i] = (bt__msg_job){e->model_rank - 1, (uint64_t)(e - R->T->r->e)};
        R->owner[sel[i]] = p;
    }
    bt_status st = bt__mpi_send(R->M, p, BT__MSG_WORK, 0, k, w, sizeof *w * k, NULL, 0);
    free(w);
    R->M->peer[p].busy += (int)k;
    R->M->peer[p].last = bt__now();
    R->away += k;
    return st;
}

/* A rank that serves now (alive, ready, not out), the least busy; -1: none. */
static int pick(const round *R)
{
    int best = -1;
    for (int p = 1; p < R->M->size; p++) {
        const bt__mpi_peer *q = &R->M->peer[p];
        if (!R->M->dead[p] && q->hello && !q->out && (best < 0 || q->busy < R->M->peer[best].busy))
            best = p;
    }
    return best;
}

/* Job i's rank was lost: to another rank, or here, or (the second loss) failed. */
static void again(round *R, size_t i, int lost)
{
    R->owner[i] = -1;
    R->away--;
    bt__entry *e = R->jobs[i];
    if (R->died[i] >= 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "the MPI ranks running it were lost (rank %d, then rank %d): "
                 "it is not run a third time", R->died[i], lost);
        e->remote = &R->M->peer[0].prov;
        bt__entry_fail(e, BT__CS_LAUNCH, msg);
        bt__record(R->T, e);
        return;
    }
    R->died[i] = lost;
    int p = pick(R);
    if (p < 0 || give(R, p, &i, 1) != BT_OK)
        R->here[i] = true;
}

/* Rank p serves no more in this tune (dead: for good): its configs go elsewhere. */
static void lose(round *R, int p, bool dead, const char *why)
{
    struct bt__mpi *M = R->M;
    fprintf(stderr, "blocktune: MPI rank %d (%s) %s: its config%s in flight run%s again "
            "elsewhere\n", p, M->peer[p].h.host, why, M->peer[p].busy == 1 ? "" : "s",
            M->peer[p].busy == 1 ? "s" : "");
    M->peer[p].out = true;
    M->peer[p].busy = 0;
    if (dead)
        M->dead[p] = true;
    for (size_t i = 0; i < R->n; i++)
        if (R->owner[i] == p)
            again(R, i, p);
}

/* A RESULT from rank p into its entry, recorded. */
static void take_result(round *R, int p, const char *pl, size_t len)
{
    bt__msg_result m;
    if (len < sizeof m)
        return;
    memcpy(&m, pl, sizeof m);
    size_t i = R->n;
    for (size_t j = 0; j < R->n; j++)
        if ((uint64_t)(R->jobs[j] - R->T->r->e) == m.slot && R->owner[j] == p)
            i = j;
    if (i == R->n || len < sizeof m + m.elen + m.llen + m.blen)
        return; /* not one it holds (it was given elsewhere meanwhile) */
    bt__entry *e = R->jobs[i];
    const char *t = pl + sizeof m;
    e->status = (bt__cfg_status)m.status;
    e->error = m.elen ? bt__strdup(t) : NULL;
    e->log = m.llen ? bt__strdup(t + m.elen) : NULL;
    if (m.blen && (e->blob.data = malloc((size_t)m.blen))) {
        memcpy(e->blob.data, t + m.elen + m.llen, (size_t)m.blen);
        e->blob.size = (size_t)m.blen;
    }
    e->cached = m.cached;
    e->compile_s = m.compile_s;
    e->res = m.res;
    e->ver = m.ver;
    e->st = m.st;
    e->boundary_checked = m.bchecked;
    e->boundary_na = m.bna;
    e->remote = &R->M->peer[p].prov;
    bt__record(R->T, e);
    R->owner[i] = -1;
    R->away--;
    R->M->peer[p].busy--;
    R->M->peer[p].last = bt__now();
}

/* Takes what came within wait_s, then finds the ranks lost meanwhile. */
static void drain(round *R, double wait_s)
{
    struct bt__mpi *M = R->M;
    int from;
    char *b;
    size_t n;
    while (R->away && bt__mpi_next(M, -1, wait_s, &from, &b, &n)) {
        const bt__msg_hdr *h = (const bt__msg_hdr *)b;
        if (h->kind == BT__MSG_RESULT)
            take_result(R, from, b + sizeof *h, n - sizeof *h);
        else if (h->kind == BT__MSG_FAIL && n >= sizeof *h + sizeof(bt__msg_end)) {
            char why[600];
            snprintf(why, sizeof why, "stopped serving (%.500s)",
                     ((const bt__msg_end *)(b + sizeof *h))->why);
            lose(R, from, false, why);
        }
        free(b);
        wait_s = 0;
    }
    double allow = bt__mpi_allowance(R->T);
    for (int p = 1; p < M->size; p++) {
        if (M->dead[p] || M->peer[p].busy <= 0)
            continue;
        if (bt__mpi_gone(M, p))
            lose(R, p, true, "died");
        else if (bt__now() - M->peer[p].last > allow) {
            char why[120];
            snprintf(why, sizeof why, "said nothing for %.0f s (taken for dead)", allow);
            lose(R, p, true, why);
        }
    }
}

/* Runs the jobs queued here: built together, then each alone on the device, taking what the
 * other ranks sent between them. */
static bt_status run_here(round *R)
{
    bt__tctx *T = R->T;
    size_t k = 0;
    size_t *sel = malloc(sizeof *sel * (R->n ? R->n : 1));
    bt__entry **pe = malloc(sizeof *pe * (R->n ? R->n : 1));
    bt_status st = sel && pe ? BT_OK : BT_NOMEM;
    for (size_t i = 0; !st && i < R->n; i++)
        if (R->here[i]) {
            R->here[i] = false;
            sel[k] = i;
            R->jobs[i]->remote = &R->M->peer[0].prov;
            k++;
        }
    size_t nb = 0;
    for (size_t i = 0; i < k; i++)
        if (bt__in_play(R->jobs[sel[i]]) && !R->jobs[sel[i]]->blob.data)
            pe[nb++] = R->jobs[sel[i]];
    if (!st)
        bt__build_all(T->kn, T->p, pe, nb, T->r->compile_threads, "", false);
    for (size_t i = 0; !st && i < k; i++) {
        st = bt__run_config(T, R->jobs[sel[i]]);
        drain(R, 0);
    }
    free(sel);
    free(pe);
    return st;
}

/* Deals the round's pending configs out in turn to the serving ranks and rank 0; configs the
 * store had (re-verified only) stay here. */
static bt_status deal(round *R)
{
    struct bt__mpi *M = R->M;
    int *ranks = malloc(sizeof *ranks * (size_t)M->size);
    size_t *sel = malloc(sizeof *sel * (R->n ? R->n : 1));
    if (!ranks || !sel) {
        free(ranks);
        free(sel);
        return BT_NOMEM;
    }
    int nr = 0;
    for (int p = 1; p < M->size; p++)
        if (!M->dead[p] && M->peer[p].hello && !M->peer[p].out)
            ranks[nr++] = p;
    ranks[nr++] = 0;
    bt_status st = BT_OK;
    for (int j = 0; j < nr && !st; j++) {
        size_t k = 0, turn = 0;
        for (size_t i = 0; i < R->n; i++) {
            bool pending = R->jobs[i]->status == BT__CS_PENDING && !R->jobs[i]->from_store;
            if (!pending) {
                R->here[i] = ranks[j] == 0;
                continue;
            }
            if ((int)(turn++ % (size_t)nr) == j)
                sel[k++] = i;
        }
        if (ranks[j] == 0)
            for (size_t i = 0; i < k; i++)
                R->here[sel[i]] = true;
        else if (k)
            st = give(R, ranks[j], sel, k);
    }
    free(ranks);
    free(sel);
    return st;
}

bt_status bt__mpi_round(bt__tctx *T, bt__entry **jobs, size_t n)
{
    bt_status st = T->mpi->hellos ? BT_OK : collect_hellos(T, T->sdiag);
    if (st)
        return st;
    round R = {T, T->mpi, jobs, n, calloc(n + 1, sizeof(int)), calloc(n + 1, sizeof(int)),
               calloc(n + 1, sizeof(bool)), 0};
    if (!R.owner || !R.died || !R.here)
        st = BT_NOMEM;
    for (size_t i = 0; !st && i < n; i++)
        R.owner[i] = R.died[i] = -1;
    if (!st)
        st = deal(&R);
    while (!st) {
        bool local = false;
        for (size_t i = 0; i < n; i++)
            local |= R.here[i];
        if (local)
            st = run_here(&R);
        else if (R.away)
            drain(&R, 0.05);
        else
            break;
    }
    free(R.owner);
    free(R.died);
    free(R.here);
    return st;
}
