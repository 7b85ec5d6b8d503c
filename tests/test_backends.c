/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_backends.c — the backend conformance suite: every test here runs against every registered
 * backend (bt__backends()) through its vtable, the same assertions for each, so that a backend
 * (HIP next) is known to keep the contract of src/backends/backend.h by adding its test kernels
 * to the table below and nothing else. What only one backend has (CUDA's tensor maps, graphs,
 * faults and offline compiles; OpenCL's local-memory arguments) stays in test_cuda.c and
 * test_opencl.c.
 *
 * The contract checked, per backend: its identity (API version, the languages it compiles, a
 * kernel taking the source in its language and refusing a spec without one, a compile for a
 * target it does not build refused with a log), the devices it lists and opens by id, buffers
 * (round trip, fills of every pattern size, copies, bounds), compile + load + launch of a vector
 * add checked exactly against the host and timed, binaries that reload and corrupt ones refused,
 * compile errors naming the line, compiles from several threads, function resources, refused
 * launches that leave the device working, cache flushes that touch no user buffer, a kernel
 * handle that tunes and launches through the engine, and the offline entries where it has them.
 *
 * Devices: OpenCL runs on PoCL here; CUDA on the first GPU, else (SKIPPED said with the reason)
 * on tests/mock/mock_cuda.c, a host imitation of the driver that runs only the kernels it
 * emulates (vadd and inc here): tests that launch other kernels check what the mock can tell
 * and say what they skip. A backend with no device is skipped with its reason; with none at all
 * the program exits 77.
 */
#include "test_util.h"

#include "backends/backend.h"
#include "backends/cuda/cuda.h"
#include "backends/device.h"
#include "core/hwdb.h"
#include "engine/engine.h"

#include <pthread.h>
#include <stdbool.h>

/* ---------------------------------------------------------------------------------------------
 * The test kernels of each language (what a new backend's language adds)
 * ------------------------------------------------------------------------------------------- */

typedef struct lang_src {
    const char *lang;
    const char *vadd;      /* vadd(a, b, c, n): c = a + b over n floats */
    const char *inc;       /* inc(p, n): p[i] += 1 over n ints */
    const char *bad;       /* fails to compile at its line 3, naming undeclared_name_xyz */
    const char *line3;     /* how the compile log names that line */
    const char *setk_fmt;  /* "program %d": setk(o): o[i] = K * 3 + EXTRA (K, EXTRA defined) */
    const char *extra;     /* the compiler option that defines EXTRA as 1 */
    const char *withlocal; /* withlocal(o): 256 floats of static shared/local memory, each block
                              of 256 threads writes them reversed */
} lang_src;

static const lang_src langs[] = {
    {
        .lang = "opencl",
        .vadd = "__kernel void vadd(__global const float *a, __global const float *b,\n"
                "                   __global float *c, int n)\n"
                "{\n"
                "    int i = get_global_id(0);\n"
                "    if (i < n)\n"
                "        c[i] = a[i] + b[i];\n"
                "}\n",
        .inc = "__kernel void inc(__global int *p, int n)\n"
               "{\n"
               "    int i = get_global_id(0);\n"
               "    if (i < n)\n"
               "        p[i] += 1;\n"
               "}\n",
        .bad = "__kernel void bad(__global int *o)\n"
               "{\n"
               "    o[0] = undeclared_name_xyz;\n"
               "}\n",
        .line3 = ":3:",
        .setk_fmt = "/* program %d */\n"
                    "__kernel void setk(__global int *o)\n"
                    "{\n"
                    "    o[get_global_id(0)] = K * 3 + EXTRA;\n"
                    "}\n",
        .extra = "-D EXTRA=1",
        .withlocal = "__kernel void withlocal(__global float *o)\n"
                     "{\n"
                     "    __local float tile[256];\n"
                     "    int l = get_local_id(0);\n"
                     "    tile[l] = (float)l;\n"
                     "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                     "    o[get_global_id(0)] = tile[255 - l];\n"
                     "}\n",
    },
    {
        .lang = "cuda",
        .vadd = "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n)\n"
                "{\n"
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (i < n)\n"
                "        c[i] = a[i] + b[i];\n"
                "}\n",
        .inc = "extern \"C\" __global__ void inc(int *p, int n)\n"
               "{\n"
               "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
               "    if (i < n)\n"
               "        p[i] += 1;\n"
               "}\n",
        .bad = "extern \"C\" __global__ void bad(int *o)\n"
               "{\n"
               "    o[0] = undeclared_name_xyz;\n"
               "}\n",
        .line3 = "kernel.cu(3)",
        .setk_fmt = "/* program %d */\n"
                    "extern \"C\" __global__ void setk(int *o)\n"
                    "{\n"
                    "    o[blockIdx.x * blockDim.x + threadIdx.x] = K * 3 + EXTRA;\n"
                    "}\n",
        .extra = "-DEXTRA=1",
        .withlocal = "extern \"C\" __global__ void withlocal(float *o)\n"
                     "{\n"
                     "    __shared__ float tile[256];\n"
                     "    int l = threadIdx.x;\n"
                     "    tile[l] = (float)l;\n"
                     "    __syncthreads();\n"
                     "    o[blockIdx.x * blockDim.x + l] = tile[255 - l];\n"
                     "}\n",
    },
};

/* ---------------------------------------------------------------------------------------------
 * The backend under test
 * ------------------------------------------------------------------------------------------- */

typedef struct backend_case {
    const bt__backend_iface *I;
    const lang_src *src;
    bool emulated;      /* a driver imitation that runs only vadd and inc */
    const char *mock;   /* its library, checked for balanced contexts after each test */
    bt_device *dev;
    bt__bdev *bd;
} backend_case;

static backend_case g; /* the group running now */

/* xorshift64*: reproducible random data without touching rand()'s global state. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

static bt__bbuf *alloc(size_t bytes)
{
    bt__bbuf *b = NULL;
    bt_diag d = {0};
    bt_status st = g.I->buf_alloc(g.bd, bytes, &b, &d);
    if (st != BT_OK)
        fprintf(stderr, "buf_alloc(%zu): %s\n", bytes, d.msg);
    assert_int_equal(st, BT_OK);
    assert_non_null(b);
    return b;
}

static bt__karg buf_arg(bt__bbuf *b) { return (bt__karg){.kind = BT__ARG_BUF, .u.buf = b}; }
static bt__karg i32_arg(int32_t v) { return (bt__karg){.kind = BT__ARG_I32, .u.i32 = v}; }

static bt_status compile(const char *src, const char *const *defs, int ndefs, const char *opts,
                         const char *target, bt__blob *blob, char **log)
{
    bt__compile_req req = {.src = src, .defines = defs, .ndefines = ndefs, .options = opts,
                           .target = target};
    return g.I->compile(g.bd, &req, blob, log);
}

/* Compiles src for the device and loads it; the module is the caller's to free. */
static bt__bmod *build(const char *src)
{
    bt__blob blob = {0};
    char *log = NULL;
    bt_status st = compile(src, NULL, 0, NULL, NULL, &blob, &log);
    if (st != BT_OK)
        fprintf(stderr, "compile failed: %s\n%s\n", bt_err_name(st), log ? log : "(no log)");
    assert_int_equal(st, BT_OK);
    assert_non_null(log);
    free(log);
    bt__bmod *m = NULL;
    bt_diag d = {0};
    st = g.I->module_load(g.bd, blob.data, blob.size, &m, &d);
    if (st != BT_OK)
        fprintf(stderr, "module_load: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    free(blob.data);
    return m;
}

/* After each test on a driver imitation: every context the backend pushed is popped again. */
static int balanced(void **state)
{
    (void)state;
    return bt_test_mock_ctx_balanced(g.mock);
}

/* ---------------------------------------------------------------------------------------------
 * Identity
 * ------------------------------------------------------------------------------------------- */

static void test_identity_and_targets(void **state)
{
    (void)state;
    assert_int_equal(g.I->api_version, BT__BACKEND_API_VERSION);
    assert_non_null(g.I->languages);
    assert_non_null(g.I->languages[0]);
    assert_string_equal(g.I->languages[0], g.src->lang);
    /* Every mandatory entry is there; the offline ones come together or not at all. */
    assert_true(g.I->load && g.I->device_count && g.I->device_info && g.I->device_open &&
                g.I->compile && g.I->module_load && g.I->function_get && g.I->launch &&
                g.I->timer_create && g.I->timer_read && g.I->flush_cache && g.I->sync);
    assert_true(!g.I->offline_target == !g.I->offline_compile);
    /* A target the backend does not build is refused, with a log saying so. */
    bt__blob blob = {(void *)&blob, 9};
    char *log = NULL;
    assert_int_equal(compile(g.src->vadd, NULL, 0, NULL, "no_such_target", &blob, &log),
                     BT_UNSUPPORTED);
    assert_null(blob.data);
    assert_non_null(log);
    assert_non_null(strstr(log, "no_such_target"));
    free(log);
}

/* A spec whose sources are in `langs_json` ({"lang": {"inline": ...}, ...}), a one-config vector
 * add with the reference config as its check. */
static bt_kdesc *probe_spec(const char *sources_json)
{
    char *text = malloc(8192);
    assert_non_null(text);
    snprintf(text, 8192,
             "{\"name\": \"lang_probe\", \"sources\": %s, \"entry\": \"vadd\",\n"
             " \"problem\": {\"n\": 1000}, \"params\": {\"B\": [64]},\n"
             " \"launch\": {\"grid\": [\"cdiv(n, B)\"], \"block\": [\"B\"]},\n"
             " \"args\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"size\": \"n\"},\n"
             "          {\"name\": \"b\", \"dtype\": \"fp32\", \"size\": \"n\"},\n"
             "          {\"name\": \"c\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},\n"
             "          {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": \"n\"}],\n"
             " \"reference\": {\"config\": {\"B\": 64}}}",
             sources_json);
    bt_kdesc *k = NULL;
    bt_diag d = {0};
    bt_status st = bt_kdesc_load_string(text, "lang_probe.json", &k, &d);
    if (st != BT_OK)
        fail_msg("probe spec: %s", d.msg);
    free(text);
    return k;
}

/* A JSON string of s (quotes and newlines escaped) into buf. */
static const char *json_str(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    buf[o++] = '"';
    for (; *s && o + 3 < size; s++) {
        if (*s == '"' || *s == '\\')
            buf[o++] = '\\', buf[o++] = *s;
        else if (*s == '\n')
            buf[o++] = '\\', buf[o++] = 'n';
        else
            buf[o++] = *s;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

/* A kernel takes the source in its backend's language, whatever else the spec has, tunes its one
 * config through the engine and launches it (c = a + b checked); a spec with no source in the
 * backend's language is refused, naming both sides. */
static void test_kernel_takes_its_language(void **state)
{
    (void)state;
    char esc[2048], json[4096];
    snprintf(json, sizeof json, "{\"zzz_other\": {\"inline\": \"not compiled\"}, \"%s\": {\"inline\": %s}}",
             g.src->lang, json_str(g.src->vadd, esc, sizeof esc));
    bt_kdesc *k = probe_spec(json);
    bt_kernel *kn = NULL;
    bt_diag d = {0};
    bt_status st = bt_kernel_create(g.dev, k, &kn, &d);
    if (st != BT_OK)
        fail_msg("bt_kernel_create: %s", d.msg);
    assert_string_equal(kn->src->lang, g.src->lang);
    assert_true(kn->src_hash == bt__kdesc_source_hash(k, kn->src));
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.store = "none";
    o.warmup_ms = 1;
    o.rep_ms = 1;
    o.verify_boundary = 0;
    o.mode = BT_MODE_TUNE;
    bt__kernel_set_opts(kn, &o);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    enum { N = 1000 };
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i % 97) * 0.5f;
        b[i] = (float)(i % 13) - 6.0f;
        c[i] = -1.0f;
    }
    bt_buffer *bufs[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(g.dev, sizeof a, &bufs[i], &d), BT_OK);
    assert_int_equal(bt_buffer_write(bufs[0], 0, a, sizeof a, &d), BT_OK);
    assert_int_equal(bt_buffer_write(bufs[1], 0, b, sizeof b, &d), BT_OK);
    st = bt_kernel_launch(kn, p, bufs, 3, &d);
    if (st != BT_OK)
        fail_msg("bt_kernel_launch: %s: %s", bt_err_name(st), d.msg);
    assert_int_equal(bt_device_sync(g.dev, &d), BT_OK);
    assert_int_equal(bt_buffer_read(bufs[2], 0, c, sizeof c, &d), BT_OK);
    for (int i = 0; i < N; i++)
        if (c[i] != a[i] + b[i])
            fail_msg("c[%d] = %g, want %g", i, (double)c[i], (double)(a[i] + b[i]));
    assert_int_equal(bt_kernel_tune_count(kn), 1);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(bufs[i]);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);

    /* No source in the backend's language. */
    k = probe_spec("{\"zzz_other\": {\"inline\": \"not compiled\"}}");
    kn = (bt_kernel *)&d;
    assert_int_equal(bt_kernel_create(g.dev, k, &kn, &d), BT_UNSUPPORTED);
    assert_null(kn);
    assert_non_null(strstr(d.msg, "zzz_other"));
    assert_non_null(strstr(d.msg, g.src->lang));
    bt_kdesc_destroy(k);
}

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

static void test_devices_listed(void **state)
{
    (void)state;
    bt_device_list *devs = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_devices_list(&devs, &d), BT_OK);
    size_t n = bt_device_list_count(devs);
    assert_true(n >= 1);
    int defaults = 0, mine = 0;
    for (size_t i = 0; i < n; i++) {
        const bt_device_info *x = bt_device_list_at(devs, i);
        char want[32];
        snprintf(want, sizeof want, "%s:%d", x->backend, x->index);
        assert_string_equal(x->id, want);
        defaults += x->is_default;
        if (strcmp(x->backend, g.I->name) != 0)
            continue;
        assert_int_equal(x->index, mine++); /* numbered densely in order */
        assert_true(x->name[0] && x->vendor[0] && x->platform[0] && x->api_version[0] &&
                    x->driver_version[0] && x->compiler_version[0]);
        assert_string_equal(x->props.name, x->name);
        assert_true(x->props.sm_count > 0);
        assert_true(x->props.warp_size >= 1);
        assert_true(x->props.max_threads_per_block > 0);
        assert_true(x->props.smem_per_block > 0);
        assert_true(x->props.smem_per_block_optin >= x->props.smem_per_block);
        assert_true(x->props.mem_bytes > 0);
        assert_true(x->props.clock_mhz >= 0 && x->props.mem_bw_gbps >= 0);
        if (x->uuid[0])
            assert_int_equal(strlen(x->uuid), 36);
    }
    assert_true(mine >= 1);
    assert_int_equal(defaults, 1);
    bt_device_list_destroy(devs);
}

