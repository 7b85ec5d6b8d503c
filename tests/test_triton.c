/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_triton.c — Triton sources (docs/triton.md): the compile request that a config of
 * the examples/triton specs makes (no Python: signature, divisibility, specialized scalars,
 * constexprs, options, "defines" per problem); the launch metadata (no Python: from an answer,
 * through the blob's section and back, the parameters of a launch in Triton's order with the
 * constants removed and the compile's assumptions checked) and, on the mock driver, a launch by
 * Triton's convention (grid times num_ctas as a cluster through cuLaunchKernelEx, shared memory
 * above 48 KiB, the scratch area the function owns); and, with Triton installed
 * ($BT_TRITON_PYTHON, else python3), the CUDA backend's compile of the "triton" language on a
 * device (the mock driver where there is no GPU): a blob that loads as the CUDA backend's own
 * with its metadata, Triton's compile error as BT_COMPILE with its message, a shared-memory
 * overflow as BT_RESOURCES with the numbers. Without Triton that group prints SKIPPED (and fails
 * under $CI). The probe record (no Python: checked by the size and mtime of the files it names).
 * A whole tune on the mock: a warm re-tune starts no Python (a python that logs its runs), and a
 * record that names another Triton version misses the kernel cache.
 */
#include "test_util.h"
#include "backends/cuda/blob.h"
#include "backends/cuda/tmeta.h"
#include "backends/cuda/tpool.h"
#include "backends/cuda/tprobe.h"
#include "backends/device.h"
#include "core/util.h"
#include "core/kdesc.h"

#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bt_kdesc *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/triton/%s.json", BT_SOURCE_DIR, name);
    bt_kdesc *k = NULL;
    bt_diag d = {0};
    if (bt_kdesc_load_file(path, &k, &d) != BT_OK)
        fail_msg("%s: %s", path, d.msg);
    return k;
}

/* Config of k from "NAME=value" pairs (every parameter given). */
static bt_config config(const bt_kdesc *k, const char *const *kv, int n)
{
    bt_config c = {.nparams = k->space.nparams};
    assert_int_equal(n, k->space.nparams);
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        for (int p = 0; p < k->space.nparams; p++)
            if (!strncmp(k->space.params[p].name, kv[i], (size_t)(eq - kv[i])) &&
                !k->space.params[p].name[eq - kv[i]])
                c.v[p] = atoll(eq + 1);
    }
    return c;
}

static json_t *request(const bt_kdesc *k, const bt_config *c, const bt_problem *p)
{
    char *text = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__triton_request(k, bt__kdesc_source(k, "triton"), c, p, NULL, &text, &d),
                     BT_OK);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    free(text);
    return j;
}

static const char *const mm_cfg[] = {"BLOCK_M=128", "BLOCK_N=64", "BLOCK_K=32", "num_warps=8",
                                     "num_stages=4", "GROUP_M=8"};

static void test_matmul_request(void **state)
{
    (void)state;
    bt_kdesc *k = load("matmul");
    const bt__ksource *s = bt__kdesc_source(k, "triton");
    assert_non_null(s);
    assert_non_null(s->path);
    assert_true(s->path[0] == '/' && strstr(s->path, "examples/triton/matmul.py"));
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_diag d = {0};
    assert_int_equal(bt_problem_set(p, "N", 1000, &d), BT_OK);
    bt_config c = config(k, mm_cfg, 6);
    json_t *j = request(k, &c, p);
    assert_string_equal(json_string_value(json_object_get(j, "source")), s->path);
    assert_string_equal(json_string_value(json_object_get(j, "entry")), "matmul_kernel");
    /* options at the top, constexprs apart */
    assert_int_equal(json_integer_value(json_object_get(j, "num_warps")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "num_stages")), 4);
    json_t *cx = json_object_get(j, "constexprs");
    assert_int_equal(json_object_size(cx), 4);
    assert_int_equal(json_integer_value(json_object_get(cx, "BLOCK_M")), 128);
    assert_int_equal(json_integer_value(json_object_get(cx, "BLOCK_K")), 32);
    assert_int_equal(json_integer_value(json_object_get(cx, "GROUP_M")), 8);
    assert_null(json_object_get(cx, "num_warps"));
    /* buffers: typed pointers, all divisible; integer scalars specialized on the problem */
    json_t *sig = json_object_get(j, "signature");
    assert_int_equal(json_object_size(sig), 3);
    assert_string_equal(json_string_value(json_object_get(sig, "a_ptr")), "*fp16");
    assert_string_equal(json_string_value(json_object_get(sig, "c_ptr")), "*fp16");
    assert_int_equal(json_array_size(json_object_get(j, "divisible_by_16")), 3);
    json_t *sp = json_object_get(j, "specialize");
    assert_int_equal(json_object_size(sp), 9);
    assert_int_equal(json_integer_value(json_object_get(sp, "N")), 1000);
    assert_int_equal(json_integer_value(json_object_get(sp, "stride_bk")), 1000);
    assert_int_equal(json_integer_value(json_object_get(sp, "stride_am")), 4096);
    assert_int_equal(json_integer_value(json_object_get(sp, "stride_ak")), 1);
    json_decref(j);
    /* bf16 follows the problem's dtype */
    assert_int_equal(bt_problem_set_dtype(p, "bf16", &d), BT_OK);
    j = request(k, &c, p);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "signature"),
                                                          "b_ptr")), "*bf16");
    json_decref(j);
    bt_problem_free(p);
    bt_kdesc_free(k);
}

static void test_softmax_define(void **state)
{
    (void)state;
    bt_kdesc *k = load("softmax");
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_diag d = {0};
    static const char *const cfg[] = {"num_warps=4", "num_stages=1"};
    bt_config c = config(k, cfg, 2);
    const int64_t cols[][2] = {{4096, 4096}, {1000, 1024}, {1025, 2048}, {1, 1}};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        assert_int_equal(bt_problem_set(p, "n_cols", cols[i][0], &d), BT_OK);
        json_t *j = request(k, &c, p);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "constexprs"),
                                                            "BLOCK")), cols[i][1]);
        json_decref(j);
    }
    bt_problem_free(p);
    bt_kdesc_free(k);
}

