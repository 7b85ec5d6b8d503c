/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_devcmp.c — verification on the device (src/engine/devcmp.c, kernels/<lang>/bt_verify.*)
 * says exactly what the host comparison says: each config of a tune is verified once with the
 * comparison kernel (BLOCKTUNE_DEVICE_VERIFY: on a CPU device too, where a tune compares on the
 * host by default) and once on the host (BLOCKTUNE_HOST_VERIFY), and every entry's status,
 * message, counts and errors must agree; wrong values, NaN, Inf and an element left unwritten
 * (poisoned) fail, on PoCL (OpenCL C on the CPU) with a baseline-config reference (every element
 * compared) and with the gemm host reference (sampled indices plus a scan of every element), and
 * and with a dense host reference (copied to the device once, before the first config runs), and
 * on CUDA (the mock driver's emulation of the kernel behind a real NVRTC compile, or a GPU) with
 * a baseline reference and with none (outputs checked for being written).
 */
#include "test_util.h"

#include "backends/cuda/cuda.h"
#include "engine/engine.h"

#include <dlfcn.h>
#include <math.h>

static bt_device *ocl, *cu;

static bt__tune_opts quick(void)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 0.01; /* a few runs each: these tests are about verification */
    o.rep_ms = 0.05;
    o.rounds = 1;
    o.top_k = 1;
    o.store = "none"; /* hermetic */
    o.mode = BT_MODE_TUNE;
    return o;
}

static bt_kdesc *load(const char *text)
{
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_load_string(text, "devcmp.json", &k, &d) != BT_OK)
        fail_msg("%s:%d:%d %s: %s", d.file, d.line, d.column, d.field, d.msg);
    return k;
}

/* Tunes k on dev at problem p (NULL: its default), with the comparison on the device or (host)
 * on the host. */
static bt_result *tune(bt_device *dev, const bt_kdesc *k, const int64_t *vals, int nvals,
                       bt__tune_opts o, bool host)
{
    bt_kernel *kn;
    bt_diag d;
    if (bt_kernel_create(dev, k, &kn, &d) != BT_OK)
        fail_msg("kernel %s: %s", k->name, d.msg);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    for (int i = 0; i < nvals; i++)
        p->values[i] = vals[i];
    setenv(host ? "BLOCKTUNE_HOST_VERIFY" : "BLOCKTUNE_DEVICE_VERIFY", "1", 1);
    bt_result *r = NULL;
    bt_status st = bt__kernel_tune_opts(kn, p, &o, &r, &d);
    unsetenv("BLOCKTUNE_HOST_VERIFY");
    unsetenv("BLOCKTUNE_DEVICE_VERIFY");
    if (st)
        fail_msg("tune %s: %s", k->name, d.msg);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    return r;
}

/* Both tunes verified the same configs alike; the first compared on the device, the second on
 * the host. */
static void same_verdicts(const bt_result *dv, const bt_result *hv)
{
    assert_true(dv->dev_compares > 0);
    assert_int_equal(hv->dev_compares, 0);
    assert_int_equal(dv->n, hv->n);
    for (size_t i = 0; i < dv->n; i++) {
        const bt__entry *a = &dv->e[i], *b = &hv->e[i];
        assert_int_equal(a->ev.cfg.nparams, b->ev.cfg.nparams);
        assert_memory_equal(a->ev.cfg.v, b->ev.cfg.v, sizeof a->ev.cfg.v[0] * (size_t)a->ev.cfg.nparams);
        assert_int_equal(a->status, b->status);
        assert_string_equal(a->error ? a->error : "", b->error ? b->error : "");
        assert_string_equal(a->ver.msg, b->ver.msg);
        assert_int_equal(a->ver.checked, b->ver.checked);
        assert_int_equal(a->ver.bad, b->ver.bad);
        assert_int_equal(a->ver.nonfinite, b->ver.nonfinite);
        assert_int_equal(a->boundary_checked, b->boundary_checked);
        assert_true(a->ver.max_abs_err == b->ver.max_abs_err);
        assert_true(a->ver.max_rel_err == b->ver.max_rel_err);
    }
}

/* The entry of MODE=mode, BLOCK=block (params in that order). */
static const bt__entry *entry(const bt_result *r, int block, int mode)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].ev.cfg.v[0] == block && r->e[i].ev.cfg.v[1] == mode)
            return &r->e[i];
    fail_msg("no entry BLOCK=%d MODE=%d", block, mode);
    return NULL;
}

