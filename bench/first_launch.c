/* SPDX-License-Identifier: Apache-2.0 */
/*
 * first_launch.c — what a fresh install's first launch of a GEMM key costs when the config comes
 * from wisdom (issue 19 item 5: ≤ 50 ms). Through the public API only, as an engine would: open
 * the device, create the built-in `gemm` front door in wisdom-only mode (it never measures), look
 * the key up (where the config comes from: shipped wisdom, the nearest size, ...), then time the
 * first bt_kernel_launch (compile or kernel-cache load, launch, synchronise) and a second
 * one (the dispatch table). The output of the first launch is checked against an fp64 host
 * reference at sampled elements (inputs j/64, exact in fp16; outputs poisoned with NaN first), so
 * the time is that of a launch that computed the right thing. One JSON line on standard output.
 *
 *   usage: first_launch DEVICE M N K [DTYPE]      (DTYPE fp16 or bf16; default fp16)
 * Where the wisdom comes from is the library's usual look-up: $BLOCKTUNE_WISDOM_DIR (a folder of
 * exported wisdom files) replaces the shipped set; $BLOCKTUNE_CACHE_DIR holds the store, the
 * user's wisdom and the kernel cache (an empty folder: a fresh install).
 */
#include "blocktune.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* v = j/64 with |j| <= 64 (exact in fp16 and bf16) as the dtype's bits. */
static uint16_t to_bits(double v, int bf16)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (bf16)
        return (uint16_t)(u >> 16); /* exact: j/64 has at most 7 significant bits */
    if (f == 0)
        return 0;
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (man >> 13)); /* normal, exact */
}

