/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tprobe.h — the probe record (internal to the CUDA backend): which Triton a python imports,
 * remembered on disk so that a process that needs only the version (the kernel cache's key of a
 * Triton kernel) starts no Python. The record of a python (and of the environment that decides
 * what it imports: PATH when the name has no slash, PYTHONPATH, the blocktune package's folder)
 * is $BLOCKTUNE_CACHE_DIR/triton/probe-<hash>.json: the version and the files the pool's hello
 * named (the python, triton/__init__.py, the distribution's METADATA) with their size and mtime;
 * it holds while every one of them is unchanged, so installing another Triton (pip rewrites those
 * files or removes them) makes the next process ask the pool again.
 */
#ifndef BT_BACKENDS_CUDA_TPROBE_H
#define BT_BACKENDS_CUDA_TPROBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Triton's version from py's record into out, when there is one and every file it names is as it
 * was; false otherwise (no record, a file changed or gone, a damaged record). */
bool bt__tprobe_read(const char *py, const char *dir, char *out, size_t size);

/* Writes py's record (atomically): version and files (a JSON array of paths), each with its size
 * and mtime as they are now. A record that cannot be written is not an error: the next process
 * asks the pool again. */
void bt__tprobe_write(const char *py, const char *dir, const char *version, const json_t *files);

#endif
