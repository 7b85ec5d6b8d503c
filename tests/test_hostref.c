/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hostref.c — the fp64 host references of the built-in kernels: the GEMM references (B as
 * K×N and as a linear layer's N×K weight) give the product of the inputs they are handed, and a
 * spec whose problem or arguments do not fit a reference is refused, naming what is missing,
 * instead of being checked against zeros or read out of bounds. And the inputs they are handed:
 * the same values from a seed on 1 thread or many, other values from another seed or argument.
 */
#include "test_util.h"

#include "core/kdesc.h"
#include "engine/host.h"

#include <math.h>

/* A spec with a host reference and the given problem and argument sizes. */
static bt_kdesc *load(const char *ref, const char *problem, const char *asize, const char *bsize)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"blocktune_spec\": 1, \"name\": \"g\", \"sources\": {\"opencl\": {\"inline\": "
             "\"kernel void g(void) {}\"}}, \"entry\": \"g\", \"dtypes\": [\"fp32\"], \"problem\": {%s},"
             "\"params\": {\"X\": [1]}, \"launch\": {\"grid\": [1], \"block\": [1]},"
             "\"args\": [{\"name\": \"A\", \"dtype\": \"T\", \"size\": \"%s\"},"
             "{\"name\": \"B\", \"dtype\": \"T\", \"size\": \"%s\"},"
             "{\"name\": \"C\", \"dtype\": \"T\", \"size\": \"M * N\", \"output\": true}],"
             "\"reference\": {\"host\": \"%s\"}}",
             problem, asize, bsize, ref);
    bt_kdesc *k = NULL;
    bt_diag d = {0};
    if (bt_kdesc_load_string(json, "hostref.json", &k, &d) != BT_OK)
        fail_msg("spec: %s", d.msg);
    return k;
}

typedef struct fixture {
    bt_kdesc *k;
    bt_problem *p;
    bt__hostbuf args[3];
    double *ref[3];
} fixture;

/* Fills A and B with small integers (exact in fp32 and fp64), sized by the spec's expressions. */
static void setup(fixture *f, const char *ref, const char *problem, const char *asize,
                  const char *bsize, size_t na, size_t nb, size_t nc)
{
    memset(f, 0, sizeof *f);
    f->k = load(ref, problem, asize, bsize);
    assert_int_equal(bt_problem_create(f->k, &f->p), BT_OK);
    size_t n[3] = {na, nb, nc};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(bt__hostbuf_alloc(&f->args[i], BT__DT_FP32, n[i]), BT_OK);
        for (size_t j = 0; j < n[i]; j++)
            bt__hostbuf_set(&f->args[i], j, (double)((j * 7 + (size_t)i * 3) % 11) - 5.0);
    }
    f->ref[2] = calloc(nc ? nc : 1, sizeof(double));
    for (size_t j = 0; j < nc; j++)
        f->ref[2][j] = NAN; /* what the reference does not write stays NaN */
}

static void teardown(fixture *f)
{
    for (int i = 0; i < 3; i++)
        bt__hostbuf_free(&f->args[i]);
    free(f->ref[2]);
    bt_problem_destroy(f->p);
    bt_kdesc_destroy(f->k);
}

static bt_status run(fixture *f, const char *name, bt_diag *d)
{
    bt__href_fn fn = bt__hostref_find(name);
    assert_non_null(fn);
    bt__href_ctx c = {.k = f->k, .p = f->p, .args = f->args, .ref = f->ref};
    return fn(&c, d);
}

static double get(const fixture *f, int a, size_t i) { return bt__hostbuf_get(&f->args[a], i); }

static void test_gemm_references_multiply_both_layouts(void **state)
{
    (void)state;
    const size_t M = 3, N = 5, K = 4;
    for (int nt = 0; nt < 2; nt++) {
        fixture f;
        setup(&f, nt ? "gemm_nt" : "gemm", "\"M\": 3, \"N\": 5, \"K\": 4", "M * K", "K * N", M * K, K * N,
              M * N);
        bt_diag d = {0};
        assert_int_equal(run(&f, nt ? "gemm_nt" : "gemm", &d), BT_OK);
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                double want = 0;
                for (size_t k = 0; k < K; k++)
                    want += get(&f, 0, i * K + k) * get(&f, 1, nt ? j * K + k : k * N + j);
                assert_true(f.ref[2][i * N + j] == want);
            }
        /* the layouts differ on these inputs: the test would not tell them apart otherwise */
        double a01 = 0, b01 = 0;
        for (size_t k = 0; k < K; k++) {
            a01 += get(&f, 0, k) * get(&f, 1, k * N + 1);
            b01 += get(&f, 0, k) * get(&f, 1, 1 * K + k);
        }
        assert_true(a01 != b01);
        teardown(&f);
    }
}

