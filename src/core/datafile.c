/* SPDX-License-Identifier: Apache-2.0 */
/*
 * datafile.c — .npy and raw binary arrays (datafile.h). A .npy file is the magic "\x93NUMPY", a
 * version, a header length and a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (17, 17), } padded with spaces, then the elements.
 */
#include "core/datafile.h"

#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_HEADER 65536

/* The value text after 'key': in the header, or NULL. */
static const char *npy_field(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

static bt_status npy_descr(const char *descr, size_t n, bt__dtype *out, bt_diag *diag)
{
    static const struct {
        const char *code;
        bt__dtype t;
    } known[] = {{"f4", BT__DT_FP32}, {"f8", BT__DT_FP64}, {"f2", BT__DT_FP16},
                 {"i4", BT__DT_INT32}, {"i8", BT__DT_INT64}, {"i1", BT__DT_INT8}};
    if (n == 3 && descr[0] == '>' && strchr("fiu", descr[1])) {
        bt__diag_set(diag, "the .npy array is big-endian ('%.*s'): save it little-endian "
                     "(array.astype('<%.2s'))", (int)n, descr, descr + 1);
        return BT_PARSE;
    }
    if (n == 3 && strchr("<|=", descr[0]))
        for (size_t i = 0; i < BT__ARRAY_LEN(known); i++)
            if (!memcmp(descr + 1, known[i].code, 2)) {
                *out = known[i].t;
                return BT_OK;
            }
    bt__diag_set(diag, "the .npy dtype '%.*s' is not supported (float16/32/64, int8/32/64)",
                 (int)(n > 32 ? 32 : n), descr);
    return BT_PARSE;
}

/* Parses the header dict h (NUL-terminated) into f. */
static bt_status npy_header(const char *h, bt__datafile *f, bt_diag *diag)
{
    const char *d = npy_field(h, "descr"), *fo = npy_field(h, "fortran_order"),
               *sh = npy_field(h, "shape");
    if (!d || !fo || !sh || *d != '\'' || *sh != '(') {
        bt__diag_set(diag, "malformed .npy header (no 'descr', 'fortran_order' or 'shape')");
        return BT_PARSE;
    }
    const char *dend = strchr(d + 1, '\'');
    if (!dend) {
        bt__diag_set(diag, "malformed .npy header ('descr')");
        return BT_PARSE;
    }
    bt_status st = npy_descr(d + 1, (size_t)(dend - d - 1), &f->dtype, diag);
    if (st)
        return st;
    if (!strncmp(fo, "True", 4)) {
        bt__diag_set(diag, "the .npy array is in Fortran order: save it in C order "
                     "(numpy.ascontiguousarray)");
        return BT_PARSE;
    }
    const char *send = strchr(sh, ')');
    if (strncmp(fo, "False", 5) || !send) {
        bt__diag_set(diag, "malformed .npy header ('fortran_order' or 'shape')");
        return BT_PARSE;
    }
    snprintf(f->shape, sizeof f->shape, "%.*s", (int)(send - sh + 1), sh);
    uint64_t count = 1;
    for (const char *p = sh + 1; p < send;) {
        while (p < send && (*p == ' ' || *p == ','))
            p++;
        if (p >= send)
            break;
        if (!isdigit((unsigned char)*p)) {
            bt__diag_set(diag, "malformed .npy shape %s", f->shape);
            return BT_PARSE;
        }
        uint64_t v = 0;
        for (; p < send && isdigit((unsigned char)*p); p++)
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v)) {
                bt__diag_set(diag, ".npy shape %s is too large", f->shape);
                return BT_PARSE;
            }
        while (p < send && *p == 'L') /* Python 2 longs */
            p++;
        if (__builtin_mul_overflow(count, v, &count)) {
            bt__diag_set(diag, ".npy shape %s is too large", f->shape);
            return BT_PARSE;
        }
    }
    f->count = count;
    return BT_OK;
}

