/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchdog.c — every run on the device is watched by a thread: a run that the device has been
 * running for longer than its allowance (the timeout) is marked timed out and recorded in the
 * store at once (the process may not get to do it); one still running at three times that is
 * hung, and the kernel's hang handler is called (`blocktune tune` restarts past it; a library
 * user decides), because a kernel that never finishes cannot be stopped from the host. A run's
 * time counts from when the device starts it, where the backend tells (timer_started): PoCL
 * compiles a binary at its first launch, which is not the kernel's time; until the device starts
 * it, a first launch has BT__FIRST_LAUNCH_S. A wait longer than 10 s is said on stderr (again
 * every 30 s) when the tune shows progress.
 */
#include "engine/tune_ctx.h"

#include "core/util.h"
#include "engine/record.h"

#include <stdio.h>
#include <unistd.h>

void bt__watch_begin(bt__tctx *T, bt__entry *e, bool rec, double seconds, bool first,
                     const char *what)
{
    pthread_mutex_lock(&T->wmu);
    T->watch = e;
    T->watch_rec = rec;
    T->watch_s = seconds;
    T->watch_t0 = bt__now();
    /* without a way to tell when the device starts the run, its time counts from now */
    T->watch_start = first && T->I->timer_started ? 0 : T->watch_t0;
    T->watch_timer = NULL;
    T->watch_marked = T->watch_handled = false;
    T->watch_note = T->watch_t0 + 10;
    snprintf(T->watch_what, sizeof T->watch_what, "%s", what ? what : "running");
    pthread_mutex_unlock(&T->wmu);
}

void bt__watch_timer(bt__tctx *T, bt__btimer *t)
{
    pthread_mutex_lock(&T->wmu);
    T->watch_timer = t;
    pthread_mutex_unlock(&T->wmu);
}

void bt__watch_end(bt__tctx *T)
{
    pthread_mutex_lock(&T->wmu);
    T->watch = NULL;
    T->watch_timer = NULL;
    pthread_mutex_unlock(&T->wmu);
}

/* A note on stderr about a long wait (under wmu). */
static void long_wait_note(bt__tctx *T, double now)
{
    if (!T->o.progress || now < T->watch_note)
        return;
    T->watch_note = now + 30;
    if (!T->watch_start)
        fprintf(stderr, "blocktune: %s: %.0f s so far, not started by the device yet (it "
                        "compiles a binary at its first launch; allowed %.0f s)\n",
                T->watch_what, now - T->watch_t0, BT__FIRST_LAUNCH_S);
    else
        fprintf(stderr, "blocktune: %s: %.0f s so far (timeout %.1f s of running%s)\n",
                T->watch_what, now - T->watch_t0, T->watch_s,
                T->watch_marked ? ": recorded as timed out, waiting for it to end" : "");
    fflush(stderr);
}

/* One look at the run being watched (under wmu): marks it timed out when overdue. Returns true
 * when it is hung: the handler is due (once). */
static bool look(bt__tctx *T)
{
    bt__entry *e = T->watch;
    double now = bt__now();
    if (!T->watch_start && T->watch_timer && T->I->timer_started(T->D, T->watch_timer) > 0)
        T->watch_start = now;
    long_wait_note(T, now);
    bool overdue = T->watch_start ? now - T->watch_start > T->watch_s
                                  : now - T->watch_t0 > BT__FIRST_LAUNCH_S;
    if (!overdue)
        return false;
    if (!T->watch_marked) {
        char m[240];
        if (T->watch_start)
            snprintf(m, sizeof m, "did not finish within %g s of running (the timeout): "
                                  "stopped by the watchdog", T->watch_s);
        else
            snprintf(m, sizeof m, "the device did not start it within %.0f s of its first "
                                  "launch (hung while compiling?): stopped by the watchdog",
                     BT__FIRST_LAUNCH_S);
        bt__entry_fail(e, BT__CS_TIMEOUT, m);
        if (T->watch_rec)
            bt__record_outcome(T, e);
        T->watch_marked = true;
        /* a run that comes back within twice as long again only timed out */
        T->watch_s *= 3;
        if (!T->watch_start)
            T->watch_start = now - T->watch_s / 3;
        return false;
    }
    if (T->watch_handled)
        return false;
    T->watch_handled = true;
    return true;
}

static void *watchdog(void *arg)
{
    bt__tctx *T = arg;
    for (;;) {
        usleep(50000);
        pthread_mutex_lock(&T->wmu);
        if (T->stop) {
            pthread_mutex_unlock(&T->wmu);
            return NULL;
        }
        bool hung = T->watch && look(T);
        pthread_mutex_unlock(&T->wmu);
        bt_hang_handler h = T->kn->hang_handler;
        /* the handler may not return (blocktune tune ends the process); when it does, keep
         * waiting: the device call may still come back */
        if (hung && h)
            h(T->kn->hang_user);
    }
}

void bt__watchdog_start(bt__tctx *T)
{
    T->wd_on = pthread_create(&T->wd, NULL, watchdog, T) == 0;
}

void bt__watchdog_stop(bt__tctx *T)
{
    if (T->wd_on) {
        pthread_mutex_lock(&T->wmu);
        T->stop = true;
        pthread_mutex_unlock(&T->wmu);
        pthread_join(T->wd, NULL);
        T->wd_on = false;
    }
}
