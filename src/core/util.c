/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.c — implementation of the small shared helpers of util.h.
 */
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *bt__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

bt_status bt__strset(char **slot, const char *v)
{
    char *c = v ? bt__strdup(v) : NULL;
    if (v && !c)
        return BT_NOMEM;
    free(*slot);
    *slot = c;
    return BT_OK;
}

bool bt__streq_nocase(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    while (*a && *b) {
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
        a++, b++;
    }
    return *a == *b;
}

void bt__sbuf_printf(bt__sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) {
        va_end(ap2);
        return;
    }
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)need + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            va_end(ap2);
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)need;
}

void bt__sbuf_free(bt__sbuf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

int bt__edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255)
        return 1000;
    int prev[256], cur[256];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int v = prev[j] + 1;
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;
            if (prev[j - 1] + cost < v)
                v = prev[j - 1] + cost;
            cur[j] = v;
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

char *bt__read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[len] = '\0';
    if (size)
        *size = len;
    return buf;
}

bt_status bt__mkdirs(const char *dir, bt_diag *diag)
{
    char *p = bt__strdup(dir);
    if (!p)
        return BT_NOMEM;
    for (char *c = p + 1;; c++) {
        if (*c == '/' || *c == '\0') {
            char save = *c;
            *c = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                bt__diag_set(diag, "cannot create directory %s: %s", p, strerror(errno));
                free(p);
                return BT_IO;
            }
            *c = save;
            if (!save)
                break;
        }
    }
    free(p);
    return BT_OK;
}

bt_status bt__write_file_atomic(const char *path, const void *data, size_t size, bt_diag *diag)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 32);
    if (!tmp)
        return BT_NOMEM;
    snprintf(tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        bt__diag_set(diag, "cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return BT_IO;
    }
    const char *p = data;
    size_t left = size;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            bt__diag_set(diag, "cannot write %s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            free(tmp);
            return BT_IO;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        bt__diag_set(diag, "cannot flush %s: %s", tmp, strerror(errno));
        unlink(tmp);
        free(tmp);
        return BT_IO;
    }
    if (rename(tmp, path) != 0) {
        bt__diag_set(diag, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return BT_IO;
    }
    free(tmp);
    return BT_OK;
}

struct bt__embedded_file {
    const char *path;
    const char *data;
    size_t size;
};
extern const struct bt__embedded_file bt__embedded_files[];

const char *bt__embedded(const char *path, size_t *size)
{
    for (const struct bt__embedded_file *f = bt__embedded_files; f->path; f++) {
        if (strcmp(f->path, path) == 0) {
            if (size)
                *size = f->size;
            return f->data;
        }
    }
    return NULL;
}

const char *bt__embedded_at(size_t i, const char **path, size_t *size)
{
    for (size_t j = 0; bt__embedded_files[j].path; j++) {
        if (j == i) {
            if (path)
                *path = bt__embedded_files[j].path;
            if (size)
                *size = bt__embedded_files[j].size;
            return bt__embedded_files[j].data;
        }
    }
    return NULL;
}

double bt__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bt__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t bt__fnv1a(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void bt__utc_iso(double unix_s, char *buf, size_t size)
{
    time_t t = (time_t)unix_s;
    struct tm tmv;
    if (!size)
        return;
    buf[0] = '\0';
    if (gmtime_r(&t, &tmv))
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}
