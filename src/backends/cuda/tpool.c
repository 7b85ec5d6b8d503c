/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tpool.c — the Triton compile pool process and its protocol (tpool.h): spawning it over a
 * socket pair (its stdin and stdout; send with MSG_NOSIGNAL, so a pool that died is an error,
 * not a SIGPIPE), the hello, one reader thread that files each answer under its id for the
 * thread waiting on it, and the end at exit (input closed: the pool answers what is queued and
 * exits). A child forked from a process with a pool starts its own.
 */
#include "backends/cuda/tpool.h"

#include "core/pool.h"
#include "core/util.h"

#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BT_SOURCE_DIR
#define BT_SOURCE_DIR "."
#endif
#ifndef BT_INSTALL_DATADIR
#define BT_INSTALL_DATADIR "/usr/local/share/blocktune"
#endif

extern char **environ;

typedef struct lbuf {
    char *b;
    size_t len, cap;
} lbuf;

enum { NOT_STARTED = 0, RUNNING, ENDED };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    bt_status why_st;
    char why[sizeof(((bt_diag *)0)->msg)];
    int fd;
    pid_t pid, owner;
    pthread_t reader;
    lbuf in;
    json_t *answers; /* id (decimal) -> answer */
    long long next_id;
    char version[32];
    bool atexit_set;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .state = NOT_STARTED,
       .fd = -1};

/* The next line of fd (malloc'd, without its newline); NULL at end of input or on an error. */
static char *read_line(int fd, lbuf *lb)
{
    for (;;) {
        char *nl = lb->len ? memchr(lb->b, '\n', lb->len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - lb->b);
            char *line = malloc(n + 1);
            if (!line)
                return NULL;
            memcpy(line, lb->b, n);
            line[n] = '\0';
            memmove(lb->b, nl + 1, lb->len - n - 1);
            lb->len -= n + 1;
            return line;
        }
        if (lb->cap - lb->len < 4096) {
            size_t cap = lb->cap ? lb->cap * 2 : 65536;
            char *g = realloc(lb->b, cap);
            if (!g)
                return NULL;
            lb->b = g, lb->cap = cap;
        }
        ssize_t r = read(fd, lb->b + lb->len, lb->cap - lb->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NULL;
        lb->len += (size_t)r;
    }
}

static bool has_package(const char *dir)
{
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%.4200s/blocktune/triton_compile.py", dir);
    return stat(p, &sb) == 0;
}

/* The folder to put on PYTHONPATH, NULL (with the places looked at in diag) when none has it. */
static const char *python_dir(char *buf, size_t size, bt_diag *diag)
{
    const char *env = getenv("BLOCKTUNE_PYTHONPATH");
    if (env && *env) {
        if (has_package(env))
            return env;
        bt__diag_set(diag, "BLOCKTUNE_PYTHONPATH=%s has no blocktune/triton_compile.py", env);
        return NULL;
    }
    snprintf(buf, size, "%s/python", BT_SOURCE_DIR);
    if (has_package(buf))
        return buf;
    snprintf(buf, size, "%s/python", BT_INSTALL_DATADIR);
    if (has_package(buf))
        return buf;
    bt__diag_set(diag, "the Triton compile pool (blocktune/triton_compile.py) is in neither %s/python "
                 "nor %s/python; set BLOCKTUNE_PYTHONPATH to the folder that holds blocktune/",
                 BT_SOURCE_DIR, BT_INSTALL_DATADIR);
    return NULL;
}

/* environ with PYTHONPATH=dir (before what it was), malloc'd; its new string into *owned. */
static char **env_with(const char *dir, char **owned)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    const char *old = getenv("PYTHONPATH");
    size_t len = strlen(dir) + (old ? strlen(old) : 0) + 16;
    *owned = malloc(len);
    if (!env || !*owned) {
        free(env);
        free(*owned);
        return NULL;
    }
    snprintf(*owned, len, "PYTHONPATH=%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PYTHONPATH=", 11))
            env[m++] = environ[i];
    env[m] = *owned;
    return env;
}

