/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi_msg.c — one tune's MPI state (BT_MPI builds): made at the tune's start, the messages sent
 * and awaited, who is alive, the provenance of a measurement made on another rank, and the end
 * of the tune (rank 0 sends the winner to every rank). Also the public option that asks for it.
 */
#include "engine/mpi_int.h"

#include "core/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bt_status bt_tune_options_set_mpi_comm(bt_tune_options *o, const void *comm, int flags)
{
    if (!o || (flags & ~BT_MPI_MIXED_DEVICES))
        return BT_INVALID_ARG;
    o->o.mpi_comm = comm;
    o->o.mpi_flags = flags;
    return BT_OK;
}

/* Per communicator, for the process: the tunes so far and the ranks that died. */
typedef struct comm_state {
    bt__comm *c;
    int seq;
    bool *dead;
} comm_state;
static comm_state g_cs[8];

static comm_state *state_of(bt__comm *c)
{
    for (size_t i = 0; i < sizeof g_cs / sizeof *g_cs; i++) {
        if (g_cs[i].c == c)
            return &g_cs[i];
        if (!g_cs[i].c) {
            g_cs[i].dead = calloc((size_t)bt__comm_size(c), sizeof *g_cs[i].dead);
            if (!g_cs[i].dead)
                return NULL;
            g_cs[i].c = c;
            return &g_cs[i];
        }
    }
    return NULL;
}

bt_status bt__mpi_send(struct bt__mpi *M, int dest, int kind, int status, uint64_t n,
                       const void *a, size_t na, const void *b, size_t nb)
{
    bt__msg_hdr h = {kind, M->seq, status, (int32_t)getpid(), n};
    char *buf = malloc(sizeof h + na + nb);
    if (!buf)
        return BT_NOMEM;
    memcpy(buf, &h, sizeof h);
    if (na)
        memcpy(buf + sizeof h, a, na);
    if (nb)
        memcpy(buf + sizeof h + na, b, nb);
    bt_diag d = {0};
    bt_status st = bt__comm_send(M->c, dest, buf, sizeof h + na + nb, &d);
    free(buf);
    return st;
}

/* Whether rank p of M is known to be gone (bt__comm_recv's test while a message's body is on
 * its way): rank 0 by its pid, another rank as bt__mpi_gone tells. */
static bool peer_gone(void *user, int p)
{
    struct bt__mpi *M = user;
    if (p == 0)
        return M->root_pid > 0 && kill(M->root_pid, 0) != 0 && errno == ESRCH;
    return bt__mpi_gone(M, p);
}

bool bt__mpi_next(struct bt__mpi *M, int src, double wait_s, int *from, char **buf, size_t *len)
{
    double t0 = bt__now();
    for (;;) {
        size_t n;
        if (bt__comm_poll(M->c, src, from, &n)) {
            char *b = malloc(n ? n : 1);
            bt_diag d = {0};
            bool held = false;
            if (!b || bt__comm_recv(M->c, *from, b, n, peer_gone, M, &held, &d) != BT_OK ||
                n < sizeof(bt__msg_hdr) || ((bt__msg_hdr *)b)->seq != M->seq) {
                if (!held) /* (a receive still posted to a dead rank keeps its buffer) */
                    free(b); /* a message of an earlier tune (or a broken one) */
                continue;
            }
            if (*from == 0)
                M->root_pid = ((bt__msg_hdr *)b)->pid;
            *buf = b;
            *len = n;
            return true;
        }
        if (bt__now() - t0 >= wait_s)
            return false;
        usleep(200);
    }
}

double bt__mpi_allowance(const bt__tctx *T)
{
    const bt__tune_opts *o = &T->o;
    double run = o->timeout_s * 3;
    return BT__FIRST_LAUNCH_S + run * (2 + T->k->nboundary) + (o->warmup_ms + o->rep_ms) * 4e-3 +
           10;
}

bool bt__mpi_gone(const struct bt__mpi *M, int p)
{
    const bt__mpi_peer *q = &M->peer[p];
    if (!q->hello || q->pid <= 0 || strcmp(q->h.host, bt__comm_host(M->c)))
        return false;
    return kill(q->pid, 0) != 0 && errno == ESRCH;
}

void bt__mpi_hello_of(const bt__tctx *T, bt__msg_hello *h)
{
    const bt_device_info *d = &T->r->dev;
    memset(h, 0, sizeof *h);
    snprintf(h->host, sizeof h->host, "%s", bt__comm_host(T->mpi->c));
    snprintf(h->name, sizeof h->name, "%s", d->name);
    snprintf(h->uuid, sizeof h->uuid, "%s", d->uuid);
    snprintf(h->driver, sizeof h->driver, "%s", d->driver_version);
    snprintf(h->compiler, sizeof h->compiler, "%s", d->compiler_version);
}

