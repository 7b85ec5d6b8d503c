/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c — the SQLite results store: opening (WAL, busy timeout, versioned schema and its
 * migrations), per-config measurement rows, winners, iteration, forgetting and verification.
 * See store.h for the guarantees.
 */
#include "store/store.h"

#include "core/util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

struct bt__store {
    sqlite3 *db;
    char *path;
    int64_t bad_rows; /* rows read back that failed the checks (each warned about) */
};

/* ---------------------------------------------------------------------------------------------
 * Schema and migrations. To add version 2: append {2, "what it changes", "SQL"} to the table and
 * raise BT__STORE_SCHEMA_VERSION. Each migration runs once, inside the open's write transaction,
 * and is recorded in schema_migrations.
 * ------------------------------------------------------------------------------------------- */
#define IDENT_COLS "kernel, source_hash, options, device, key"

static const struct migration {
    int version;
    const char *description;
    const char *sql;
} migrations[] = {
    {1, "measurements and winners with provenance",
     "CREATE TABLE IF NOT EXISTS schema_migrations(\n"
     "  version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied REAL NOT NULL);\n"
     "CREATE TABLE measurements(\n"
     "  kernel TEXT NOT NULL, source_hash TEXT NOT NULL, options TEXT NOT NULL,\n"
     "  device TEXT NOT NULL, key TEXT NOT NULL, config_json TEXT NOT NULL,\n"
     "  device_name TEXT NOT NULL, device_uuid TEXT NOT NULL, device_arch TEXT NOT NULL,\n"
     "  driver TEXT NOT NULL, compiler TEXT NOT NULL, blocktune_version TEXT NOT NULL,\n"
     "  key_json TEXT NOT NULL, status TEXT NOT NULL, error TEXT,\n"
     "  median_ms REAL, p20_ms REAL, p80_ms REAL, min_ms REAL, mad_ms REAL, reps INTEGER,\n"
     "  max_rel_err REAL, regs INTEGER, local_bytes INTEGER, smem_bytes INTEGER,\n"
     "  compile_ms REAL, timestamp REAL NOT NULL, origin TEXT NOT NULL,\n"
     "  PRIMARY KEY(" IDENT_COLS ", config_json));\n"
     "CREATE INDEX measurements_by_name ON measurements(kernel, device_name, key);\n"
     "CREATE TABLE winners(\n"
     "  kernel TEXT NOT NULL, source_hash TEXT NOT NULL, options TEXT NOT NULL,\n"
     "  device TEXT NOT NULL, key TEXT NOT NULL, config_json TEXT NOT NULL,\n"
     "  margin REAL, tie INTEGER NOT NULL DEFAULT 0, origin TEXT NOT NULL,\n"
     "  timestamp REAL NOT NULL,\n"
     "  PRIMARY KEY(" IDENT_COLS "),\n"
     "  FOREIGN KEY(" IDENT_COLS ", config_json)\n"
     "    REFERENCES measurements(" IDENT_COLS ", config_json) ON DELETE CASCADE);\n"},
    {2, "mean time, foreign records and the headers of imported spaces",
     "ALTER TABLE measurements ADD COLUMN mean_ms REAL;\n"
     "ALTER TABLE measurements ADD COLUMN extra_json TEXT;\n"
     "CREATE TABLE spaces(\n"
     "  kernel TEXT NOT NULL, source_hash TEXT NOT NULL, options TEXT NOT NULL,\n"
     "  device TEXT NOT NULL, key TEXT NOT NULL, header_json TEXT NOT NULL,\n"
     "  origin TEXT NOT NULL, timestamp REAL NOT NULL,\n"
     "  PRIMARY KEY(" IDENT_COLS "));\n"},
};

/* The measurement columns, in the order of the binders and readers below. */
#define M_COLS                                                                                     \
    "kernel, source_hash, options, device, key, config_json, device_name, device_uuid, "          \
    "device_arch, driver, compiler, blocktune_version, key_json, status, error, median_ms, "      \
    "p20_ms, p80_ms, min_ms, mad_ms, reps, max_rel_err, regs, local_bytes, smem_bytes, "          \
    "compile_ms, timestamp, origin, mean_ms, extra_json"
#define M_NCOLS 30
#define M_COLS_PREFIXED                                                                            \
    "m.kernel, m.source_hash, m.options, m.device, m.key, m.config_json, m.device_name, "         \
    "m.device_uuid, m.device_arch, m.driver, m.compiler, m.blocktune_version, m.key_json, "       \
    "m.status, m.error, m.median_ms, m.p20_ms, m.p80_ms, m.min_ms, m.mad_ms, m.reps, "            \
    "m.max_rel_err, m.regs, m.local_bytes, m.smem_bytes, m.compile_ms, m.timestamp, m.origin, "   \
    "m.mean_ms, m.extra_json"

static const char put_sql[] =
    "INSERT INTO measurements(" M_COLS ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,"
    "?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29,?30) "
    "ON CONFLICT(" IDENT_COLS ", config_json) DO UPDATE SET device_name=excluded.device_name, "
    "device_uuid=excluded.device_uuid, device_arch=excluded.device_arch, driver=excluded.driver, "
    "compiler=excluded.compiler, blocktune_version=excluded.blocktune_version, "
    "key_json=excluded.key_json, status=excluded.status, error=excluded.error, "
    "median_ms=excluded.median_ms, p20_ms=excluded.p20_ms, p80_ms=excluded.p80_ms, "
    "min_ms=excluded.min_ms, mad_ms=excluded.mad_ms, reps=excluded.reps, "
    "max_rel_err=excluded.max_rel_err, regs=excluded.regs, local_bytes=excluded.local_bytes, "
    "smem_bytes=excluded.smem_bytes, compile_ms=excluded.compile_ms, "
    "timestamp=excluded.timestamp, origin=excluded.origin, mean_ms=excluded.mean_ms, "
    "extra_json=excluded.extra_json";

