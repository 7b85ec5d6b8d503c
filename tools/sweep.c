/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sweep.c — a sweep of problem sizes (sweep.h): parsing the lists and ranges, the keys (the
 * product of the swept variables, the first outermost), tuning them one by one in the supervised
 * child with what each found kept in memory shared with the supervisor (so that a child that
 * crashes, hangs or is interrupted loses nothing finished), and the sweep's report.
 */
#include "sweep.h"

#include "cli_num.h"

#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_VARS 8

/* What a child found for one key, in memory the supervisor reads. */
typedef struct key_rec {
    int state; /* 0 not tuned, 1 a winner, 2 no winner, 3 failed (msg), 4 no valid config */
    bool store_failed, eff_known, mem;
    double median_ms, eff, rate; /* rate: GB/s (mem) or TFLOP/s */
    char cfg[256];
    char msg[256];
} key_rec;

typedef struct shared {
    size_t done;
    char device[128], kernel[64];
    key_rec k[];
} shared;

struct bt_sweep {
    int nvar;
    const char *names[MAX_VARS];
    int64_t *vals[MAX_VARS];
    size_t nval[MAX_VARS];
    size_t nkeys;
    char dir[64]; /* the keys' tune JSON documents; "" when not kept */
    shared *sh;
    size_t sh_size;
};

/* A decimal integer at s (an optional '-', then digits: as the tool reads every size, no octal or
 * hexadecimal) into *v, *end past it; false when there is none or it does not fit. */
static bool scan_i64(const char *s, const char **end, long long *v)
{
    const char *p = s + (*s == '-');
    size_t nd = strspn(p, "0123456789"), len = (size_t)(p - s) + nd;
    char buf[24];
    int64_t x;
    if (!nd || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (!bt_cli_parse_i64(buf, &x))
        return false;
    *v = x;
    *end = s + len;
    return true;
}

/* One item of a list: N, A..B, A..B:S or pow2:A..B, appended to v (at most BT_SWEEP_MAX_KEYS).
 * Returns false after saying what is wrong. */
static bool parse_item(const char *name, const char *it, int64_t *v, size_t *n)
{
    bool pow2 = !strncmp(it, "pow2:", 5);
    const char *s = pow2 ? it + 5 : it, *end = s;
    long long a = 0, b = 0, step = 1;
    bool ok = scan_i64(s, &end, &a);
    b = a;
    if (ok && !strncmp(end, "..", 2)) {
        ok = scan_i64(end + 2, &end, &b);
        if (ok && *end == ':' && !pow2)
            ok = scan_i64(end + 1, &end, &step) && step > 0;
    } else if (pow2)
        ok = false;
    if (!ok || *end || b < a || (pow2 && a < 1)) {
        bt_cli_usage_error("tune", "--%s: '%s' is not N, A..B, A..B:STEP or pow2:A..B with "
                                   "A <= B (pow2: A >= 1)", name, it);
        return false;
    }
    for (long long x = pow2 ? 1 : a; x <= b; x = pow2 ? x * 2 : x + step) {
        if (x < a)
            continue;
        if (*n == BT_SWEEP_MAX_KEYS) {
            bt_cli_usage_error("tune", "--%s: more than %d values", name, BT_SWEEP_MAX_KEYS);
            return false;
        }
        v[(*n)++] = x;
        if (x > INT64_MAX / 2)
            break;
    }
    return true;
}

static bool is_sweep_value(const char *v)
{
    return strchr(v, ',') || strstr(v, "..") || !strncmp(v, "pow2:", 5);
}

int bt_sweep_plan(int nset, const char *const *names, const char *const *values, bool docs,
                  bt_sweep **out)
{
    *out = NULL;
    bt_sweep *s = calloc(1, sizeof *s);
    if (!s)
        return 1;
    s->nkeys = 1;
    for (int i = 0; i < nset; i++) {
        if (!is_sweep_value(values[i]))
            continue;
        if (s->nvar == MAX_VARS || !(s->vals[s->nvar] = malloc(sizeof(int64_t) * BT_SWEEP_MAX_KEYS))) {
            bt_sweep_free(s);
            return bt_cli_usage_error("tune", "at most %d swept sizes", MAX_VARS);
        }
        size_t n = 0;
        char *list = strdup(values[i]), *save = NULL;
        bool ok = list != NULL;
        for (char *it = list ? strtok_r(list, ",", &save) : NULL; ok && it;
             it = strtok_r(NULL, ",", &save))
            ok = parse_item(names[i], it, s->vals[s->nvar], &n);
        free(list);
        s->names[s->nvar] = names[i];
        s->nval[s->nvar++] = n;
        if (!ok || (s->nkeys *= n) > BT_SWEEP_MAX_KEYS || !n) {
            if (ok)
                bt_cli_usage_error("tune", "a sweep of %s keys: at most %d", n ? "so many" : "no",
                                   BT_SWEEP_MAX_KEYS);
            bt_sweep_free(s);
            return 2;
        }
    }
    if (!s->nvar) {
        bt_sweep_free(s);
        return 0;
    }
    s->sh_size = sizeof *s->sh + s->nkeys * sizeof(key_rec);
    s->sh = mmap(NULL, s->sh_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s->sh == MAP_FAILED) {
        s->sh = NULL;
        bt_sweep_free(s);
        fprintf(stderr, "blocktune tune: cannot map the sweep's record: %s\n", strerror(errno));
        return 1;
    }
    if (docs) {
        const char *tmp = getenv("TMPDIR");
        snprintf(s->dir, sizeof s->dir, "%.40s/bt-sweep-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(s->dir)) {
            fprintf(stderr, "blocktune tune: cannot create %s: %s\n", s->dir, strerror(errno));
            bt_sweep_free(s);
            return 1;
        }
    }
    *out = s;
    return 0;
}

bool bt_sweep_swept(const bt_sweep *s, const char *name)
{
    for (int i = 0; s && i < s->nvar; i++)
        if (!strcmp(s->names[i], name))
            return true;
    return false;
}

size_t bt_sweep_done(const bt_sweep *s)
{
    return s && s->sh ? s->sh->done : 0;
}

/* Key i's value of swept variable v: the first variable outermost. */
static int64_t key_value(const bt_sweep *s, size_t i, int v)
{
    for (int j = s->nvar - 1; j > v; j--)
        i /= s->nval[j];
    return s->vals[v][i % s->nval[v]];
}

static void key_name(const bt_sweep *s, size_t i, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int v = 0; v < s->nvar && o < size; v++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s=%" PRId64, v ? " " : "", s->names[v],
                              key_value(s, i, v));
}