static void failed_with(const bt__entry *e, const char *text)
{
    if (e->status != BT__CS_WRONG || !e->error || !strstr(e->error, text))
        fail_msg("%s: %s (wanted wrong, '%s')", bt__cfg_status_name(e->status),
                 e->error ? e->error : "", text);
}

/* y = 2x + 1 by configs of BLOCK and MODE: 0 right, 1 computes 2x, 2 a NaN at [5], 3 leaves
 * [n/2] unwritten, 4 an Inf at the last element, 5 wrong by 1e-3 at [7] only, 6 one ulp off at
 * [3] (within the tolerance). */
#define CL_KERNEL                                                                                  \
    "__kernel void k(__global const float *x, __global float *y, int n) {\\n"                     \
    "  int i = get_global_id(0); if (i >= n) return;\\n"                                          \
    "  float v = 2.0f * x[i] + 1.0f;\\n"                                                          \
    "#if MODE == 1\\n  v = 2.0f * x[i];\\n#elif MODE == 2\\n  if (i == 5) v = NAN;\\n"            \
    "#elif MODE == 3\\n  if (i == n / 2) return;\\n#elif MODE == 4\\n"                            \
    "  if (i == n - 1) v = INFINITY;\\n#elif MODE == 5\\n  if (i == 7) v += 1e-3f;\\n"            \
    "#elif MODE == 6\\n  if (i == 3) v = nextafter(v, INFINITY);\\n#endif\\n"          \
    "  y[i] = v; }"

static void test_opencl_every_element(void **state)
{
    (void)state;
    if (!ocl)
        skip();
    char text[8192];
    snprintf(text, sizeof text,
             "{\"blocktune_spec\": 1, \"name\": \"devcmp\","
             " \"sources\": {\"opencl\": {\"inline\": \"%s\"}}, \"entry\": \"k\","
             " \"problem\": {\"n\": 4096},"
             " \"params\": {\"BLOCK\": [64], \"MODE\": [0, 1, 2, 3, 4, 5, 6]},"
             " \"launch\": {\"grid\": [\"cdiv(n, BLOCK)\"], \"block\": [\"BLOCK\"]},"
             " \"flops\": \"2 * n\", \"bytes\": \"8 * n\","
             " \"args\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"size\": \"n\","
             "             \"init\": {\"uniform\": [-1, 1]}},"
             "            {\"name\": \"y\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},"
             "            {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": \"n\"}],"
             " \"reference\": {\"config\": {\"BLOCK\": 64, \"MODE\": 0}},"
             " \"boundary\": [{\"n\": 17}],"
             " \"tolerance\": {\"rtol\": 1e-6, \"atol\": 1e-6}}",
             CL_KERNEL);
    bt_kdesc *k = load(text);
    bt_result *dv = tune(ocl, k, NULL, 0, quick(), false);
    bt_result *hv = tune(ocl, k, NULL, 0, quick(), true);
    same_verdicts(dv, hv);
    /* the baseline's outputs stayed on the device (the tuned size and n=17), never read back */
    assert_int_equal(dv->refs_kept, 2);
    assert_int_equal(hv->refs_kept, 0);
    for (int b = 64; b <= 64; b += 32) {
        assert_int_equal(entry(dv, b, 0)->status, BT__CS_OK);
        assert_int_equal(entry(dv, b, 6)->status, BT__CS_OK);
        failed_with(entry(dv, b, 1), "outputs off");
        failed_with(entry(dv, b, 2), "1 non-finite outputs (first at [5]: got nan");
        failed_with(entry(dv, b, 3), "1 non-finite outputs (first at [2048]: got nan");
        failed_with(entry(dv, b, 4), "1 non-finite outputs (first at [4095]: got inf");
        failed_with(entry(dv, b, 5), "1 of 4096 outputs off (first at [7]");
    }
    assert_true(entry(dv, 64, 6)->ver.max_abs_err > 0); /* the error was seen, and is allowed */
    bt_result_destroy(dv);
    bt_result_destroy(hv);
    bt_kdesc_destroy(k);
    /* a baseline whose output holds a NaN (MODE 2, at [5]) is read back and checked on the host
     * (its NaN is a value, not the poison left), and the verdicts are the same again: MODE 2
     * matches it, MODE 0 is off at [5] */
    char *at = strstr(text, "\"MODE\": 0}}");
    assert_non_null(at);
    at[8] = '2';
    k = load(text);
    dv = tune(ocl, k, NULL, 0, quick(), false);
    hv = tune(ocl, k, NULL, 0, quick(), true);
    same_verdicts(dv, hv);
    assert_int_equal(dv->refs_kept, 0);
    assert_int_equal(entry(dv, 64, 2)->status, BT__CS_OK);
    failed_with(entry(dv, 64, 0), "[5]");
    bt_result_destroy(dv);
    bt_result_destroy(hv);
    bt_kdesc_destroy(k);
}

