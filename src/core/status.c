/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.c — status codes (bt_strerror, bt_err_name), diag formatting and the version string.
 */
#include "core/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

const char *bt_strerror(bt_status s)
{
    switch (s) {
#define BT__MSG(name, code, msg)                                                                   \
    case BT_##name:                                                                                \
        return msg;
        BT_STATUS_MAP(BT__MSG)
#undef BT__MSG
    }
    return "unknown status";
}

const char *bt_err_name(bt_status s)
{
    switch (s) {
#define BT__NAME(name, code, msg)                                                                  \
    case BT_##name:                                                                                \
        return "BT_" #name;
        BT_STATUS_MAP(BT__NAME)
#undef BT__NAME
    }
    return "BT_UNKNOWN";
}

const char *bt_version(void) { return BT_VERSION_STRING; }

#ifdef BT__ABI_GROWN
unsigned bt_version_number(void) { return BT_VERSION_NUMBER + 1; } /* a later patch release */
#else
unsigned bt_version_number(void) { return BT_VERSION_NUMBER; }
#endif

char *bt_diag_format(const bt_diag *d, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    buf[0] = '\0';
    if (!d)
        return buf;
    size_t n = 0;
#define APPEND(...)                                                                                \
    do {                                                                                           \
        if (n < size) {                                                                            \
            int w_ = snprintf(buf + n, size - n, __VA_ARGS__);                                    \
            if (w_ > 0)                                                                            \
                n += (size_t)w_;                                                                   \
        }                                                                                          \
    } while (0)
    if (d->file[0]) {
        APPEND("%s", d->file);
        if (d->line > 0) {
            APPEND(":%d", d->line);
            if (d->column > 0)
                APPEND(":%d", d->column);
        }
        APPEND(": ");
    } else if (d->column > 0) {
        APPEND("column %d: ", d->column);
    }
    if (d->field[0])
        APPEND("%s: ", d->field);
    APPEND("%s", d->msg[0] ? d->msg : "(no details)");
#undef APPEND
    return buf;
}

/* The size of the 0.2.0 bt_diag: up to the end of msg (a later library's diag is longer). */
#define DIAG_SIZE_0_2                                                                              \
    ((offsetof(bt_diag, msg) + sizeof(((bt_diag *)0)->msg) + _Alignof(bt_diag) - 1) /             \
     _Alignof(bt_diag) * _Alignof(bt_diag))

/* The bytes of d the library may write: its size; 0 (or a size past this library's) means the
 * 0.2.0 layout. */
static size_t diag_bytes(const bt_diag *d)
{
    return d->size >= DIAG_SIZE_0_2 && d->size < sizeof *d ? d->size : DIAG_SIZE_0_2;
}

void bt__diag_clear(bt_diag *d)
{
    if (!d)
        return;
    size_t size = d->size;
    memset(d, 0, diag_bytes(d));
    d->size = size;
}

void bt__diag_copy(bt_diag *dst, const bt_diag *src)
{
    if (!dst || !src || dst == src)
        return;
    size_t size = dst->size, n = diag_bytes(dst);
    if (src->size && src->size < n)
        n = src->size;
    memcpy(dst, src, n);
    dst->size = size;
}

void bt__diag_set(bt_diag *d, const char *fmt, ...)
{
    if (!d)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
#ifdef BT__ABI_GROWN
    if (diag_bytes(d) >= offsetof(bt_diag, grown_severity) + sizeof d->grown_severity)
        d->grown_severity = 1;
#endif
}

void bt__diag_field(bt_diag *d, const char *field)
{
    if (d && field)
        snprintf(d->field, sizeof d->field, "%s", field);
}

void bt__diag_prefix(bt_diag *d, const char *fmt, ...)
{
    if (!d)
        return;
    char pre[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    size_t lp = strlen(pre), lm = strlen(d->msg);
    if (lp >= sizeof d->msg)
        lp = sizeof d->msg - 1;
    if (lp + lm >= sizeof d->msg)
        lm = sizeof d->msg - 1 - lp;
    memmove(d->msg + lp, d->msg, lm);
    memcpy(d->msg, pre, lp);
    d->msg[lp + lm] = '\0';
}
