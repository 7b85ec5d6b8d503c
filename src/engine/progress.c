/* SPDX-License-Identifier: Apache-2.0 */
/*
 * progress.c — the whole tune's progress on a terminal: one line on stderr, redrawn in place,
 * with the configs measured of those planned (failures counted), the rounds, the best median so
 * far, the time elapsed since the tune began and the time left (the time limit's, or an estimate
 * from the time per config so far and the finals still to come). Shown only when the tune asks for
 * progress and stderr is a terminal; colour only then and when NO_COLOR is unset or empty and
 * TERM is not "dumb". The line is cut to the terminal's width so that it never wraps, and cleared
 * when the tune ends.
 *
 * The tuner calls the hooks (progress.h) at the start and end of each search round, before the
 * finals and at the end of the tune; between hooks a ticker thread redraws the line every 250 ms
 * from the last state the hooks left, so that the clock keeps moving during a long round. One
 * line per process: a second tune running at the same time in another thread shows none.
 */
#include "engine/progress.h"

#include "core/util.h"
#include "engine/tune_ctx.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

bool bt__progress_color(void)
{
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
    return !(nc && nc[0]) && !(term && !strcmp(term, "dumb"));
}

/* Appends to buf at *off (never past size). */
static void add(char *buf, size_t size, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
    if (*off >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *off, size - *off, fmt, ap);
    va_end(ap);
    if (w > 0)
        *off = *off + (size_t)w < size ? *off + (size_t)w : size - 1;
}

/* "1 h 02 min", "3 min 05 s", "41 s". */
static void duration(double s, char *buf, size_t size)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ld h %02ld min", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, size, "%ld min %02ld s", t / 60, t % 60);
    else
        snprintf(buf, size, "%.1f s", s < 0 ? 0 : s);
}

void bt__progress_format(const bt__progress_state *s, bool color, char *buf, size_t size)
{
    const char *b = color ? "\033[1m" : "", *r = color ? "\033[0m" : "",
               *red = color ? "\033[31m" : "", *grn = color ? "\033[32m" : "";
    size_t off = 0;
    buf[0] = '\0';
    add(buf, size, &off, "%s: ", s->kernel);
    if (s->planned)
        add(buf, size, &off, "%s%zu/%zu%s configs", b, s->measured, s->planned, r);
    else
        add(buf, size, &off, "%s%zu%s configs", b, s->measured, r);
    if (s->failed)
        add(buf, size, &off, " (%s%zu failed%s)", red, s->failed, r);
    if (s->finals)
        add(buf, size, &off, " · finals");
    else if (s->rounds_planned)
        add(buf, size, &off, " · round %zu/%zu", s->rounds, s->rounds_planned);
    else
        add(buf, size, &off, " · round %zu", s->rounds);
    char el[32], left[32];
    duration(s->elapsed, el, sizeof el);
    add(buf, size, &off, " · %s elapsed", el);
    if (s->left >= 0) {
        duration(s->left, left, sizeof left);
        add(buf, size, &off, s->left_is_limit ? ", %s left (time limit)" : ", ~%s left", left);
    }
    if (isfinite(s->best_ms))
        add(buf, size, &off, " · best %s%.4g ms%s", grn, s->best_ms, r);
}

/* ---------------------------------------------------------------------------------------------
 * The line and its ticker
 * ------------------------------------------------------------------------------------------- */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t ticker;
    bool running, stop;
    const void *owner;     /* the tune that shows its line */
    bt__progress_state st;
    double t0;             /* the tune's start */
    double per_config;     /* the search's seconds per config */
    double finals0;        /* when the finals began */
    double stamp;          /* when st.left was computed */
    bool color;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The terminal's width (80 when it does not say). */
static int columns(void)
{
    struct winsize ws;
    return ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col : 80;
}

/* Cuts buf to n visible characters (escape sequences and UTF-8 continuation bytes take none),
 * ending any colour. */
static void fit(char *buf, size_t size, int n)
{
    int vis = 0;
    for (char *p = buf; *p; p++) {
        if (*p == '\033') {
            while (*p && *p != 'm')
                p++;
            if (!*p)
                break;
            continue;
        }
        if (((unsigned char)*p & 0xC0) != 0x80 && ++vis > n) {
            snprintf(p, size - (size_t)(p - buf), "%s", strchr(buf, '\033') ? "\033[0m" : "");
            return;
        }
    }
}

