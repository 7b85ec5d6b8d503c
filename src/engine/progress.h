/* SPDX-License-Identifier: Apache-2.0 */
/*
 * progress.h — the whole tune's progress line on a terminal (internal; progress.c). The tuner's
 * hooks, each one line where it is called:
 *   measure.c  measure_round:  bt__progress_round(T)      a round begins
 *   measure.c  round_outcomes: bt__progress_round_done(T) its outcomes are in
 *   tune.c     finish:         bt__progress_finals(T)     the finals begin
 *   tune.c     bt__tune:       bt__progress_end(&T)       the tune ends (the line is cleared)
 * Each does nothing unless the tune's options ask for progress and stderr is a terminal.
 */
#ifndef BT_ENGINE_PROGRESS_H
#define BT_ENGINE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bt__tctx;

/* What the line says. */
typedef struct bt__progress_state {
    const char *kernel;
    size_t measured, failed; /* configs with an outcome, and how many of them failed */
    size_t planned;          /* the configs the search will measure; 0: not known (a time limit) */
    size_t rounds;           /* the search's rounds so far */
    size_t rounds_planned;   /* 0: not known */
    bool finals;             /* the search is over: the finalists are re-measured */
    double best_ms;          /* the best median so far; INFINITY: none yet */
    double elapsed;          /* seconds since the tune began */
    double left;             /* seconds left; < 0: not known */
    bool left_is_limit;      /* left is what the time limit leaves, not an estimate */
} bt__progress_state;

/* The line for s (no newline), with colour (SGR) when color. */
void bt__progress_format(const bt__progress_state *s, bool color, char *buf, size_t size);
/* Colour is allowed: NO_COLOR unset or empty and TERM not "dumb" (the caller checks the TTY). */
bool bt__progress_color(void);

void bt__progress_round(const struct bt__tctx *T);
void bt__progress_round_done(const struct bt__tctx *T);
void bt__progress_finals(const struct bt__tctx *T);
void bt__progress_end(const struct bt__tctx *T);

#endif
