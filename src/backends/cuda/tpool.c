/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tpool.c — the Triton compile pool process and its protocol (tpool.h): spawning it over a
 * socket pair (its stdin and stdout; send with MSG_NOSIGNAL, so a pool that died is an error,
 * not a SIGPIPE), in the background (bt__tpool_start: the reader thread waits for the hello, then
 * files each answer under its id for the thread waiting on it, and notes when the workers are
 * ready and what Triton's compiles took), and the end at exit (input closed: the pool answers
 * what is queued, ends its workers and exits). A child forked from a process with a pool starts
 * its own. An embedder may start the pool's process itself (bt_triton_pool_starter: the Python
 * package forks it from its own interpreter). Triton's version without Python: the probe record
 * (probe.c) of the python and package that would run, checked by stat; a pool's hello writes it.
 */
#include "backends/cuda/tpool.h"

#include "backends/cuda/tprobe.h"
#include "core/pool.h"
#include "core/util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
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

enum { NOT_STARTED = 0, STARTING, RUNNING, ENDED };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    bt_status why_st;
    char why[sizeof(((bt_diag *)0)->msg)];
    int fd;
    pid_t pid, owner;
    pthread_t reader;
    bool have_reader;
    bool spawned; /* a pool process was started by this process */
    lbuf in;
    json_t *answers; /* id (decimal) -> answer */
    long long next_id;
    char py[1024];       /* the python it runs */
    char dir[4200];      /* the folder of the blocktune package */
    char version[32];    /* Triton's, once known (probe record or hello) */
    bool version_known;
    bool atexit_set;
    double t_spawn, ready_s; /* ready_s: spawn to every worker ready (-1: not yet) */
    double compile_s;        /* the answers' compile_s, summed */
    bt_triton_pool_start_fn start; /* the embedder's way to start the pool (NULL: spawn) */
    void *start_ctx;
    bool started_by_embedder;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .state = NOT_STARTED,
       .fd = -1, .ready_s = -1};

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

/* Reads the pool's hello (the reader thread, before any answer): BT_OK when it is ready
 * (protocol 1), with Triton's version in P.version and the files that tell which Triton it is in
 * *files (a new reference); else the reason. */
static bt_status hello(json_t **files, bt_diag *diag)
{
    char *line = read_line(P.fd, &P.in);
    json_t *h = line ? json_loads(line, 0, NULL) : NULL;
    free(line);
    bt_status st = BT_OK;
    json_t *err = json_object_get(h, "error");
    if (!h && P.started_by_embedder)
        st = BT_NO_BACKEND,
        bt__diag_set(diag, "the Triton compile pool that the embedding process started "
                           "(bt_triton_pool_starter; the Python package forks its interpreter) "
                           "ended before it said it was ready (its stderr says why; with the "
                           "package, BLOCKTUNE_POOL_FORK=0 has the library spawn '%s' instead)",
                     P.py);
    else if (!h)
        st = BT_NO_BACKEND, bt__diag_set(diag, "'%s -m blocktune.triton_compile' ended before it "
                                         "said it was ready (its stderr says why)", P.py);
    else if (!json_is_true(json_object_get(h, "ready")))
        st = BT_NO_BACKEND, bt__diag_set(diag, "Triton compile pool: %s",
                                         err ? json_string_value(json_object_get(err, "message"))
                                             : "not ready");
    else if (json_integer_value(json_object_get(h, "protocol")) != 1)
        st = BT_UNSUPPORTED, bt__diag_set(diag, "the Triton compile pool speaks protocol %lld; "
                                          "this blocktune speaks 1",
                                          (long long)json_integer_value(json_object_get(h, "protocol")));
    else {
        const char *v = json_string_value(json_object_get(h, "triton_version"));
        pthread_mutex_lock(&P.mu);
        snprintf(P.version, sizeof P.version, "%s", v ? v : "?");
        P.version_known = v != NULL;
        pthread_mutex_unlock(&P.mu);
        *files = json_incref(json_object_get(h, "files"));
    }
    json_decref(h);
    return st;
}

/* One line from the pool after the hello: an answer filed under its id (its compile_s summed),
 * or the event that every worker is ready. */