/* ---------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------- */
static bt_status db_fail(bt__store *s, bt_diag *diag, const char *what)
{
    int code = sqlite3_extended_errcode(s->db);
    bt__diag_set(diag, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
    if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB)
        return BT_CORRUPT;
    if ((code & 0xff) == SQLITE_NOMEM)
        return BT_NOMEM;
    return BT_STORE;
}

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
    return sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_TRANSIENT);
}

static int bind_real(sqlite3_stmt *st, int i, double v)
{
    if (v < 0 || isnan(v) || isinf(v))
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_double(st, i, v);
}

static int bind_int(sqlite3_stmt *st, int i, int64_t v)
{
    if (v < 0)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_int64(st, i, v);
}

/* The identity column: the UUID when there is one, else the name. */
static const char *device_ident(const bt__measurement *m)
{
    return (m->device_uuid && m->device_uuid[0]) ? m->device_uuid : m->device_name;
}

static bt_status check_measurement(const bt__measurement *m, bt_diag *diag)
{
    const char *missing = !m->kernel || !m->kernel[0]           ? "kernel"
                          : !m->source_hash                      ? "source_hash"
                          : !m->device_name || !m->device_name[0] ? "device_name"
                          : !m->key || !m->key[0]                 ? "key"
                          : !m->config_json || !m->config_json[0] ? "config_json"
                          : !m->status || !m->status[0]           ? "status"
                                                                  : NULL;
    if (missing) {
        bt__diag_set(diag, "measurement has no %s", missing);
        return BT_INVALID_ARG;
    }
    return BT_OK;
}

/* Binds all M_NCOLS columns of m starting at parameter 1. */
static int bind_measurement(sqlite3_stmt *st, const bt__measurement *m, const char *origin)
{
    int rc = SQLITE_OK;
#define B(x)                                                                                       \
    if (rc == SQLITE_OK)                                                                           \
    rc = (x)
    B(bind_text(st, 1, m->kernel));
    B(bind_text(st, 2, m->source_hash));
    B(bind_text(st, 3, m->options));
    B(bind_text(st, 4, device_ident(m)));
    B(bind_text(st, 5, m->key));
    B(bind_text(st, 6, m->config_json));
    B(bind_text(st, 7, m->device_name));
    B(bind_text(st, 8, m->device_uuid));
    B(bind_text(st, 9, m->device_arch));
    B(bind_text(st, 10, m->driver));
    B(bind_text(st, 11, m->compiler));
    B(bind_text(st, 12, m->blocktune_version ? m->blocktune_version : BT_VERSION_STRING));
    B(bind_text(st, 13, m->key_json && m->key_json[0] ? m->key_json : "{}"));
    B(bind_text(st, 14, m->status));
    B(m->error ? sqlite3_bind_text(st, 15, m->error, -1, SQLITE_TRANSIENT)
               : sqlite3_bind_null(st, 15));
    B(bind_real(st, 16, m->median_ms));
    B(bind_real(st, 17, m->p20_ms));
    B(bind_real(st, 18, m->p80_ms));
    B(bind_real(st, 19, m->min_ms));
    B(bind_real(st, 20, m->mad_ms));
    B(bind_int(st, 21, m->reps));
    B(bind_real(st, 22, m->max_rel_err));
    B(bind_int(st, 23, m->regs));
    B(bind_int(st, 24, m->local_bytes));
    B(bind_int(st, 25, m->smem_bytes));
    B(bind_real(st, 26, m->compile_ms));
    B(sqlite3_bind_double(st, 27, m->timestamp > 0 ? m->timestamp : unix_now()));
    B(bind_text(st, 28, origin ? origin : "measured"));
    B(bind_real(st, 29, m->mean_ms));
    B(m->extra_json ? sqlite3_bind_text(st, 30, m->extra_json, -1, SQLITE_TRANSIENT)
                    : sqlite3_bind_null(st, 30));
#undef B
    return rc;
}

static char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? bt__strdup((const char *)t) : NULL;
}

/* What reading a row gave: filled, out of memory, or a row that must not be trusted. */
typedef enum row_read { ROW_OK, ROW_NOMEM, ROW_BAD } row_read;

/* A number column: NULL is "unknown" (-1); a stored value must be a number (SQLite keeps text
 * that does not look like one as text), finite and not negative (blocktune writes negatives as
 * NULL). False with the reason in why. */
static bool col_number(sqlite3_stmt *st, int i, const char *name, double *out, char *why,
                       size_t size)
{
    int type = sqlite3_column_type(st, i);
    *out = -1;
    if (type == SQLITE_NULL)
        return true;
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) {
        const unsigned char *t = sqlite3_column_text(st, i);
        snprintf(why, size, "%s holds %s '%.40s', not a number", name,
                 type == SQLITE_TEXT ? "text" : "a blob", t && type == SQLITE_TEXT ? (const char *)t : "");
        return false;
    }
    double v = sqlite3_column_double(st, i);
    if (!isfinite(v) || v < 0) {
        snprintf(why, size, "%s %g is %s", name, v, isfinite(v) ? "negative" : "not finite");
        return false;
    }
    *out = v;
    return true;
}

/* Reads M_NCOLS columns from column `at` into m (malloc'd strings) and checks them
 * (bt__measurement_check; with `winner` the row must be ok). ROW_BAD with the reason in why. */
