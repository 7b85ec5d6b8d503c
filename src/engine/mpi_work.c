/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi_work.c — a rank other than 0 in a tune spread over MPI ranks (BT_MPI builds): it says its
 * device is ready (HELLO), then runs the configs rank 0 sends — a batch compiled in parallel, then
 * each loaded, verified and measured here alone on the device, exactly as in a tune of one
 * process (measure.c's bt__run_config, nothing stored) — and sends each outcome back as it is
 * known (status, message, compile log, statistics, the binary for rank 0's finals), until rank
 * 0 ends the tune with the winner.
 */
#include "engine/mpi_int.h"

#include "core/util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Sends entry e's outcome (for rank 0's entry `slot`). */
static bt_status send_result(struct bt__mpi *M, const bt__entry *e, uint64_t slot)
{
    bt__msg_result m = {.slot = slot, .status = e->status, .cached = e->cached,
                        .bchecked = e->boundary_checked, .bna = e->boundary_na,
                        .compile_s = e->compile_s, .res = e->res, .ver = e->ver, .st = e->st};
    m.elen = e->error ? strlen(e->error) + 1 : 0;
    m.llen = e->log ? strlen(e->log) + 1 : 0;
    m.blen = e->status == BT__CS_OK ? e->blob.size : 0;
    size_t tail = (size_t)(m.elen + m.llen + m.blen);
    char *t = malloc(tail ? tail : 1);
    if (!t)
        return BT_NOMEM;
    if (m.elen)
        memcpy(t, e->error, (size_t)m.elen);
    if (m.llen)
        memcpy(t + m.elen, e->log, (size_t)m.llen);
    if (m.blen)
        memcpy(t + m.elen + m.llen, e->blob.data, (size_t)m.blen);
    bt_status st = bt__mpi_send(M, 0, BT__MSG_RESULT, 0, 0, &m, sizeof m, t, tail);
    free(t);
    return st;
}

/* A WORK message: its configs built together, then each run and its outcome sent. Returns what
 * ends this rank's part in the tune (the device lost for good: said in a FAIL). */
static bt_status run_batch(bt__tctx *T, const bt__msg_job *jobs, size_t n)
{
    bt_result *r = T->r;
    bt__entry *e = calloc(n ? n : 1, sizeof *e);
    bt__entry **pe = calloc(n ? n : 1, sizeof *pe);
    if (!e || !pe) {
        free(e);
        free(pe);
        return BT_NOMEM;
    }
    size_t nok = 0;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].pos >= r->plan->ncand)
            continue; /* not a valid config here: rank 0's plan differs (checked at HELLO) */
        e[i].ev = r->plan->cand[jobs[i].pos];
        e[i].ev.reasons = NULL;
        e[i].model_rank = (size_t)jobs[i].pos + 1;
        pe[nok++] = &e[i];
    }
    bt__build_all(T->kn, T->p, pe, nok, r->compile_threads, "", false);
    bt_status st = BT_OK;
    for (size_t i = 0; i < n && !st; i++) {
        if (!e[i].model_rank)
            bt__entry_fail(&e[i], BT__CS_INVALID, "not a valid config on this rank's plan");
        else
            st = bt__run_config(T, &e[i]);
        if (!st)
            st = send_result(T->mpi, &e[i], jobs[i].slot);
        bt__entry_drop(T, &e[i]);
    }
    for (size_t i = 0; i < n; i++)
        bt__entry_drop(T, &e[i]);
    free(e);
    free(pe);
    return st;
}

/* END from rank 0: the winner into r (one entry, as rank 0 measured it), or why there is none. */
static bt_status take_end(bt__tctx *T, const bt__msg_end *m, int status, bt_diag *diag)
{
    bt_result *r = T->r;
    if (!m->has || m->pos >= r->plan->ncand) {
        bt__diag_set(diag, "MPI rank 0 ended the tune without a winner: %.400s", m->why);
        return status ? status : BT_NOT_FOUND;
    }
    r->e = calloc(1, sizeof *r->e);
    if (!r->e)
        return BT_NOMEM;
    r->n = 1;
    r->e[0].ev = r->plan->cand[m->pos];
    r->e[0].ev.reasons = NULL;
    r->e[0].model_rank = (size_t)m->pos + 1;
    r->e[0].status = BT__CS_OK;
    r->e[0].st = m->st;
    r->e[0].finalist = true;
    r->winner = 0;
    snprintf(r->stop, sizeof r->stop, "mpi rank 0");
    return BT_OK;
}

bt_status bt__mpi_work(bt__tctx *T, bt_diag *diag)
{
    struct bt__mpi *M = T->mpi;
    bt__msg_hello h;
    bt__mpi_hello_of(T, &h);
    bt_status st = bt__mpi_send(M, 0, BT__MSG_HELLO, BT_OK, 0, &h, sizeof h, NULL, 0);
    M->hello_sent = st == BT_OK;
    bt_status fail = BT_OK;
    bt_diag sd = {0}; /* why a config's run stopped this rank (measure.c's recovery) */
    T->sdiag = &sd;
    while (!st) {
        int from;
        char *b;
        size_t n;
        if (!bt__mpi_next(M, 0, 1.0, &from, &b, &n)) {
            if (M->root_pid > 0 && kill(M->root_pid, 0) != 0 && errno == ESRCH) {
                bt__diag_set(diag, "MPI rank 0 died: the tune is over");
                st = BT_IO;
                break;
            }
            continue;
        }
        const bt__msg_hdr *hd = (const bt__msg_hdr *)b;
        const char *pl = b + sizeof *hd;
        if (hd->kind == BT__MSG_END && n >= sizeof *hd + sizeof(bt__msg_end)) {
            M->ended = true;
            bt__msg_end m;
            memcpy(&m, pl, sizeof m);
            st = take_end(T, &m, hd->status, diag);
            if (!st && fail)
                st = fail;
        } else if (hd->kind == BT__MSG_WORK && !fail &&
                   n >= sizeof *hd + hd->n * sizeof(bt__msg_job)) {
            bt__msg_job *jobs = malloc(hd->n * sizeof *jobs + 1);
            if (jobs) {
                memcpy(jobs, pl, hd->n * sizeof *jobs);
                fail = run_batch(T, jobs, (size_t)hd->n);
            } else
                fail = BT_NOMEM;
            free(jobs);
            if (fail) { /* rank 0 runs the rest of the batch elsewhere */
                bt__msg_end m = {0};
                snprintf(m.why, sizeof m.why, "%.500s",
                         T->sdiag && T->sdiag->msg[0] ? T->sdiag->msg : bt_strerror(fail));
                bt__mpi_send(M, 0, BT__MSG_FAIL, fail, 0, &m, sizeof m, NULL, 0);
                bt__diag_set(diag, "this rank stopped serving: %.400s", m.why);
            }
        }
        free(b);
        if (M->ended)
            break;
    }
    T->sdiag = NULL;
    return st;
}