/* Redraws the line (P.mu held). */
static void draw(void)
{
    bt__progress_state s = P.st;
    double now = bt__now();
    s.elapsed = now - P.t0;
    if (s.left >= 0 && !s.left_is_limit) /* an estimate that has run out says nothing */
        s.left = s.left - (now - P.stamp) > 0 ? s.left - (now - P.stamp) : -1;
    else if (s.left >= 0)
        s.left = fmax(0, s.left - (now - P.stamp));
    char line[512];
    bt__progress_format(&s, P.color, line, sizeof line);
    fit(line, sizeof line, columns() - 1);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
}

static void *tick(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&P.mu);
    while (!P.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250000000;
        if (ts.tv_nsec >= 1000000000)
            ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&P.cv, &P.mu, &ts);
        if (!P.stop)
            draw();
    }
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The hooks
 * ------------------------------------------------------------------------------------------- */
/* The finals' cost: the finalists and up to two challengers re-measured (select.c), each about
 * what measuring one config has cost so far. */
static double finals_s(const bt__tune_opts *o, double per_config)
{
    int k = o->top_k > 0 ? (o->top_k > 16 ? 16 : o->top_k) : 3;
    return (k + 2) * per_config;
}

/* The state from the tune (P.mu held). */
static void update(const bt__tctx *T, bool finals)
{
    const bt_result *r = T->r;
    bt__progress_state *s = &P.st;
    s->kernel = T->k->name;
    s->measured = r->n, s->failed = 0, s->best_ms = INFINITY;
    for (size_t i = 0; i < r->n; i++) {
        const bt__entry *e = &r->e[i];
        if (e->status == BT__CS_OK && e->st.median < s->best_ms)
            s->best_ms = e->st.median;
        s->failed += e->status != BT__CS_OK && e->status != BT__CS_PENDING;
    }
    size_t valid = r->plan ? r->plan->ncand : 0;
    s->planned = r->budget ? (r->budget < valid ? r->budget : valid)
                 : T->o.time_limit_s > 0 ? 0 : valid;
    s->rounds = T->rounds;
    size_t rs = r->round_size > 0 ? (size_t)r->round_size
                : r->compile_threads > 0 ? (size_t)r->compile_threads : 1;
    s->rounds_planned = s->planned ? (s->planned + rs - 1) / rs : 0;
    s->finals = finals;
    double now = bt__now(), spent = now - T->t0;
    s->left = -1, s->left_is_limit = false;
    double per = s->measured ? (now - T->t_search0) / (double)s->measured : 0;
    if (finals) /* the search's time per config, frozen when it ended */
        per = P.per_config;
    else
        P.per_config = per;
    if (s->planned && s->measured && s->measured <= s->planned)
        s->left = finals ? finals_s(&T->o, per) - (now - P.finals0)
                         : per * (double)(s->planned - s->measured) + finals_s(&T->o, per);
    if (T->o.time_limit_s > 0 && (s->left < 0 || T->o.time_limit_s - spent < s->left))
        s->left = fmax(0, T->o.time_limit_s - spent), s->left_is_limit = true;
    P.stamp = now;
}

/* Shows T's state: takes the line when free (starting the ticker), draws it. */
static void show(const bt__tctx *T, bool finals)
{
    if (!T->o.progress || !isatty(2))
        return;
    pthread_mutex_lock(&P.mu);
    if (!P.owner) {
        P.owner = T, P.t0 = T->t0, P.color = bt__progress_color(), P.stop = false;
        P.running = pthread_create(&P.ticker, NULL, tick, NULL) == 0;
    }
    if (P.owner == T) {
        update(T, finals);
        draw();
    }
    pthread_mutex_unlock(&P.mu);
}

void bt__progress_round(const bt__tctx *T)
{
    show(T, false);
}

void bt__progress_round_done(const bt__tctx *T)
{
    show(T, false);
}

void bt__progress_finals(const bt__tctx *T)
{
    pthread_mutex_lock(&P.mu);
    P.finals0 = bt__now();
    pthread_mutex_unlock(&P.mu);
    show(T, true);
}

void bt__progress_end(const bt__tctx *T)
{
    pthread_mutex_lock(&P.mu);
    if (P.owner != T) {
        pthread_mutex_unlock(&P.mu);
        return;
    }
    P.stop = true;
    pthread_cond_signal(&P.cv);
    bool running = P.running;
    pthread_mutex_unlock(&P.mu);
    if (running)
        pthread_join(P.ticker, NULL);
    pthread_mutex_lock(&P.mu);
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    P.owner = NULL, P.running = false;
    pthread_mutex_unlock(&P.mu);
}