static double from_bits(uint16_t h, int bf16)
{
    if (bf16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double s = h & 0x8000 ? -1 : 1;
    if (exp == 0x1f)
        return man ? NAN : s * INFINITY;
    return exp ? s * ldexp(1024 + man, exp - 25) : s * ldexp(man, -24);
}

static int fail(const char *what, bt_status st, const bt_diag *d)
{
    char buf[2048];
    fprintf(stderr, "first_launch: %s: %s (%s)\n", what, bt_diag_format(d, buf, sizeof buf),
            bt_strerror(st));
    printf("{\"ok\": false, \"failed\": \"%s\"}\n", what);
    return 1;
}

#define TRY(what, call)                                                                            \
    do {                                                                                           \
        bt_status st_ = (call);                                                                    \
        if (st_ != BT_OK)                                                                          \
            return fail(what, st_, &d);                                                            \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: first_launch DEVICE M N K [fp16|bf16]\n");
        return 2;
    }
    const char *dtype = argc > 5 ? argv[5] : "fp16";
    int bf16 = !strcmp(dtype, "bf16");
    long long M = atoll(argv[2]), N = atoll(argv[3]), K = atoll(argv[4]);
    if (M < 1 || N < 1 || K < 1 || (!bf16 && strcmp(dtype, "fp16"))) {
        fprintf(stderr, "first_launch: M, N, K must be positive and the dtype fp16 or bf16\n");
        return 2;
    }
    bt_diag d = {0};
    double t0 = now_ms();
    bt_device *dev = NULL;
    TRY("device", bt_device_open(argv[1], &dev, &d));
    double t_dev = now_ms();
    bt_kdesc *k = NULL;
    bt_kernel *kn = NULL;
    bt_tune_options *o = NULL;
    TRY("spec", bt_kdesc_builtin("gemm", &k, &d));
    TRY("kernel", bt_kernel_create(dev, k, &kn, &d));
    TRY("options", bt_tune_options_create(&o));
    TRY("mode", bt_tune_options_set_mode(o, BT_MODE_WISDOM_ONLY));
    bt_kernel_set_options(kn, o);
    bt_tune_options_destroy(o);
    bt_problem *p = NULL;
    TRY("problem", bt_problem_create(k, &p));
    TRY("M", bt_problem_set(p, "M", M, &d));
    TRY("N", bt_problem_set(p, "N", N, &d));
    TRY("K", bt_problem_set(p, "K", K, &d));
    TRY("dtype", bt_problem_set_dtype(p, dtype, &d));
    double t_kernel = now_ms();

    /* the engine's data: A (M×K), B (K×N) from j/64, C poisoned with NaN */
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2), *c = malloc(nc * 2);
    if (!a || !b || !c) {
        fprintf(stderr, "first_launch: out of host memory\n");
        return 1;
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < na + nb; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint16_t v = to_bits((double)((int)((s >> 33) % 129) - 64) / 64.0, bf16);
        if (i < na)
            a[i] = v;
        else
            b[i - na] = v;
    }
    for (size_t i = 0; i < nc; i++)
        c[i] = bf16 ? 0x7fc0u : 0x7e00u;
    bt_buffer *buf[3] = {NULL, NULL, NULL};
    const void *src[3] = {a, b, c};
    size_t bytes[3] = {na * 2, nb * 2, nc * 2};
    for (int i = 0; i < 3; i++) {
        TRY("buffer", bt_buffer_create(dev, bytes[i], &buf[i], &d));
        TRY("buffer write", bt_buffer_write(buf[i], 0, src[i], bytes[i], &d));
        TRY("buffer dtype", bt_buffer_set_dtype(buf[i], dtype, &d));
    }
    TRY("sync", bt_device_sync(dev, &d));

    /* where the config comes from: a kernel's lookup compiles nothing and enters no table; a
     * front door's routes the key to its family, which loads that family's binary (the kernel
     * cache, a precompiled binary, else a compile): the first launch's cost is lookup + launch */
    double t_l = now_ms();
    bt_choice *ch = NULL;
    TRY("lookup", bt_kernel_lookup(kn, p, 1, &ch, &d));
    double lookup_ms = now_ms() - t_l;
    const char *source = bt_source_name(bt_choice_source(ch));
    char config[512];
    snprintf(config, sizeof config, "%s", bt_choice_config_json(ch));
    bt_choice_destroy(ch);

    double t1 = now_ms();
    TRY("first launch", bt_kernel_launch(kn, p, buf, 3, &d));
    TRY("first launch sync", bt_device_sync(dev, &d));
    double first_ms = now_ms() - t1;
    TRY("read C", bt_buffer_read(buf[2], 0, c, nc * 2, &d));
    double t2 = now_ms();
    TRY("second launch", bt_kernel_launch(kn, p, buf, 3, &d));
    TRY("second launch sync", bt_device_sync(dev, &d));
    double second_ms = now_ms() - t2;

    /* sampled elements against fp64 (the spec's fp16/bf16 tolerance), every element not NaN */
    double rtol = bf16 ? 0.02 : 0.004, atol = bf16 ? 0.1 : 0.02, worst = 0;
    size_t nan = 0, bad = 0, checked = 0;
    for (size_t i = 0; i < nc; i++)
        nan += isnan(from_bits(c[i], bf16));
    for (int t = 0; t < 256; t++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t i = (size_t)((s >> 20) % (uint64_t)M), j = (size_t)((s >> 40) % (uint64_t)N);
        double ref = 0;
        for (size_t q = 0; q < (size_t)K; q++)
            ref += from_bits(a[i * K + q], bf16) * from_bits(b[q * N + j], bf16);
        double got = from_bits(c[i * N + j], bf16), err = fabs(got - ref);
        checked++;
        if (!(err <= atol + rtol * fabs(ref)))
            bad++;
        if (err / (fabs(ref) > 1 ? fabs(ref) : 1) > worst || isnan(err))
            worst = isnan(err) ? INFINITY : err / (fabs(ref) > 1 ? fabs(ref) : 1);
    }
    int ok = !nan && !bad;
    printf("{\"M\": %lld, \"N\": %lld, \"K\": %lld, \"dtype\": \"%s\", \"source\": \"%s\", "
           "\"config\": %s, \"device_open_ms\": %.2f, \"kernel_create_ms\": %.2f, "
           "\"lookup_ms\": %.3f, \"first_launch_ms\": %.2f, \"second_launch_ms\": %.3f, "
           "\"tunes\": %d, \"checked\": %zu, \"wrong\": %zu, \"nan\": %zu, \"max_rel_err\": %.3g, "
           "\"ok\": %s}\n",
           M, N, K, dtype, source, config[0] ? config : "null", t_dev - t0, t_kernel - t_dev,
           lookup_ms, first_ms, second_ms, bt_kernel_tune_count(kn), checked, bad, nan, worst,
           ok && bt_kernel_tune_count(kn) == 0 ? "true" : "false");
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(buf[i]);
    free(a);
    free(b);
    free(c);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
    return ok ? 0 : 1;
}