static void test_missing_problem_variable_is_an_error_not_zeros(void **state)
{
    (void)state;
    /* no K in the problem: the old reference summed over K = 0 and expected zeros */
    fixture f;
    setup(&f, "gemm", "\"M\": 3, \"N\": 5", "M * 4", "4 * N", 12, 20, 15);
    bt_diag d = {0};
    assert_int_equal(run(&f, "gemm", &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "problem variable named 'K'"));
    for (size_t j = 0; j < 15; j++)
        assert_true(isnan(f.ref[2][j]));
    teardown(&f);
}

static void test_argument_smaller_than_the_reference_reads_is_an_error(void **state)
{
    (void)state;
    /* B sized N (not K × N): reading it as K × N would run past its end */
    fixture f;
    setup(&f, "gemm", "\"M\": 3, \"N\": 5, \"K\": 4", "M * K", "N", 12, 5, 15);
    bt_diag d = {0};
    assert_int_equal(run(&f, "gemm", &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "'B' holds 5 elements, the reference reads 20"));
    teardown(&f);
}

/* Buffers of every float type, filled by each random initialiser on 1 and on 5 threads (several
 * chunks, an odd count), are byte for byte the same; another seed or another argument gives other
 * values; the values have the initialiser's distribution, and none is NaN. */
static void test_inputs_are_the_same_on_any_number_of_threads(void **state)
{
    (void)state;
    const size_t n = 700001; /* 2.7 chunks of 2^18 */
    const bt__dtype dts[] = {BT__DT_FP32, BT__DT_FP16, BT__DT_BF16, BT__DT_FP64};
    const bt__init_kind kinds[] = {BT__INIT_NORMAL, BT__INIT_UNIFORM, BT__INIT_INT};
    const double lo[] = {0.5, -2, -3}, hi[] = {2, 3, 4}; /* normal: mean 0.5, deviation 2 */
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < 3; k++) {
            bt__hostbuf b[4];
            for (int v = 0; v < 4; v++) {
                assert_int_equal(bt__hostbuf_alloc(&b[v], dts[d], n), BT_OK);
                /* 0: seed 7 on 1 thread; 1: on 5 threads; 2: seed 8; 3: seed 7, argument 1 */
                bt__hostbuf_fill(&b[v], kinds[k], lo[k], hi[k], v == 2 ? 8 : 7, v == 3, v == 1 ? 5 : 1);
            }
            size_t bytes = bt__hostbuf_bytes(&b[0]), same2 = 0, same3 = 0;
            assert_memory_equal(b[0].data, b[1].data, bytes);
            double sum = 0, sq = 0;
            for (size_t i = 0; i < n; i++) {
                double x = bt__hostbuf_get(&b[0], i);
                assert_false(isnan(x));
                if (kinds[k] != BT__INIT_NORMAL)
                    assert_true(x >= lo[k] && x <= hi[k]);
                sum += x, sq += x * x;
                same2 += x == bt__hostbuf_get(&b[2], i);
                same3 += x == bt__hostbuf_get(&b[3], i);
            }
            /* ints in [-3, 4] agree by chance one time in eight; the floats almost never */
            assert_true(same2 < n / 4 && same3 < n / 4);
            double mean = sum / (double)n, var = sq / (double)n - mean * mean;
            double want_mean = kinds[k] == BT__INIT_NORMAL ? lo[k] : kinds[k] == BT__INIT_UNIFORM
                                   ? (lo[k] + hi[k]) / 2 : 0.5;
            double want_var = kinds[k] == BT__INIT_NORMAL ? hi[k] * hi[k]
                              : kinds[k] == BT__INIT_UNIFORM ? 25.0 / 12 : (64.0 - 1) / 12;
            assert_true(fabs(mean - want_mean) < 0.02);
            assert_true(fabs(var / want_var - 1) < 0.02);
            for (int v = 0; v < 4; v++)
                bt__hostbuf_free(&b[v]);
        }
}

/* The values of a seed are pinned: the seed a report prints reproduces its data on another
 * machine (a different libm or compiler that changed them would fail here, not silently). */
static void test_the_inputs_of_a_seed_are_pinned(void **state)
{
    (void)state;
    const uint32_t want[4] = {0xbfd6be38u, 0x3fabefa7u, 0xbf5d8fa7u, 0x3e04abd2u};
    bt__hostbuf b;
    assert_int_equal(bt__hostbuf_alloc(&b, BT__DT_FP32, 4), BT_OK);
    bt__hostbuf_fill(&b, BT__INIT_NORMAL, 0, 1, 1, 0, 1);
    assert_memory_equal(b.data, want, sizeof want);
    bt__hostbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_references_multiply_both_layouts),
        cmocka_unit_test(test_missing_problem_variable_is_an_error_not_zeros),
        cmocka_unit_test(test_argument_smaller_than_the_reference_reads_is_an_error),
        cmocka_unit_test(test_inputs_are_the_same_on_any_number_of_threads),
        cmocka_unit_test(test_the_inputs_of_a_seed_are_pinned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