static void test_open_by_id(void **state)
{
    (void)state;
    char id[48];
    snprintf(id, sizeof id, "%s:0", g.I->name);
    bt_device *d = NULL;
    bt_diag diag = {0};
    assert_int_equal(bt_device_open(id, &d, &diag), BT_OK);
    assert_string_equal(bt_device_get_info(d)->id, id);
    assert_ptr_equal(bt__device_iface(d), g.I);
    assert_non_null(bt__device_bdev(d));
    /* a second opening works beside the first, and closing it leaves the first working */
    bt__bbuf *x = NULL;
    assert_int_equal(g.I->buf_alloc(bt__device_bdev(d), 64, &x, &diag), BT_OK);
    g.I->buf_free(bt__device_bdev(d), x);
    bt_device_destroy(d);
    g.I->buf_free(g.bd, alloc(64));

    snprintf(id, sizeof id, "%s:999", g.I->name);
    d = (bt_device *)&diag; /* must be reset to NULL */
    assert_int_equal(bt_device_open(id, &d, &diag), BT_NO_DEVICE);
    assert_null(d);
    assert_non_null(strstr(diag.msg, id));
    snprintf(id, sizeof id, "%s:0", g.I->name);
    assert_non_null(strstr(diag.msg, id)); /* lists the ids that exist */
    bt_device_destroy(NULL);
    assert_null(bt_device_get_info(NULL));
}

