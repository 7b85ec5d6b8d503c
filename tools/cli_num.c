/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_num.c — parsing of numeric option values for the command-line tool (cli_num.h).
 */
#include "cli_num.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool bt_cli_parse_u64(const char *s, uint64_t *out)
{
    /* strtoull would skip spaces and negate after them (" -5" is 2^64-5): digits only */
    if (s[strspn(s, "0123456789")] != '\0' || !s[0])
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

bool bt_cli_parse_double(const char *s, double *out)
{
    /* decimal notation only: strtod would also skip spaces and read signs, "0x1p3", "nan" */
    if ((!is_digit(s[0]) && s[0] != '.') || s[strspn(s, "0123456789.eE+-")] != '\0')
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !(v >= 0) || isinf(v))
        return false;
    *out = v;
    return true;
}

bool bt_cli_parse_i64(const char *s, int64_t *out)
{
    bool neg = s[0] == '-';
    uint64_t mag;
    if (!bt_cli_parse_u64(s + neg, &mag) || mag > (uint64_t)INT64_MAX + neg)
        return false;
    *out = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return true;
}
