/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fam.h — a front door's kernel handle (internal; core/family.h for the spec side): the families a
 * device runs, each a kernel handle of its own (the front door itself for its own source), the
 * table that sends a problem key to its family, the tune across families and its report.
 *
 * kernel.c makes the handles and the front door's hash (its own source hash and each family's
 * name and source hash, so a stored choice never outlives a family's change; a family appended
 * to the list leaves the choices of the keys it cannot run valid: bt__fam_hashes); famkern.c
 * keeps the table, the families' workspaces and the mapping of buffers, and reads a stored choice;
 * launch.c routes a key to its family (bt__fam_route) and forwards launches, lookup.c lookups.
 * famtune.c: the tune (plan every family, rule out with reasons, split the budget, tune each,
 * re-measure the families' winners interleaved on one set of data, record the choice).
 * famreport.c: the "Families" section of a tune's report.
 */
#ifndef BT_ENGINE_FAM_H
#define BT_ENGINE_FAM_H

#include "core/family.h"
#include "engine/engine.h"

#include <jansson.h>

/* A front door's state in its kernel handle (kn->fam). The handles and the table are made and
 * freed with the handle (kernel.c); what they hold is read through famkern.c. */
typedef struct bt__famtab_entry {
    bt__dkey key;
    int fam;
} bt__famtab_entry;

typedef struct bt__famk {
    int n;
    bt_kernel *child[BT__MAX_FAMILIES]; /* NULL: this backend cannot run it; kn for its own */
    char hash[24];
    char prefix[BT__MAX_FAMILIES][24]; /* the hash over families 0..f (prefix[n - 1] is hash) */
    pthread_mutex_t mu; /* guards tab and the workspaces */
    bt__famtab_entry *tab;
    size_t ntab, cap;
    struct bt_buffer *ws[BT__MAX_FAMILIES][BT__MAX_ARGS]; /* the families' workspaces */
} bt__famk;

/* famkern.c: the handle that runs family f (kn itself for its own source); NULL when the backend
 * cannot. */
bt_kernel *bt__fam_kernel(const bt_kernel *kn, int f);
/* The family p's key goes to (-1: none yet), and setting it. */
int bt__fam_chosen(bt_kernel *kn, const bt_problem *p);
void bt__fam_choose(bt_kernel *kn, const bt_problem *p, int f);
/* Family f's own buffer argument i (a workspace), at least need bytes, zeroed when made. */
bt_status bt__fam_workspace(bt_kernel *kn, int f, int i, size_t need, bt_buffer **out,
                            bt_diag *diag);
/* The bytes and dtype of every buffer argument of k (the front door or a family) for p. */
bt_status bt__fam_needs(const bt_kernel *kn, const bt_kdesc *k, const bt_problem *p,
                        size_t need[], int8_t dt[], bt_diag *diag);
/* The buffers family f takes for front-door problem p (fp: its problem) from the front door's
 * buffers: the shared ones by name, its workspaces; *nout of them into out. */
bt_status bt__fam_buffers(bt_kernel *kn, int f, const bt_problem *fp, bt_buffer *const *buffers,
                          int nbuffers, bt_buffer *out[], int *nout, bt_diag *diag);
/* Whether family f of front door kn runs p on this device (its source, dtype, condition and at
 * least one valid config); planning that family only. */
bool bt__fam_runs(bt_kernel *kn, int f, const bt_problem *p);
/* The hashes under which a stored choice of the front door for p is its choice, newest first
 * (at most BT__MAX_FAMILIES): its hash, then, while its last families cannot run p
 * (bt__fam_runs), its hash over the families before them: a choice stored before such a family
 * was appended is still the choice, since that family would have had nothing to offer at p. */
int bt__fam_hashes(bt_kernel *kn, const bt_problem *p, const char *out[]);
/* The front door's stored choice for p (the store, then wisdom; not in retune mode): the family
 * and its config (not compiled); *found false when nothing is stored; *exact true when it was
 * stored for this very key (in wisdom-only mode it may be a nearest size's or the same
 * architecture's choice: one that `fits` accepts, NULL: the nearest whatever it is). */
void bt__fam_stored(bt_kernel *kn, const bt_problem *p, bt__fits_fn fits, int *f,
                    bt_config *c, bool *found, bool *exact);
/* A front door's choice (config JSON with "family") as its family f and that family's config
 * (*rest, malloc'd); false when it names no family of kn. */
bool bt__fam_split_choice(bt_kernel *kn, const char *cj, int *f, char **rest);
/* kernel.c: the lookup's test of another key's front-door choice (user: a bt__fits_ctx of the
 * door and its problem): its family's config parses and is valid at this size. */
bool bt__fam_choice_fits(void *user, const char *cj);
/* Frees the workspaces and the table (the handles are kernel.c's). */
void bt__famk_free_state(bt__famk *F);

/* launch.c: the family a key with no stored choice goes to (-1: tune across the families): the
 * one family that runs p, else in wisdom-only mode the best predicted. Plans, loads nothing. */
bt_status bt__fam_unstored(bt_kernel *kn, const bt_problem *p, int *f, bt_diag *diag);
/* launch.c: the family p's key goes to, chosen at its first use (the front door's stored choice,
 * else the one family that runs, else in wisdom-only mode the best predicted, else a tune across
 * the families), and that family's problem. */
bt_status bt__fam_route(bt_kernel *kn, const bt_problem *p, bool no_tune, int *f,
                        bt_problem *fp, bt_diag *diag);

/* famtune.c: bt__tune of a front door. */
bt_status bt__fam_tune(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                       bt_buffer *const *caller, int ncaller, bt_result **out, bt_diag *diag);
/* bt__tune of any handle: a front door's across its families, else its own. */
bt_status bt__tune_any(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                       bt_buffer *const *caller, int ncaller, bt_result **out, bt_diag *diag);

/* What the tune across families found, kept in the winning family's result. */
typedef struct bt__famres_entry {
    char name[BT_NAME_MAX];
    bt__fam_verdict verdict;
    char why[400];   /* why it was not measured, or why its tune failed */
    size_t budget;   /* measurements given (0: no bound) */
    size_t measured; /* configs it measured */
    double pred_us;  /* the prediction that compared it (core/family.h) */
    bool by_floor;
    char config[400]; /* its winner's config ("" none) */
    double own_ms;    /* its winner's median in its own tune */
    double final_ms;  /* its winner's median in the interleaved finals across families */
    int final_n;
    double tune_s;    /* the wall time of its own tune (0: it did not run) */
} bt__famres_entry;

struct bt__famres {
    char front[BT_NAME_MAX];
    int n, winner; /* winner: entry index, -1 when no family produced one */
    bt__famres_entry e[BT__MAX_FAMILIES];
    double margin; /* the best other family's final median / the winner's - 1 */
    bool tie;      /* within the finals' noise band */
    int rounds;    /* interleaved rounds of the finals (0: one family, no finals) */
    double finals_s; /* their wall time */
    char stored[300]; /* how the choice was stored ("" when it was not) */
};
/* famreport.c */
void bt__famres_write(const struct bt__famres *fr, FILE *f);
json_t *bt__famres_json(const struct bt__famres *fr);

#endif