/* ---------------------------------------------------------------------------------------------
 * Buffers
 * ------------------------------------------------------------------------------------------- */

static void test_buffer_round_trip(void **state)
{
    (void)state;
    const size_t n = (3u << 20) + 13;
    unsigned char *src = malloc(n), *dst = malloc(n);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)rnd();
    bt__bbuf *b = alloc(n);
    bt_diag d = {0};
    assert_int_equal(g.I->buf_write(g.bd, b, 0, src, n, &d), BT_OK);
    memset(dst, 0, n);
    assert_int_equal(g.I->buf_read(g.bd, b, 0, dst, n, &d), BT_OK);
    assert_memory_equal(src, dst, n);
    /* At an odd offset. */
    assert_int_equal(g.I->buf_write(g.bd, b, 7, src + 100, 1000, &d), BT_OK);
    assert_int_equal(g.I->buf_read(g.bd, b, 7, dst, 1000, &d), BT_OK);
    assert_memory_equal(src + 100, dst, 1000);
    /* Outside the buffer is refused, naming the range. */
    assert_int_equal(g.I->buf_read(g.bd, b, n - 4, dst, 8, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "outside"));
    assert_int_equal(g.I->buf_write(g.bd, b, n - 3, src, 4, &d), BT_INVALID_ARG);
    assert_int_equal(g.I->buf_write(g.bd, b, n + 1, src, 0, &d), BT_INVALID_ARG);
    assert_int_equal(g.I->buf_read(g.bd, b, n + 1, dst, 0, &d), BT_INVALID_ARG);
    bt__bbuf *z = (bt__bbuf *)&d;
    assert_int_equal(g.I->buf_alloc(g.bd, 0, &z, &d), BT_INVALID_ARG);
    assert_null(z);
    g.I->buf_free(g.bd, b);
    g.I->buf_free(g.bd, NULL);
    free(src);
    free(dst);
}