static void *reader_main(void *arg)
{
    (void)arg;
    char *line;
    while ((line = read_line(P.fd, &P.in))) {
        json_t *a = json_loads(line, 0, NULL);
        free(line);
        json_t *id = a ? json_object_get(a, "id") : NULL;
        if (!json_is_integer(id)) {
            json_decref(a);
            continue;
        }
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(id));
        pthread_mutex_lock(&P.mu);
        json_object_set_new(P.answers, key, a);
        pthread_cond_broadcast(&P.cv);
        pthread_mutex_unlock(&P.mu);
    }
    pthread_mutex_lock(&P.mu);
    P.state = ENDED;
    P.why_st = BT_INTERNAL;
    snprintf(P.why, sizeof P.why, "the Triton compile pool ended (its stderr says why)");
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

static void stop_pool(void)
{
    pthread_mutex_lock(&P.mu);
    bool mine = P.state != NOT_STARTED && P.fd >= 0 && P.owner == getpid();
    pthread_mutex_unlock(&P.mu);
    if (!mine)
        return;
    shutdown(P.fd, SHUT_WR);
    pthread_join(P.reader, NULL);
    waitpid(P.pid, NULL, 0);
    close(P.fd);
    P.fd = -1;
}

/* Spawns `py -m blocktune.triton_compile --workers N` on a socket pair; BT_NO_BACKEND with the
 * reason when it cannot run. */
static bt_status spawn_pool(const char *py, bt_diag *diag)
{
    char dirbuf[4200];
    const char *dir = python_dir(dirbuf, sizeof dirbuf, diag);
    if (!dir)
        return BT_NO_BACKEND;
    char *owned = NULL;
    char **env = env_with(dir, &owned);
    int sv[2];
    if (!env || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        free(env);
        free(owned);
        bt__diag_set(diag, "cannot start the Triton compile pool: %s", strerror(errno));
        return BT_INTERNAL;
    }
    char workers[16];
    snprintf(workers, sizeof workers, "%d", bt__pool_cores());
    char *argv[] = {(char *)py, "-m", "blocktune.triton_compile", "--workers", workers, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    int e = posix_spawnp(&P.pid, py, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    free(env);
    free(owned);
    if (e) {
        close(sv[0]);
        bt__diag_set(diag, "cannot run '%s' (%s) for Triton compiles: set BLOCKTUNE_PYTHON to a "
                     "python with Triton installed", py, strerror(e));
        return BT_NO_BACKEND;
    }
    P.fd = sv[0];
    P.owner = getpid();
    return BT_OK;
}

/* Reads the pool's hello: BT_OK when it is ready (protocol 1), else the reason. */
static bt_status hello(const char *py, bt_diag *diag)
{
    char *line = read_line(P.fd, &P.in);
    json_t *h = line ? json_loads(line, 0, NULL) : NULL;
    free(line);
    bt_status st = BT_OK;
    json_t *err = json_object_get(h, "error");
    if (!h)
        st = BT_NO_BACKEND, bt__diag_set(diag, "'%s -m blocktune.triton_compile' ended before it "
                                         "said it was ready (its stderr says why)", py);
    else if (!json_is_true(json_object_get(h, "ready")))
        st = BT_NO_BACKEND, bt__diag_set(diag, "Triton compile pool: %s",
                                         err ? json_string_value(json_object_get(err, "message"))
                                             : "not ready");
    else if (json_integer_value(json_object_get(h, "protocol")) != 1)
        st = BT_UNSUPPORTED, bt__diag_set(diag, "the Triton compile pool speaks protocol %lld; "
                                          "this blocktune speaks 1",
                                          (long long)json_integer_value(json_object_get(h, "protocol")));
    else
    {
        const char *v = json_string_value(json_object_get(h, "triton_version"));
        snprintf(P.version, sizeof P.version, "%s", v ? v : "?");
    }
    json_decref(h);
    return st;
}

/* Starts the pool (P.mu held); on failure P is ENDED with the reason. */
static void start_pool(void)
{
    const char *py = getenv("BLOCKTUNE_PYTHON");
    if (!py || !*py)
        py = "python3";
    bt_diag d = {0};
    bt_status st = spawn_pool(py, &d);
    if (st == BT_OK && (st = hello(py, &d)) != BT_OK) {
        close(P.fd);
        P.fd = -1;
        waitpid(P.pid, NULL, 0);
    }
    if (st == BT_OK && (!(P.answers = json_object()) ||
                        pthread_create(&P.reader, NULL, reader_main, NULL) != 0)) {
        st = BT_INTERNAL;
        snprintf(d.msg, sizeof d.msg, "cannot start the Triton compile pool's reader");
    }
    P.state = st == BT_OK ? RUNNING : ENDED;
    P.why_st = st;
    snprintf(P.why, sizeof P.why, "%s", d.msg);
    if (st == BT_OK && !P.atexit_set)
        P.atexit_set = atexit(stop_pool) == 0;
}

/* Makes sure a pool runs for this process (P.mu held); BT_OK or the reason it does not. */
static bt_status ensure(bt_diag *diag)
{
    if (P.state != NOT_STARTED && P.owner != getpid()) { /* forked: the parent's pool */
        if (P.fd >= 0)
            close(P.fd);
        P.fd = -1;
        P.in.len = 0;
        json_decref(P.answers);
        P.answers = NULL;
        P.state = NOT_STARTED;
    }
    if (P.state == NOT_STARTED)
        start_pool();
    if (P.state == RUNNING)
        return BT_OK;
    bt__diag_set(diag, "%s", P.why);
    return P.why_st ? P.why_st : BT_INTERNAL;
}

long long bt__tpool_requests(void)
{
    pthread_mutex_lock(&P.mu);
    long long n = P.next_id;
    pthread_mutex_unlock(&P.mu);
    return n;
}

bt_status bt__tpool_version(char *out, size_t size, bt_diag *diag)
{
    pthread_mutex_lock(&P.mu);
    bt_status st = ensure(diag);
    if (st == BT_OK)
        snprintf(out, size, "%s", P.version);
    pthread_mutex_unlock(&P.mu);
    return st;
}

static bool send_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w, n -= (size_t)w;
    }
    return true;
}

