/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_wisdom.c — libFuzzer target for wisdom documents (docs/wisdom.md): the parser behind
 * `blocktune cache import` and the user/shipped wisdom sets (src/store/wisdom.c, parse_doc via
 * bt__wisdom_add_string), and the lookup over what it accepted.
 *
 * Checks: a rejected document adds nothing and names its reason at a line and column inside the
 * input; an accepted one adds the same number of entries each time it is added; the lookup over
 * the set (exact key, nearest size, same arch) returns a known source, and a config it returns is
 * a JSON object. The store half of an import (SQLite writes) is not exercised here.
 * Seeds: wisdom/ (gathered by run.sh) and wisdom_seeds/; dictionary: wisdom.dict.
 */
#include "fuzz_util.h"

#include "store/store.h"

#include <jansson.h>

static void lookup(const bt__wisdom *w, const char *kernel, const char *device, const char *arch,
                   const char *key)
{
    bt__keyvals kv;
    FUZZ_CHECK(bt__keyvals_parse(key, &kv) == BT_OK);
    bt__lookup_query q = {.kernel = kernel, .device_name = device, .arch = arch, .key = &kv};
    bt__lookup_result r;
    bt_diag d = {0};
    FUZZ_CHECK(bt__wisdom_lookup(NULL, w, NULL, &q, &r, &d) == BT_OK);
    FUZZ_CHECK(r.source >= BT__SRC_STORE && r.source <= BT__SRC_DEFAULT);
    FUZZ_CHECK((r.source == BT__SRC_DEFAULT) == (r.config_json == NULL));
    if (r.config_json) {
        json_t *j = json_loads(r.config_json, 0, NULL);
        FUZZ_CHECK(json_is_object(j));
        json_decref(j);
    }
    free(r.config_json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    bt__wisdom *w = bt__wisdom_new();
    if (!text || !w) {
        free(text);
        bt__wisdom_free(w);
        return 0;
    }
    bt_diag d = {0};
    bt_status st = bt__wisdom_add_string(w, text, "fuzz.json", &d);
    if (st != BT_OK) {
        FUZZ_CHECK(st != BT_INTERNAL);
        FUZZ_CHECK(bt__wisdom_count(w) == 0);
        fuzz_check_diag(&d, text);
    } else {
        size_t n = bt__wisdom_count(w);
        FUZZ_CHECK(bt__wisdom_add_string(w, text, "again.json", &d) == BT_OK);
        FUZZ_CHECK(bt__wisdom_count(w) == 2 * n);
        lookup(w, "gemm", "NVIDIA H200", "sm_90", "M=1024,N=1024,K=1024,dtype=fp32");
        lookup(w, "gemm", "NVIDIA H100", "sm_90", "M=4096,N=512,K=77,dtype=fp16");
        lookup(w, "softmax", "x", "sm_80", "rows=1,cols=1");
    }
    bt__wisdom_free(w);
    free(text);
    return 0;
}
