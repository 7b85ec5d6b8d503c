/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_num.h — the command-line tool's parsing of numeric option values (cli_num.c).
 *
 * One place for it so that tests/fuzz/fuzz_cli_num.c can check it; simulate, tune and plan use it.
 */
#ifndef BT_TOOLS_CLI_NUM_H
#define BT_TOOLS_CLI_NUM_H

#include <stdbool.h>
#include <stdint.h>

/* A count: one or more decimal digits and nothing else (no sign, no space), at most UINT64_MAX.
 * False (and *out untouched) otherwise. */
bool bt_cli_parse_u64(const char *s, uint64_t *out);
/* A non-negative finite number in decimal notation ("2", "0.5", "1e3", ".5"): it starts with a
 * digit or '.', holds only digits, '.', 'e', 'E', '+' and '-', and strtod reads all of it without
 * overflow or underflow. False (and *out untouched) otherwise: spaces, signs in front, NaN,
 * infinities and hexadecimal are refused. */
bool bt_cli_parse_double(const char *s, double *out);
/* A problem size or other signed integer: an optional '-', then one or more decimal digits and
 * nothing else ("010" is ten, not octal eight; no hexadecimal, spaces or '+'), within int64_t.
 * False (and *out untouched) otherwise. */
bool bt_cli_parse_i64(const char *s, int64_t *out);

#endif
