/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_ktcache.c — libFuzzer target for Kernel Tuner cache import (bt__ktcache_load_mem,
 * src/store/ktcache.c): plain JSON and gzip.
 *
 * An input starting with 'Z' is the JSON of the rest, gzip-compressed here before loading (so
 * the parser behind a valid gzip stream is reached); any other input is loaded as it is (plain
 * JSON, or raw bytes after the gzip magic: corrupt, truncated and multi-member streams).
 *
 * Checks: a rejected input hands out nothing and names its reason (a plain one at a line and
 * column inside it); an accepted cache is consistent (records sorted by distinct index inside the
 * space, failures counted, the best the fastest successful record, each record found by index)
 * and survives a round trip through bt__ktcache_dump: the reloaded cache has the same names,
 * space size, records, failures, times (the numbers among them) and best.
 * Seeds: ktcache_seeds/ (small caches written for this); dictionary: ktcache.dict.
 */
#include "fuzz_util.h"

#include "store/ktcache.h"

#include <math.h>
#include <zlib.h>

/* gzip of n bytes into a malloc'd buffer (*out_n bytes). */
static unsigned char *gz(const uint8_t *in, size_t n, size_t *out_n)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&zs, (uLong)n) + 32;
    unsigned char *out = malloc(cap);
    if (out) {
        zs.next_in = (unsigned char *)in;
        zs.avail_in = (uInt)n;
        zs.next_out = out;
        zs.avail_out = (uInt)cap;
        FUZZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
        *out_n = zs.total_out;
    }
    deflateEnd(&zs);
    return out;
}

static int same_num(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* Entries of "times" that are not numbers read as NaN and are left out of a dump (JSON has no
 * NaN): the numbers are what must survive. */
static int count_times(const bt__kt_record *r)
{
    int n = 0;
    for (int i = 0; i < r->ntimes; i++)
        n += !isnan(r->times[i]);
    return n;
}

static void check_consistent(const bt__ktcache *c)
{
    size_t nfailed = 0;
    int has_best = 0;
    double best = 0;
    for (size_t i = 0; i < c->nrecs; i++) {
        const bt__kt_record *r = &c->recs[i];
        FUZZ_CHECK(r->index < c->space.total);
        FUZZ_CHECK(i == 0 || c->recs[i - 1].index < r->index);
        FUZZ_CHECK(bt__ktcache_find(c, r->index) == r);
        FUZZ_CHECK(r->ntimes >= 0 && (r->ntimes == 0) == (r->times == NULL));
        FUZZ_CHECK(r->nmetrics >= 0 && r->nmetrics <= BT__KT_MAX_METRICS);
        if (r->fail != BT__KT_OK) {
            nfailed++;
            continue;
        }
        FUZZ_CHECK(r->time_ms >= 0 && isfinite(r->time_ms));
        if (!has_best || r->time_ms < best)
            best = r->time_ms;
        has_best = 1;
    }
    FUZZ_CHECK(c->nfailed == nfailed);
    FUZZ_CHECK(c->has_best == (has_best != 0));
    if (has_best) {
        FUZZ_CHECK(c->best_ms == best);
        const bt__kt_record *b = bt__ktcache_find(c, c->best_index);
        FUZZ_CHECK(b && b->fail == BT__KT_OK && b->time_ms == best);
    }
}

static void check_roundtrip(const bt__ktcache *c)
{
    char *text = bt__ktcache_dump(c);
    if (!text)
        return;
    bt__ktcache *b = NULL;
    bt_diag d = {0};
    bt_status st = bt__ktcache_load_mem(text, strlen(text), "dump", &b, &d);
    if (st != BT_OK) {
        fprintf(stderr, "the dump does not load back: %s (%s)\n%s\n", d.msg, d.field, text);
        abort();
    }
    FUZZ_CHECK(!strcmp(b->device_name, c->device_name));
    FUZZ_CHECK(!strcmp(b->kernel_name, c->kernel_name));
    FUZZ_CHECK(!strcmp(b->objective, c->objective));
    FUZZ_CHECK(b->space.nparams == c->space.nparams && b->space.total == c->space.total);
    FUZZ_CHECK(b->nrecs == c->nrecs && b->nfailed == c->nfailed && b->has_best == c->has_best);
    FUZZ_CHECK(!c->has_best || (b->best_index == c->best_index && b->best_ms == c->best_ms));
    for (size_t i = 0; i < c->nrecs; i++) {
        const bt__kt_record *x = &c->recs[i], *y = &b->recs[i];
        FUZZ_CHECK(x->index == y->index && x->fail == y->fail);
        FUZZ_CHECK(same_num(x->time_ms, y->time_ms));
        FUZZ_CHECK(same_num(x->compile_ms, y->compile_ms));
        FUZZ_CHECK(count_times(x) == count_times(y));
    }
    bt__ktcache_free(b);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *zipped = NULL;
    const void *bytes = data;
    size_t n = size;
    if (size >= 1 && data[0] == 'Z') {
        zipped = gz(data + 1, size - 1, &n);
        if (!zipped)
            return 0;
        bytes = zipped;
    }
    bt__ktcache *c = (bt__ktcache *)data; /* must be replaced, by NULL on failure */
    bt_diag d = {0};
    bt_status st = bt__ktcache_load_mem(bytes, n, "fuzz.json", &c, &d);
    if (st != BT_OK) {
        FUZZ_CHECK(c == NULL && st != BT_INTERNAL);
        char *text = zipped || (size >= 2 && data[0] == 0x1f) ? NULL : fuzz_cstr(data, size);
        /* positions count in the text up to its first NUL only when it has none */
        fuzz_check_diag(&d, text && strlen(text) == size ? text : NULL);
        free(text);
    } else {
        FUZZ_CHECK(c != NULL);
        check_consistent(c);
        check_roundtrip(c);
        bt__ktcache_free(c);
    }
    free(zipped);
    return 0;
}
