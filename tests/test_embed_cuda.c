/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_embed_cuda.c — blocktune inside an engine, on CUDA, against the mock driver
 * (tests/mock/mock_cuda.c, which plays the GPU: device memory is host memory): the primary
 * context of an ordinal and an engine's own context wrapped, its CUdeviceptrs wrapped with their
 * sizes, a pointer of another context, of another device, past its allocation or unknown to the
 * driver refused by name, launches on the engine's stream, a stream the driver does not know
 * refused, the looked-up CUfunction and CUBIN, and nothing of the engine's freed or released.
 * Always the mock (set before the backend loads), so the same checks run on every machine.
 */
#include "test_util.h"

#include "backends/cuda/nvrtc.h"

#include <dlfcn.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;

static struct {
    void *lib;
    CUresult (*cuInit)(unsigned);
    CUresult (*retain)(CUcontext *, int);
    CUresult (*release)(int);
    CUresult (*push)(CUcontext);
    CUresult (*pop)(CUcontext *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free_)(CUdeviceptr);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*foreign)(CUdeviceptr *, size_t, int);
    CUcontext ctx; /* the engine's reference on the primary context */
    bt_kdesc *k;
    int nvrtc;
} M;

static const char *spec =
    "{\"blocktune_spec\": 1, \"name\": \"vadd\", \"entry\": \"vadd\",\n"
    " \"sources\": {\"cuda\": {\"inline\": \"extern \\\"C\\\" __global__ void vadd(const float *a, "
    "const float *b, float *c, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) "
    "c[i] = a[i] + b[i]; }\"}},\n"
    " \"problem\": {\"n\": 1000}, \"params\": {\"num_warps\": [1, 2, 4]},\n"
    " \"rules\": \"limits\", \"model\": {\"kind\": \"pointwise\", \"unit\": \"simt\", \"smem\": \"0\"},\n"
    " \"launch\": {\"grid\": [\"cdiv(n, num_warps * warp_size)\"], \"block\": [\"num_warps * "
    "warp_size\"]},\n"
    " \"flops\": \"n\", \"bytes\": \"12 * n\",\n"
    " \"args\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"size\": \"n\"}, {\"name\": \"b\", "
    "\"dtype\": \"fp32\", \"size\": \"n\"},\n"
    "   {\"name\": \"c\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},\n"
    "   {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": \"n\"}],\n"
    " \"key\": [\"n\"], \"reference\": {\"config\": {\"num_warps\": 1}}}\n";

#define NEED_NVRTC()                                                                               \
    do {                                                                                           \
        if (!M.nvrtc) {                                                                            \
            printf("SKIPPED: no NVRTC to compile the kernel the mock runs\n");                     \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static CUdeviceptr dalloc(size_t bytes)
{
    CUdeviceptr p = 0;
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.alloc(&p, bytes), 0);
    M.pop(&popped);
    return p;
}

static void dfree(CUdeviceptr p)
{
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.free_(p), 0); /* still the engine's: blocktune did not free it */
    M.pop(&popped);
}

static bt_kernel *wisdom_only_kernel(bt_device *dev)
{
    bt_kernel *kn = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_kernel_create(dev, M.k, &kn, &d), BT_OK);
    bt_tune_options *o = NULL;
    assert_int_equal(bt_tune_options_create(&o), BT_OK);
    assert_int_equal(bt_tune_options_set_mode(o, BT_MODE_WISDOM_ONLY), BT_OK);
    assert_int_equal(bt_tune_options_set_store(o, "none"), BT_OK);
    bt_kernel_set_options(kn, o);
    bt_tune_options_destroy(o);
    return kn;
}

static void test_wrap_devices(void **state)
{
    (void)state;
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(0, NULL, &dev, &d), BT_OK); /* the primary context */
    assert_string_equal(bt_device_get_info(dev)->id, "cuda:0");
    assert_true(bt_device_is_wrapped(dev));
    bt_device_destroy(dev);
    assert_int_equal(bt_device_wrap_cuda(0, M.ctx, &dev, &d), BT_OK); /* the engine's context */
    bt_device_destroy(dev);
    /* the engine's reference is intact: its context can still be made current */
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    M.pop(&popped);
    assert_int_equal(bt_device_wrap_cuda(1, M.ctx, &dev, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "belongs to device 0, not to device 1"));
    assert_null(dev);
    assert_int_equal(bt_device_wrap_cuda(-1, NULL, &dev, &d), BT_INVALID_ARG);
    assert_int_not_equal(bt_device_wrap_cuda(5, NULL, &dev, &d), BT_OK);
}

static void test_wrap_memory(void **state)
{
    (void)state;
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(-1, M.ctx, &dev, &d), BT_OK);
    CUdeviceptr p = dalloc(4096);
    bt_buffer *b = NULL;
    assert_int_equal(bt_buffer_wrap(dev, p, 4096, &b, &d), BT_OK);
    assert_int_equal(bt_buffer_size(b), 4096);
    bt_buffer_destroy(b);
    assert_int_equal(bt_buffer_wrap(dev, p + 1024, 3072, &b, &d), BT_OK); /* a slice */
    bt_buffer_destroy(b);
    assert_int_equal(bt_buffer_wrap(dev, p + 1024, 3073, &b, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "runs past its allocation (4096 bytes"));
    assert_null(b);
    CUdeviceptr other = 0, remote = 0;
    assert_int_equal(M.foreign(&other, 4096, 0), 0);
    assert_int_equal(M.foreign(&remote, 4096, 1), 0);
    assert_int_equal(bt_buffer_wrap(dev, other, 4096, &b, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "memory of CUDA device 0 in another context"));
    assert_int_equal(bt_buffer_wrap(dev, remote, 4096, &b, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "memory of CUDA device 1, not of device 0"));
    static float host[16];
    assert_int_equal(bt_buffer_wrap(dev, (uint64_t)(uintptr_t)host, sizeof host, &b, &d),
                     BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "is not device memory the driver knows"));
    assert_int_equal(bt_buffer_wrap(dev, 0, 16, &b, &d), BT_INVALID_ARG);
    bt_device_destroy(dev);
    dfree(p);
}

