/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config.c — libFuzzer target for `--config` strings (bt__kdesc_parse_config,
 * src/core/spec.c) against the built-in kernels, and for the model on what they set (plan
 * --config).
 *
 * The first byte of the input picks a built-in kernel, the rest is the --config text. Checks: a
 * rejected text names its reason; an accepted one sets every parameter of the kernel, formats
 * back to text that parses to the same values, and the model evaluates it on a GPU of the
 * hardware table chosen by the input (bt_plan_create with .only: huge values must not overflow)
 * with its plan written as JSON and as a table. Seeds: config_seeds/; dictionary: config.dict.
 */
#include "fuzz_util.h"

#define NKERNELS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bt_kdesc *kernels[NKERNELS];
    static int nkernels;
    if (!nkernels) {
        for (const char *const *n = bt_kdesc_builtin_names(); *n && nkernels < NKERNELS; n++) {
            bt_diag d = {0};
            FUZZ_CHECK(bt_kdesc_builtin(*n, &kernels[nkernels], &d) == BT_OK);
            nkernels++;
        }
    }
    if (size < 1)
        return 0;
    const bt_kdesc *k = kernels[data[0] % nkernels];
    char *text = fuzz_cstr(data + 1, size - 1);
    if (!text)
        return 0;
    bt_config c;
    bt_diag d = {0};
    bt_status st = bt__kdesc_parse_config(k, text, &c, &d);
    if (st != BT_OK) {
        FUZZ_CHECK(st == BT_INVALID_ARG || st == BT_NOMEM);
        fuzz_check_diag(&d, NULL);
    } else {
        FUZZ_CHECK(c.nparams == k->space.nparams);
        fuzz_config_roundtrip(k, &c);
        fuzz_plan_one(k, &c, size > 1 ? data[1] : 0);
    }
    free(text);
    return 0;
}