bt_status bt__datafile_probe(const char *path, bt__datafile *out, bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->dtype = BT__DT__COUNT;
    struct stat sb;
    const char *why = stat(path, &sb) != 0 ? strerror(errno)
                      : S_ISDIR(sb.st_mode)   ? "is a directory"
                      : !S_ISREG(sb.st_mode)  ? "is not a regular file"
                                              : NULL;
    if (why) {
        bt__diag_set(diag, "cannot read '%s': %s", path, why);
        return BT_IO;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        bt__diag_set(diag, "cannot read '%s': %s", path, strerror(errno));
        return BT_IO;
    }
    unsigned char pre[12];
    size_t got = fread(pre, 1, sizeof pre, fp);
    uint64_t size = (uint64_t)sb.st_size;
    if (got < 10 || memcmp(pre, NPY_MAGIC, 6)) { /* raw */
        fclose(fp);
        out->bytes = size;
        return BT_OK;
    }
    out->npy = true;
    uint64_t hlen = pre[6] == 1 ? (uint64_t)(pre[8] | pre[9] << 8)
                                : got < 12 ? 0
                                           : (uint64_t)pre[8] | (uint64_t)pre[9] << 8 |
                                                 (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
    uint64_t hstart = pre[6] == 1 ? 10 : 12;
    bt_status st = BT_OK;
    char *h = NULL;
    if (pre[6] < 1 || pre[6] > 3 || hlen == 0 || hlen > NPY_MAX_HEADER || hstart + hlen > size) {
        bt__diag_set(diag, "'%s': malformed .npy file (version %d, header of %llu bytes)", path,
                     pre[6], (unsigned long long)hlen);
        st = BT_PARSE;
    } else if (!(h = calloc(1, (size_t)hlen + 1)))
        st = BT_NOMEM;
    else if (fseek(fp, (long)hstart, SEEK_SET) || fread(h, 1, (size_t)hlen, fp) != hlen) {
        bt__diag_set(diag, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
        st = BT_IO;
    } else if ((st = npy_header(h, out, diag)) != BT_OK)
        bt__diag_prefix(diag, "'%s': ", path);
    free(h);
    fclose(fp);
    if (st)
        return st;
    out->offset = hstart + hlen;
    out->bytes = size - out->offset;
    uint64_t want;
    if (__builtin_mul_overflow(out->count, (uint64_t)bt__dtype_size(out->dtype), &want) ||
        want != out->bytes) {
        bt__diag_set(diag, "'%s': the .npy header says %s elements of %s (%llu bytes) but the file "
                     "holds %llu bytes of data", path, out->shape, bt__dtype_name(out->dtype),
                     (unsigned long long)want, (unsigned long long)out->bytes);
        return BT_PARSE;
    }
    return BT_OK;
}

bt_status bt__datafile_read(const char *path, bt__dtype raw_dtype, size_t count, void **data,
                            bt__dtype *dtype, bt_diag *diag)
{
    *data = NULL;
    bt__datafile f;
    bt_status st = bt__datafile_probe(path, &f, diag);
    if (st)
        return st;
    *dtype = f.npy ? f.dtype : raw_dtype;
    uint64_t esize = (uint64_t)bt__dtype_size(*dtype);
    uint64_t have = f.npy ? f.count : f.bytes / esize;
    if (have != count || (!f.npy && f.bytes % esize)) {
        if (f.npy)
            bt__diag_set(diag, "'%s' holds %llu elements %s, the argument needs %zu", path,
                         (unsigned long long)have, f.shape, count);
        else
            bt__diag_set(diag, "'%s' holds %llu bytes, the argument needs %zu elements of %s "
                         "(%llu bytes)", path, (unsigned long long)f.bytes, count,
                         bt__dtype_name(*dtype), (unsigned long long)(count * esize));
        return BT_INVALID_ARG;
    }
    FILE *fp = fopen(path, "rb");
    void *buf = malloc(f.bytes ? (size_t)f.bytes : 1);
    if (!fp || !buf || fseek(fp, (long)f.offset, SEEK_SET) ||
        fread(buf, 1, (size_t)f.bytes, fp) != f.bytes) {
        st = !buf ? BT_NOMEM : BT_IO;
        if (buf)
            bt__diag_set(diag, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
        free(buf);
        if (fp)
            fclose(fp);
        return st;
    }
    fclose(fp);
    *data = buf;
    return BT_OK;
}