/* --- the launch metadata, no Triton --------------------------------------------------------- */

/* An answer as the pool gives it (the fields tmeta reads) for tl_probe(p, one, a, b, f): `one`
 * specialized to 1, p and a divisible by 16, b an i64, two CTAs per cluster, 64 KiB of shared
 * memory, 128 bytes of global scratch per CTA. */
static const char probe_answer[] =
    "{\"ok\": true, \"kernel\": \"tl_probe\", \"triton_version\": \"3.6.0\", \"key\": \"ab12\","
    " \"shared\": 65536, \"num_warps\": 4, \"num_ctas\": 2, \"cluster_dims\": [2, 1, 1],"
    " \"global_scratch\": {\"size\": 128, \"align\": 128},"
    " \"profile_scratch\": {\"size\": 0, \"align\": 1},"
    " \"launch_cooperative_grid\": false, \"launch_pdl\": false,"
    " \"constexprs\": {\"one\": 1, \"BLOCK\": 64}, \"divisible_by_16\": [\"p\", \"a\"],"
    " \"launch_args\": [{\"name\": \"p\", \"type\": \"*fp32\", \"size\": 8},"
    " {\"name\": \"a\", \"type\": \"i32\", \"size\": 4}, {\"name\": \"b\", \"type\": \"i64\", \"size\": 8},"
    " {\"name\": \"f\", \"type\": \"fp32\", \"size\": 4},"
    " {\"name\": \"global_scratch\", \"type\": \"scratch\", \"size\": 8},"
    " {\"name\": \"profile_scratch\", \"type\": \"scratch\", \"size\": 8}]}";
static const char *const probe_args[] = {"p", "one", "a", "b", "f"};

static void probe_meta(bt__tmeta *m)
{
    json_t *a = json_loads(probe_answer, 0, NULL);
    assert_non_null(a);
    char msg[256] = "";
    assert_int_equal(bt__tmeta_from_answer(a, probe_args, 5, m, msg, sizeof msg), BT_OK);
    json_decref(a);
}

/* A blob of a stand-in CUBIN (an ELF64 header the mock driver takes) with m's section. */
static bt__blob probe_blob(const bt__tmeta *m)
{
    bt__blob cubin = {calloc(1, 64), 64}, out = {0};
    assert_non_null(cubin.data);
    unsigned char *e = cubin.data;
    memcpy(e, "\177ELF", 4);
    e[4] = 2;                         /* ELFCLASS64 */
    e[0x28] = 64;                     /* e_shoff: the image ends at 64 bytes */
    char *text = bt__tmeta_text(m);
    assert_non_null(text);
    const char *entry = "tl_probe";
    assert_int_equal(bt__cuda_blob_pack(90, true, &entry, &entry, 1, text, &cubin, &out), BT_OK);
    free(text);
    return out;
}

static void test_meta_roundtrip(void **state)
{
    (void)state;
    bt__tmeta m, back;
    probe_meta(&m);
    assert_int_equal(m.nparams, 6);
    assert_int_equal(m.nconsts, 1);
    assert_string_equal(m.c[0].name, "one");
    assert_int_equal(m.c[0].arg, 1);
    assert_int_equal(m.c[0].value, 1);
    /* launch order: p (arg 0), a (2), b (3), f (4), then the scratch pointers */
    static const int args[] = {0, 2, 3, 4, 0, 1};
    static const int sizes[] = {8, 4, 8, 4, 8, 8};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(m.p[i].arg, args[i]);
        assert_int_equal(m.p[i].size, sizes[i]);
    }
    assert_true(m.p[0].div16 && m.p[1].div16 && !m.p[2].div16);
    assert_int_equal(m.p[4].kind, BT__TP_SCRATCH);
    bt__blob blob = probe_blob(&m);
    blob_hdr h;
    size_t hlen;
    bt_diag d = {0};
    assert_int_equal(bt__cuda_blob_check(blob.data, blob.size, &h, &hlen, &d), BT_OK);
    assert_memory_equal(blob.data, "BTCUBIN3", 8);
    assert_true(h.meta_bytes > 0 && h.meta_bytes % 8 == 0);
    const char *sec = (const char *)blob.data + hlen + h.names_bytes;
    assert_int_equal(bt__tmeta_parse(sec, strnlen(sec, h.meta_bytes), &back, &d), BT_OK);
    assert_memory_equal(&m, &back, sizeof m); /* both memset, strings NUL-padded alike */
    assert_string_equal(back.triton_version, "3.6.0");
    assert_int_equal(back.shared, 65536);
    assert_int_equal(back.scratch_size[0], 128);
    assert_int_equal(back.scratch_align[0], 128);
    assert_memory_equal((const char *)blob.data + hlen + h.names_bytes + h.meta_bytes, "\177ELF",
                        4);
    /* another version of the section is refused, a flipped byte fails the checksum */
    char *other = strdup(sec);
    char *v = strstr(other, "\"version\":1");
    assert_non_null(v);
    v[10] = '7';
    assert_int_equal(bt__tmeta_parse(other, strlen(other), &back, &d), BT_CORRUPT);
    assert_non_null(strstr(d.msg, "version 7"));
    free(other);
    ((char *)blob.data)[hlen + h.names_bytes + 3] ^= 1;
    assert_int_equal(bt__cuda_blob_check(blob.data, blob.size, &h, &hlen, &d), BT_CORRUPT);
    free(blob.data);
    /* an answer whose parameter the spec does not have, or a spec argument neither passed nor
     * constant, is a compile failure naming it */
    json_t *a = json_loads(probe_answer, 0, NULL);
    char msg[256] = "";
    static const char *const fewer[] = {"p", "one", "a", "f"};
    assert_int_equal(bt__tmeta_from_answer(a, fewer, 4, &m, msg, sizeof msg), BT_COMPILE);
    assert_non_null(strstr(msg, "'b' is no argument"));
    static const char *const more[] = {"p", "one", "a", "b", "f", "extra"};
    assert_int_equal(bt__tmeta_from_answer(a, more, 6, &m, msg, sizeof msg), BT_COMPILE);
    assert_non_null(strstr(msg, "argument 'extra' is neither"));
    json_decref(a);
}