bt_status bt__tpool_request(const char *request, const char *target, int64_t max_shared,
                            json_t **answer, bt_diag *diag)
{
    *answer = NULL;
    json_t *R = json_loads(request, 0, NULL);
    if (!json_is_object(R)) {
        json_decref(R);
        bt__diag_set(diag, "a Triton compile request that is no JSON object");
        return BT_INTERNAL;
    }
    json_object_set_new(R, "target", json_string(target));
    if (max_shared > 0)
        json_object_set_new(R, "max_shared", json_integer((json_int_t)max_shared));
    pthread_mutex_lock(&P.mu);
    bt_status st = ensure(diag);
    long long id = ++P.next_id;
    json_object_set_new(R, "id", json_integer(id));
    char *text = st == BT_OK ? json_dumps(R, JSON_COMPACT) : NULL;
    json_decref(R);
    if (st == BT_OK && (!text || !send_all(P.fd, text, strlen(text)) || !send_all(P.fd, "\n", 1))) {
        st = BT_INTERNAL;
        bt__diag_set(diag, "cannot send to the Triton compile pool: %s", strerror(errno));
    }
    free(text);
    char key[32];
    snprintf(key, sizeof key, "%lld", id);
    json_t *a = NULL;
    while (st == BT_OK && !(a = json_object_get(P.answers, key)) && P.state == RUNNING)
        pthread_cond_wait(&P.cv, &P.mu);
    if (a) {
        json_incref(a);
        json_object_del(P.answers, key);
    } else if (st == BT_OK) {
        st = BT_INTERNAL;
        bt__diag_set(diag, "%s", P.why);
    }
    pthread_mutex_unlock(&P.mu);
    *answer = a;
    return st;
}
