/* SPDX-License-Identifier: Apache-2.0 */
/*
 * embed.c — how an engine embeds blocktune: open the default device, load a kernel spec, allocate
 * its own buffers, and call bt_kernel_launch in a loop. The first launch for a problem key tunes
 * (on these very buffers); every later launch is a hash lookup and the compiled winner.
 *
 *   usage: embed SPEC.json [N]
 */
#include "blocktune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        bt_status st_ = (call);                                                                    \
        if (st_ != BT_OK) {                                                                        \
            char buf_[2048];                                                                       \
            fprintf(stderr, "embed: %s: %s\n", #call, bt_diag_format(&d, buf_, sizeof buf_));   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: embed SPEC.json [N]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 1 << 20;
    bt_diag d = {0};
    bt_device *dev;
    if (bt_device_open(NULL, &dev, &d) != BT_OK) {
        printf("SKIPPED: no device: %s\n", d.msg);
        return 77;
    }
    bt_kdesc *k;
    CHECK(bt_kdesc_load_file(argv[1], &k, &d));
    bt_kernel *kn;
    CHECK(bt_kernel_create(dev, k, &kn, &d));
    bt_tune_options *o;
    CHECK(bt_tune_options_create(&o));
    CHECK(bt_tune_options_set_rep_ms(o, 20)); /* a quick tune for the example */
    CHECK(bt_tune_options_set_warmup_ms(o, 5));
    bt_kernel_set_options(kn, o); /* the kernel keeps a copy */
    bt_tune_options_destroy(o);
    bt_problem *p;
    CHECK(bt_problem_create(k, &p));
    CHECK(bt_problem_set(p, "n", n, &d));
    CHECK(bt_problem_set(p, "a", 3, &d));

    /* the engine's own data */
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) {
        x[i] = (float)(((long)i * 7919) % 1000) / 250.0f - 2.0f;
        y[i] = (float)(i % 17) - 8.0f;
    }
    bt_buffer *bx, *by;
    CHECK(bt_buffer_create(dev, sizeof(float) * n, &bx, &d));
    CHECK(bt_buffer_create(dev, sizeof(float) * n, &by, &d));
    CHECK(bt_buffer_write(bx, 0, x, sizeof(float) * n, &d));
    CHECK(bt_buffer_write(by, 0, y, sizeof(float) * n, &d));
    bt_buffer *bufs[2] = {bx, by};
    const int steps = 10;
    for (int s = 0; s < steps; s++)
        CHECK(bt_kernel_launch(kn, p, bufs, 2, &d)); /* y = 3x + y, ten times */
    CHECK(bt_device_sync(dev, &d));
    float *out = malloc(sizeof(float) * n);
    CHECK(bt_buffer_read(by, 0, out, sizeof(float) * n, &d));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float want = y[i];
        for (int s = 0; s < steps; s++)
            want = 3.0f * x[i] + want;
        if (fabsf(out[i] - want) > 1e-4f * (1 + fabsf(want)))
            bad++;
    }
    int tunes = bt_kernel_tune_count(kn);
    /* 1 tune the first time; 0 when the results store already had this key's winner */
    printf("embed: %d launches of %s on %s, %d tune(s), %d wrong elements\n", steps,
           bt_kdesc_name(k), bt_device_get_info(dev)->id, tunes, bad);
    free(x);
    free(y);
    free(out);
    bt_buffer_destroy(bx);
    bt_buffer_destroy(by);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
    return bad == 0 && tunes <= 1 ? 0 : 1;
}