/* Launches on the engine's stream and memory (wisdom-only: the model's config, no tune), the
 * looked-up CUfunction and CUBIN, a short buffer refused. */
static void test_launch_on_engine_stream(void **state)
{
    (void)state;
    NEED_NVRTC();
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(0, M.ctx, &dev, &d), BT_OK);
    const int n = 5000;
    const size_t bytes = n * sizeof(float);
    CUdeviceptr pa = dalloc(bytes), pb = dalloc(bytes), pc = dalloc(bytes);
    float *a = (float *)(uintptr_t)pa, *b = (float *)(uintptr_t)pb, *c = (float *)(uintptr_t)pc;
    for (int i = 0; i < n; i++)
        a[i] = (float)i * 0.5f, b[i] = 3.0f - (float)i, c[i] = -1.0f;
    bt_buffer *bufs[3];
    assert_int_equal(bt_buffer_wrap(dev, pa, bytes, &bufs[0], &d), BT_OK);
    assert_int_equal(bt_buffer_wrap(dev, pb, bytes, &bufs[1], &d), BT_OK);
    assert_int_equal(bt_buffer_wrap(dev, pc, bytes, &bufs[2], &d), BT_OK);
    CUstream s = NULL;
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.stream_create(&s, 1), 0);
    M.pop(&popped);

    bt_kernel *kn = wisdom_only_kernel(dev);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(M.k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", n, &d), BT_OK);
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = s;
    bt_status st = bt_kernel_launch_ex(kn, p, bufs, 3, &lo, &d);
    if (st)
        fail_msg("launch: %s", d.msg);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += c[i] != a[i] + b[i];
    assert_int_equal(bad, 0);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    /* a stream the driver does not know is refused before anything is enqueued */
    lo.stream = (void *)&bad;
    assert_int_equal(bt_kernel_launch_ex(kn, p, bufs, 3, &lo, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "cuStreamGetCtx"));
    /* a short buffer */
    bt_buffer *shortc = NULL;
    assert_int_equal(bt_buffer_wrap(dev, pc, 1024, &shortc, &d), BT_OK);
    bt_buffer *sb[3] = {bufs[0], bufs[1], shortc};
    lo.stream = s;
    assert_int_equal(bt_kernel_launch_ex(kn, p, sb, 3, &lo, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "buffer 2 ('c') holds 1024 bytes, the problem needs 20000"));

    /* the looked-up function and binary, for the engine's own cuLaunchKernel */
    bt_choice *ch = NULL;
    assert_int_equal(bt_kernel_lookup(kn, p, 0, &ch, &d), BT_OK);
    assert_int_equal(bt_choice_source(ch), BT_SOURCE_MEMORY); /* the launch put it there */
    void *fn = NULL;
    assert_int_equal(bt_choice_function(ch, &fn, &d), BT_OK);
    assert_non_null(fn);
    const void *bin = NULL;
    size_t size = 0;
    assert_int_equal(bt_choice_binary(ch, &bin, &size, &d), BT_OK);
    assert_true(size > 64 && !memcmp(bin, "\177ELF", 4)); /* a CUBIN */
    bt_choice_destroy(ch);

    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_buffer_destroy(shortc);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(bufs[i]);
    bt_device_destroy(dev);
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.stream_destroy(s), 0); /* still the engine's stream */
    M.pop(&popped);
    dfree(pa), dfree(pb), dfree(pc);
}

static int setup(void **state)
{
    (void)state;
    M.lib = dlopen(BT_MOCK_CUDA, RTLD_NOW | RTLD_LOCAL);
    if (!M.lib)
        BT_TEST_SKIP_ALL("no mock driver: %s", dlerror());
#define SYM(f, name) *(void **)&M.f = dlsym(M.lib, name), assert_non_null(M.f)
    SYM(cuInit, "cuInit");
    SYM(retain, "cuDevicePrimaryCtxRetain");
    SYM(release, "cuDevicePrimaryCtxRelease_v2");
    SYM(push, "cuCtxPushCurrent_v2");
    SYM(pop, "cuCtxPopCurrent_v2");
    SYM(alloc, "cuMemAlloc_v2");
    SYM(free_, "cuMemFree_v2");
    SYM(stream_create, "cuStreamCreate");
    SYM(stream_destroy, "cuStreamDestroy_v2");
    SYM(foreign, "mock_cuda_alloc_foreign");
#undef SYM
    /* the engine: the CUDA runtime's way, a reference on the primary context */
    assert_int_equal(M.cuInit(0), 0);
    assert_int_equal(M.retain(&M.ctx, 0), 0);
    bt_diag d = {0};
    assert_int_equal(bt_kdesc_load_string(spec, "vadd.json", &M.k, &d), BT_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bt_kdesc_destroy(M.k);
    M.release(0);
    return 0;
}

int main(void)
{
    /* the mock, before anything loads the CUDA backend */
    setenv("BLOCKTUNE_CUDA_LIBRARY", BT_MOCK_CUDA, 1);
    bt_diag why = {0};
    M.nvrtc = bt__nvrtc_available(&why);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_devices),
        cmocka_unit_test(test_wrap_memory),
        cmocka_unit_test(test_launch_on_engine_stream),
    };
    return cmocka_run_group_tests_name("embed_cuda_mock", tests, setup, teardown);
}
