/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record.h — the engine's side of the results store (internal); see record.c.
 */
#ifndef BT_ENGINE_RECORD_H
#define BT_ENGINE_RECORD_H

#include "engine/engine.h"
#include "store/store.h"

#include <jansson.h>

void bt__problem_keyvals(const bt_kdesc *k, const bt_problem *p, bt__keyvals *kv);
/* A config from its JSON object (bt__config_json): every parameter of the space, each an integer
 * among its values. */
bool bt__config_from_json(const bt_kdesc *k, const char *text, bt_config *c);
/* The same for a config read from the store or wisdom (`source` names it): one that does not
 * belong to the space is said on stderr and refused. */
bool bt__config_from_stored(const bt_kdesc *k, const char *text, const char *source, bt_config *c);
/* The store's device identity: the UUID when the device has one, else its name. */
const char *bt__device_key(const bt_device_info *d);
/* The store's architecture of a device: "sm_XY" for CUDA, else its API version. */
void bt__device_arch(const bt_device_info *d, char *buf, size_t size);
void bt__record_ident(const bt_result *r, const char *key, bt__store_ident *id);
/* Commits one entry (and, with winner, the winner row) now: a killed tune loses nothing done.
 * Counts the write in r (stored, or store_failed with the first failure in store_error). */
bt_status bt__record_put(bt__store *s, bt_result *r, const bt__entry *e, bool winner,
                         bt_diag *diag);
/* Fills e from the store when it holds a finished measurement of this config; true if so. */
bool bt__record_get(bt__store *s, const bt_result *r, bt__entry *e);
/* Whether a row's extra_json says its median is a screening one ("screening": true). */
bool bt__row_screened(const char *extra_json);
/* The kernel's store (opened on first use; NULL when disabled or unavailable). */
bt__store *bt__kernel_store(bt_kernel *kn, const bt__tune_opts *o);
/* The kernel's store for a tune: notes in r its path, or that it was refused and why. */
bt__store *bt__record_store(bt_kernel *kn, const bt__tune_opts *o, bt_result *r);
/* The sentence a report prints when something of the tune was not stored (false: all was). */
bool bt__result_store_note(const bt_result *r, char *buf, size_t size);
/* The tune's "store" JSON: {"path", "used", "stored", "failed", "error"}, or null for "none". */
json_t *bt__result_store_json(const bt_result *r);
void bt__kernel_wisdom(bt_kernel *kn, const bt__wisdom **user, const bt__wisdom **shipped);

/* --- what runs on the device now, for a supervisor (blocktune tune) --------------------------- */
/* The error of a config's in-flight row: written before its first run on a device that can crash
 * the process, replaced by its outcome; a tune resumed after the process died finds it there and
 * never runs the config again. */
#define BT__INFLIGHT_ERROR BT_INFLIGHT_ERROR
typedef enum bt__inflight_kind {
    BT__INFLIGHT_NONE = 0,
    BT__INFLIGHT_CONFIG,    /* a config (stored: its in-flight row is in the store) */
    BT__INFLIGHT_REFERENCE, /* the reference (a baseline config or a reference kernel) */
} bt__inflight_kind;
/* The note: what runs now. A supervisor shares a page (MAP_SHARED) with the process it forks,
 * which writes the note there, and reads it when that process died. */
typedef struct bt__inflight {
    volatile int kind; /* bt__inflight_kind */
    volatile int stored;
    char what[500];
} bt__inflight;
/* Where this process keeps its note (NULL: a private one). */
void bt__inflight_share(bt__inflight *page);
void bt__inflight_note(bt__inflight_kind kind, bool stored, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void bt__inflight_clear(void);
/* This process's note. */
const bt__inflight *bt__inflight_get(void);

/* A tune of kn that measures nothing new: only what the store holds is verified and reported,
 * the reason (why) in the report; "" measures as usual. For a supervisor that gave up
 * restarting, or whose time limit has passed. */
void bt__kernel_stored_only(bt_kernel *kn, const char *why);

#endif