static void test_buffer_fill_patterns(void **state)
{
    (void)state;
    /* Over 2 MiB, so that a backend filling 8-byte patterns by doubling copies needs several. */
    const size_t n = (5u << 20) + 64;
    unsigned char *host = malloc(n), *back = malloc(n);
    assert_non_null(host);
    assert_non_null(back);
    bt__bbuf *b = alloc(n);
    bt_diag d = {0};
    const unsigned char p8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const unsigned char same8[8] = {9, 8, 7, 6, 9, 8, 7, 6};
    const unsigned char p4[4] = {0xde, 0xad, 0xbe, 0xef};
    const unsigned char p2[2] = {0x12, 0x34};
    const unsigned char p1[1] = {0x5a};
    struct {
        const unsigned char *p;
        size_t ps, off, len;
    } cases[] = {
        {p1, 1, 0, n},        {p1, 1, 3, 1001},          {p2, 2, 2, 4096},
        {p4, 4, 4, n - 8},    {p8, 8, 8, (4u << 20) + 8}, {same8, 8, 16, 800},
        {p8, 8, 0, 24},       {p4, 4, 32, 64 * 4 + 12},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t i = 0; i < n; i++)
            host[i] = (unsigned char)rnd();
        assert_int_equal(g.I->buf_write(g.bd, b, 0, host, n, &d), BT_OK);
        bt_status st = g.I->buf_fill(g.bd, b, cases[c].off, cases[c].len, cases[c].p,
                                     cases[c].ps, &d);
        if (st != BT_OK)
            fprintf(stderr, "fill case %zu: %s\n", c, d.msg);
        assert_int_equal(st, BT_OK);
        for (size_t i = 0; i < cases[c].len; i++)
            host[cases[c].off + i] = cases[c].p[i % cases[c].ps];
        assert_int_equal(g.I->buf_read(g.bd, b, 0, back, n, &d), BT_OK);
        if (memcmp(host, back, n) != 0) /* the range filled, the rest untouched */
            fail_msg("fill case %zu (pattern %zu bytes at %zu, %zu bytes) differs", c,
                     cases[c].ps, cases[c].off, cases[c].len);
    }
    uint32_t pat = 7;
    assert_int_equal(g.I->buf_fill(g.bd, b, 0, 10, &pat, 4, &d), BT_INVALID_ARG);
    assert_int_equal(g.I->buf_fill(g.bd, b, 0, 12, &pat, 3, &d), BT_INVALID_ARG);
    assert_int_equal(g.I->buf_fill(g.bd, b, 0, n + 4, &pat, 4, &d), BT_INVALID_ARG);
    g.I->buf_free(g.bd, b);
    free(host);
    free(back);
}

static void test_buffer_copy(void **state)
{
    (void)state;
    const size_t n = 100003;
    unsigned char *src = malloc(n), *dst = malloc(n);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)rnd();
    bt__bbuf *a = alloc(n), *b = alloc(n + 100);
    bt_diag d = {0};
    const unsigned char zero = 0;
    assert_int_equal(g.I->buf_fill(g.bd, b, 0, n + 100, &zero, 1, &d), BT_OK);
    assert_int_equal(g.I->buf_write(g.bd, a, 0, src, n, &d), BT_OK);
    assert_int_equal(g.I->buf_copy(g.bd, b, a, n, &d), BT_OK);
    assert_int_equal(g.I->buf_read(g.bd, b, 0, dst, n, &d), BT_OK);
    assert_memory_equal(src, dst, n);
    unsigned char tail[100], zeros[100] = {0};
    assert_int_equal(g.I->buf_read(g.bd, b, n, tail, 100, &d), BT_OK);
    assert_memory_equal(tail, zeros, 100);
    assert_int_equal(g.I->buf_copy(g.bd, a, b, n + 1, &d), BT_INVALID_ARG); /* a is too small */
    g.I->buf_free(g.bd, a);
    g.I->buf_free(g.bd, b);
    free(src);
    free(dst);
}

/* ---------------------------------------------------------------------------------------------
 * Compile, load, launch
 * ------------------------------------------------------------------------------------------- */