static void doc_path(const bt_sweep *s, size_t i, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%zu.json", s->dir, i);
}

/* The winner's config as the report's table writes it: NAME=VALUE NAME=VALUE ... */
static void config_text(const bt_config *cfg, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < bt_config_count(cfg) && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s=%" PRId64, i ? " " : "",
                              bt_config_name(cfg, i), bt_config_value(cfg, i));
}

/* What the tune of key i found, into its record (and its document into the sweep's folder). */
static int record_key(bt_sweep *s, size_t i, const bt_result *r)
{
    key_rec *k = &s->sh->k[i];
    int rc = 0;
    const bt_config *cfg = NULL;
    if (bt_result_winner(r, &cfg, &k->median_ms)) {
        int mem = 0;
        k->state = 1;
        k->eff_known = bt_result_winner_rate(r, &k->rate, &mem, &k->eff) == 1;
        k->mem = mem;
        config_text(cfg, k->cfg, sizeof k->cfg);
    } else {
        k->state = bt_result_count(r) ? 2 : 4; /* 4: every config eliminated before anything ran */
        rc = 1;
    }
    char note[2200];
    if (bt_result_store_note(r, note, sizeof note)) {
        fprintf(stderr, "blocktune tune: %s\n", note);
        k->store_failed = true;
        rc = 1;
    }
    if (s->dir[0]) {
        char path[128];
        doc_path(s, i, path, sizeof path);
        FILE *f = fopen(path, "w");
        bt_status st = f ? bt_result_write_json(r, f) : BT_IO;
        if ((f && fclose(f)) || st) {
            fprintf(stderr, "blocktune tune: cannot write %s\n", path);
            rc = 1;
        }
    }
    return rc;
}