static void take_line(json_t *a)
{
    json_t *id = json_object_get(a, "id");
    pthread_mutex_lock(&P.mu);
    if (json_is_integer(id)) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(id));
        const json_t *cs = json_object_get(a, "compile_s");
        if (json_is_number(cs) && !json_is_true(json_object_get(a, "cached")))
            P.compile_s += json_number_value(cs);
        json_object_set(P.answers, key, a);
        pthread_cond_broadcast(&P.cv);
    } else if (!strcmp(json_string_value(json_object_get(a, "event")) ? json_string_value(
                           json_object_get(a, "event")) : "", "workers_ready") && P.ready_s < 0)
        P.ready_s = bt__now() - P.t_spawn;
    pthread_mutex_unlock(&P.mu);
}

/* The reader thread: the hello (the pool is RUNNING, or ENDED with the reason; a ready pool's
 * hello becomes the probe record), then every answer until the pool ends. */
static void *reader_main(void *arg)
{
    (void)arg;
    bt_diag d = {0};
    json_t *files = NULL;
    bt_status st = hello(&files, &d);
    pthread_mutex_lock(&P.mu);
    P.state = st == BT_OK ? RUNNING : ENDED;
    P.why_st = st;
    snprintf(P.why, sizeof P.why, "%s", d.msg);
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.mu);
    if (st == BT_OK)
        bt__tprobe_write(P.py, P.dir, P.version, files);
    json_decref(files);
    char *line;
    while (st == BT_OK && (line = read_line(P.fd, &P.in))) {
        json_t *a = json_loads(line, 0, NULL);
        free(line);
        if (a)
            take_line(a);
        json_decref(a);
    }
    pthread_mutex_lock(&P.mu);
    if (P.state == RUNNING) {
        P.state = ENDED;
        P.why_st = BT_INTERNAL;
        snprintf(P.why, sizeof P.why, "the Triton compile pool ended (its stderr says why)");
    }
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

/* At exit: input closed, so the pool answers what is queued (nothing: every request of ours is
 * answered before its caller returns), ends its workers, still importing or idle, and exits. */
static void stop_pool(void)
{
    pthread_mutex_lock(&P.mu);
    bool mine = P.have_reader && P.fd >= 0 && P.owner == getpid();
    pthread_mutex_unlock(&P.mu);
    if (!mine)
        return;
    shutdown(P.fd, SHUT_RDWR);
    pthread_join(P.reader, NULL);
    /* it ends at once, or within the time Python takes to start; one that hangs is not waited
     * for past a second (its workers end at the end of their input) */
    int i = 0;
    while (waitpid(P.pid, NULL, WNOHANG) == 0 && i++ < 100)
        usleep(10000);
    if (i > 100) {
        kill(P.pid, SIGKILL);
        waitpid(P.pid, NULL, 0);
    }
    close(P.fd);
    P.fd = -1;
    P.have_reader = false;
}

/* Spawns `P.py -m blocktune.triton_compile --workers N --events` serving on fd (its standard
 * input and output): 0, an errno of posix_spawn, or -1 when its environment cannot be made. */
static int spawn_python(int fd)
{
    char *owned = NULL;
    char **env = env_with(P.dir, &owned);
    if (!env)
        return -1;
    char workers[16];
    snprintf(workers, sizeof workers, "%d", bt__pool_cores());
    char *argv[] = {P.py, "-m", "blocktune.triton_compile", "--workers", workers, "--events",
                    NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 0);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    int e = posix_spawnp(&P.pid, P.py, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    free(owned);
    return e;
}

/* Starts the pool's process on a socket pair: the embedder's (bt_triton_pool_starter), else a
 * spawned python; BT_NO_BACKEND with the reason when it cannot run. */
static bt_status spawn_pool(bt_diag *diag)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        bt__diag_set(diag, "cannot start the Triton compile pool: %s", strerror(errno));
        return BT_INTERNAL;
    }
    int pid = P.start ? P.start(sv[1], bt__pool_cores(), P.start_ctx) : 0;
    P.started_by_embedder = pid > 0;
    int e = 0;
    if (P.started_by_embedder)
        P.pid = (pid_t)pid;
    else
        e = spawn_python(sv[1]);
    close(sv[1]);
    if (e < 0) {
        close(sv[0]);
        bt__diag_set(diag, "cannot start the Triton compile pool: %s", strerror(ENOMEM));
        return BT_INTERNAL;
    }
    if (e) {
        close(sv[0]);
        bt__diag_set(diag, "cannot run '%s' (%s) for Triton compiles: set BLOCKTUNE_PYTHON to a "
                     "python with Triton installed", P.py, strerror(e));
        return BT_NO_BACKEND;
    }
    P.fd = sv[0];
    P.owner = getpid();
    return BT_OK;
}