/* Runs vadd from m over n random floats; checks c == a + b exactly (both sides IEEE single
 * additions, round to nearest) and returns the device time of the launch. c_out gets c. */
static double run_vadd(bt__bmod *m, int n, float *c_out)
{
    bt__bfn *f = NULL;
    bt__kres res;
    bt_diag d = {0};
    assert_int_equal(g.I->function_get(g.bd, m, "vadd", &f, &res, &d), BT_OK);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    rng_state = 12345; /* the same inputs every call */
    for (int i = 0; i < n; i++) {
        a[i] = (float)((double)(rnd() >> 11) / 9007199254740992.0 * 200.0 - 100.0);
        b[i] = (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2e-3);
    }
    bt__bbuf *ba = alloc(n * sizeof(float)), *bb = alloc(n * sizeof(float)),
             *bc = alloc(n * sizeof(float));
    assert_int_equal(g.I->buf_write(g.bd, ba, 0, a, n * sizeof(float), &d), BT_OK);
    assert_int_equal(g.I->buf_write(g.bd, bb, 0, b, n * sizeof(float), &d), BT_OK);
    bt__btimer *t = NULL;
    assert_int_equal(g.I->timer_create(g.bd, &t, &d), BT_OK);
    bt__karg args[] = {buf_arg(ba), buf_arg(bb), buf_arg(bc), i32_arg(n)};
    uint32_t block[3] = {64, 1, 1}, grid[3] = {(uint32_t)(n + 63) / 64, 1, 1};
    bt_status st = g.I->launch(g.bd, f, grid, block, 0, args, 4, t, &d);
    if (st != BT_OK)
        fprintf(stderr, "launch: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    double ms = 0;
    assert_int_equal(g.I->timer_read(g.bd, t, &ms, &d), BT_OK);
    assert_int_equal(g.I->buf_read(g.bd, bc, 0, c, n * sizeof(float), &d), BT_OK);
    for (int i = 0; i < n; i++) {
        float want = a[i] + b[i];
        if (c[i] != want)
            fail_msg("c[%d] = %.9g, want %.9g", i, (double)c[i], (double)want);
    }
    if (c_out)
        memcpy(c_out, c, n * sizeof *c);
    g.I->timer_free(g.bd, t);
    g.I->buf_free(g.bd, ba);
    g.I->buf_free(g.bd, bb);
    g.I->buf_free(g.bd, bc);
    free(a);
    free(b);
    free(c);
    return ms;
}

static void test_vector_add_timed(void **state)
{
    (void)state;
    bt__bmod *m = build(g.src->vadd);
    double ms = run_vadd(m, 1000003, NULL);
    printf("    %s: vadd of 1000003 floats: %.4f ms\n", g.I->name, ms);
    assert_true(ms > 0.0);
    assert_true(ms < 60000.0);
    /* The same entry again is the same function. */
    bt__bfn *f1 = NULL, *f2 = NULL;
    bt_diag d = {0};
    assert_int_equal(g.I->function_get(g.bd, m, "vadd", &f1, NULL, &d), BT_OK);
    assert_int_equal(g.I->function_get(g.bd, m, "vadd", &f2, NULL, &d), BT_OK);
    assert_ptr_equal(f1, f2);
    assert_true(run_vadd(m, 77, NULL) >= 0.0);
    /* An unknown entry is BT_NOT_FOUND, naming it. */
    f2 = (bt__bfn *)&d;
    assert_int_equal(g.I->function_get(g.bd, m, "nosuchkernel", &f2, NULL, &d), BT_NOT_FOUND);
    assert_null(f2);
    assert_non_null(strstr(d.msg, "nosuchkernel"));
    g.I->module_free(g.bd, m);
    g.I->module_free(g.bd, NULL);
}

/* A binary loads again and again into independent modules, also from an odd address; a damaged
 * one is refused before it reaches the driver. */
static void test_blobs_reload_and_corrupt_refused(void **state)
{
    (void)state;
    enum { N = 4099 };
    bt__blob blob = {0};
    char *log = NULL;
    assert_int_equal(compile(g.src->vadd, NULL, 0, NULL, NULL, &blob, &log), BT_OK);
    free(log);
    assert_true(blob.size > 32);
    float *c1 = malloc(N * sizeof(float)), *c2 = malloc(N * sizeof(float));
    assert_non_null(c1);
    assert_non_null(c2);
    bt__bmod *m1 = build(g.src->vadd);
    run_vadd(m1, N, c1);
    g.I->module_free(g.bd, m1);
    bt_diag d = {0};
    bt__bmod *m2 = NULL, *m3 = NULL;
    assert_int_equal(g.I->module_load(g.bd, blob.data, blob.size, &m2, &d), BT_OK);
    assert_int_equal(g.I->module_load(g.bd, blob.data, blob.size, &m3, &d), BT_OK);
    run_vadd(m2, N, c2);
    assert_memory_equal(c1, c2, N * sizeof(float));
    run_vadd(m3, N, c2);
    assert_memory_equal(c1, c2, N * sizeof(float));
    g.I->module_free(g.bd, m2);
    g.I->module_free(g.bd, m3);

    unsigned char *bad = malloc(blob.size + 1);
    assert_non_null(bad);
    memcpy(bad + 1, blob.data, blob.size); /* at an odd address */
    bt__bmod *m = NULL;
    assert_int_equal(g.I->module_load(g.bd, bad + 1, blob.size, &m, &d), BT_OK);
    run_vadd(m, N, c2);
    assert_memory_equal(c1, c2, N * sizeof(float));
    g.I->module_free(g.bd, m);
    memcpy(bad, blob.data, blob.size);
    bad[blob.size / 2] ^= 0x5a;
    m = (bt__bmod *)&d;
    assert_int_equal(g.I->module_load(g.bd, bad, blob.size, &m, &d), BT_CORRUPT);
    assert_null(m);
    assert_non_null(strstr(d.msg, "checksum"));
    assert_int_equal(g.I->module_load(g.bd, blob.data, blob.size - 1, &m, &d), BT_CORRUPT);
    assert_int_equal(g.I->module_load(g.bd, blob.data, 10, &m, &d), BT_CORRUPT);
    assert_int_equal(g.I->module_load(g.bd, NULL, 0, &m, &d), BT_CORRUPT);
    memset(bad, 0x42, blob.size);
    assert_int_equal(g.I->module_load(g.bd, bad, blob.size, &m, &d), BT_CORRUPT);
    assert_non_null(strstr(d.msg, "magic"));
    free(bad);
    free(blob.data);
    free(c1);
    free(c2);
}

static void test_compile_error_names_line(void **state)
{
    (void)state;
    bt__blob blob = {(void *)&blob, 99};
    char *log = NULL;
    assert_int_equal(compile(g.src->bad, NULL, 0, NULL, NULL, &blob, &log), BT_COMPILE);
    assert_null(blob.data);
    assert_int_equal(blob.size, 0);
    assert_non_null(log);
    assert_non_null(strstr(log, "undeclared_name_xyz"));
    assert_non_null(strstr(log, g.src->line3)); /* the line of the error */
    free(log);
    /* A successful build returns a log too (possibly empty), never NULL. */
    assert_int_equal(compile(g.src->vadd, NULL, 0, NULL, NULL, &blob, &log), BT_OK);
    assert_non_null(log);
    free(log);
    free(blob.data);
}

/* Each job compiles one program whose result depends on its define and its options. */
typedef struct compile_job {
    int k;
    bt__blob blob;
    bt_status st;
    char *log;
} compile_job;

static void *compile_thread(void *arg)
{
    compile_job *jobs = arg; /* two jobs per thread */
    for (int j = 0; j < 2; j++) {
        char src[512], def[32];
        snprintf(src, sizeof src, g.src->setk_fmt, jobs[j].k);
        snprintf(def, sizeof def, "K=%d", jobs[j].k);
        const char *defs[] = {def};
        jobs[j].st = compile(src, defs, 1, g.src->extra, NULL, &jobs[j].blob, &jobs[j].log);
    }
    return NULL;
}

static void test_compile_from_threads(void **state)
{
    (void)state;
    compile_job jobs[8];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 8; i++)
        jobs[i].k = 100 + 7 * i;
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        assert_int_equal(pthread_create(&th[t], NULL, compile_thread, &jobs[2 * t]), 0);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    bt_diag d = {0};
    bt__bbuf *out = alloc(32 * sizeof(int));
    for (int i = 0; i < 8; i++) {
        if (jobs[i].st != BT_OK)
            fprintf(stderr, "job %d: %s\n%s\n", i, bt_err_name(jobs[i].st), jobs[i].log);
        assert_int_equal(jobs[i].st, BT_OK);
        assert_non_null(jobs[i].log);
        bt__bmod *m = NULL;
        assert_int_equal(g.I->module_load(g.bd, jobs[i].blob.data, jobs[i].blob.size, &m, &d),
                         BT_OK);
        if (!g.emulated) { /* an imitation runs only the kernels it emulates */
            bt__bfn *f = NULL;
            assert_int_equal(g.I->function_get(g.bd, m, "setk", &f, NULL, &d), BT_OK);
            bt__karg args[] = {buf_arg(out)};
            uint32_t grid[3] = {4, 1, 1}, block[3] = {8, 1, 1};
            assert_int_equal(g.I->launch(g.bd, f, grid, block, 0, args, 1, NULL, &d), BT_OK);
            int got[32];
            assert_int_equal(g.I->buf_read(g.bd, out, 0, got, sizeof got, &d), BT_OK);
            for (int j = 0; j < 32; j++)
                assert_int_equal(got[j], jobs[i].k * 3 + 1);
        }
        g.I->module_free(g.bd, m);
        free(jobs[i].blob.data);
        free(jobs[i].log);
    }
    g.I->buf_free(g.bd, out);
}

