/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi.c — the MPI transport (BT_MPI builds only): initialising and ending MPI, one duplicate of
 * each communicator the caller gives (errors returned, not fatal), and byte messages sent with
 * MPI_Isend (kept until they complete) and received after MPI_Iprobe. One tag; what a message
 * means is in its bytes (engine/mpi_msg.c).
 */
#include "platform/mpi.h"

#include "core/util.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BT__MPI_TAG 7301

typedef struct pending {
    MPI_Request req;
    void *buf;
} pending;

struct bt__comm {
    MPI_Comm user, comm;
    int rank, size, local;
    char host[MPI_MAX_PROCESSOR_NAME + 1];
    pending *out;
    size_t nout, capout;
};

static bool g_inited_here;
static MPI_Comm g_world;
static bt__comm *g_comms[8];
static int g_ncomms;

bt_status bt__mpi_init(const void **world, bt_diag *diag)
{
    int inited = 0, prov = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &prov) != MPI_SUCCESS) {
            bt__diag_set(diag, "MPI_Init_thread failed");
            return BT_UNSUPPORTED;
        }
        g_inited_here = true;
    }
    g_world = MPI_COMM_WORLD;
    *world = &g_world;
    return BT_OK;
}

static void *finalize_guard(void *arg)
{
    sleep(20);
    _exit((int)(intptr_t)arg);
    return NULL;
}

void bt__mpi_finalize(int rc)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!g_inited_here || fin)
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, finalize_guard, (void *)(intptr_t)rc) == 0)
        pthread_detach(t);
    MPI_Finalize();
}

bt__comm *bt__comm_get(const void *mpi_comm, bt_diag *diag)
{
    MPI_Comm user = *(const MPI_Comm *)mpi_comm;
    for (int i = 0; i < g_ncomms; i++)
        if (g_comms[i]->user == user)
            return g_comms[i];
    bt__comm *c = calloc(1, sizeof *c);
    if (!c || g_ncomms == (int)(sizeof g_comms / sizeof *g_comms)) {
        free(c);
        bt__diag_set(diag, "out of memory, or more than 8 MPI communicators");
        return NULL;
    }
    MPI_Comm node;
    int len = 0;
    if (MPI_Comm_dup(user, &c->comm) != MPI_SUCCESS ||
        MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
        MPI_Comm_rank(c->comm, &c->rank) != MPI_SUCCESS ||
        MPI_Comm_size(c->comm, &c->size) != MPI_SUCCESS ||
        MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) !=
            MPI_SUCCESS) {
        free(c);
        bt__diag_set(diag, "the MPI communicator cannot be duplicated");
        return NULL;
    }
    MPI_Comm_rank(node, &c->local);
    MPI_Comm_free(&node);
    MPI_Get_processor_name(c->host, &len);
    c->user = user;
    g_comms[g_ncomms++] = c;
    return c;
}

int bt__comm_rank(const bt__comm *c)
{
    return c->rank;
}

int bt__comm_size(const bt__comm *c)
{
    return c->size;
}

int bt__comm_local_rank(const bt__comm *c)
{
    return c->local;
}

const char *bt__comm_host(const bt__comm *c)
{
    return c->host;
}

/* Frees the sends that completed. */
static void reap(bt__comm *c)
{
    size_t j = 0;
    for (size_t i = 0; i < c->nout; i++) {
        int done = 0;
        if (MPI_Test(&c->out[i].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done)
            free(c->out[i].buf);
        else
            c->out[j++] = c->out[i];
    }
    c->nout = j;
}

bt_status bt__comm_send(bt__comm *c, int dest, const void *buf, size_t len, bt_diag *diag)
{
    reap(c);
    if (len > INT32_MAX) {
        bt__diag_set(diag, "an MPI message of %zu bytes is too long", len);
        return BT_INVALID_ARG;
    }
    if (c->nout == c->capout) {
        size_t ncap = c->capout ? c->capout * 2 : 16;
        pending *np = realloc(c->out, sizeof *np * ncap);
        if (!np)
            return BT_NOMEM;
        c->out = np;
        c->capout = ncap;
    }
    pending *p = &c->out[c->nout];
    p->buf = malloc(len ? len : 1);
    if (!p->buf)
        return BT_NOMEM;
    memcpy(p->buf, buf, len);
    if (MPI_Isend(p->buf, (int)len, MPI_BYTE, dest, BT__MPI_TAG, c->comm, &p->req) !=
        MPI_SUCCESS) {
        free(p->buf);
        bt__diag_set(diag, "MPI_Isend to rank %d failed", dest);
        return BT_IO;
    }
    c->nout++;
    return BT_OK;
}

bool bt__comm_poll(bt__comm *c, int src, int *from, size_t *len)
{
    reap(c);
    int flag = 0, n = 0;
    MPI_Status s;
    if (MPI_Iprobe(src < 0 ? MPI_ANY_SOURCE : src, BT__MPI_TAG, c->comm, &flag, &s) !=
            MPI_SUCCESS || !flag || MPI_Get_count(&s, MPI_BYTE, &n) != MPI_SUCCESS)
        return false;
    *from = s.MPI_SOURCE;
    *len = (size_t)n;
    return true;
}

bt_status bt__comm_recv(bt__comm *c, int from, void *buf, size_t len,
                        bool (*gone)(void *user, int rank), void *user, bool *held, bt_diag *diag)
{
    MPI_Request req;
    *held = false;
    if (MPI_Irecv(buf, (int)len, MPI_BYTE, from, BT__MPI_TAG, c->comm, &req) != MPI_SUCCESS) {
        bt__diag_set(diag, "MPI_Irecv from rank %d failed", from);
        return BT_IO;
    }
    for (unsigned spin = 1;; spin++) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            bt__diag_set(diag, "the receive from rank %d failed", from);
            return BT_IO;
        }
        if (done)
            return BT_OK;
        if (gone && spin % 500 == 0 && gone(user, from)) {
            *held = true;
            bt__diag_set(diag, "rank %d was gone before its message arrived whole", from);
            return BT_IO;
        }
        usleep(100);
    }
}
