/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_cli_num.c — libFuzzer target for the command-line tool's numeric option values
 * (tools/cli_num.c: simulate's, tune's and plan's numeric options and problem sizes).
 *
 * The input is one option value. Both parsers are checked against their contract in cli_num.h,
 * decided here independently of strtoull/strtod's quirks:
 *   - bt_cli_parse_u64 accepts exactly one or more ASCII digits whose value fits in 64 bits, and
 *     returns that value (computed here digit by digit);
 *   - bt_cli_parse_double accepts only text made of digits, '.', 'e', 'E', '+', '-' that starts
 *     with a digit or '.', and returns a finite value >= 0 that prints and reads back unchanged;
 *     everything strtod cannot read whole is refused;
 *   - bt_cli_parse_i64 accepts exactly an optional '-' and one or more digits whose value fits in
 *     int64_t (computed here digit by digit, INT64_MIN included).
 * A refused value leaves the output untouched. Seeds: cli_num_seeds/; dictionary: cli_num.dict.
 *
 * `cache export` still parses its numbers inline (strtol); the other subcommands go through
 * cli_num.c.
 */
#include "fuzz_util.h"

#include "cli_num.h"

#include <errno.h>
#include <math.h>

static void check_u64(const char *s)
{
    int digits = s[0] != '\0', fits = 1;
    uint64_t ref = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') {
            digits = 0;
            break;
        }
        unsigned d = (unsigned)(*p - '0');
        if (ref > (UINT64_MAX - d) / 10)
            fits = 0;
        ref = ref * 10 + d;
    }
    uint64_t v = 12345;
    bool ok = bt_cli_parse_u64(s, &v);
    if (ok != (digits && fits) || (ok && v != ref) || (!ok && v != 12345)) {
        fprintf(stderr, "bt_cli_parse_u64(\"%s\"): %s %llu, expected %s %llu\n", s,
                ok ? "accepted" : "refused", (unsigned long long)v,
                digits && fits ? "accepted" : "refused", (unsigned long long)ref);
        abort();
    }
}

static void check_i64(const char *s)
{
    int neg = s[0] == '-', digits = s[neg] != '\0', fits = 1;
    uint64_t mag = 0, limit = (uint64_t)INT64_MAX + (uint64_t)neg;
    for (const char *p = s + neg; *p; p++) {
        if (*p < '0' || *p > '9') {
            digits = 0;
            break;
        }
        unsigned d = (unsigned)(*p - '0');
        if (mag > (limit - d) / 10)
            fits = 0;
        else
            mag = mag * 10 + d;
    }
    int64_t ref = neg ? (int64_t)(0 - mag) : (int64_t)mag, v = 777;
    bool ok = bt_cli_parse_i64(s, &v);
    if (ok != (digits && fits) || (ok && v != ref) || (!ok && v != 777)) {
        fprintf(stderr, "bt_cli_parse_i64(\"%s\"): %s %lld, expected %s %lld\n", s,
                ok ? "accepted" : "refused", (long long)v, digits && fits ? "accepted" : "refused",
                (long long)ref);
        abort();
    }
}

static void check_double(const char *s)
{
    double v = -7;
    bool ok = bt_cli_parse_double(s, &v);
    if (!ok) {
        FUZZ_CHECK(v == -7);
        /* what the contract accepts must not be refused */
        if ((s[0] >= '0' && s[0] <= '9') || s[0] == '.') {
            if (s[strspn(s, "0123456789.eE+-")] != '\0')
                return;
            char *end;
            errno = 0;
            double r = strtod(s, &end);
            if (*end || errno || !(r >= 0) || !isfinite(r))
                return;
            fprintf(stderr, "bt_cli_parse_double(\"%s\") refused %g\n", s, r);
            abort();
        }
        return;
    }
    if (!((s[0] >= '0' && s[0] <= '9') || s[0] == '.') || s[strspn(s, "0123456789.eE+-")]) {
        fprintf(stderr, "bt_cli_parse_double accepted \"%s\" (%g)\n", s, v);
        abort();
    }
    FUZZ_CHECK(isfinite(v) && v >= 0);
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    double back = -1;
    FUZZ_CHECK(bt_cli_parse_double(buf, &back) && back == v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (!s)
        return 0;
    check_u64(s);
    check_double(s);
    check_i64(s);
    free(s);
    return 0;
}