static void test_function_resources(void **state)
{
    (void)state;
    const bt_gpu *gp = &bt_device_get_info(g.dev)->props;
    bt_diag d = {0};
    bt__kres res;
    memset(&res, 0x55, sizeof res);
    bt__bmod *m = build(g.emulated ? g.src->vadd : g.src->withlocal);
    bt__bfn *f = NULL;
    const char *entry = g.emulated ? "vadd" : "withlocal";
    assert_int_equal(g.I->function_get(g.bd, m, entry, &f, &res, &d), BT_OK);
    /* what every backend tells, or -1: never garbage */
    assert_true(res.regs_per_thread == -1 ||
                (res.regs_per_thread > 0 && res.regs_per_thread <= 255));
    assert_true(res.max_threads_per_block >= 1 &&
                res.max_threads_per_block <= gp->max_threads_per_block);
    assert_true(res.preferred_multiple >= 1);
    assert_true(res.local_bytes >= 0);
    assert_true(res.spill_bytes >= -1);
    if (g.emulated) {
        printf("    %s: the imitation runs vadd only: its resources checked, not withlocal's\n",
               g.I->name);
        assert_true(res.static_smem >= 0);
        g.I->module_free(g.bd, m);
        return;
    }
    const bt_device_info *di = bt_device_get_info(g.dev);
    if (res.static_smem == 0 && !di->is_gpu) /* seen on the H200 machine's PoCL (run-round2) */
        printf("    %s on %s reports no static local memory for a kernel with 1024 bytes of it "
               "(CL_KERNEL_LOCAL_MEM_SIZE 0): the occupancy model cannot count it there\n",
               g.I->name, di->name);
    else if (res.static_smem < 256 * 4) /* the 256 floats of static shared/local memory */
        fail_msg("%s on %s: the function's static shared memory is %lld bytes, under the 1024 "
                 "of its 256 floats", g.I->name, di->name,
                 (long long)res.static_smem);
    if (res.max_threads_per_block >= 256) {
        bt__bbuf *o = alloc(512 * sizeof(float));
        bt__karg args[] = {buf_arg(o)};
        uint32_t grid[3] = {2, 1, 1}, block[3] = {256, 1, 1};
        assert_int_equal(g.I->launch(g.bd, f, grid, block, 0, args, 1, NULL, &d), BT_OK);
        float got[512];
        assert_int_equal(g.I->buf_read(g.bd, o, 0, got, sizeof got, &d), BT_OK);
        for (int i = 0; i < 512; i++)
            assert_true(got[i] == (float)(255 - i % 256));
        g.I->buf_free(g.bd, o);
    }
    g.I->module_free(g.bd, m);
}