/* z = x + y by configs of BLOCK and MODE, against the vector_add host reference (dense: every
 * element in fp64): 0 right, 1 computes x - y, 2 a NaN at [5], 3 leaves [n/2] unwritten, 5 wrong
 * by 1e-3 at [7] only. */
#define CL_VADD                                                                                    \
    "__kernel void k(__global const float *x, __global const float *y, __global float *z,"      \
    " long n) {\\n"                                                                             \
    "  long i = get_global_id(0); if (i >= n) return;\\n"                                      \
    "  float v = x[i] + y[i];\\n"                                                             \
    "#if MODE == 1\\n  v = x[i] - y[i];\\n#elif MODE == 2\\n  if (i == 5) v = NAN;\\n"   \
    "#elif MODE == 3\\n  if (i == n / 2) return;\\n#elif MODE == 5\\n"                      \
    "  if (i == 7) v += 1e-3f;\\n#endif\\n"                                                 \
    "  z[i] = v; }"

/* A dense host reference is copied to the device once, in the data phase (time.reference_upload),
 * before any config runs, and each config is then compared with it there: the same verdicts as
 * on the host, wrong values, NaN and an unwritten element caught. */
static void test_opencl_dense_host_reference(void **state)
{
    (void)state;
    if (!ocl)
        skip();
    char text[8192];
    snprintf(text, sizeof text,
             "{\"blocktune_spec\": 1, \"name\": \"devcmp_vadd\","
             " \"sources\": {\"opencl\": {\"inline\": \"%s\"}}, \"entry\": \"k\","
             " \"problem\": {\"n\": 100003},"
             " \"params\": {\"BLOCK\": [64], \"MODE\": [0, 1, 2, 3, 5]},"
             " \"launch\": {\"grid\": [\"cdiv(n, BLOCK)\"], \"block\": [\"BLOCK\"]},"
             " \"flops\": \"n\", \"bytes\": \"12 * n\","
             " \"args\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"size\": \"n\","
             "             \"init\": {\"normal\": [0, 1]}},"
             "            {\"name\": \"y\", \"dtype\": \"fp32\", \"size\": \"n\","
             "             \"init\": {\"normal\": [0, 1]}},"
             "            {\"name\": \"z\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},"
             "            {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int64\", \"value\": \"n\"}],"
             " \"reference\": {\"host\": \"vector_add\"},"
             " \"boundary\": [{\"n\": 17}]}",
             CL_VADD);
    bt_kdesc *k = load(text);
    bt_result *dv = tune(ocl, k, NULL, 0, quick(), false);
    bt_result *hv = tune(ocl, k, NULL, 0, quick(), true);
    same_verdicts(dv, hv);
    assert_true(dv->t_ref_upload > 0); /* copied before the first config, in the data phase */
    assert_true(dv->t_ref_upload <= dv->t_data);
    assert_true(hv->t_ref_upload == 0); /* compared on the host: nothing copied */
    assert_int_equal(entry(dv, 64, 0)->status, BT__CS_OK);
    assert_int_equal(entry(dv, 64, 0)->ver.checked, 100003);
    failed_with(entry(dv, 64, 1), "outputs off");
    failed_with(entry(dv, 64, 2), "1 non-finite outputs (first at [5]: got nan");
    failed_with(entry(dv, 64, 3), "1 non-finite outputs (first at [50001]: got nan");
    failed_with(entry(dv, 64, 5), "1 of 100003 outputs off (first at [7]");
    bt_result_destroy(dv);
    bt_result_destroy(hv);
    bt_kdesc_destroy(k);
}

/* The gemm host reference is sampled above 65536 outputs: the sampled indices are compared and
 * every element is scanned for NaN/Inf, on the device as on the host. */