void bt_sweep_names(bt_sweep *s, const char *device, const char *kernel)
{
    snprintf(s->sh->device, sizeof s->sh->device, "%s", device ? device : "");
    snprintf(s->sh->kernel, sizeof s->sh->kernel, "%s", kernel ? kernel : "");
}

int bt_sweep_tune(bt_sweep *s, bt_kernel *kn, bt_problem *p, const bt_tune_options *o,
                  bool progress, bool restart, int restart_rc)
{
    int rc = 0;
    for (int v = 0; v < s->nvar; v++) { /* a name the kernel lacks ends the sweep at once */
        bt_diag d = {0};
        if (bt_problem_set(p, s->names[v], s->vals[v][0], &d) == BT_NOT_FOUND) {
            fprintf(stderr, "blocktune tune: unknown option or size --%s: %s\n", s->names[v], d.msg);
            return 2;
        }
    }
    for (size_t i = s->sh->done; i < s->nkeys; i++) {
        key_rec *k = &s->sh->k[i];
        char name[256];
        key_name(s, i, name, sizeof name);
        memset(k, 0, sizeof *k);
        bt_diag d = {0};
        bt_status st = BT_OK;
        for (int v = 0; v < s->nvar && !st; v++)
            st = bt_problem_set(p, s->names[v], key_value(s, i, v), &d);
        if (progress && isatty(2))
            fprintf(stderr, "blocktune tune: sweep key %zu of %zu: %s\n", i + 1, s->nkeys, name);
        bt_result *r = NULL;
        if (!st)
            st = bt_kernel_tune(kn, p, o, &r, &d);
        if (st && bt_kernel_device_lost(kn) && restart)
            return restart_rc; /* a fresh process resumes this key from the store */
        if (st) {
            k->state = 3;
            snprintf(k->msg, sizeof k->msg, "%.200s", d.msg[0] ? d.msg : bt_strerror(st));
            fprintf(stderr, "blocktune tune: %s: %s\n", name, k->msg);
            rc = 1;
        } else
            rc |= record_key(s, i, r);
        bt_result_destroy(r);
        s->sh->done = i + 1;
    }
    return rc;
}

/* text into path, whole or not at all: a temporary file beside it, flushed, then renamed. False
 * after saying why into why. */
