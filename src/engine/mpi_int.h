/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi_int.h — what the MPI files of the engine share (internal to mpi_*.c): the messages between
 * the ranks and one tune's MPI state. Every message starts with a header (its kind, the tune's
 * sequence number on the communicator — a message of an earlier tune is dropped — a status and
 * a count); the payloads are plain structs and bytes, so every rank runs the same blocktune build.
 */
#ifndef BT_ENGINE_MPI_INT_H
#define BT_ENGINE_MPI_INT_H

#include "engine/mpi.h"
#include "platform/mpi.h"

#include <stdint.h>

enum { BT__MSG_HELLO = 1, BT__MSG_WORK, BT__MSG_RESULT, BT__MSG_FAIL, BT__MSG_END };

typedef struct bt__msg_hdr {
    int32_t kind, seq, status, pid; /* pid: the sender's */
    uint64_t n;                     /* WORK: configs; RESULT: bytes of error, log, binary */
} bt__msg_hdr;

/* HELLO (a rank to rank 0, once its data and reference are made; status: whether they were) */
typedef struct bt__msg_hello {
    char host[64], name[128], uuid[40], driver[64], compiler[96], why[512];
} bt__msg_hello;

/* WORK (rank 0 to a rank): n of these */
typedef struct bt__msg_job {
    uint64_t pos;  /* the config's position among the plan's valid configs */
    uint64_t slot; /* its entry in rank 0's r->e */
} bt__msg_job;

/* RESULT (a rank to rank 0): one config's outcome, then its error, log and binary */
typedef struct bt__msg_result {
    uint64_t slot, elen, llen, blen;
    int32_t status, cached, bchecked, bna;
    double compile_s;
    bt__kres res;
    bt__verify ver;
    bt__stats st;
} bt__msg_result;

/* END (rank 0 to every rank): the winner (has), or why there is none; FAIL (a rank to rank 0):
 * why it cannot go on in this tune, in why */
typedef struct bt__msg_end {
    int32_t has;
    uint64_t pos;
    bt__stats st;
    char why[512];
} bt__msg_end;

/* A peer of rank 0 in this tune. */
typedef struct bt__mpi_peer {
    bool hello; /* its HELLO came */
    bool out;   /* it serves no more in this tune (it failed, or died) */
    int pid;
    double last; /* when it was last heard from, or given work */
    int busy;    /* configs it holds */
    bt__msg_hello h;
    char extra[200];
    bt__remote prov;
} bt__mpi_peer;

struct bt__mpi {
    bt__comm *c;
    bool *dead; /* per rank, for the communicator's life (kept across tunes) */
    int rank, size, seq;
    bool mixed;
    bool hellos;             /* rank 0: every rank's HELLO is in */
    bool hello_sent, ended;  /* a rank other than 0 */
    int root_pid;
    bt__mpi_peer *peer;
};

/* mpi_msg.c: a message of kind k (header filled here) with payload a[0..na) and b[0..nb). */
bt_status bt__mpi_send(struct bt__mpi *M, int dest, int kind, int status, uint64_t n,
                       const void *a, size_t na, const void *b, size_t nb);
/* The next message of this tune from src (-1: any), malloc'd into *buf (header first), waiting
 * at most wait_s; false when none came. Messages of other tunes are dropped. */
bool bt__mpi_next(struct bt__mpi *M, int src, double wait_s, int *from, char **buf, size_t *len);
/* The allowance of one config on a peer (its compile, verification at every size, measurement)
 * before rank 0 takes it for dead: generous, since a CPU device compiles at the first launch. */
double bt__mpi_allowance(const bt__tctx *T);
/* Whether rank p's process is known to be gone (same host: it no longer exists). */
bool bt__mpi_gone(const struct bt__mpi *M, int p);
/* Rank p's provenance (the device, rank and host) from its HELLO. */
void bt__mpi_set_prov(struct bt__mpi *M, int p);
/* This process's device as a HELLO. */
void bt__mpi_hello_of(const bt__tctx *T, bt__msg_hello *h);

#endif
