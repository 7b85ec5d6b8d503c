/*
 * cli_num.c — parsing of numeric option values for the command-line tool (cli_num.h).
 */
#include "cli_num.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

bool bt_cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-')
        return false;
    *out = v;
    return true;
}

bool bt_cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= 0) || isinf(v))
        return false;
    *out = v;
    return true;
}