static row_read read_measurement(sqlite3_stmt *st, int at, bool winner, bt__measurement *m,
                                 char *why, size_t size)
{
    bt__measurement_init(m);
    why[0] = '\0';
    char **text[] = {&m->kernel,      &m->source_hash, &m->options,     NULL,
                     &m->key,         &m->config_json, &m->device_name, &m->device_uuid,
                     &m->device_arch, &m->driver,      &m->compiler,    &m->blocktune_version,
                     &m->key_json,    &m->status,      &m->error};
    bool nomem = false, typed = true;
    for (int i = 0; i < (int)BT__ARRAY_LEN(text); i++) {
        if (!text[i])
            continue;
        int type = sqlite3_column_type(st, at + i);
        if (type != SQLITE_TEXT && !(type == SQLITE_NULL && text[i] == &m->error) && typed) {
            snprintf(why, size, "column %d holds %s, not text", i,
                     type == SQLITE_NULL ? "NULL" : "a number or a blob");
            typed = false;
        }
        *text[i] = col_text(st, at + i);
        nomem = nomem || (type != SQLITE_NULL && !*text[i]);
    }
    static const char *const num_names[] = {"median_ms",   "p20_ms",      "p80_ms", "min_ms",
                                            "mad_ms",      "reps",        "max_rel_err", "regs",
                                            "local_bytes", "smem_bytes",  "compile_ms", "timestamp"};
    double num[BT__ARRAY_LEN(num_names)], mean = -1;
    char later[8]; /* the first reason is kept */
    for (int i = 0; i < (int)BT__ARRAY_LEN(num_names); i++)
        if (!col_number(st, at + 15 + i, num_names[i], &num[i], typed ? why : later,
                        typed ? size : sizeof later))
            typed = false;
    if (!col_number(st, at + 28, "mean_ms", &mean, typed ? why : later,
                    typed ? size : sizeof later))
        typed = false;
    m->median_ms = num[0];
    m->p20_ms = num[1];
    m->p80_ms = num[2];
    m->min_ms = num[3];
    m->mad_ms = num[4];
    m->reps = (int64_t)num[5];
    m->max_rel_err = num[6];
    m->regs = (int64_t)num[7];
    m->local_bytes = (int64_t)num[8];
    m->smem_bytes = (int64_t)num[9];
    m->compile_ms = num[10];
    m->timestamp = num[11];
    m->mean_ms = mean;
    int xt = sqlite3_column_type(st, at + 29);
    if (xt != SQLITE_NULL) {
        m->extra_json = col_text(st, at + 29);
        nomem = nomem || !m->extra_json;
    }
    if (nomem)
        return ROW_NOMEM;
    if (!typed)
        return ROW_BAD;
    return bt__measurement_check(m, winner, why, size) ? ROW_OK : ROW_BAD;
}

/* Says once, on stderr, that a row is not trusted, and counts it. */
static void warn_bad_row(bt__store *s, const bt__measurement *m, const char *what,
                         const char *why)
{
    s->bad_rows++;
    fprintf(stderr,
            "blocktune: %s: ignoring a stored %s that cannot be trusted (%s): kernel %s, "
            "device %s, key [%s], config %s; it is treated as absent (a tune measures it again; "
            "'blocktune cache verify --db %s' lists every such row)\n",
            s->path, what, why, m->kernel ? m->kernel : "?",
            m->device_name ? m->device_name : "?", m->key ? m->key : "?",
            m->config_json ? m->config_json : "?", s->path);
}

int64_t bt__store_bad_rows(const bt__store *s)
{
    return s->bad_rows;
}

void bt__measurement_init(bt__measurement *m)
{
    memset(m, 0, sizeof *m);
    m->median_ms = m->p20_ms = m->p80_ms = m->min_ms = m->mad_ms = -1;
    m->reps = -1;
    m->max_rel_err = -1;
    m->regs = m->local_bytes = m->smem_bytes = -1;
    m->compile_ms = -1;
    m->mean_ms = -1;
}

void bt__measurement_clear(bt__measurement *m)
{
    if (!m)
        return;
    char **strs[] = {&m->kernel,     &m->source_hash, &m->options,  &m->device_name,
                     &m->device_uuid, &m->device_arch, &m->driver,  &m->compiler,
                     &m->blocktune_version, &m->key,  &m->key_json, &m->config_json,
                     &m->status,     &m->error,      &m->extra_json};
    for (size_t i = 0; i < BT__ARRAY_LEN(strs); i++)
        free(*strs[i]);
    bt__measurement_init(m);
}

void bt__winner_clear(bt__winner *w)
{
    if (!w)
        return;
    bt__measurement_clear(&w->m);
    free(w->origin);
    w->origin = NULL;
    w->margin = 0;
    w->tie = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Paths and open
 * ------------------------------------------------------------------------------------------- */
static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

char *bt__cache_dir(void)
{
    char *set = bt__setting_cache_dir();
    if (set)
        return set;
    const char *d = getenv("BLOCKTUNE_CACHE_DIR");
    if (d && d[0])
        return bt__strdup(d);
    d = getenv("XDG_CACHE_HOME");
    if (d && d[0])
        return join(d, "blocktune");
    d = getenv("HOME");
    if (d && d[0])
        return join(d, ".cache/blocktune");
    return NULL;
}

char *bt__store_default_path(void)
{
    char *dir = bt__cache_dir();
    if (!dir)
        return NULL;
    char *p = join(dir, "blocktune.db");
    free(dir);
    return p;
}


static bt_status exec(bt__store *s, const char *sql, bt_diag *diag)
{
    char *err = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &err) != SQLITE_OK) {
        bt__diag_set(diag, "%s: %s", s->path, err ? err : sqlite3_errmsg(s->db));
        sqlite3_free(err);
        int code = sqlite3_errcode(s->db);
        return code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? BT_CORRUPT : BT_STORE;
    }
    return BT_OK;
}

static bt_status user_version(bt__store *s, int *v, bt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "reading the schema version");
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return db_fail(s, diag, "reading the schema version");
    }
    *v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return BT_OK;
}

static bt_status too_new(bt__store *s, int v, bt_diag *diag)
{
    bt__diag_set(diag,
                 "%s: store schema version %d is newer than this blocktune (%s) supports (%d); "
                 "use a newer blocktune or another BLOCKTUNE_CACHE_DIR",
                 s->path, v, BT_VERSION_STRING, BT__STORE_SCHEMA_VERSION);
    return BT_UNSUPPORTED;
}

