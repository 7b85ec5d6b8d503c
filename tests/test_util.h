/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_util.h — what every cmocka test includes: cmocka itself, the public header, and small
 * helpers (time, sanitizer detection, skipping with a visible reason).
 */
#ifndef BT_TEST_UTIL_H
#define BT_TEST_UTIL_H

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "blocktune.h"

/* A result's text report (malloc'd; the caller frees it). */
static inline char *bt_test_report(const bt_result *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(bt_result_write_table(r, f), BT_OK);
    fclose(f);
    return text;
}

static inline double bt_test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* True in the ASan/UBSan build, where timings are not meaningful. */
static inline int bt_test_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

/* For a teardown after each device test on the mock CUDA driver (tests/mock/mock_cuda.c, loaded
 * from library `lib`): 0 when every context the backend pushed on this thread is popped again,
 * else -1, saying how many are left. 0 when lib is NULL (a real driver). */
static inline int bt_test_mock_ctx_balanced(const char *lib)
{
    if (!lib)
        return 0;
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    int (*depth)(void) = h ? (int (*)(void))dlsym(h, "mock_ctx_depth") : NULL;
    int n = depth ? depth() : -1;
    if (h)
        dlclose(h);
    if (n != 0) {
        fprintf(stderr, "the backend left %d context(s) pushed on this thread\n", n);
        return -1;
    }
    return 0;
}

/* Skips the whole test program (ctest SKIP_RETURN_CODE 77) with a reason on stdout. */
#define BT_TEST_SKIP_ALL(...)                                                                      \
    do {                                                                                           \
        printf("SKIPPED: ");                                                                       \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        exit(77);                                                                                  \
    } while (0)

#endif
