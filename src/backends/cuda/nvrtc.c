/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvrtc.c — NVRTC, loaded with dlopen once per process: CUDA C++ to CUBIN for any compute
 * capability, with or without a GPU, and the ptxas -v resource lines read back from the log.
 *
 * Used by the CUDA backend (compile for the opened device) and by the planner (compile for a
 * hardware-table GPU, `plan --exact`). See nvrtc.h for the options and the search path.
 */
#include "backends/cuda/nvrtc.h"

#include "backends/cuda/cuda_api.h"
#include "core/util.h"
#include "platform/dl.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The name NVRTC is given for the program: compile errors read "kernel.cu(LINE): error: ...". */
#define BT__NVRTC_PROGRAM_NAME "kernel.cu"

typedef struct nvrtc_api {
#define BT__NV_MEMBER(ret, name, params) ret(*name) params;
    BT__NVRTC_REQUIRED(BT__NV_MEMBER)
    BT__NVRTC_OPTIONAL(BT__NV_MEMBER)
#undef BT__NV_MEMBER
} nvrtc_api;

/* The process-wide NVRTC, set up by load_once. */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void *g_lib;
static nvrtc_api g_api;
static int g_major, g_minor;
static int *g_archs; /* supported sm numbers, ascending (NULL when NVRTC cannot tell) */
static int g_narchs;
static char g_reason[1024];

static const struct {
    int code;
    const char *name;
} nvrtc_errors[] = {
    {0, "NVRTC_SUCCESS"},
    {1, "NVRTC_ERROR_OUT_OF_MEMORY"},
    {2, "NVRTC_ERROR_PROGRAM_CREATION_FAILURE"},
    {3, "NVRTC_ERROR_INVALID_INPUT"},
    {4, "NVRTC_ERROR_INVALID_PROGRAM"},
    {5, "NVRTC_ERROR_INVALID_OPTION"},
    {6, "NVRTC_ERROR_COMPILATION"},
    {7, "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"},
    {8, "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION"},
    {9, "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION"},
    {10, "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID"},
    {11, "NVRTC_ERROR_INTERNAL_ERROR"},
    {12, "NVRTC_ERROR_TIME_FILE_WRITE_FAILED"},
    {13, "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED"},
    {14, "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED"},
    {15, "NVRTC_ERROR_PCH_CREATE"},
    {16, "NVRTC_ERROR_CANCELLED"},
    {17, "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED"},
};

const char *bt__nvrtc_error_name(int code)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(nvrtc_errors); i++)
        if (nvrtc_errors[i].code == code)
            return nvrtc_errors[i].name;
    return "NVRTC_ERROR_UNKNOWN";
}

/* Opens NVRTC and resolves its entry points into g_api; on failure leaves g_lib NULL and the
 * reason in g_reason. */