void bt_triton_pool_starter(bt_triton_pool_start_fn start, void *ctx)
{
    pthread_mutex_lock(&P.mu);
    P.start = start;
    P.start_ctx = ctx;
    pthread_mutex_unlock(&P.mu);
}

/* The python and the package folder a pool would run (P.py, P.dir); false (the reason in diag)
 * when there is no package. */
static bool resolve(bt_diag *diag)
{
    const char *py = getenv("BLOCKTUNE_PYTHON");
    snprintf(P.py, sizeof P.py, "%s", py && *py ? py : "python3");
    const char *dir = python_dir(P.dir, sizeof P.dir, diag);
    if (dir && dir != P.dir)
        snprintf(P.dir, sizeof P.dir, "%s", dir);
    return dir != NULL;
}

/* Starts the pool in the background (P.mu held): STARTING until the reader has its hello; on a
 * failure to spawn, ENDED with the reason. */
static void start_pool(void)
{
    bt_diag d = {0};
    bt_status st = resolve(&d) ? spawn_pool(&d) : BT_NO_BACKEND;
    P.t_spawn = bt__now();
    P.ready_s = -1;
    if (st == BT_OK && (!(P.answers = json_object()) ||
                        pthread_create(&P.reader, NULL, reader_main, NULL) != 0)) {
        st = BT_INTERNAL;
        snprintf(d.msg, sizeof d.msg, "cannot start the Triton compile pool's reader");
        close(P.fd);
        P.fd = -1;
        waitpid(P.pid, NULL, 0);
    }
    P.have_reader = P.spawned = st == BT_OK;
    P.state = st == BT_OK ? STARTING : ENDED;
    P.why_st = st;
    snprintf(P.why, sizeof P.why, "%s", d.msg);
    if (st == BT_OK && !P.atexit_set)
        P.atexit_set = atexit(stop_pool) == 0;
}

/* A pool of the parent's, in a forked child (P.mu held): forgotten, so the child starts its own. */
static void forget_parents(void)
{
    if (P.state == NOT_STARTED || P.owner == getpid())
        return;
    if (P.fd >= 0)
        close(P.fd);
    P.fd = -1;
    P.in.len = 0;
    json_decref(P.answers);
    P.answers = NULL;
    P.have_reader = P.spawned = false;
    P.state = NOT_STARTED;
    P.compile_s = 0;
    P.next_id = 0;
}

/* Makes sure a pool runs for this process (P.mu held), waiting for its hello; BT_OK or the reason
 * it does not. */
static bt_status ensure(bt_diag *diag)
{
    forget_parents();
    if (P.state == NOT_STARTED)
        start_pool();
    while (P.state == STARTING)
        pthread_cond_wait(&P.cv, &P.mu);
    if (P.state == RUNNING)
        return BT_OK;
    bt__diag_set(diag, "%s", P.why);
    return P.why_st ? P.why_st : BT_INTERNAL;
}

void bt__tpool_start(void)
{
    pthread_mutex_lock(&P.mu);
    forget_parents();
    if (P.state == NOT_STARTED)
        start_pool();
    pthread_mutex_unlock(&P.mu);
}

/* Triton's version known without starting a pool (P.mu held): a pool's hello, or the probe
 * record of the python a pool would run. */
static bool version_known(void)
{
    if (P.version_known)
        return true;
    bt_diag d = {0};
    if (P.state == NOT_STARTED && resolve(&d) &&
        bt__tprobe_read(P.py, P.dir, P.version, sizeof P.version))
        P.version_known = true;
    return P.version_known;
}

bool bt__tpool_version_known(char *out, size_t size)
{
    pthread_mutex_lock(&P.mu);
    forget_parents();
    bool known = version_known();
    if (known)
        snprintf(out, size, "%s", P.version);
    pthread_mutex_unlock(&P.mu);
    return known;
}

void bt__tpool_times(bt__tpool_stats *out)
{
    pthread_mutex_lock(&P.mu);
    bool ours = P.spawned && P.owner == getpid();
    out->started = ours;
    out->by_embedder = ours && P.started_by_embedder;
    out->ready_s = ours ? P.ready_s : -1;
    out->compile_s = ours ? P.compile_s : 0;
    out->requests = P.next_id;
    pthread_mutex_unlock(&P.mu);
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
    forget_parents();
    bt_status st = version_known() ? BT_OK : ensure(diag);
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