/* Applies the migrations above the file's version, in one write transaction. */
static bt_status migrate(bt__store *s, bt_diag *diag)
{
    int v = 0;
    bt_status st = user_version(s, &v, diag);
    if (st != BT_OK)
        return st;
    if (v == BT__STORE_SCHEMA_VERSION)
        return BT_OK;
    if ((st = bt__store_begin(s, diag)) != BT_OK)
        return st;
    if ((st = user_version(s, &v, diag)) != BT_OK) /* another process may have migrated */
        goto fail;
    if (v > BT__STORE_SCHEMA_VERSION) {
        st = too_new(s, v, diag);
        goto fail;
    }
    for (size_t i = 0; i < BT__ARRAY_LEN(migrations); i++) {
        const struct migration *mg = &migrations[i];
        if (mg->version <= v)
            continue;
        if ((st = exec(s, mg->sql, diag)) != BT_OK) {
            bt__diag_prefix(diag, "migration to schema version %d: ", mg->version);
            goto fail;
        }
        char sql[256];
        snprintf(sql, sizeof sql,
                 "INSERT INTO schema_migrations VALUES(%d, '%s', %.3f); PRAGMA user_version=%d;",
                 mg->version, mg->description, unix_now(), mg->version);
        if ((st = exec(s, sql, diag)) != BT_OK)
            goto fail;
    }
    return bt__store_commit(s, diag);
fail:
    bt__store_rollback(s);
    return st;
}

/* $BLOCKTUNE_STORE_TIMEOUT_MS when it is a whole number of ms, else BT__STORE_BUSY_MS. */
static int busy_ms(void)
{
    const char *v = getenv("BLOCKTUNE_STORE_TIMEOUT_MS");
    char *end;
    long ms = v && v[0] ? strtol(v, &end, 10) : -1;
    return v && v[0] && !*end && ms >= 0 && ms <= 3600000 ? (int)ms : BT__STORE_BUSY_MS;
}

/* The path to open: path, else the default (its directories created when `make`). */
static bt_status resolve_path(const char *path, bool make, char **out, bt_diag *diag)
{
    *out = NULL;
    if (path) {
        *out = bt__strdup(path);
        return *out ? BT_OK : BT_NOMEM;
    }
    char *dir = bt__cache_dir();
    if (!dir) {
        bt__diag_set(diag, "no cache directory: set BLOCKTUNE_CACHE_DIR, XDG_CACHE_HOME or HOME");
        return BT_INVALID_ARG;
    }
    bt_status st = make ? bt__mkdirs(dir, diag) : BT_OK;
    if (st == BT_OK && !(*out = join(dir, "blocktune.db")))
        st = BT_NOMEM;
    free(dir);
    return st;
}

static bt_status connect(bt__store *s, int flags, bt_diag *diag)
{
    int rc = sqlite3_open_v2(s->path, &s->db, flags | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK) {
        bt__diag_set(diag, "%s: cannot open the store: %s", s->path,
                     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        return BT_STORE;
    }
    sqlite3_busy_timeout(s->db, busy_ms());
    sqlite3_extended_result_codes(s->db, 1);
    return BT_OK;
}

/* WAL, the pragmas and the migrations, retried while another process is creating the same new
 * store. */
static bt_status prepare_for_writing(bt__store *s, bt_diag *diag)
{
    /* WAL: readers never block the writer and see only committed transactions. NORMAL sync is
     * durable across a killed process (the WAL is in the page cache); only a power loss may drop
     * the last commits, never corrupt the file. */
    /* Switching a new file to WAL and creating the schema need the file to themselves; SQLite
     * answers SQLITE_BUSY to those without waiting when another process is opening the same new
     * store at that moment, so both steps are retried (up to ~10 s) before giving up. */
    bt_status st;
    for (int attempt = 0;; attempt++) {
        st = exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                  diag);
        if (st == BT_OK)
            st = migrate(s, diag);
        int code = sqlite3_errcode(s->db) & 0xff;
        if (st == BT_OK || attempt >= 200 || (code != SQLITE_BUSY && code != SQLITE_LOCKED))
            break;
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* a migration left open, if any */
        usleep(50000);
    }
    return st;
}

/* PRAGMA quick_check (O(pages), no index cross-checks): BT_CORRUPT with its first findings. */
static bt_status quick_check(bt__store *s, bt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check(5)", -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "checking the store (quick_check)");
    bt__sbuf b = {0};
    int rc, problems = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (t && strcmp(t, "ok") != 0)
            bt__sbuf_printf(&b, "%s%s", problems++ ? "; " : "", t);
    }
    sqlite3_finalize(st);
    bt_status r = BT_OK;
    if (rc != SQLITE_DONE)
        r = db_fail(s, diag, "checking the store (quick_check)");
    else if (problems) {
        bt__diag_set(diag, "%s: quick_check found damage: %.300s", s->path, b.s ? b.s : "");
        r = BT_CORRUPT;
    }
    bt__sbuf_free(&b);
    return r;
}

/* Adds what to do to the message of a damaged store (`refused`: it was not opened). */
static void recovery_hint(bt__store *s, bool refused, bt_diag *diag)
{
    if (!diag)
        return;
    char msg[sizeof diag->msg];
    snprintf(msg, sizeof msg, "%s", diag->msg);
    char verify[600] = ":";
    if (refused)
        snprintf(verify, sizeof verify, " and was not used (nothing is written to it). "
                                        "'blocktune cache verify --db %s' lists what is wrong;",
                 s->path);
    bt__diag_set(diag,
                 "%s; the results store is damaged%s move it aside (mv %s %s.damaged) to start an "
                 "empty one, or restore a copy",
                 msg, verify, s->path, s->path);
}

/* The end of both opens: the store out, or closed with the reason (and, for a damaged one, what
 * to do; `writing`: it was refused for writing). */
static bt_status finish_open(bt__store *s, bt_status st, bool writing, bt__store **out,
                             bt_diag *diag)
{
    if (st == BT_CORRUPT)
        recovery_hint(s, writing, diag);
    if (st != BT_OK) {
        bt__store_close(s);
        return st;
    }
    *out = s;
    return BT_OK;
}

bt_status bt__store_open(const char *path, bt__store **out, bt_diag *diag)
{
    *out = NULL;
    bt__store *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    bt_status st = resolve_path(path, true, &s->path, diag);
    if (st == BT_OK)
        st = connect(s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, diag);
    if (st == BT_OK)
        st = prepare_for_writing(s, diag);
    if (st == BT_OK)
        st = quick_check(s, diag);
    return finish_open(s, st, true, out, diag);
}

