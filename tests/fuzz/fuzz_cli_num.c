/*
 * fuzz_cli_num.c — libFuzzer target for the command-line tool's numeric option values
 * (tools/cli_num.c: `blocktune simulate --runs/--budget/--seed/--jobs/--time-limit`).
 *
 * The input is one option value. Both parsers are checked against their contract in cli_num.h,
 * decided here independently of strtoull/strtod's quirks:
 *   - bt_cli_parse_u64 accepts exactly one or more ASCII digits whose value fits in 64 bits, and
 *     returns that value (computed here digit by digit);
 *   - bt_cli_parse_double accepts only text made of digits, '.', 'e', 'E', '+', '-' that starts
 *     with a digit or '.', and returns a finite value >= 0 that prints and reads back unchanged;
 *     everything strtod cannot read whole is refused.
 * A refused value leaves the output untouched. Seeds: cli_num_seeds/; dictionary: cli_num.dict.
 *
 * TODO(cli): `tune`, `plan` and `cache export` still parse their numbers inline (strtod,
 * strtoll base 0, strtol); once they go through cli_num.c this target covers them too.
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
    free(s);
    return 0;
}