/* Launches the device refuses leave it working; a timer with nothing recorded says so. */
static void test_refused_launches(void **state)
{
    (void)state;
    bt__bmod *m = build(g.src->inc);
    bt__bfn *f = NULL;
    bt__kres res;
    bt_diag d = {0};
    assert_int_equal(g.I->function_get(g.bd, m, "inc", &f, &res, &d), BT_OK);
    enum { N = 256 };
    int host[N];
    for (int i = 0; i < N; i++)
        host[i] = (int)(rnd() & 0xffff);
    bt__bbuf *b = alloc(sizeof host);
    assert_int_equal(g.I->buf_write(g.bd, b, 0, host, sizeof host, &d), BT_OK);
    bt__btimer *t = NULL;
    assert_int_equal(g.I->timer_create(g.bd, &t, &d), BT_OK);
    double ms = -1;
    assert_int_equal(g.I->timer_read(g.bd, t, &ms, &d), BT_INVALID_ARG); /* nothing recorded */

    bt__karg args[] = {buf_arg(b), i32_arg(N)};
    uint32_t grid[3] = {4, 1, 1}, block[3] = {64, 1, 1};
    uint32_t zero[3] = {0, 1, 1};
    assert_int_equal(g.I->launch(g.bd, f, grid, zero, 0, args, 2, t, &d), BT_INVALID_ARG);
    assert_int_equal(g.I->timer_read(g.bd, t, &ms, &d), BT_INVALID_ARG); /* still nothing */
    uint32_t huge[3] = {(uint32_t)res.max_threads_per_block * 2, 1, 1};
    bt_status st = g.I->launch(g.bd, f, grid, huge, 0, args, 2, NULL, &d);
    assert_true(st == BT_RESOURCES || st == BT_LAUNCH);
    assert_true(d.msg[0] != '\0');
    uint32_t cube[3] = {64, 64, 64};
    st = g.I->launch(g.bd, f, grid, cube, 0, args, 2, NULL, &d);
    assert_true(st == BT_RESOURCES || st == BT_LAUNCH);

    /* The device still works, and the timer times the next launch. */
    assert_int_equal(g.I->launch(g.bd, f, grid, block, 0, args, 2, t, &d), BT_OK);
    assert_int_equal(g.I->timer_read(g.bd, t, &ms, &d), BT_OK);
    assert_true(ms > 0);
    assert_int_equal(g.I->sync(g.bd, &d), BT_OK);
    int back[N];
    assert_int_equal(g.I->buf_read(g.bd, b, 0, back, sizeof back, &d), BT_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(back[i], host[i] + 1); /* exactly one launch ran */
    g.I->timer_free(g.bd, t);
    g.I->timer_free(g.bd, NULL);
    g.I->buf_free(g.bd, b);
    g.I->module_free(g.bd, m);
}

static void test_flush_cache(void **state)
{
    (void)state;
    int data[1024];
    for (int i = 0; i < 1024; i++)
        data[i] = (int)rnd();
    bt__bbuf *b = alloc(sizeof data);
    bt_diag d = {0};
    assert_int_equal(g.I->buf_write(g.bd, b, 0, data, sizeof data, &d), BT_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(g.I->flush_cache(g.bd, &d), BT_OK);
    assert_int_equal(g.I->sync(g.bd, &d), BT_OK);
    int back[1024];
    assert_int_equal(g.I->buf_read(g.bd, b, 0, back, sizeof back, &d), BT_OK);
    assert_memory_equal(data, back, sizeof data); /* flushing touches no user buffer */
    g.I->buf_free(g.bd, b);
}

/* The offline entries, where the backend has them: a target for a GPU of the hardware table
 * that has one, a compile for it whose resources are real, and occupancy rules that agree with
 * the device's own function attributes; a GPU without a target of this backend is refused. */
static void test_offline_entries(void **state)
{
    (void)state;
    if (!g.I->offline_target) {
        printf("    %s has no offline entries (optional): nothing to check\n", g.I->name);
        assert_null(g.I->offline_compile);
        return;
    }
    bt_gpudb *db = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    bt__offline_target t;
    const bt_gpu *row = NULL;
    for (size_t i = 0; !row && i < bt_gpudb_count(db); i++)
        if (g.I->offline_target(bt_gpudb_at(db, i), NULL, NULL, &t, &d) == BT_OK)
            row = bt_gpudb_at(db, i);
    assert_non_null(row);
    assert_true(t.target[0] && t.compiler[0] && t.version[0]);
    const char *names[] = {"vadd"};
    bt__compile_req req = {.src = g.src->vadd, .target = t.target, .names = names, .nnames = 1};
    bt__kres res;
    char *log = NULL;
    bt_status st = g.I->offline_compile(row, &req, &res, &log, &d);
    if (st != BT_OK)
        fail_msg("offline compile for %s (%s): %s", row->name, t.target, d.msg);
    assert_true(res.regs_per_thread > 0 && res.regs_per_thread <= 255);
    assert_true(res.static_smem >= 0 && res.local_bytes >= 0);
    free(log);
    if (g.I->occupancy) {
        int blocks = g.I->occupancy(row, &res, 64, 0, NULL);
        assert_true(blocks >= 1 && blocks <= row->max_blocks_per_sm);
        bt_gpu none = *row;
        none.cc_major = 0;
        assert_int_equal(g.I->occupancy(&none, &res, 64, 0, NULL), -1);
    }
    bt_gpu none = *row;
    none.cc_major = none.cc_minor = 0;
    assert_int_equal(g.I->offline_target(&none, NULL, NULL, &t, &d), BT_UNSUPPORTED);
    assert_true(d.msg[0] != '\0');
    bt_gpudb_destroy(db);
}

/* ---------------------------------------------------------------------------------------------
 * The groups: one per backend
 * ------------------------------------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    bt_diag d = {0};
    if (bt_device_open(g.I->name, &g.dev, &d) != BT_OK) {
        fprintf(stderr, "cannot open a %s device: %s\n", g.I->name, d.msg);
        return -1;
    }
    g.bd = bt__device_bdev(g.dev);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    bt_device_destroy(g.dev);
    g.dev = NULL;
    return 0;
}

/* How many devices of backend `name` are listed; *why says why none when there are none. */
static size_t devices_of(const char *name, char *why, size_t size)
{
    bt_device_list *devs = NULL;
    size_t mine = 0;
    bt_diag d = {0};
    if (bt_devices_list(&devs, &d) != BT_OK)
        return 0;
    for (size_t i = 0; i < bt_device_list_count(devs); i++)
        mine += !strcmp(bt_device_list_at(devs, i)->backend, name);
    bt_device_list_destroy(devs);
    snprintf(why, size, "%s", d.msg[0] ? d.msg : "none listed");
    return mine;
}

int main(void)
{
    /* CUDA: the real driver when one loads, else the imitation (before the device layer loads
     * the backends, once per process). */
    const char *mock = NULL;
    const char *env = getenv(BT__CUDA_LIBRARY_ENV);
    if (!env || !*env) {
        void *ctx = NULL;
        bt_diag d = {0};
        if (bt__backend_cuda.load(&ctx, &d) == BT_OK) {
            bt__backend_cuda.unload(ctx);
        } else {
            printf("SKIPPED (real CUDA): %s\nthe cuda group runs against the imitation %s\n",
                   d.msg, BT_MOCK_CUDA);
            setenv(BT__CUDA_LIBRARY_ENV, BT_MOCK_CUDA, 1);
            mock = BT_MOCK_CUDA;
        }
    } else if (strstr(env, "mock")) {
        mock = env;
    }
    setenv("CUDA_CACHE_DISABLE", "1", 1);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_identity_and_targets, balanced),
        cmocka_unit_test_teardown(test_devices_listed, balanced),
        cmocka_unit_test_teardown(test_open_by_id, balanced),
        cmocka_unit_test_teardown(test_buffer_round_trip, balanced),
        cmocka_unit_test_teardown(test_buffer_fill_patterns, balanced),
        cmocka_unit_test_teardown(test_buffer_copy, balanced),
        cmocka_unit_test_teardown(test_vector_add_timed, balanced),
        cmocka_unit_test_teardown(test_blobs_reload_and_corrupt_refused, balanced),
        cmocka_unit_test_teardown(test_compile_error_names_line, balanced),
        cmocka_unit_test_teardown(test_compile_from_threads, balanced),
        cmocka_unit_test_teardown(test_function_resources, balanced),
        cmocka_unit_test_teardown(test_refused_launches, balanced),
        cmocka_unit_test_teardown(test_flush_cache, balanced),
        cmocka_unit_test_teardown(test_kernel_takes_its_language, balanced),
        cmocka_unit_test_teardown(test_offline_entries, balanced),
    };
    int failed = 0, ran = 0;
    for (const bt__backend_iface *const *b = bt__backends(); *b; b++) {
        memset(&g, 0, sizeof g);
        g.I = *b;
        for (size_t l = 0; l < sizeof langs / sizeof langs[0]; l++)
            if ((*b)->languages && !strcmp(langs[l].lang, (*b)->languages[0]))
                g.src = &langs[l];
        if (!g.src) {
            printf("FAILED: backend %s: no test kernels in its language here (add them to "
                   "langs[])\n", (*b)->name);
            failed++;
            continue;
        }
        char why[1024];
        if (!devices_of((*b)->name, why, sizeof why)) {
            printf("SKIPPED: backend %s: no device (%s)\n", (*b)->name, why);
            continue;
        }
        g.mock = !strcmp((*b)->name, "cuda") ? mock : NULL;
        g.emulated = g.mock != NULL;
        char group[64];
        snprintf(group, sizeof group, "backend_%s%s", (*b)->name, g.mock ? "_imitation" : "");
        failed += cmocka_run_group_tests_name(group, tests, group_setup, group_teardown);
        ran++;
    }
    if (!ran && !failed)
        BT_TEST_SKIP_ALL("no backend has a device");
    return failed ? 1 : 0;
}