bt_status bt__store_open_read(const char *path, bt__store **out, bt_diag *diag)
{
    *out = NULL;
    bt__store *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    bt_status st = resolve_path(path, false, &s->path, diag);
    struct stat sb;
    if (st == BT_OK && stat(s->path, &sb) != 0) {
        bt__diag_set(diag, "no store at %s (%s): a tune or 'blocktune cache import' creates one; "
                           "--db PATH names another", s->path, strerror(errno));
        st = errno == ENOENT ? BT_NOT_FOUND : BT_IO;
    } else if (st == BT_OK && !S_ISREG(sb.st_mode)) {
        bt__diag_set(diag, "%s is not a store file", s->path);
        st = BT_INVALID_ARG;
    }
    /* Read-write but never create, and query_only: nothing is written through this connection,
     * yet as the last one to close it folds the WAL back and removes the -wal and -shm files
     * (a SQLITE_OPEN_READONLY connection would leave them behind). A write-protected file is
     * opened read-only by SQLite. */
    if (st == BT_OK)
        st = connect(s, SQLITE_OPEN_READWRITE, diag);
    int v = 0;
    if (st == BT_OK)
        st = user_version(s, &v, diag);
    if (st == BT_OK && v == 0) {
        bt__diag_set(diag, "%s is not a blocktune store (an SQLite file without its schema)",
                     s->path);
        st = BT_INVALID_ARG;
    } else if (st == BT_OK && v < BT__STORE_SCHEMA_VERSION) {
        st = prepare_for_writing(s, diag); /* an older blocktune's: migrated in place */
    } else if (st == BT_OK && v > BT__STORE_SCHEMA_VERSION) {
        st = too_new(s, v, diag);
    }
    if (st == BT_OK)
        st = exec(s, "PRAGMA query_only = ON", diag);
    return finish_open(s, st, false, out, diag);
}

void bt__store_close(bt__store *s)
{
    if (!s)
        return;
    sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
}

const char *bt__store_path(const bt__store *s)
{
    return s->path;
}

sqlite3 *bt__store_db(bt__store *s)
{
    return s->db;
}

bt_status bt__store_begin(bt__store *s, bt_diag *diag)
{
    return exec(s, "BEGIN IMMEDIATE", diag);
}

bt_status bt__store_commit(bt__store *s, bt_diag *diag)
{
    return exec(s, "COMMIT", diag);
}

void bt__store_rollback(bt__store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Rows
 * ------------------------------------------------------------------------------------------- */
static bt_status put_row(bt__store *s, const bt__measurement *m, const char *origin,
                         bt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, put_sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a measurement insert");
    if (bind_measurement(st, m, origin) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
        bt_status r = db_fail(s, diag, "writing a measurement");
        sqlite3_finalize(st);
        return r;
    }
    sqlite3_finalize(st);
    return BT_OK;
}

bt_status bt__store_put(bt__store *s, const bt__measurement *m, bt_diag *diag)
{
    bt_status st = check_measurement(m, diag);
    if (st != BT_OK)
        return st;
    /* Autocommit: the single statement is its own transaction, committed when step returns. */
    return put_row(s, m, NULL, diag);
}

bt_status bt__store_put_row_internal(bt__store *s, const bt__measurement *m, int winner,
                                     double margin, int tie, const char *origin, bt_diag *diag)
{
    bt_status st = check_measurement(m, diag);
    if (st != BT_OK)
        return st;
    int own = sqlite3_get_autocommit(s->db);
    if (own && (st = bt__store_begin(s, diag)) != BT_OK)
        return st;
    const char *morigin = origin && strncmp(origin, "wisdom", 6) == 0 ? origin : NULL;
    if ((st = put_row(s, m, morigin, diag)) != BT_OK)
        goto fail;
    if (winner) {
        sqlite3_stmt *q = NULL;
        const char *sql = "INSERT INTO winners(" IDENT_COLS ", config_json, margin, tie, origin, "
                          "timestamp) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) "
                          "ON CONFLICT(" IDENT_COLS ") DO UPDATE SET "
                          "config_json=excluded.config_json, margin=excluded.margin, "
                          "tie=excluded.tie, origin=excluded.origin, "
                          "timestamp=excluded.timestamp";
        if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK) {
            st = db_fail(s, diag, "preparing a winner insert");
            goto fail;
        }
        bind_text(q, 1, m->kernel);
        bind_text(q, 2, m->source_hash);
        bind_text(q, 3, m->options);
        bind_text(q, 4, device_ident(m));
        bind_text(q, 5, m->key);
        bind_text(q, 6, m->config_json);
        bind_real(q, 7, margin);
        sqlite3_bind_int(q, 8, tie ? 1 : 0);
        bind_text(q, 9, origin ? origin : "tuned");
        sqlite3_bind_double(q, 10, m->timestamp > 0 ? m->timestamp : unix_now());
        if (sqlite3_step(q) != SQLITE_DONE) {
            st = db_fail(s, diag, "writing a winner");
            sqlite3_finalize(q);
            goto fail;
        }
        sqlite3_finalize(q);
    }
    if (own && (st = bt__store_commit(s, diag)) != BT_OK)
        goto fail;
    return BT_OK;
fail:
    if (own)
        bt__store_rollback(s);
    return st;
}

bt_status bt__store_put_winner(bt__store *s, const bt__measurement *m, double margin, int tie,
                               const char *origin, bt_diag *diag)
{
    return bt__store_put_row_internal(s, m, 1, margin, tie, origin, diag);
}

/* Binds an ident at ?1..?5: kernel, source_hash (NULL: any), options, device, key. */
#define IDENT_WHERE                                                                                \
    "m.kernel = ?1 AND (?2 IS NULL OR m.source_hash = ?2) AND m.options = ?3 AND "                \
    "(m.device_uuid = ?4 OR m.device_name = ?4) AND m.key = ?5"