/* The parameters of a launch: Triton's order and widths, the constants' values checked. */
static void test_meta_params(void **state)
{
    (void)state;
    bt__tmeta m;
    probe_meta(&m);
    static char dummy; /* a buffer argument: tmeta reads only its address from addr[] */
    bt__karg args[5] = {{.kind = BT__ARG_BUF, .u.buf = (bt__bbuf *)&dummy},
                        {.kind = BT__ARG_I32, .u.i32 = 1},
                        {.kind = BT__ARG_I64, .u.i64 = 4096},
                        {.kind = BT__ARG_I64, .u.i64 = -5000000000LL},
                        {.kind = BT__ARG_F32, .u.f32 = 2.5f}};
    uint64_t addr[5] = {0x7f0000001000ull, 0, 0, 0, 0}, scratch[2] = {0xabc00, 0};
    uint64_t vals[BT__TMETA_MAX_PARAMS];
    void *params[BT__TMETA_MAX_PARAMS];
    int np = -1;
    bt_diag d = {0};
    assert_int_equal(bt__tmeta_params(&m, "tl_probe", args, 5, addr, scratch, vals, params, &np,
                                      &d), BT_OK);
    assert_int_equal(np, 6);
    uint64_t p;
    int32_t a;
    int64_t b;
    float f;
    memcpy(&p, params[0], 8);
    memcpy(&a, params[1], 4); /* the int64 4096 passed as the i32 Triton compiled */
    memcpy(&b, params[2], 8);
    memcpy(&f, params[3], 4);
    assert_int_equal(p, addr[0]);
    assert_int_equal(a, 4096);
    assert_int_equal(b, -5000000000LL);
    assert_true(f == 2.5f);
    memcpy(&p, params[4], 8);
    assert_int_equal(p, 0xabc00);
    memcpy(&p, params[5], 8);
    assert_int_equal(p, 0);
    /* what the compile assumed, refused when a launch breaks it */
    args[1].u.i32 = 2;
    assert_int_equal(bt__tmeta_params(&m, "tl_probe", args, 5, addr, scratch, vals, params, &np,
                                      &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "argument 'one' must be 1"));
    args[1].u.i32 = 1;
    addr[0] += 8;
    assert_int_equal(bt__tmeta_params(&m, "tl_probe", args, 5, addr, scratch, vals, params, &np,
                                      &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "buffer 'p' at 0x7f0000001008 is not 16-byte aligned"));
    addr[0] -= 8;
    args[2].u.i64 = 4100;
    assert_int_equal(bt__tmeta_params(&m, "tl_probe", args, 5, addr, scratch, vals, params, &np,
                                      &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "'a' = 4100 is not a multiple of 16"));
    args[2].u.i64 = 1LL << 33;
    assert_int_equal(bt__tmeta_params(&m, "tl_probe", args, 5, addr, scratch, vals, params, &np,
                                      &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "does not fit the i32"));
    /* the grid: x times num_ctas, the block 32 * num_warps */
    uint32_t g[3] = {3, 2, 1}, blk[3] = {128, 1, 1}, out[3];
    assert_int_equal(bt__tmeta_grid(&m, "tl_probe", g, blk, out, &d), BT_OK);
    assert_int_equal(out[0], 6);
    assert_int_equal(out[1], 2);
    assert_int_equal(bt__tmeta_scratch_bytes(&m, 0, g), 3 * 2 * 2 * 128);
    assert_int_equal(bt__tmeta_scratch_bytes(&m, 1, g), 0);
    blk[0] = 256;
    assert_int_equal(bt__tmeta_grid(&m, "tl_probe", g, blk, out, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "runs (128,1,1) threads"));
}

/* --- a launch by Triton's convention on the mock driver ---------------------------------------- */

typedef int (*last_launch_fn)(unsigned[3], unsigned[3], unsigned *, unsigned[3], unsigned char[64]);
typedef int (*ptr_attr_fn)(void *, int, unsigned long long);