static bool write_atomic(const char *path, const char *text, char *why, size_t size)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%.4096s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(why, size, "cannot create %s: %s", tmp, strerror(errno));
        return false;
    }
    bool ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    const char *verb = ok ? "flush" : "write";
    if (fclose(f) != 0 || !ok) {
        snprintf(why, size, "cannot %s %s: %s", verb, tmp, strerror(errno));
        unlink(tmp);
        return false;
    }
    if (rename(tmp, path) != 0) {
        snprintf(why, size, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}

/* The sweep's HTML page over the keys' documents (from files: rep labels them as this sweep's). */
static int write_html(bt_report *rep, const char *html)
{
    errno = 0;
    FILE *f = fopen(html, "w");
    bt_status st = f ? bt_report_set_source(rep, "this sweep (blocktune tune --html)") : BT_IO;
    if (!st)
        st = bt_report_write_html(rep, f, NULL);
    if ((f && fclose(f)) || st) {
        fprintf(stderr, "blocktune tune: cannot write %s: %s\n", html,
                errno ? strerror(errno) : bt_strerror(st));
        return 1;
    }
    return 0;
}

/* The keys' documents, in key order: the sweep's --json and --html. */
static int write_docs(const bt_sweep *s, const char *kernel, const char *json, const char *html)
{
    bt_report *rep = NULL;
    json_t *arr = json_array(), *top = json_object();
    int rc = bt_report_create(&rep) == BT_OK && arr && top ? 0 : 1;
    for (size_t i = 0; !rc && i < s->sh->done; i++) {
        char path[128];
        doc_path(s, i, path, sizeof path);
        json_t *o = s->sh->k[i].state == 1 || s->sh->k[i].state == 2 || s->sh->k[i].state == 4
                        ? json_load_file(path, 0, NULL) : NULL;
        if (!o)
            continue;
        json_array_append_new(arr, o);
        bt_diag d = {0};
        if (html && bt_report_add_tune_file(rep, path, &d) != BT_OK) {
            fprintf(stderr, "blocktune tune: %s: %s\n", path, d.msg);
            rc = 1;
        }
    }
    if (!rc && json) {
        json_t *sw = json_array();
        for (int v = 0; sw && v < s->nvar; v++)
            json_array_append_new(sw, json_string(s->names[v]));
        json_object_set_new(top, "schema", json_string("blocktune-sweep/1"));
        json_object_set_new(top, "kernel", json_string(kernel));
        json_object_set_new(top, "swept", sw);
        json_object_set_new(top, "keys", json_integer((json_int_t)s->nkeys));
        json_object_set(top, "sweep", arr);
        char *text = json_dumps(top, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
        char why[4400] = "";
        if (!text || !write_atomic(json, text, why, sizeof why)) {
            fprintf(stderr, "blocktune tune: cannot write %s: %s\n", json, why);
            rc = 1;
        }
        free(text);
    }
    if (!rc && html)
        rc = write_html(rep, html);
    bt_report_destroy(rep);
    json_decref(arr);
    json_decref(top);
    return rc;
}

int bt_sweep_report(bt_sweep *s, const char *kernel, const char *json, const char *html, int rc)
{
    const shared *sh = s->sh;
    if (!sh->done && rc && rc != 128 + SIGINT)
        return rc; /* nothing was tuned (the kernel, the device...): the child said why */
    int w = 6;
    for (size_t i = 0; i < sh->done; i++)
        if (sh->k[i].state == 1 && (int)strlen(sh->k[i].cfg) > w)
            w = (int)strlen(sh->k[i].cfg);
    printf("\nSweep: %s on %s, %zu of %zu key(s) tuned (", sh->kernel[0] ? sh->kernel : kernel,
           sh->device[0] ? sh->device : "the device", sh->done, s->nkeys);
    for (int v = 0; v < s->nvar; v++)
        printf("%s%s: %zu value(s)", v ? ", " : "", s->names[v], s->nval[v]);
    printf(s->nvar > 1 ? ", every combination)\n" : ")\n");
    printf("  %-16s %-*s %10s  %s\n", "key", w, "winner", "median us", "efficiency");
    for (size_t i = 0; i < s->nkeys; i++) {
        const key_rec *k = &sh->k[i];
        char name[256], eff[64];
        key_name(s, i, name, sizeof name);
        if (i >= sh->done) {
            printf("  %-16s %s\n", name, "not tuned");
            continue;
        }
        if (k->state != 1) {
            printf("  %-16s %s\n", name, k->state == 2   ? "no winner: no config passed"
                                          : k->state == 4 ? "no winner: no valid config"
                                                          : k->msg);
            continue;
        }
        if (k->eff_known)
            snprintf(eff, sizeof eff, "%.1f%% (%.2f %s)", k->eff * 100, k->rate,
                     k->mem ? "GB/s" : "TFLOP/s");
        else
            snprintf(eff, sizeof eff, "no roofline (%.2f %s)", k->rate, k->mem ? "GB/s" : "TFLOP/s");
        printf("  %-16s %-*s %10.2f  %s%s\n", name, w, k->cfg, k->median_ms * 1e3, eff,
               k->store_failed ? "  (not stored)" : "");
    }
    if (sh->done < s->nkeys)
        printf("  the store keeps every measurement: the same command resumes the sweep\n");
    fflush(stdout);
    if (json || html)
        rc |= write_docs(s, kernel, json, html);
    return rc;
}

void bt_sweep_free(bt_sweep *s)
{
    if (!s)
        return;
    if (s->dir[0]) {
        for (size_t i = 0; i < s->nkeys; i++) {
            char path[128];
            doc_path(s, i, path, sizeof path);
            unlink(path);
        }
        rmdir(s->dir);
    }
    if (s->sh)
        munmap(s->sh, s->sh_size);
    for (int v = 0; v < s->nvar; v++)
        free(s->vals[v]);
    free(s);
}