static bt_status check_ident(const bt__store_ident *id, bt_diag *diag)
{
    if (!id || !id->kernel || !id->device || !id->device[0] || !id->key) {
        bt__diag_set(diag, "store look-up needs a kernel, a device and a key");
        return BT_INVALID_ARG;
    }
    return BT_OK;
}

static void bind_ident(sqlite3_stmt *st, const bt__store_ident *id)
{
    bind_text(st, 1, id->kernel);
    if (id->source_hash)
        bind_text(st, 2, id->source_hash);
    else
        sqlite3_bind_null(st, 2);
    bind_text(st, 3, id->options);
    bind_text(st, 4, id->device);
    bind_text(st, 5, id->key);
}

bt_status bt__store_get(bt__store *s, const bt__store_ident *id, const char *config_json,
                        bt__measurement *out, bt_diag *diag)
{
    bt__measurement_init(out);
    bt_status r = check_ident(id, diag);
    if (r != BT_OK)
        return r;
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT " M_COLS_PREFIXED " FROM measurements m WHERE " IDENT_WHERE
                      " AND m.config_json = ?6 ORDER BY (m.device_uuid = ?4) DESC, "
                      "m.timestamp DESC LIMIT 1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a measurement look-up");
    bind_ident(st, id);
    bind_text(st, 6, config_json);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        char why[256];
        row_read rr = read_measurement(st, 0, false, out, why, sizeof why);
        if (rr == ROW_BAD)
            warn_bad_row(s, out, "measurement", why);
        r = rr == ROW_OK ? BT_OK : rr == ROW_BAD ? BT_NOT_FOUND : BT_NOMEM;
        if (r != BT_OK)
            bt__measurement_clear(out);
    } else if (rc == SQLITE_DONE) {
        r = BT_NOT_FOUND;
    } else {
        r = db_fail(s, diag, "reading a measurement");
    }
    sqlite3_finalize(st);
    return r;
}

#define W_SELECT                                                                                   \
    "SELECT " M_COLS_PREFIXED ", w.margin, w.tie, w.origin FROM winners w JOIN measurements m "    \
    "ON m.kernel = w.kernel AND m.source_hash = w.source_hash AND m.options = w.options AND "     \
    "m.device = w.device AND m.key = w.key AND m.config_json = w.config_json "

/* Reads a W_SELECT row: the measurement (which must be ok) and the winner's own columns; a
 * ROW_BAD is warned about here. */
static row_read read_winner(bt__store *s, sqlite3_stmt *st, bt__winner *w)
{
    memset(w, 0, sizeof *w);
    char why[256];
    row_read rr = read_measurement(st, 0, true, &w->m, why, sizeof why);
    w->tie = sqlite3_column_int(st, M_NCOLS + 1);
    w->origin = col_text(st, M_NCOLS + 2);
    if (!w->origin && rr == ROW_OK)
        rr = sqlite3_column_type(st, M_NCOLS + 2) == SQLITE_NULL ? ROW_BAD : ROW_NOMEM;
    if (rr == ROW_OK && !col_number(st, M_NCOLS, "margin", &w->margin, why, sizeof why))
        rr = ROW_BAD;
    if (rr == ROW_BAD)
        warn_bad_row(s, &w->m, "winner", why[0] ? why : "no origin");
    return rr;
}

bt_status bt__store_get_winner(bt__store *s, const bt__store_ident *id, bt__winner *out,
                               bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    bt__measurement_init(&out->m);
    bt_status r = check_ident(id, diag);
    if (r != BT_OK)
        return r;
    sqlite3_stmt *st = NULL;
    const char *sql = W_SELECT "WHERE " IDENT_WHERE
                               " ORDER BY (m.device_uuid = ?4) DESC, w.timestamp DESC LIMIT 1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a winner look-up");
    bind_ident(st, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        row_read rr = read_winner(s, st, out);
        r = rr == ROW_OK ? BT_OK : rr == ROW_BAD ? BT_NOT_FOUND : BT_NOMEM;
        if (r != BT_OK)
            bt__winner_clear(out);
    } else if (rc == SQLITE_DONE) {
        r = BT_NOT_FOUND;
    } else {
        r = db_fail(s, diag, "reading a winner");
    }
    sqlite3_finalize(st);
    return r;
}

bt_status bt__store_winners(bt__store *s, const char *kernel, const char *device,
                            bt__winner_cb cb, void *user, bt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    const char *sql = W_SELECT "WHERE (?1 IS NULL OR m.kernel = ?1) AND (?2 IS NULL OR "
                               "m.device_uuid = ?2 OR m.device_name = ?2) "
                               "ORDER BY m.kernel, m.device_name, m.device, m.key";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing the winners walk");
    if (kernel)
        bind_text(st, 1, kernel);
    if (device)
        bind_text(st, 2, device);
    bt_status r = BT_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bt__winner w;
        row_read rr = read_winner(s, st, &w);
        if (rr != ROW_OK) {
            bt__winner_clear(&w);
            if (rr == ROW_BAD)
                continue;
            r = BT_NOMEM;
            break;
        }
        int stop = cb(&w, user);
        bt__winner_clear(&w);
        if (stop) {
            r = (bt_status)stop;
            break;
        }
    }
    if (r == BT_OK && rc != SQLITE_DONE)
        r = db_fail(s, diag, "walking the winners");
    sqlite3_finalize(st);
    return r;
}

/* Steps a prepared SELECT of M_COLS_PREFIXED rows, calling cb on each (a nonzero return stops
 * the walk and is returned), and finalizes it. */
static bt_status walk_measurements(bt__store *s, sqlite3_stmt *st, bt__measurement_cb cb,
                                   void *user, const char *what, bt_diag *diag)
{
    bt_status r = BT_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bt__measurement m;
        char why[256];
        row_read rr = read_measurement(st, 0, false, &m, why, sizeof why);
        if (rr != ROW_OK) {
            if (rr == ROW_BAD)
                warn_bad_row(s, &m, "measurement", why);
            bt__measurement_clear(&m);
            if (rr == ROW_BAD)
                continue;
            r = BT_NOMEM;
            break;
        }
        int stop = cb(&m, user);
        bt__measurement_clear(&m);
        if (stop) {
            r = (bt_status)stop;
            break;
        }
    }
    if (r == BT_OK && rc != SQLITE_DONE)
        r = db_fail(s, diag, what);
    sqlite3_finalize(st);
    return r;
}