static void test_mock_launch(void **state)
{
    (void)state;
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_open("cuda", &dev, &d), BT_OK);
    const bt__backend_iface *I = bt__device_iface(dev);
    bt__bdev *D = bt__device_bdev(dev);
    void *lib = dlopen(getenv("BLOCKTUNE_CUDA_LIBRARY"), RTLD_NOW);
    assert_non_null(lib);
    last_launch_fn last = (last_launch_fn)(uintptr_t)dlsym(lib, "mock_cuda_last_launch");
    ptr_attr_fn attr = (ptr_attr_fn)(uintptr_t)dlsym(lib, "cuPointerGetAttribute");
    assert_non_null(last);
    assert_non_null(attr);
    bt__tmeta m;
    probe_meta(&m);
    bt__blob blob = probe_blob(&m);
    bt__bmod *mod = NULL;
    bt__bfn *fn = NULL;
    bt__kres res;
    assert_int_equal(I->module_load(D, blob.data, blob.size, &mod, &d), BT_OK);
    assert_int_equal(I->function_get(D, mod, "tl_probe", &fn, &res, &d), BT_OK);
    assert_string_equal(res.compiler, "Triton 3.6.0");
    assert_int_equal(res.static_smem, 65536); /* the kernel's shared memory, for the occupancy */
    bt__bbuf *buf = NULL;
    assert_int_equal(I->buf_alloc(D, 4096, &buf, &d), BT_OK);
    bt__karg args[5] = {{.kind = BT__ARG_BUF, .u.buf = buf},
                        {.kind = BT__ARG_I32, .u.i32 = 1},
                        {.kind = BT__ARG_I32, .u.i32 = 32},
                        {.kind = BT__ARG_I64, .u.i64 = 7},
                        {.kind = BT__ARG_F32, .u.f32 = 0.5f}};
    const uint32_t grid[3] = {3, 1, 1}, block[3] = {128, 1, 1};
    /* the spec's dynamic shared memory (0) is replaced by the kernel's 64 KiB (opted in) */
    assert_int_equal(I->launch(D, fn, grid, block, 0, args, 5, NULL, &d), BT_OK);
    assert_int_equal(I->sync(D, &d), BT_OK);
    unsigned g[3], b[3], shared, cl[3];
    unsigned char pv[64];
    int n0 = last(g, b, &shared, cl, pv);
    assert_true(n0 >= 1);
    assert_int_equal(g[0], 6); /* 3 programs of 2 CTAs */
    assert_int_equal(cl[0], 2);
    assert_int_equal(cl[1] * cl[2], 1);
    assert_int_equal(b[0], 128);
    assert_int_equal(shared, 65536);
    int32_t a;
    int64_t bb;
    unsigned long long gs, ps, start = 0;
    memcpy(&a, pv + 8, 4);
    memcpy(&bb, pv + 16, 8);
    memcpy(&gs, pv + 32, 8);
    memcpy(&ps, pv + 40, 8);
    assert_int_equal(a, 32);
    assert_int_equal(bb, 7);
    assert_int_equal(ps, 0);
    size_t range = 0;
    assert_int_equal(attr(&start, 11, gs), 0); /* RANGE_START, RANGE_SIZE */
    assert_int_equal(attr(&range, 12, gs), 0);
    assert_true(gs % 128 == 0 && start + range - gs >= 3 * 2 * 128);
    /* a larger grid grows the scratch area; a block other than 32 * num_warps is refused */
    const uint32_t big[3] = {40, 1, 1};
    assert_int_equal(I->launch(D, fn, big, block, 0, args, 5, NULL, &d), BT_OK);
    assert_int_equal(last(g, b, &shared, cl, pv), n0 + 1);
    memcpy(&gs, pv + 32, 8);
    assert_int_equal(attr(&start, 11, gs), 0);
    assert_int_equal(attr(&range, 12, gs), 0);
    assert_true(start + range - gs >= 40 * 2 * 128);
    const uint32_t wrong[3] = {256, 1, 1};
    assert_int_equal(I->launch(D, fn, grid, wrong, 0, args, 5, NULL, &d), BT_INVALID_ARG);
    args[1].u.i32 = 3;
    assert_int_equal(I->launch(D, fn, grid, block, 0, args, 5, NULL, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "argument 'one' must be 1"));
    assert_int_equal(last(g, b, &shared, cl, pv), n0 + 1); /* nothing reached the driver */
    I->buf_free(D, buf);
    I->module_free(D, mod);
    free(blob.data);
    dlclose(lib);
    bt_device_close(dev);
}

/* --- the backend's compile, with Triton ------------------------------------------------------ */

static bt_device *g_dev;
static const bt__backend_iface *g_if;
static bt__bdev *g_bd;

static bt_status compile(const char *name, const char *const *kv, int n, bt__blob *blob,
                         char **log)
{
    bt_kdesc *k = load(name);
    bt_config c = config(k, kv, n);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    char *text = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__triton_request(k, bt__kdesc_source(k, "triton"), &c, p, NULL, &text, &d),
                     BT_OK);
    bt_problem_free(p);
    const char *names[1 + BT__MAX_ARGS] = {k->entry};
    for (int i = 0; i < k->nargs; i++)
        names[1 + i] = k->args[i].name;
    bt__compile_req req = {.lang = "triton", .src = text, .names = names, .nnames = 1 + k->nargs};
    bt_status st = g_if->compile(g_bd, &req, blob, log);
    free(text);
    bt_kdesc_free(k);
    return st;
}

static void test_compile_blob(void **state)
{
    (void)state;
    static const char *const cfg[] = {"BLOCK=1024", "num_warps=4"};
    bt__blob blob = {0};
    char *log = NULL;
    assert_int_equal(compile("vector_add", cfg, 2, &blob, &log), BT_OK);
    blob_hdr h;
    size_t hlen;
    bt_diag d = {0};
    assert_int_equal(bt__cuda_blob_check(blob.data, blob.size, &h, &hlen, &d), BT_OK);
    assert_int_equal(h.sm, 90);
    assert_int_equal(h.nnames, 1);
    const char *names = (const char *)blob.data + hlen;
    assert_string_equal(names, "vector_add_kernel");
    assert_memory_equal((const char *)blob.data + hlen + h.names_bytes + h.meta_bytes, "\177ELF",
                        4);
    /* the launch metadata Triton 3.6 gives vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK):
     * the three pointers and n (an i32 divisible by 16 at the default n), then the scratch
     * pointers, none needed; BLOCK is no argument */
    bt__tmeta m;
    const char *sec = (const char *)blob.data + hlen + h.names_bytes;
    assert_int_equal(bt__tmeta_parse(sec, strnlen(sec, h.meta_bytes), &m, &d), BT_OK);
    assert_string_equal(m.kernel, "vector_add_kernel");
    assert_int_equal(m.num_warps, 4);
    assert_int_equal(m.num_ctas, 1);
    assert_int_equal(m.shared, 0);
    assert_int_equal(m.nparams, 6);
    assert_int_equal(m.nconsts, 0);
    static const char *const order[] = {"x_ptr", "y_ptr", "out_ptr", "n", "global_scratch",
                                        "profile_scratch"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(m.p[i].name, order[i]);
    assert_int_equal(m.p[3].kind, BT__TP_INT);
    assert_int_equal(m.p[3].size, 4);
    assert_true(m.p[0].div16 && m.p[3].div16);
    assert_int_equal(m.scratch_size[0] + m.scratch_size[1], 0);
    assert_true(m.triton_version[0] >= '3');
    free(blob.data);
    free(log);
}

static void test_compile_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {"BLOCK=1000", "num_warps=4"};
    bt__blob blob = {0};
    char *log = NULL;
    assert_int_equal(compile("vector_add", bad, 2, &blob, &log), BT_COMPILE);
    assert_null(blob.data);
    assert_non_null(log);
    assert_non_null(strstr(log, "Triton compile_error"));
    assert_non_null(strstr(log, "power of 2"));
    free(log);
    static const char *const big[] = {"BLOCK_M=64", "BLOCK_N=256", "BLOCK_K=128", "num_warps=4",
                                      "num_stages=4", "GROUP_M=8"};
    log = NULL;
    assert_int_equal(compile("matmul", big, 6, &blob, &log), BT_RESOURCES);
    assert_null(blob.data);
    assert_non_null(strstr(log, "out of resources: shared memory 327680 > 232448"));
    free(log);
}