static void load_once(void)
{
    bt_diag d = {0};
    const char *env = getenv(BT__NVRTC_LIBRARY_ENV);
    if (env && *env) {
        const char *names[] = {env, NULL};
        g_lib = bt__dl_open(names, NULL, &d);
        if (!g_lib) {
            snprintf(g_reason, sizeof g_reason, "cannot load NVRTC from $%s: %.900s",
                     BT__NVRTC_LIBRARY_ENV, d.msg);
            return;
        }
    } else {
        /* $CUDA_HOME and $CUDA_PATH first: a user who set them means that toolkit. */
        char home[512] = "", path[512] = "";
        const char *dirs[8];
        int n = 0;
        const char *h = getenv("CUDA_HOME"), *p = getenv("CUDA_PATH");
        if (h && *h) {
            snprintf(home, sizeof home, "%s/lib64", h);
            dirs[n++] = home;
        }
        if (p && *p) {
            snprintf(path, sizeof path, "%s/lib64", p);
            dirs[n++] = path;
        }
        dirs[n++] = "/usr/local/cuda/lib64";
        dirs[n++] = "/usr/local/cuda/targets/x86_64-linux/lib";
        dirs[n++] = "/usr/lib/x86_64-linux-gnu";
        dirs[n] = NULL;
        const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
        g_lib = bt__dl_open(names, dirs, &d);
        if (!g_lib) {
            snprintf(g_reason, sizeof g_reason,
                     "no NVRTC (libnvrtc.so.13/.12 on the loader path, $CUDA_HOME/lib64, "
                     "$CUDA_PATH/lib64 or /usr/local/cuda/lib64): %.700s", d.msg);
            return;
        }
    }
#define BT__NV_RESOLVE(ret, name, params)                                                          \
    g_api.name = (ret(*) params)bt__dl_sym(g_lib, #name, NULL);                                    \
    if (!g_api.name) {                                                                             \
        snprintf(g_reason, sizeof g_reason, "the NVRTC library lacks %s (older than CUDA 11.1?)",  \
                 #name);                                                                           \
        bt__dl_close(g_lib);                                                                       \
        g_lib = NULL;                                                                              \
        return;                                                                                    \
    }
    BT__NVRTC_REQUIRED(BT__NV_RESOLVE)
#undef BT__NV_RESOLVE
#define BT__NV_RESOLVE_OPT(ret, name, params)                                                      \
    g_api.name = (ret(*) params)bt__dl_sym(g_lib, #name, NULL);
    BT__NVRTC_OPTIONAL(BT__NV_RESOLVE_OPT)
#undef BT__NV_RESOLVE_OPT

    nvrtcResult r = g_api.nvrtcVersion(&g_major, &g_minor);
    if (r != NVRTC_SUCCESS) {
        snprintf(g_reason, sizeof g_reason, "nvrtcVersion: %s (%d)", bt__nvrtc_error_name(r), r);
        bt__dl_close(g_lib);
        g_lib = NULL;
        return;
    }
    int n = 0;
    if (g_api.nvrtcGetNumSupportedArchs && g_api.nvrtcGetSupportedArchs &&
        g_api.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
        g_archs = calloc((size_t)n, sizeof *g_archs);
        if (g_archs && g_api.nvrtcGetSupportedArchs(g_archs) == NVRTC_SUCCESS) {
            g_narchs = n;
        } else {
            free(g_archs);
            g_archs = NULL;
        }
    }
}

bool bt__nvrtc_available(bt_diag *diag)
{
    pthread_once(&g_once, load_once);
    if (!g_lib) {
        bt__diag_set(diag, "%s", g_reason);
        return false;
    }
    return true;
}

bt_status bt__nvrtc_version(int *major, int *minor, bt_diag *diag)
{
    if (major)
        *major = 0;
    if (minor)
        *minor = 0;
    if (!bt__nvrtc_available(diag))
        return BT_NO_BACKEND;
    if (major)
        *major = g_major;
    if (minor)
        *minor = g_minor;
    return BT_OK;
}

/* ============================================================================================
 * Compile
 * ========================================================================================== */

/* A growing array of option strings; the strings it owns are freed by opts_free. */
typedef struct optlist {
    char **v;
    int n, cap;
    bool oom;
} optlist;

static void opts_add(optlist *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void opts_add(optlist *o, const char *fmt, ...)
{
    if (o->oom)
        return;
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 16;
        char **v = realloc(o->v, (size_t)cap * sizeof *v);
        if (!v) {
            o->oom = true;
            return;
        }
        o->v = v;
        o->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = need >= 0 ? malloc((size_t)need + 1) : NULL;
    if (!s) {
        o->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t)need + 1, fmt, ap);
    va_end(ap);
    o->v[o->n++] = s;
}

static void opts_free(optlist *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->v[i]);
    free(o->v);
    memset(o, 0, sizeof *o);
}

/* Whether the option names a target architecture itself. */
static bool is_arch_option(const char *opt)
{
    return !strncmp(opt, "-arch", 5) || !strncmp(opt, "--gpu-architecture", 18);
}

/* Stores "prefix\nraw" (either may be empty) into *logp as a malloc'd string; frees raw. */
static void set_log(char **logp, const char *prefix, char *raw)
{
    if (!logp) {
        free(raw);
        return;
    }
    bt__sbuf b = {0};
    bool has_raw = raw && *raw;
    bt__sbuf_printf(&b, "%s%s%s", prefix ? prefix : "", prefix && *prefix && has_raw ? "\n" : "",
                    has_raw ? raw : "");
    free(raw);
    *logp = b.s ? b.s : bt__strdup("");
}

/* The program's log, malloc'd, trailing whitespace removed ("" when there is none). */
static char *program_log(nvrtcProgram prog)
{
    size_t n = 0;
    char *log = NULL;
    if (g_api.nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
        log = calloc(n + 1, 1);
        if (log && g_api.nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
            log[0] = '\0';
    }
    if (!log)
        return bt__strdup("");
    size_t len = strlen(log);
    while (len && isspace((unsigned char)log[len - 1]))
        log[--len] = '\0';
    return log;
}

/* The first line of log that holds "error" (else the first line), into buf. */
static const char *first_error_line(const char *log, char *buf, size_t size)
{
    const char *pick = NULL;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (!pick)
            pick = line;
        const char *e = strstr(line, "error");
        if (e && (size_t)(e - line) < len) {
            pick = line;
            break;
        }
        line = end ? end + 1 : NULL;
    }
    if (!pick) {
        snprintf(buf, size, "(empty log)");
        return buf;
    }
    const char *end = strchr(pick, '\n');
    int len = end ? (int)(end - pick) : (int)strlen(pick);
    snprintf(buf, size, "%.*s", len, pick);
    return buf;
}

/* Whether this NVRTC can target sm_<sm>; true when it cannot tell. Writes the range it supports
 * into range. */
static bool arch_supported(int sm, char *range, size_t size)
{
    if (!g_narchs) {
        snprintf(range, size, "unknown");
        return true;
    }
    snprintf(range, size, "sm_%d to sm_%d", g_archs[0], g_archs[g_narchs - 1]);
    for (int i = 0; i < g_narchs; i++)
        if (g_archs[i] == sm)
            return true;
    return false;
}

/* Runs one nvrtcCompileProgram with opts, after adding the name expressions; returns its result,
 * the program (to read the CUBIN, the lowered names and the log from; the caller destroys it) in
 * *prog. */
static nvrtcResult compile_once(const char *src, const optlist *o, const char *const *names,
                                int nnames, nvrtcProgram *prog, const char **failed_call)
{
    *prog = NULL;
    nvrtcResult r = g_api.nvrtcCreateProgram(prog, src, BT__NVRTC_PROGRAM_NAME, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        *failed_call = "nvrtcCreateProgram";
        *prog = NULL;
        return r;
    }
    for (int i = 0; i < nnames && g_api.nvrtcAddNameExpression; i++)
        if ((r = g_api.nvrtcAddNameExpression(*prog, names[i])) != NVRTC_SUCCESS) {
            *failed_call = "nvrtcAddNameExpression";
            return r;
        }
    *failed_call = "nvrtcCompileProgram";
    return g_api.nvrtcCompileProgram(*prog, o->n, (const char *const *)o->v);
}

/* The NVRTC options of a compile (nvrtc.h lists them) into *o, with *ptxas_at the index of
 * --ptxas-options=-v; *user_arch is set when options name an architecture themselves. BT_OK, else
 * the status with msg saying why. */
static bt_status build_options(const char *const *defines, int ndefines, const char *options,
                               int cc_major, int cc_minor, bool arch_specific, bool *user_arch,
                               optlist *o, int *ptxas_at, char *msg, size_t msgsize)
{
    /* The caller's options, split on whitespace. */
    optlist user = {0};
    *user_arch = false;
    for (const char *p = options ? options : ""; *p;) {
        while (isspace((unsigned char)*p))
            p++;
        const char *start = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (p == start)
            break;
        int len = (int)(p - start);
        opts_add(&user, "%.*s", len, start);
        if (!user.oom && is_arch_option(user.v[user.n - 1]))
            *user_arch = true;
    }
    int sm = cc_major * 10 + cc_minor;
    char range[64];
    bt_status st = BT_OK;
    if (user.oom)
        st = BT_NOMEM;
    else if (!*user_arch && (cc_major < 1 || cc_minor < 0 || cc_minor > 9)) {
        snprintf(msg, msgsize, "nvrtc compile: invalid compute capability %d.%d", cc_major,
                 cc_minor);
        st = BT_INVALID_ARG;
    } else if (!*user_arch && !arch_supported(sm, range, sizeof range)) {
        snprintf(msg, msgsize, "nvrtc compile: NVRTC %d.%d cannot compile for sm_%d (it "
                 "supports %s)", g_major, g_minor, sm, range);
        st = BT_UNSUPPORTED;
    }
    if (!st && !*user_arch)
        opts_add(o, arch_specific ? "--gpu-architecture=sm_%da" : "-arch=sm_%d", sm);
    for (int i = 0; !st && i < ndefines; i++) {
        const char *def = defines[i];
        if (!def || !*def || *def == '=' || isspace((unsigned char)*def)) {
            snprintf(msg, msgsize, "nvrtc compile: define %d '%s' is not NAME=value", i,
                     def ? def : "(null)");
            st = BT_INVALID_ARG;
        } else
            opts_add(o, "-D%s", def);
    }
    opts_add(o, "-default-device");
    opts_add(o, "--std=c++17");
    opts_add(o, "-lineinfo");
    *ptxas_at = o->n;
    opts_add(o, "--ptxas-options=-v");
    for (int i = 0; i < user.n; i++)
        opts_add(o, "%s", user.v[i]);
    opts_free(&user);
    if (!st && o->oom)
        st = BT_NOMEM;
    if (st)
        opts_free(o);
    return st;
}

/* The CUBIN and the lowered names of a compiled program into cubin and *lowered. BT_OK, else
 * the status with msg saying why. */
static bt_status take_results(nvrtcProgram prog, const char *const *names, int nnames,
                              char ***lowered, bt__blob *cubin, char *msg, size_t msgsize)
{
    size_t size = 0;
    nvrtcResult r = g_api.nvrtcGetCUBINSize(prog, &size);
    if (r != NVRTC_SUCCESS || size == 0) {
        if (r != NVRTC_SUCCESS)
            snprintf(msg, msgsize, "nvrtcGetCUBINSize: %s (%d)", bt__nvrtc_error_name(r), r);
        else
            snprintf(msg, msgsize, "nvrtcGetCUBINSize: NVRTC produced no CUBIN (a virtual "
                     "architecture such as -arch=compute_90 in the options?)");
        return BT_COMPILE;
    }
    char *bin = malloc(size);
    char **low = nnames > 0 && lowered ? calloc((size_t)nnames, sizeof *low) : NULL;
    if (!bin || (nnames > 0 && lowered && !low)) {
        free(bin);
        free(low);
        return BT_NOMEM;
    }
    r = g_api.nvrtcGetCUBIN(prog, bin);
    if (r != NVRTC_SUCCESS) {
        free(bin);
        free(low);
        snprintf(msg, msgsize, "nvrtcGetCUBIN: %s (%d)", bt__nvrtc_error_name(r), r);
        return BT_BACKEND;
    }
    bool oom = false;
    for (int i = 0; low && i < nnames; i++) { /* without the NVRTC entry points: as written */
        const char *l = NULL;
        if (!g_api.nvrtcGetLoweredName ||
            g_api.nvrtcGetLoweredName(prog, names[i], &l) != NVRTC_SUCCESS || !l)
            l = names[i][0] == '&' ? names[i] + 1 : names[i];
        oom |= !(low[i] = bt__strdup(l));
    }
    if (oom) {
        bt__nvrtc_names_free(low, nnames);
        free(bin);
        return BT_NOMEM;
    }
    if (lowered)
        *lowered = low;
    cubin->data = bin;
    cubin->size = size;
    return BT_OK;
}

void bt__nvrtc_names_free(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

bt_status bt__nvrtc_compile(const char *src, const char *const *defines, int ndefines,
                            const char *options, int cc_major, int cc_minor, bool arch_specific,
                            bt__blob *cubin, char **log, bt_diag *diag)
{
    return bt__nvrtc_compile_named(src, defines, ndefines, options, cc_major, cc_minor,
                                   arch_specific, NULL, 0, NULL, cubin, log, diag);
}

bt_status bt__nvrtc_compile_named(const char *src, const char *const *defines, int ndefines,
                                  const char *options, int cc_major, int cc_minor,
                                  bool arch_specific, const char *const *names, int nnames,
                                  char ***lowered, bt__blob *cubin, char **log, bt_diag *diag)
{
    if (cubin) {
        cubin->data = NULL;
        cubin->size = 0;
    }
    if (log)
        *log = NULL;
    if (lowered)
        *lowered = NULL;
    char msg[1024];
    if (!src || !cubin || ndefines < 0 || (ndefines > 0 && !defines) || nnames < 0 ||
        (nnames > 0 && !names)) {
        snprintf(msg, sizeof msg, "nvrtc compile: NULL source, output, defines or names");
        bt__diag_set(diag, "%s", msg);
        set_log(log, msg, NULL);
        return BT_INVALID_ARG;
    }
    bt_diag d = {0};
    if (!bt__nvrtc_available(&d)) {
        bt__diag_set(diag, "%s", d.msg);
        set_log(log, d.msg, NULL);
        return BT_NO_BACKEND;
    }
    optlist o = {0};
    int ptxas_at = 0;
    bool user_arch = false;
    msg[0] = '\0';
    bt_status st = build_options(defines, ndefines, options, cc_major, cc_minor, arch_specific,
                                 &user_arch, &o, &ptxas_at, msg, sizeof msg);
    if (st) {
        bt__diag_set(diag, "%s", msg);
        set_log(log, msg[0] ? msg : NULL, NULL);
        return st;
    }
    const char *call = NULL;
    nvrtcProgram prog = NULL;
    nvrtcResult r = compile_once(src, &o, names, nnames, &prog, &call);
    char *raw = prog ? program_log(prog) : NULL;
    if (r == NVRTC_ERROR_INVALID_OPTION && raw && strstr(raw, "ptxas-options")) {
        /* An NVRTC that predates --ptxas-options: compile without the resource report (the
         * driver's function attributes still give registers and spills at load time). */
        free(raw);
        raw = NULL;
        g_api.nvrtcDestroyProgram(&prog);
        free(o.v[ptxas_at]);
        memmove(&o.v[ptxas_at], &o.v[ptxas_at + 1], (size_t)(o.n - ptxas_at - 1) * sizeof *o.v);
        o.n--;
        r = compile_once(src, &o, names, nnames, &prog, &call);
        raw = prog ? program_log(prog) : NULL;
    }
    opts_free(&o);
    char target[40];
    snprintf(target, sizeof target, "%s", user_arch ? "the given architecture" : "");
    if (!user_arch)
        bt__nvrtc_target_name(cc_major, cc_minor, arch_specific, target, sizeof target);
    if (r != NVRTC_SUCCESS) {
        char line[512];
        snprintf(msg, sizeof msg, "%s: %s (%d)", call, bt__nvrtc_error_name(r), r);
        if (raw && strstr(raw, "__nv_name_map")) { /* a name expression: say which are ours */
            size_t o2 = strlen(msg);
            o2 += (size_t)snprintf(msg + o2, sizeof msg - o2, "; the names resolved for the "
                                   "kernel's entry and constant memory were:");
            for (int i = 0; i < nnames && o2 < sizeof msg; i++)
                o2 += (size_t)snprintf(msg + o2, sizeof msg - o2, " '%s'", names[i]);
        }
        bt__diag_set(diag, "compile for %s failed: %s: %s", target, msg,
                     first_error_line(raw ? raw : "", line, sizeof line));
        set_log(log, msg, raw);
        if (prog)
            g_api.nvrtcDestroyProgram(&prog);
        return r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION ||
                       r == NVRTC_ERROR_INVALID_INPUT || r == 10 /* NAME_EXPRESSION_NOT_VALID */
                   ? BT_COMPILE
                   : r == NVRTC_ERROR_OUT_OF_MEMORY ? BT_NOMEM : BT_BACKEND;
    }
    msg[0] = '\0';
    st = take_results(prog, names, nnames, lowered, cubin, msg, sizeof msg);
    g_api.nvrtcDestroyProgram(&prog);
    if (st && msg[0])
        bt__diag_set(diag, "%s", msg);
    set_log(log, msg[0] ? msg : NULL, raw);
    return st;
}

/* ============================================================================================
 * ptxas -v resource lines
 *
 * NVRTC 13 prints, per entry function (older versions print the same lines, some without
 * "used N barriers" or with "cmem[N]" terms):
 *   ptxas info    : Compiling entry function 'k' for 'sm_90'
 *   ptxas info    : Function properties for k
 *   ptxas         .     256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 32 registers, used 1 barriers, 256 bytes cumulative stack size,
 *                   1024 bytes smem                                    (one line in the log)
 * Non-inlined device functions get "Function properties for f" + a stack line but no "Used" line,
 * and may be printed inside an entry's block; terms that are 0 may be left out.
 * ========================================================================================== */

/* The end of the line that starts at p (its '\n' or the terminating NUL). */
static const char *line_end(const char *p)
{
    const char *e = strchr(p, '\n');
    return e ? e : p + strlen(p);
}

/* The integer just before `kw` ("1024 bytes smem" with kw "bytes smem") in [p, end), -1 when kw
 * is not there or no number precedes it. */
static int64_t num_before(const char *p, const char *end, const char *kw)
{
    size_t kl = strlen(kw);
    for (const char *q = p; q + kl <= end; q++) {
        if (memcmp(q, kw, kl) != 0)
            continue;
        const char *d = q;
        while (d > p && d[-1] == ' ')
            d--;
        const char *digits_end = d;
        while (d > p && isdigit((unsigned char)d[-1]))
            d--;
        if (d == digits_end)
            continue;
        int64_t v = 0;
        for (; d < digits_end; d++)
            v = v * 10 + (*d - '0');
        return v;
    }
    return -1;
}

/* The integer just after `kw` ("Used 32 registers" with kw "Used ") in [p, end), -1 if none. */
static int64_t num_after(const char *p, const char *end, const char *kw)
{
    size_t kl = strlen(kw);
    for (const char *q = p; q + kl <= end; q++) {
        if (memcmp(q, kw, kl) != 0)
            continue;
        const char *d = q + kl;
        while (d < end && *d == ' ')
            d++;
        if (d >= end || !isdigit((unsigned char)*d))
            continue;
        int64_t v = 0;
        for (; d < end && isdigit((unsigned char)*d); d++)
            v = v * 10 + (*d - '0');
        return v;
    }
    return -1;
}

/* The line that starts with `prefix` immediately followed by `name` and then the line's end
 * (or a space or quote), in [from, to); NULL when there is none. `prefix` may sit anywhere in
 * the line. */
static const char *find_named_line(const char *from, const char *to, const char *prefix,
                                   const char *name, char after)
{
    size_t pl = strlen(prefix), nl = strlen(name);
    for (const char *q = from; q && q < to && (q = strstr(q, prefix)) != NULL && q < to; q += pl) {
        const char *n = q + pl;
        if (strncmp(n, name, nl) != 0)
            continue;
        char c = n[nl];
        if (after ? c == after : (c == '\0' || c == '\n' || c == '\r' || c == ' '))
            return q;
    }
    return NULL;
}

bt_status bt__nvrtc_resources(const char *log, const char *entry, int *regs, int64_t *spill_bytes,
                              int64_t *static_smem, int64_t *stack)
{
    if (regs)
        *regs = -1;
    if (spill_bytes)
        *spill_bytes = -1;
    if (static_smem)
        *static_smem = -1;
    if (stack)
        *stack = -1;
    if (!log || !entry || !*entry)
        return BT_INVALID_ARG;
    const char *log_end = log + strlen(log);

    /* The entry's block: from its "Compiling entry function 'E'" line to the next entry's. */
    const char *start = find_named_line(log, log_end, "Compiling entry function '", entry, '\'');
    const char *props = NULL;
    const char *block_end = log_end;
    if (start) {
        const char *next = strstr(line_end(start), "Compiling entry function '");
        if (next)
            block_end = next;
        props = find_named_line(start, block_end, "Function properties for ", entry, 0);
    } else {
        /* No "Compiling entry function" line (an unusual ptxas): anchor on the properties. */
        props = find_named_line(log, log_end, "Function properties for ", entry, 0);
        if (!props)
            return BT_NOT_FOUND;
        start = props;
        const char *next = strstr(line_end(props), "Function properties for ");
        if (next)
            block_end = next;
    }

    /* "Used N registers": the first in the block (only entries have one). */
    const char *used = NULL;
    for (const char *q = start; q < block_end; q = line_end(q) + 1) {
        const char *e = line_end(q);
        if (num_after(q, e, "Used ") >= 0 && num_before(q, e, " registers") >= 0) {
            used = q;
            break;
        }
        if (!*e)
            break;
    }
    if (!used)
        return BT_NOT_FOUND;
    const char *used_end = line_end(used);
    int64_t r = num_after(used, used_end, "Used ");
    int64_t smem = num_before(used, used_end, " bytes smem");

    /* The stack line: the first line after the properties line that mentions a stack frame. */
    int64_t frame = -1, st = -1, ld = -1;
    if (props) {
        const char *q = line_end(props);
        while (*q == '\n') {
            q++;
            const char *e = line_end(q);
            if (num_before(q, e, " bytes stack frame") >= 0) {
                frame = num_before(q, e, " bytes stack frame");
                st = num_before(q, e, " bytes spill stores");
                ld = num_before(q, e, " bytes spill loads");
                break;
            }
            if (!strncmp(q, "ptxas info", 10) || q >= block_end)
                break; /* another info line: this ptxas prints no stack line */
            q = e;
        }
    }
    if (regs)
        *regs = (int)r;
    if (spill_bytes)
        *spill_bytes = (st > 0 ? st : 0) + (ld > 0 ? ld : 0);
    if (static_smem)
        *static_smem = smem > 0 ? smem : 0;
    if (stack)
        *stack = frame > 0 ? frame : 0;
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Resources from the CUBIN itself (ELF): the global .nv.info section's EIATTR_REGCOUNT (0x2f) and
 * EIATTR_FRAME_SIZE (0x11) records, each {symbol index, value}, and the size of the entry's
 * .nv.shared.<entry> section. Used when a log carries no ptxas report (some NVRTC builds drop it
 * after a failed compile in the same process).
 * ------------------------------------------------------------------------------------------- */
static bool rd(const unsigned char *b, size_t size, size_t off, void *dst, size_t n)
{
    if (off > size || n > size - off)
        return false;
    memcpy(dst, b + off, n);
    return true;
}

bt_status bt__cubin_resources(const void *cubin, size_t size, const char *entry, int *regs,
                              int64_t *frame, int64_t *static_smem)
{
    const unsigned char *b = cubin;
    if (regs)
        *regs = -1;
    if (frame)
        *frame = -1;
    if (static_smem)
        *static_smem = 0;
    if (!b || size < 64 || memcmp(b, "\x7f" "ELF", 4) || b[4] != 2 || !entry)
        return BT_INVALID_ARG;
    uint64_t shoff;
    uint16_t shentsize, shnum, shstrndx;
    if (!rd(b, size, 0x28, &shoff, 8) || !rd(b, size, 0x3a, &shentsize, 2) ||
        !rd(b, size, 0x3c, &shnum, 2) || !rd(b, size, 0x3e, &shstrndx, 2) || shentsize < 64 ||
        shstrndx >= shnum)
        return BT_CORRUPT;
    uint64_t shstr_off, symtab_off = 0, symtab_size = 0, strtab_off = 0, info_off = 0, info_size = 0;
    if (!rd(b, size, shoff + (uint64_t)shstrndx * shentsize + 0x18, &shstr_off, 8))
        return BT_CORRUPT;
    char shared_name[300];
    snprintf(shared_name, sizeof shared_name, ".nv.shared.%s", entry);
    for (uint16_t i = 0; i < shnum; i++) {
        uint64_t h = shoff + (uint64_t)i * shentsize, off, sz;
        uint32_t name;
        if (!rd(b, size, h, &name, 4) || !rd(b, size, h + 0x18, &off, 8) ||
            !rd(b, size, h + 0x20, &sz, 8) || shstr_off + name >= size)
            return BT_CORRUPT;
        const char *nm = (const char *)b + shstr_off + name;
        size_t maxlen = size - (shstr_off + name);
        if (strnlen(nm, maxlen) == maxlen)
            return BT_CORRUPT;
        if (!strcmp(nm, ".symtab"))
            symtab_off = off, symtab_size = sz;
        else if (!strcmp(nm, ".strtab"))
            strtab_off = off;
        else if (!strcmp(nm, ".nv.info"))
            info_off = off, info_size = sz;
        else if (!strcmp(nm, shared_name) && static_smem) {
            /* on sm_80 and later the section also spans the 1 KiB the system reserves per block
             * (ptxas reports the kernel's own bytes): the SM version is e_flags' second byte */
            uint32_t eflags = 0;
            rd(b, size, 0x30, &eflags, 4);
            int64_t reserved = ((eflags >> 8) & 0xff) >= 80 ? 1024 : 0;
            *static_smem = (int64_t)sz >= reserved ? (int64_t)sz - reserved : (int64_t)sz;
        }
    }
    if (!symtab_off || !strtab_off || !info_off)
        return BT_NOT_FOUND;
    /* the entry's symbol index */
    int64_t sym = -1;
    for (uint64_t k = 0; k * 24 + 24 <= symtab_size; k++) {
        uint32_t nm;
        if (!rd(b, size, symtab_off + k * 24, &nm, 4) || strtab_off + nm >= size)
            return BT_CORRUPT;
        const char *s = (const char *)b + strtab_off + nm;
        size_t maxlen = size - (strtab_off + nm);
        if (strnlen(s, maxlen) < maxlen && !strcmp(s, entry)) {
            sym = (int64_t)k;
            break;
        }
    }
    if (sym < 0)
        return BT_NOT_FOUND;
    bool found = false;
    for (uint64_t k = 0; k + 4 <= info_size;) {
        unsigned char fmt = b[info_off + k], attr = b[info_off + k + 1];
        k += 2;
        if (fmt == 0x04) { /* EIFMT_SVAL: 16-bit length, then that many bytes */
            uint16_t len;
            if (!rd(b, size, info_off + k, &len, 2))
                return BT_CORRUPT;
            k += 2;
            uint32_t idx, val;
            if (len == 8 && rd(b, size, info_off + k, &idx, 4) && rd(b, size, info_off + k + 4, &val, 4) &&
                idx == (uint32_t)sym) {
                if (attr == 0x2f && regs) {
                    *regs = (int)val;
                    found = true;
                } else if (attr == 0x11 && frame)
                    *frame = val;
            }
            k += len;
        } else if (fmt == 0x03) { /* EIFMT_HVAL: a 16-bit value */
            k += 2;
        } else if (fmt == 0x02) { /* EIFMT_BVAL */
            k += 2;
        } else if (fmt != 0x01) { /* unknown: stop rather than misread */
            break;
        }
    }
    return found ? BT_OK : BT_NOT_FOUND;
}

void bt__nvrtc_target_name(int cc_major, int cc_minor, bool arch_specific, char *buf, size_t size)
{
    snprintf(buf, size, "sm_%d%s", cc_major * 10 + cc_minor, arch_specific ? "a" : "");
}

bool bt__nvrtc_target_parse(const char *target, int *cc_major, int *cc_minor, bool *arch_specific)
{
    if (!target || strncmp(target, "sm_", 3) != 0)
        return false;
    const char *p = target + 3;
    int sm = 0, digits = 0;
    for (; isdigit((unsigned char)*p) && digits < 4; p++, digits++)
        sm = sm * 10 + (*p - '0');
    bool a = *p == 'a';
    if (digits < 2 || sm < 10 || p[a] != '\0')
        return false;
    *cc_major = sm / 10;
    *cc_minor = sm % 10;
    *arch_specific = a;
    return true;
}