bt_status bt__store_top(bt__store *s, const bt__store_ident *id, int limit,
                        bt__measurement_cb cb, void *user, bt_diag *diag)
{
    bt_status r = check_ident(id, diag);
    if (r != BT_OK)
        return r;
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT " M_COLS_PREFIXED " FROM measurements m WHERE " IDENT_WHERE
                      " AND m.status = 'ok' AND m.median_ms IS NOT NULL "
                      "ORDER BY m.median_ms, m.config_json LIMIT ?6";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a top-k look-up");
    bind_ident(st, id);
    sqlite3_bind_int(st, 6, limit > 0 ? limit : -1);
    return walk_measurements(s, st, cb, user, "reading the fastest configs", diag);
}

bt_status bt__store_rows(bt__store *s, const char *kernel, const char *device, const char *key,
                         bt__measurement_cb cb, void *user, bt_diag *diag)
{
    if (!kernel || !key) {
        bt__diag_set(diag, "store rows need a kernel and a key");
        return BT_INVALID_ARG;
    }
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT " M_COLS_PREFIXED " FROM measurements m WHERE m.kernel = ?1 AND "
                      "m.key = ?2 AND (?3 IS NULL OR m.device_uuid = ?3 OR m.device_name = ?3) "
                      "ORDER BY m.timestamp, m.config_json";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a read of a key's measurements");
    bind_text(st, 1, kernel);
    bind_text(st, 2, key);
    if (device)
        bind_text(st, 3, device);
    else
        sqlite3_bind_null(st, 3);
    return walk_measurements(s, st, cb, user, "reading a key's measurements", diag);
}

bt_status bt__store_put_space(bt__store *s, const bt__store_ident *id, const char *header_json,
                              const char *origin, bt_diag *diag)
{
    bt_status r = check_ident(id, diag);
    if (r != BT_OK)
        return r;
    sqlite3_stmt *st = NULL;
    const char *sql = "INSERT INTO spaces(" IDENT_COLS ", header_json, origin, timestamp) "
                      "VALUES(?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT(" IDENT_COLS ") DO UPDATE SET "
                      "header_json=excluded.header_json, origin=excluded.origin, "
                      "timestamp=excluded.timestamp";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a space header insert");
    bind_text(st, 1, id->kernel);
    bind_text(st, 2, id->source_hash);
    bind_text(st, 3, id->options);
    bind_text(st, 4, id->device);
    bind_text(st, 5, id->key);
    bind_text(st, 6, header_json);
    bind_text(st, 7, origin);
    sqlite3_bind_double(st, 8, unix_now());
    if (sqlite3_step(st) != SQLITE_DONE)
        r = db_fail(s, diag, "writing a space header");
    sqlite3_finalize(st);
    return r;
}

bt_status bt__store_get_space(bt__store *s, const char *kernel, const char *device,
                              const char *key, char **header_json, bt_diag *diag)
{
    *header_json = NULL;
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT p.header_json FROM spaces p WHERE p.kernel = ?1 AND p.key = ?2 AND "
                      "(p.device = ?3 OR EXISTS (SELECT 1 FROM measurements m WHERE "
                      "m.kernel = p.kernel AND m.device = p.device AND m.key = p.key AND "
                      "(m.device_name = ?3 OR m.device_uuid = ?3))) "
                      "ORDER BY p.timestamp DESC LIMIT 1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a space header look-up");
    bind_text(st, 1, kernel);
    bind_text(st, 2, key);
    bind_text(st, 3, device);
    int rc = sqlite3_step(st);
    bt_status r = BT_NOT_FOUND;
    if (rc == SQLITE_ROW) {
        json_t *h = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
        if (json_is_object(h)) {
            *header_json = col_text(st, 0);
            r = *header_json ? BT_OK : BT_NOMEM;
        } else {
            fprintf(stderr, "blocktune: %s: ignoring the stored header of %s [%s] on %s: it is "
                            "not a JSON object\n", s->path, kernel, key, device);
            s->bad_rows++;
        }
        json_decref(h);
    } else if (rc != SQLITE_DONE) {
        r = db_fail(s, diag, "reading a space header");
    }
    sqlite3_finalize(st);
    return r;
}

static bt_status count(bt__store *s, const char *sql, const char *arg, int64_t *n, bt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "preparing a count");
    if (arg)
        bind_text(st, 1, arg);
    bt_status r = BT_OK;
    if (sqlite3_step(st) == SQLITE_ROW)
        *n = sqlite3_column_int64(st, 0);
    else
        r = db_fail(s, diag, "counting rows");
    sqlite3_finalize(st);
    return r;
}

bt_status bt__store_counts(bt__store *s, int64_t *measurements, int64_t *winners, bt_diag *diag)
{
    int64_t a = 0, b = 0;
    bt_status r = count(s, "SELECT count(*) FROM measurements", NULL, &a, diag);
    if (r == BT_OK)
        r = count(s, "SELECT count(*) FROM winners", NULL, &b, diag);
    if (measurements)
        *measurements = a;
    if (winners)
        *winners = b;
    return r;
}