/* --- the probe record ------------------------------------------------------------------------- */

/* A record holds while the files it names are as they were: another size, another mtime or a
 * file gone is a miss; another python or package folder has its own record. */
static void test_probe_record(void **state)
{
    (void)state;
    char dir[] = "/tmp/bt_tprobe_XXXXXX", file[300], v[32] = "";
    assert_non_null(mkdtemp(dir));
    setenv("BLOCKTUNE_CACHE_DIR", dir, 1);
    snprintf(file, sizeof file, "%s/__init__.py", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("__version__ = '9.9.9'\n", f);
    fclose(f);
    assert_false(bt__tprobe_read("/x/python", "/pkg", v, sizeof v)); /* none yet */
    json_t *files = json_pack("[s]", file);
    bt__tprobe_write("/x/python", "/pkg", "9.9.9", files);
    assert_true(bt__tprobe_read("/x/python", "/pkg", v, sizeof v));
    assert_string_equal(v, "9.9.9");
    assert_false(bt__tprobe_read("/y/python", "/pkg", v, sizeof v));  /* another python */
    assert_false(bt__tprobe_read("/x/python", "/pkg2", v, sizeof v)); /* another package */
    struct stat sb;
    assert_int_equal(stat(file, &sb), 0);
    struct timespec ts[2] = {sb.st_atim, sb.st_mtim};
    ts[1].tv_sec -= 10; /* the same bytes, another mtime: reinstalled */
    assert_int_equal(utimensat(AT_FDCWD, file, ts, 0), 0);
    assert_false(bt__tprobe_read("/x/python", "/pkg", v, sizeof v));
    bt__tprobe_write("/x/python", "/pkg", "9.9.9", files);
    assert_true(bt__tprobe_read("/x/python", "/pkg", v, sizeof v));
    f = fopen(file, "a"); /* another size */
    assert_non_null(f);
    fputs("# changed\n", f);
    fclose(f);
    assert_false(bt__tprobe_read("/x/python", "/pkg", v, sizeof v));
    bt__tprobe_write("/x/python", "/pkg", "9.9.9", files);
    assert_int_equal(remove(file), 0); /* gone */
    assert_false(bt__tprobe_read("/x/python", "/pkg", v, sizeof v));
    json_decref(files);
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
}

/* --- a whole tune, then a second process with no Python ----------------------------------------- */

static const char *g_py; /* the python with Triton */

/* Runs `blocktune ARGS` with env (assignments) before it, output into out (malloc'd); its exit
 * status. */
static int cli(const char *env, const char *args, char **out)
{
    char cmd[4096], log[1100];
    snprintf(log, sizeof log, "%s/cli.log", getenv("BLOCKTUNE_CACHE_DIR"));
    snprintf(cmd, sizeof cmd, "%s '%s' %s >'%s' 2>&1", env, BT_CLI, args, log);
    int rc = system(cmd);
    size_t n;
    *out = bt__read_file(log, &n);
    assert_non_null(*out);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The spec the tune runs: examples/triton/vector_add.json with two configs and two boundary
 * sizes, n = 1 among them (Triton compiles n in as the constant 1: another parameter list). */
static void write_spec(const char *path)
{
    char src[1024];
    snprintf(src, sizeof src, "%s/examples/triton/vector_add.json", BT_SOURCE_DIR);
    json_t *j = json_load_file(src, 0, NULL);
    assert_non_null(j);
    snprintf(src, sizeof src, "%s/examples/triton/vector_add.py", BT_SOURCE_DIR);
    json_object_set_new(json_object_get(j, "sources"), "triton", json_string(src));
    json_object_set_new(j, "configs", json_pack("[{s:i,s:i},{s:i,s:i}]", "BLOCK", 1024,
                                                "num_warps", 4, "BLOCK", 256, "num_warps", 2));
    json_object_set_new(j, "boundary", json_pack("[{s:i},{s:i}]", "n", 1, "n", 17));
    assert_int_equal(json_dump_file(j, path, JSON_INDENT(1)), 0);
    json_decref(j);
}

/* Every config of a tune's JSON ok, and the winner's BLOCK. */
static int winner_of(const char *path)
{
    json_t *j = json_load_file(path, 0, NULL);
    assert_non_null(j);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(j, "configs"), i, c)
        assert_string_equal(json_string_value(json_object_get(c, "status")), "ok");
    assert_int_equal(json_array_size(json_object_get(j, "configs")), 2);
    int block = (int)json_integer_value(
        json_object_get(json_object_get(json_object_get(j, "winner"), "config"), "BLOCK"));
    json_decref(j);
    return block;
}

/* The vector add of spec on the CUDA device, its kernel and the problem n = 4096, fp32. */
static void open_vector_add(const char *spec, bt_kdesc **k, bt_device **dev, bt_kernel **kn,
                            bt_problem **p)
{
    bt_diag d = {0};
    assert_int_equal(bt_kdesc_load_file(spec, k, &d), BT_OK);
    assert_int_equal(bt_device_open("cuda", dev, &d), BT_OK);
    assert_int_equal(bt_kernel_create(*dev, *k, kn, &d), BT_OK);
    assert_int_equal(bt_problem_create(*k, p), BT_OK);
    assert_int_equal(bt_problem_set(*p, "n", 4096, &d), BT_OK);
    assert_int_equal(bt_problem_set_dtype(*p, "fp32", &d), BT_OK);
}

/* Launches the stored winner in this process (no Python: BLOCKTUNE_PYTHON names none) and checks
 * z = x + y; a buffer off 16-byte alignment is refused, naming it. */
static void dispatch_here(const char *spec)
{
    bt_kdesc *k = NULL;
    bt_device *dev = NULL;
    bt_kernel *kn = NULL;
    bt_problem *p = NULL;
    bt_diag d = {0};
    open_vector_add(spec, &k, &dev, &kn, &p);
    enum { N = 4096 };
    static float x[N], y[N], z[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i, y[i] = 0.5f * (float)i, z[i] = -1;
    bt_buffer *b[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(dev, N * sizeof(float) + 64, &b[i], &d), BT_OK);
    assert_int_equal(bt_buffer_write(b[0], 0, x, sizeof x, &d), BT_OK);
    assert_int_equal(bt_buffer_write(b[1], 0, y, sizeof y, &d), BT_OK);
    assert_int_equal(bt_buffer_write(b[2], 0, z, sizeof z, &d), BT_OK);
    if (bt_kernel_launch(kn, p, b, 3, &d) != BT_OK)
        fail_msg("launch: %s", d.msg);
    assert_int_equal(bt_device_sync(dev, &d), BT_OK);
    assert_int_equal(bt_buffer_read(b[2], 0, z, sizeof z, &d), BT_OK);
    for (int i = 0; i < N; i++)
        assert_true(z[i] == 1.5f * (float)i);
    assert_int_equal(bt_kernel_tune_count(kn), 0); /* from the store, not tuned */
    assert_int_equal(bt__tpool_requests(), 0);      /* nothing compiled: no Python ran */
    /* a lookup finds the config; Triton's parameter list is not the spec's: BT_ARG_OTHER */
    bt_choice *c = NULL;
    assert_int_equal(bt_kernel_lookup(kn, p, 1, &c, &d), BT_OK);
    assert_int_equal(bt_choice_source(c), BT_SOURCE_MEMORY);
    for (int i = 0; i < 4; i++)
        assert_int_equal(bt_choice_arg(c, i, NULL, NULL), BT_ARG_OTHER);
    assert_int_equal(bt_choice_arg(c, 4, NULL, NULL), BT_ARG_END);
    bt_choice_destroy(c);
    /* the same key through a buffer 8 bytes into an allocation: refused before the driver */
    void *lib = dlopen(BT_MOCK_CUDA, RTLD_NOW);
    assert_non_null(lib);
    typedef int (*retain_fn)(void **, int);
    typedef int (*ctx_fn)(void *);
    typedef int (*pop_fn)(void **);
    typedef int (*alloc_fn)(unsigned long long *, size_t);
    typedef int (*free_fn)(unsigned long long);
    retain_fn retain = (retain_fn)(uintptr_t)dlsym(lib, "cuDevicePrimaryCtxRetain");
    ctx_fn push = (ctx_fn)(uintptr_t)dlsym(lib, "cuCtxPushCurrent_v2");
    pop_fn pop = (pop_fn)(uintptr_t)dlsym(lib, "cuCtxPopCurrent_v2");
    alloc_fn mem_alloc = (alloc_fn)(uintptr_t)dlsym(lib, "cuMemAlloc_v2");
    free_fn mem_free = (free_fn)(uintptr_t)dlsym(lib, "cuMemFree_v2");
    void *ctx = NULL, *popped = NULL;
    unsigned long long mem = 0;
    assert_int_equal(retain(&ctx, 0), 0);
    assert_int_equal(push(ctx), 0);
    assert_int_equal(mem_alloc(&mem, N * sizeof(float) + 64), 0);
    assert_int_equal(pop(&popped), 0);
    bt_buffer *w = NULL;
    assert_int_equal(bt_buffer_wrap(dev, mem + 8, N * sizeof(float), &w, &d), BT_OK);
    bt_buffer *wb[3] = {w, b[1], b[2]};
    assert_int_equal(bt_kernel_launch(kn, p, wb, 3, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "buffer 'x_ptr' at 0x"));
    assert_non_null(strstr(d.msg, "is not 16-byte aligned, which the Triton compile assumed"));
    bt_buffer_destroy(w);
    assert_int_equal(push(ctx), 0);
    assert_int_equal(mem_free(mem), 0);
    assert_int_equal(pop(&popped), 0);
    typedef int (*release_fn)(int);
    ((release_fn)(uintptr_t)dlsym(lib, "cuDevicePrimaryCtxRelease_v2"))(0);
    dlclose(lib);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(b[i]);
    bt_problem_free(p);
    bt_kernel_destroy(kn);
    bt_device_close(dev);
    bt_kdesc_free(k);
}

/* A python that appends a line to dir/python.log each time it runs, then runs g_py: its path into
 * py. */
static void logging_python(const char *dir, char *py, size_t size)
{
    snprintf(py, size, "%s/python", dir);
    FILE *f = fopen(py, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho \"$*\" >>'%s/python.log'\nexec '%s' \"$@\"\n", dir, g_py);
    fclose(f);
    assert_int_equal(chmod(py, 0755), 0);
}

/* Lines of dir/python.log: the times the logging python ran. */
static int python_runs(const char *dir)
{
    char path[300];
    snprintf(path, sizeof path, "%s/python.log", dir);
    FILE *f = fopen(path, "r");
    int n = 0;
    for (int c; f && (c = fgetc(f)) != EOF;)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

/* The probe record in dir (the only one): its triton_version set to v. */
static void probe_record_set(const char *dir, const char *v)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls '%s'/triton/probe-*.json", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char path[400] = "";
    assert_non_null(fgets(path, sizeof path, p));
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    json_t *r = json_load_file(path, 0, NULL);
    assert_non_null(r);
    json_object_set_new(r, "triton_version", json_string(v));
    assert_int_equal(json_dump_file(r, path, 0), 0);
    json_decref(r);
}

/* A warm re-tune (every binary in the kernel cache, the probe record valid) starts no Python at
 * all; a record that says another Triton version misses the kernel cache (its key holds the
 * version), so the pool runs again. */
static void warm_then_other_version(const char *dir, const char *spec, const char *run,
                                    const char *py)
{
    char env[1400], args[1400];
    char *out = NULL;
    int runs = python_runs(dir);
    assert_true(runs >= 1); /* the cold tune's pool */
    snprintf(env, sizeof env, "BLOCKTUNE_PYTHON='%s' BLOCKTUNE_CUDA_LIBRARY='%s'", py,
             BT_MOCK_CUDA);
    snprintf(args, sizeof args, "tune '%s' %s --mode retune", spec, run);
    if (cli(env, args, &out) != 0)
        fail_msg("warm tune failed:\n%s", out);
    assert_non_null(strstr(out, "(2 threads, 2 of 2 from the kernel cache)"));
    assert_non_null(strstr(out, "; Triton: no compile pool started"));
    free(out);
    assert_int_equal(python_runs(dir), runs); /* no Python ran */
    probe_record_set(dir, "0.0.1-other");
    if (cli(env, args, &out) != 0)
        fail_msg("tune with another Triton version failed:\n%s", out);
    assert_null(strstr(out, "(2 threads, 2 of 2 from the kernel cache)"));
    assert_non_null(strstr(out, "; Triton: compile pool ready "));
    free(out);
    assert_int_equal(python_runs(dir), runs + 1);
}

/* blocktune tune of the Triton vector add on the mock driver: compiled with Triton (its pool's
 * start and compile times in the report), verified against the host at the problem and the
 * boundary sizes, stored with Triton's version; then a second process re-tunes (measures again)
 * with no Python and compiles nothing, this process dispatches the stored winner with no Python,
 * and a warm re-tune with Python starts none (warm_then_other_version). */
static void test_tune_then_no_python(void **state)
{
    (void)state;
    char dir[] = "/tmp/bt_triton_XXXXXX", spec[256], env[1400], args[1400], py[300];
    assert_non_null(mkdtemp(dir));
    setenv("BLOCKTUNE_CACHE_DIR", dir, 1);
    snprintf(spec, sizeof spec, "%s/vector_add.json", dir);
    write_spec(spec);
    logging_python(dir, py, sizeof py);
    const char *run = "--device cuda:0 --n 4096 --dtype fp32 --graph --warmup-ms 0.01 "
                      "--rep-ms 0.01 --finalists 2";
    snprintf(env, sizeof env, "BLOCKTUNE_PYTHON='%s' BLOCKTUNE_CUDA_LIBRARY='%s'", py,
             BT_MOCK_CUDA);
    snprintf(args, sizeof args, "tune '%s' %s --json '%s/r1.json'", spec, run, dir);
    char *out = NULL;
    if (cli(env, args, &out) != 0)
        fail_msg("first tune failed:\n%s", out);
    assert_non_null(strstr(out, "(2 threads, 0 of 2 from the kernel cache)"));
    assert_non_null(strstr(out, "verified: host (fp64), 4096 outputs match"));
    assert_non_null(strstr(out, "and at every boundary size"));
    /* the report's provenance names the compiler that built the modules, as the store does */
    assert_non_null(strstr(out, "; compiler Triton 3."));
    assert_non_null(strstr(out, "; Triton: compile pool ready "));
    free(out);
    char r[300];
    snprintf(r, sizeof r, "%s/r1.json", dir);
    int w1 = winner_of(r);
    json_t *j = json_load_file(r, 0, NULL); /* the pool's cost in the JSON */
    json_t *tt = json_object_get(json_object_get(j, "time"), "triton");
    assert_true(json_is_true(json_object_get(tt, "pool_started")));
    assert_true(json_is_false(json_object_get(tt, "pool_by_embedder"))); /* the CLI spawns it */
    assert_true(json_real_value(json_object_get(tt, "pool_ready_s")) > 0);
    assert_true(json_real_value(json_object_get(tt, "compile_s")) > 0);
    json_decref(j);
    assert_true(w1 == 1024 || w1 == 256);
    /* the store's rows name Triton and its version */
    assert_int_equal(cli(env, "cache show n=4096", &out), 0);
    assert_non_null(strstr(out, "compiler Triton 3."));
    free(out);
    /* a second process: no python at all, the configs measured again, nothing compiled */
    snprintf(env, sizeof env, "BLOCKTUNE_PYTHON=/nonexistent/python BLOCKTUNE_CUDA_LIBRARY='%s'",
             BT_MOCK_CUDA);
    snprintf(args, sizeof args, "tune '%s' %s --mode retune --json '%s/r2.json'", spec, run, dir);
    if (cli(env, args, &out) != 0)
        fail_msg("second tune failed:\n%s", out);
    assert_non_null(strstr(out, "(2 threads, 2 of 2 from the kernel cache)"));
    assert_non_null(strstr(out, "verified: host (fp64), 4096 outputs match"));
    assert_non_null(strstr(out, "and at every boundary size"));
    free(out);
    snprintf(r, sizeof r, "%s/r2.json", dir);
    winner_of(r);
    setenv("BLOCKTUNE_PYTHON", "/nonexistent/python", 1);
    dispatch_here(spec);
    setenv("BLOCKTUNE_PYTHON", g_py, 1);
    warm_then_other_version(dir, spec, run, py);
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
}

/* The compiles a tune starts ahead (every config of an exhaustive search, while its data is
 * made) and its round's own: each binary compiled once (the round waits for a compile in flight
 * instead of asking for it again) and counted as compiled by this tune, not as found in the
 * kernel cache. */
static void test_ahead_compiles_once(void **state)
{
    (void)state;
    char dir[] = "/tmp/bt_triton_XXXXXX", spec[256];
    assert_non_null(mkdtemp(dir));
    setenv("BLOCKTUNE_CACHE_DIR", dir, 1);
    snprintf(spec, sizeof spec, "%s/vector_add.json", dir);
    write_spec(spec);
    bt_kdesc *k = NULL;
    bt_device *dev = NULL;
    bt_kernel *kn = NULL;
    bt_problem *p = NULL;
    bt_tune_options *o = NULL;
    bt_result *r = NULL;
    bt_diag d = {0};
    open_vector_add(spec, &k, &dev, &kn, &p);
    assert_int_equal(bt_tune_options_create(&o), BT_OK);
    assert_int_equal(bt_tune_options_set_warmup_ms(o, 0.01), BT_OK);
    assert_int_equal(bt_tune_options_set_rep_ms(o, 0.01), BT_OK);
    assert_int_equal(bt_tune_options_set_store(o, "none"), BT_OK);
    assert_int_equal(bt_tune_options_set_threads(o, 2), BT_OK);
    long long before = bt__tpool_requests();
    if (bt_kernel_tune(kn, p, o, &r, &d) != BT_OK)
        fail_msg("tune: %s", d.msg);
    /* 2 configs, each at the problem and at the 2 boundary sizes: 6 compiles, none twice */
    assert_int_equal(bt__tpool_requests() - before, 6);
    char *text = bt_test_report(r);
    if (!strstr(text, "(2 threads, 0 of 2 from the kernel cache)"))
        fail_msg("the report counts the compiles started ahead as cached:\n%s", text);
    free(text);
    bt_result_destroy(r);
    /* the same tune again: all from the kernel cache, nothing asked of the pool */
    before = bt__tpool_requests();
    assert_int_equal(bt_tune_options_set_mode(o, BT_MODE_RETUNE), BT_OK);
    assert_int_equal(bt_kernel_tune(kn, p, o, &r, &d), BT_OK);
    assert_int_equal(bt__tpool_requests() - before, 0);
    text = bt_test_report(r);
    assert_non_null(strstr(text, "(2 threads, 2 of 2 from the kernel cache)"));
    free(text);
    bt_result_destroy(r);
    bt_tune_options_destroy(o);
    bt_problem_free(p);
    bt_kernel_destroy(kn);
    bt_device_close(dev);
    bt_kdesc_free(k);
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
}

static int device_setup(void **state)
{
    (void)state;
    bt_diag d = {0};
    if (bt_device_open("cuda", &g_dev, &d) != BT_OK) {
        fprintf(stderr, "cannot open a CUDA device: %s\n", d.msg);
        return -1;
    }
    g_if = bt__device_iface(g_dev);
    g_bd = bt__device_bdev(g_dev);
    return 0;
}

static int device_teardown(void **state)
{
    (void)state;
    bt_device_close(g_dev);
    return 0;
}

/* A python with Triton: $BT_TRITON_PYTHON, else python3; NULL when neither imports it. */
static const char *triton_python(void)
{
    const char *env = getenv("BT_TRITON_PYTHON");
    const char *tries[2] = {env && *env ? env : NULL, "python3"};
    for (int i = 0; i < 2; i++) {
        if (!tries[i])
            continue;
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "'%s' -c 'import triton' >/dev/null 2>&1", tries[i]);
        if (system(cmd) == 0)
            return tries[i];
    }
    return NULL;
}

int main(void)
{
    const struct CMUnitTest requests[] = {
        cmocka_unit_test(test_matmul_request),
        cmocka_unit_test(test_softmax_define),
        cmocka_unit_test(test_meta_roundtrip),
        cmocka_unit_test(test_meta_params),
        cmocka_unit_test(test_probe_record),
    };
    int failed = cmocka_run_group_tests_name("triton_requests", requests, NULL, NULL);
    const char *lib = getenv("BLOCKTUNE_CUDA_LIBRARY");
    if (!lib || !*lib || !strcmp(lib, BT_MOCK_CUDA)) { /* tl_probe is the mock's */
        setenv("BLOCKTUNE_CUDA_LIBRARY", BT_MOCK_CUDA, 1);
        const struct CMUnitTest mock[] = {cmocka_unit_test(test_mock_launch)};
        failed += cmocka_run_group_tests_name("triton_launch_mock", mock, NULL, NULL);
    }
    const char *py = triton_python();
    if (!py) {
        const char *why = "Triton (python: triton) is not installed; ./dev.sh test installs it, "
                          "or set BT_TRITON_PYTHON";
        if (getenv("CI")) {
            printf("FAIL: %s\n", why);
            return 1;
        }
        printf("SKIPPED (Triton compiles): %s\n", why);
        return failed ? failed : 77; /* ctest's skip: visible */
    }
    setenv("BLOCKTUNE_PYTHON", py, 1);
    g_py = py;
    const char *env = getenv("BLOCKTUNE_CUDA_LIBRARY");
    if (!env || !*env) /* no GPU here: the mock driver (compiles need none) */
        setenv("BLOCKTUNE_CUDA_LIBRARY", BT_MOCK_CUDA, 1);
    if (!strcmp(getenv("BLOCKTUNE_CUDA_LIBRARY"), BT_MOCK_CUDA)) { /* before any compile here */
        const struct CMUnitTest tune[] = {cmocka_unit_test(test_tune_then_no_python),
                                          cmocka_unit_test(test_ahead_compiles_once)};
        failed += cmocka_run_group_tests_name("triton_tune_mock", tune, NULL, NULL);
    }
    const struct CMUnitTest dev[] = {
        cmocka_unit_test(test_compile_blob),
        cmocka_unit_test(test_compile_errors),
    };
    failed += cmocka_run_group_tests_name("triton_compile", dev, device_setup, device_teardown);
    return failed;
}
