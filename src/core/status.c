/*
 * status.c — status codes (bt_strerror, bt_err_name), diag formatting and the version string.
 */
#include "core/util.h"

#include <stdarg.h>
#include <stdio.h>
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

void bt__diag_clear(bt_diag *d)
{
    if (d)
        memset(d, 0, sizeof *d);
}

void bt__diag_set(bt_diag *d, const char *fmt, ...)
{
    if (!d)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
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
