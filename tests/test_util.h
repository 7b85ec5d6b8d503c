/*
 * test_util.h — what every cmocka test includes: cmocka itself, the public header, and small
 * helpers (time, sanitizer detection, skipping with a visible reason).
 */
#ifndef BT_TEST_UTIL_H
#define BT_TEST_UTIL_H

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
