/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_spec.c — libFuzzer target for the spec loader (bt_kdesc_load_string, src/core/spec.c).
 *
 * The input is a JSON spec. Source files it names are served from memory: the target is linked
 * with -Wl,--wrap=bt__read_file, so every plain name ending in .cl, .cu, .cuh or .h reads as a
 * small kernel and any other path fails with ENOENT (no input reaches the file system, so none
 * can block on a FIFO or read a device).
 *
 * Checks: a failed load hands out nothing and names its reason, at a line and column inside the
 * input; a loaded kernel has a name, its first and last configs format as --config text that
 * parses back to the same values, and the model evaluates them (bt_plan_create with .only) on a
 * GPU of the hardware table chosen by the input, whose plan writes as JSON and as a table.
 * Seeds: the .json specs of kernels/specs, tests/data (T1 files of tests/data/t1 too) and
 * examples (run.sh gathers them);
 * dictionary: spec.dict.
 */
#include "fuzz_util.h"

#include "core/util.h"

#include <errno.h>

char *__real_bt__read_file(const char *path, size_t *size);
char *__wrap_bt__read_file(const char *path, size_t *size);

char *__wrap_bt__read_file(const char *path, size_t *size)
{
    static const char text[] = "/* a source served by fuzz_spec */\n"
                               "extern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }\n";
    const char *dot = strrchr(path, '.');
    if (strchr(path, '/') || !dot ||
        (strcmp(dot, ".cl") && strcmp(dot, ".cu") && strcmp(dot, ".cuh") && strcmp(dot, ".h"))) {
        errno = ENOENT;
        return NULL;
    }
    char *s = bt__strdup(text);
    if (s && size)
        *size = sizeof text - 1;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = fuzz_cstr(data, size);
    if (!json)
        return 0;
    bt_kdesc *k = (bt_kdesc *)json; /* must be replaced, by NULL on failure */
    bt_diag d = {0};
    bt_status st = bt_kdesc_load_string(json, "fuzz.json", &k, &d);
    if (st != BT_OK) {
        FUZZ_CHECK(k == NULL);
        FUZZ_CHECK(st != BT_INTERNAL);
        fuzz_check_diag(&d, json);
        free(json);
        return 0;
    }
    FUZZ_CHECK(k != NULL && bt_kdesc_name(k) != NULL);
    uint64_t n = bt__kdesc_count(k);
    unsigned which = size ? data[size / 2] : 0;
    if (n > 0 && n != UINT64_MAX) {
        bt_config c;
        bt__kdesc_config_at(k, 0, &c);
        fuzz_config_roundtrip(k, &c);
        fuzz_plan_one(k, &c, which);
        bt__kdesc_config_at(k, n - 1, &c);
        fuzz_config_roundtrip(k, &c);
        fuzz_plan_one(k, &c, which + 1);
    }
    bt_kdesc_destroy(k);
    free(json);
    return 0;
}