static void test_opencl_sampled_gemm(void **state)
{
    (void)state;
    if (!ocl)
        skip();
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_builtin("gemm", &k, &d) != BT_OK)
        fail_msg("%s", d.msg);
    int64_t mnk[BT__MAX_PROBLEM];
    for (int i = 0; i < k->nproblem; i++) {
        const char *nm = k->problem_names[i];
        mnk[i] = !strcmp(nm, "M") || !strcmp(nm, "N") ? 264 : !strcmp(nm, "K") ? 8 : 0;
    }
    bt__tune_opts o = quick();
    o.budget = 1;
    o.verify_boundary = false;
    bt_result *dv = tune(ocl, k, mnk, k->nproblem, o, false);
    bt_result *hv = tune(ocl, k, mnk, k->nproblem, o, true);
    same_verdicts(dv, hv);
    assert_true(dv->winner >= 0);
    assert_int_equal(dv->e[dv->winner].ver.checked, 4096); /* the sample */
    bt_result_destroy(dv);
    bt_result_destroy(hv);
    bt_kdesc_destroy(k);
}

/* scale<float, ITEMS>: y = 2x for the elements the grid covers; with the grid n / (BLOCK * ITEMS)
 * rounded down, a config whose BLOCK * ITEMS does not divide n leaves the tail unwritten. */
#define CU_SCALE                                                                                   \
    "template <typename T, int ITEMS> __global__ void scale(T *y, const T *x) {\\n"               \
    "  const int first = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;\\n"                     \
    "  for (int k = 0; k < ITEMS; k++) if (first + k < N) y[first + k] = T(2) * x[first + k]; }"

static bt_kdesc *cu_spec(const char *ref)
{
    char text[8192];
    snprintf(text, sizeof text,
             "{\"blocktune_spec\": 1, \"name\": \"devcmp_cu\","
             " \"sources\": {\"cuda\": {\"inline\": \"%s\"}},"
             " \"entry\": \"scale<float, items_per_thread>\", \"problem\": {\"n\": 10112},"
             " \"defines\": {\"N\": \"n\"},"
             " \"params\": {\"block_size_x\": [64, 128], \"items_per_thread\": [1, 4]},"
             " \"launch\": {\"grid\": [\"n / (block_size_x * items_per_thread)\"],"
             "              \"block\": [\"block_size_x\"]},"
             " \"flops\": \"n\", \"bytes\": \"8 * n\","
             " \"args\": [{\"name\": \"y\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},"
             "  {\"name\": \"x\", \"dtype\": \"fp32\", \"size\": \"n\", \"init\": {\"uniform\": [-1, 1]}}]"
             "%s%s, \"tolerance\": {\"rtol\": 0, \"atol\": 0}}",
             CU_SCALE, ref[0] ? ", \"reference\": " : "", ref);
    return load(text);
}

/* c = a + b (the mock driver's vadd) against vector_add's dense host reference, on a device whose
 * memory cannot hold the reference's copy (8 bytes an output, as doubles): copying it ahead fails
 * without failing the tune, the first comparison tries again and the host compares every output
 * from then on. */
#define CU_VADD                                                                                    \
    "extern \\\"C\\\" __global__ void vadd(const float *a, const float *b, float *c, int n) {"   \
    " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }"