void bt__mpi_set_prov(struct bt__mpi *M, int p)
{
    bt__mpi_peer *q = &M->peer[p];
    char host[64];
    snprintf(host, sizeof host, "%s", q->h.host);
    for (char *s = host; *s; s++) /* a host name is letters, digits, '.', '-': JSON as it is */
        if (*s == '\\' || *s == '"' || (unsigned char)*s < 0x20)
            *s = '_';
    snprintf(q->extra, sizeof q->extra, "{\"mpi\": {\"rank\": %d, \"host\": \"%s\"}}", p, host);
    q->prov = (bt__remote){q->h.name, q->h.uuid, q->h.driver, q->h.compiler, q->extra};
}

bt_status bt__mpi_begin(bt__tctx *T, bt_diag *diag)
{
    struct bt__mpi *M = calloc(1, sizeof *M);
    bt__comm *c = M ? bt__comm_get(T->o.mpi_comm, diag) : NULL;
    comm_state *cs = c ? state_of(c) : NULL;
    if (!cs || !(M->peer = calloc((size_t)bt__comm_size(c), sizeof *M->peer))) {
        if (M)
            free(M->peer);
        free(M);
        if (!diag->msg[0])
            bt__diag_set(diag, "out of memory for the MPI state");
        return BT_NOMEM;
    }
    M->c = c;
    M->dead = cs->dead;
    M->rank = bt__comm_rank(c);
    M->size = bt__comm_size(c);
    M->seq = ++cs->seq;
    M->mixed = T->o.mpi_flags & BT_MPI_MIXED_DEVICES;
    T->mpi = M;
    bt__mpi_hello_of(T, &M->peer[M->rank].h);
    M->peer[M->rank].hello = true;
    M->peer[M->rank].pid = (int)getpid();
    bt__mpi_set_prov(M, M->rank);
    if (M->rank != 0) { /* rank 0 alone writes the store and shows progress */
        T->o.store = "none";
        T->o.progress = 0;
        T->o.progress_cb = NULL;
    } else if (M->size > 1 && getenv("OMPI_COMM_WORLD_SIZE") &&
               !getenv("OMPI_MCA_orte_enable_recovery") && cs->seq == 1)
        fprintf(stderr, "blocktune: note: without mpirun --enable-recovery a rank that dies "
                        "ends the whole job (docs/mpi.md)\n");
    return BT_OK;
}

bool bt__mpi_worker(const bt__tctx *T)
{
    return T->mpi && T->mpi->rank != 0;
}

void bt__mpi_searched(bt__tctx *T)
{
    if (!T->mpi)
        return;
    for (size_t i = 0; i < T->r->n; i++)
        if (T->r->e[i].remote)
            T->r->e[i].remote = &T->mpi->peer[0].prov;
}

/* Rank 0: END to every rank that is alive, with the winner or why there is none. */
static void end_root(bt__tctx *T, bt_status st, const bt_diag *diag)
{
    struct bt__mpi *M = T->mpi;
    bt__msg_end e = {0};
    if (st == BT_OK && T->r && T->r->winner >= 0) {
        const bt__entry *w = &T->r->e[T->r->winner];
        e.has = 1;
        e.pos = w->model_rank - 1;
        e.st = w->st;
    } else
        snprintf(e.why, sizeof e.why, "%.500s",
                 diag && diag->msg[0] ? diag->msg : st ? bt_strerror(st) : "no config passed");
    for (int p = 1; p < M->size; p++)
        if (!M->dead[p])
            bt__mpi_send(M, p, BT__MSG_END, st, 0, &e, sizeof e, NULL, 0);
}

/* A rank other than 0 that failed before serving: its HELLO says so; then it waits for END
 * (rank 0 may still be measuring), so that the next tune on the communicator starts together. */
static void end_worker(bt__tctx *T, bt_status st, const bt_diag *diag)
{
    struct bt__mpi *M = T->mpi;
    if (!M->hello_sent) {
        bt__msg_hello h;
        bt__mpi_hello_of(T, &h);
        snprintf(h.why, sizeof h.why, "%.500s", diag && diag->msg[0] ? diag->msg : bt_strerror(st));
        bt__mpi_send(M, 0, BT__MSG_HELLO, st ? st : BT_INTERNAL, 0, &h, sizeof h, NULL, 0);
    }
    while (!M->ended) {
        int from;
        char *b;
        size_t n;
        if (!bt__mpi_next(M, 0, 1.0, &from, &b, &n)) {
            if (M->root_pid > 0 && kill(M->root_pid, 0) != 0 && errno == ESRCH)
                break; /* rank 0 is gone */
            continue;
        }
        M->ended = ((bt__msg_hdr *)b)->kind == BT__MSG_END;
        free(b);
    }
}

void bt__mpi_end(bt__tctx *T, bt_status st, const bt_diag *diag)
{
    struct bt__mpi *M = T->mpi;
    if (!M)
        return;
    if (M->rank == 0)
        end_root(T, st, diag);
    else if (!M->ended)
        end_worker(T, st, diag);
    /* entries keep no pointer into the state past the tune */
    for (size_t i = 0; T->r && i < T->r->n; i++)
        T->r->e[i].remote = NULL;
    free(M->peer);
    free(M);
    T->mpi = NULL;
    T->mpi_round = NULL;
}