bt_status bt__store_forget(bt__store *s, const char *selector, int dry_run, int64_t *nmeas,
                           int64_t *nwin, bt_diag *diag)
{
    *nmeas = *nwin = 0;
    if (!selector || !selector[0]) {
        bt__diag_set(diag, "forget needs a selector: a kernel name, a key substring or 'all'");
        return BT_INVALID_ARG;
    }
    const char *where;
    const char *arg = selector;
    int64_t by_kernel = 0;
    bt_status r;
    if (!strcmp(selector, "all")) {
        where = "1";
        arg = NULL;
    } else {
        r = count(s, "SELECT count(*) FROM measurements WHERE kernel = ?1", selector, &by_kernel,
                  diag);
        if (r != BT_OK)
            return r;
        where = by_kernel ? "kernel = ?1" : "instr(key, ?1) > 0";
    }
    char q1[160], q2[160], d1[160], d2[160], d3[160];
    snprintf(q1, sizeof q1, "SELECT count(*) FROM measurements WHERE %s", where);
    snprintf(q2, sizeof q2, "SELECT count(*) FROM winners WHERE %s", where);
    snprintf(d1, sizeof d1, "DELETE FROM winners WHERE %s", where);
    snprintf(d2, sizeof d2, "DELETE FROM measurements WHERE %s", where);
    snprintf(d3, sizeof d3, "DELETE FROM spaces WHERE %s", where);
    if ((r = bt__store_begin(s, diag)) != BT_OK)
        return r;
    if ((r = count(s, q1, arg, nmeas, diag)) != BT_OK || (r = count(s, q2, arg, nwin, diag)))
        goto fail;
    if (!dry_run) {
        const char *dels[] = {d1, d2, d3};
        for (int i = 0; i < 3; i++) {
            sqlite3_stmt *st = NULL;
            if (sqlite3_prepare_v2(s->db, dels[i], -1, &st, NULL) != SQLITE_OK) {
                r = db_fail(s, diag, "preparing a delete");
                goto fail;
            }
            if (arg)
                bind_text(st, 1, arg);
            if (sqlite3_step(st) != SQLITE_DONE) {
                r = db_fail(s, diag, "deleting rows");
                sqlite3_finalize(st);
                goto fail;
            }
            sqlite3_finalize(st);
        }
        return bt__store_commit(s, diag);
    }
    bt__store_rollback(s);
    return BT_OK;
fail:
    bt__store_rollback(s);
    return r;
}

/* The checks of bt__store_verify: each appends what it finds to b and counts it in *problems. */
static bt_status verify_integrity(bt__store *s, bt__sbuf *b, int *problems, bt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "integrity check");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (t && strcmp(t, "ok") != 0) {
            bt__sbuf_printf(b, "integrity: %s\n", t);
            (*problems)++;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? BT_OK : db_fail(s, diag, "integrity check");
}

static bt_status verify_winners(bt__store *s, bt__sbuf *b, int *problems, bt_diag *diag)
{
    const char *orphans =
        "SELECT w.kernel, w.device, w.key, w.config_json, m.status FROM winners w "
        "LEFT JOIN measurements m ON m.kernel = w.kernel AND m.source_hash = w.source_hash AND "
        "m.options = w.options AND m.device = w.device AND m.key = w.key AND "
        "m.config_json = w.config_json WHERE m.status IS NULL OR m.status != 'ok' "
        "OR typeof(m.median_ms) NOT IN ('real', 'integer') OR NOT m.median_ms > 0";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, orphans, -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "winner check");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *status = (const char *)sqlite3_column_text(st, 4);
        bt__sbuf_printf(b, "winner %s %s [%s] %s: %s\n", sqlite3_column_text(st, 0),
                        sqlite3_column_text(st, 1), sqlite3_column_text(st, 2),
                        sqlite3_column_text(st, 3),
                        !status                ? "its measurement row is missing"
                        : strcmp(status, "ok") ? "its measurement is not ok"
                                               : "its measurement has no positive median");
        (*problems)++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? BT_OK : db_fail(s, diag, "winner check");
}

/* Every measurement row through the checks that reading applies. */
static bt_status verify_rows(bt__store *s, bt__sbuf *b, int *problems, bt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT " M_COLS_PREFIXED ", m.rowid FROM measurements m",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, diag, "row check");
    int rc;
    bt_status r = BT_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bt__measurement m;
        char why[256];
        row_read rr = read_measurement(st, 0, false, &m, why, sizeof why);
        if (rr == ROW_BAD) {
            bt__sbuf_printf(b, "row %lld (%s on %s [%s] %s): %s\n",
                            (long long)sqlite3_column_int64(st, M_NCOLS),
                            m.kernel ? m.kernel : "?", m.device_name ? m.device_name : "?",
                            m.key ? m.key : "?", m.config_json ? m.config_json : "?", why);
            (*problems)++;
        }
        bt__measurement_clear(&m);
        if (rr == ROW_NOMEM) {
            r = BT_NOMEM;
            break;
        }
    }
    sqlite3_finalize(st);
    return r != BT_OK ? r : rc == SQLITE_DONE ? BT_OK : db_fail(s, diag, "row check");
}

bt_status bt__store_verify(bt__store *s, char **report, bt_diag *diag)
{
    if (report)
        *report = NULL;
    bt__sbuf b = {0};
    int problems = 0;
    bt_status st = verify_integrity(s, &b, &problems, diag);
    if (st == BT_OK)
        st = verify_winners(s, &b, &problems, diag);
    if (st == BT_OK)
        st = verify_rows(s, &b, &problems, diag);
    if (st == BT_OK && b.oom)
        st = BT_NOMEM;
    if (st == BT_CORRUPT) /* SQLite gave up on a damaged page */
        recovery_hint(s, false, diag);
    if (st != BT_OK) {
        if (report && b.s && !b.oom) { /* what was found before SQLite gave up */
            *report = b.s;
            b.s = NULL;
        }
        bt__sbuf_free(&b);
        return st;
    }
    if (report)
        *report = b.s;
    else
        bt__sbuf_free(&b);
    if (problems) {
        bt__diag_set(diag, "%s: %d problem%s found", s->path, problems, problems == 1 ? "" : "s");
        if (strstr(b.s, "integrity: "))
            recovery_hint(s, false, diag);
        else /* rows that cannot be trusted do no harm where they are */
            bt__diag_set(diag, "%s: %d problem%s found; every read skips such rows (a tune "
                               "measures their configs again, and its rows replace them)",
                         s->path, problems, problems == 1 ? "" : "s");
        return BT_CORRUPT;
    }
    return BT_OK;
}