static void test_cuda_reference_that_does_not_fit(void **state)
{
    (void)state;
    if (!cu)
        skip();
    const char *lib = getenv(BT__CUDA_LIBRARY_ENV);
    void *h = lib && *lib ? dlopen(lib, RTLD_NOW) : NULL;
    void (*limit)(size_t) = h ? (void (*)(size_t))(uintptr_t)dlsym(h, "mock_cuda_alloc_limit") : NULL;
    if (!limit) { /* a real GPU: its memory cannot be made small */
        printf("    skipped: needs the mock driver's allocation limit (a GPU is loaded)\n");
        if (h)
            dlclose(h);
        skip();
    }
    char text[8192];
    snprintf(text, sizeof text,
             "{\"blocktune_spec\": 1, \"name\": \"devcmp_cu_vadd\","
             " \"sources\": {\"cuda\": {\"inline\": \"%s\"}}, \"entry\": \"vadd\","
             " \"problem\": {\"n\": 100000},"
             " \"params\": {\"BLOCK\": [64, 128]},"
             " \"launch\": {\"grid\": [\"cdiv(n, BLOCK)\"], \"block\": [\"BLOCK\"]},"
             " \"flops\": \"n\", \"bytes\": \"12 * n\","
             " \"args\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"size\": \"n\","
             "             \"init\": {\"normal\": [0, 1]}},"
             "            {\"name\": \"b\", \"dtype\": \"fp32\", \"size\": \"n\","
             "             \"init\": {\"normal\": [0, 1]}},"
             "            {\"name\": \"c\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},"
             "            {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": \"n\"}],"
             " \"reference\": {\"host\": \"vector_add\","
             "               \"names\": {\"x\": \"a\", \"y\": \"b\", \"z\": \"c\"}}}",
             CU_VADD);
    bt_kdesc *k = load(text);
    bt_result *fit = tune(cu, k, NULL, 0, quick(), false);
    assert_true(fit->t_ref_upload > 0); /* it fits: copied ahead, compared on the device */
    assert_true(fit->dev_compares > 0);
    limit(6 * 100000); /* the outputs (4 bytes each) fit, the reference's doubles do not */
    bt_result *r = tune(cu, k, NULL, 0, quick(), false);
    limit(0);
    dlclose(h);
    assert_int_equal(r->dev_compares, 0); /* every output compared on the host */
    assert_int_equal(r->n, 2);
    for (size_t i = 0; i < r->n; i++) {
        assert_int_equal(r->e[i].status, BT__CS_OK);
        assert_int_equal(r->e[i].ver.checked, 100000);
    }
    bt_result_destroy(fit);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

/* CUDA, a baseline reference (every element compared) and no reference (written or not): 10112
 * is a multiple of 64 and 128 only, so BLOCK * ITEMS of 256 and 512 leave elements unwritten. */
static void test_cuda_dense_and_written(void **state)
{
    (void)state;
    if (!cu)
        skip();
    const char *refs[] = {"{\"config\": {\"block_size_x\": 64, \"items_per_thread\": 1}}", ""};
    for (int c = 0; c < 2; c++) {
        bt_kdesc *k = cu_spec(refs[c]);
        bt_result *dv = tune(cu, k, NULL, 0, quick(), false);
        bt_result *hv = tune(cu, k, NULL, 0, quick(), true);
        same_verdicts(dv, hv);
        assert_int_equal(dv->refs_kept, c ? 0 : 1); /* the baseline's, kept on the device */
        assert_int_equal(dv->n, 4);
        for (size_t i = 0; i < dv->n; i++) {
            const bt__entry *e = &dv->e[i];
            int64_t span = e->ev.cfg.v[0] * e->ev.cfg.v[1];
            if (10112 % span == 0)
                assert_int_equal(e->status, BT__CS_OK);
            else
                failed_with(e, "non-finite outputs (first at [");
        }
        assert_true(strstr(dv->e[dv->winner].ver.msg, c ? "10112 outputs written"
                                                         : "10112 outputs match") != NULL);
        bt_result_destroy(dv);
        bt_result_destroy(hv);
        bt_kdesc_destroy(k);
    }
}

int main(void)
{
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    const char *env = getenv(BT__CUDA_LIBRARY_ENV);
    if (!env || !*env) { /* CUDA: the GPU when one loads, else the mock driver */
        void *ctx = NULL;
        bt_diag d = {0};
        if (bt__backend_cuda.load(&ctx, &d) == BT_OK)
            bt__backend_cuda.unload(ctx);
        else
            setenv(BT__CUDA_LIBRARY_ENV, BT_MOCK_CUDA, 1);
    }
    bt_diag d;
    if (bt_device_open("opencl:0", &ocl, &d) != BT_OK)
        printf("# no OpenCL device: %s\n", d.msg);
    if (bt_device_open("cuda:0", &cu, &d) != BT_OK)
        printf("# no CUDA device: %s\n", d.msg);
    if (!ocl && !cu)
        BT_TEST_SKIP_ALL("no OpenCL or CUDA device");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opencl_every_element),
        cmocka_unit_test(test_opencl_dense_host_reference),
        cmocka_unit_test(test_opencl_sampled_gemm),
        cmocka_unit_test(test_cuda_dense_and_written),
        cmocka_unit_test(test_cuda_reference_that_does_not_fit),
    };
    int failed = cmocka_run_group_tests_name("devcmp", tests, NULL, NULL);
    bt_device_destroy(ocl);
    bt_device_destroy(cu);
    return failed ? 1 : 0;
}
