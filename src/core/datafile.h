/* SPDX-License-Identifier: Apache-2.0 */
/*
 * datafile.h — arrays read from files named in a spec (internal): input data and expected
 * outputs, as Kernel Tuner users keep them: NumPy .npy files (format 1.0 to 3.0, C order,
 * little-endian numeric dtypes) or raw binary (the elements back to back in the argument's dtype).
 */
#ifndef BT_CORE_DATAFILE_H
#define BT_CORE_DATAFILE_H

#include "core/kdesc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bt__datafile {
    bool npy;
    bt__dtype dtype;  /* npy: the header's dtype; raw: BT__DT__COUNT (the reader says) */
    uint64_t offset;  /* where the elements start */
    uint64_t bytes;   /* bytes of elements */
    uint64_t count;   /* npy: elements (the product of the shape); raw: 0 */
    char shape[64];   /* npy: "(17, 17)", for messages */
} bt__datafile;

/* Reads what the file holds: a .npy header (recognised by its magic, whatever the name) or a raw
 * file's size. BT_IO when the file cannot be read, BT_PARSE for a malformed or unsupported .npy
 * header (diag->msg says what: "big-endian", "fortran_order", "dtype '<u2' ..."). */
bt_status bt__datafile_probe(const char *path, bt__datafile *out, bt_diag *diag);

/* Reads exactly `count` elements: from a .npy file in its own dtype, from a raw file in
 * raw_dtype (whose size must then be count elements of raw_dtype exactly). *data (malloc'd) and
 * *dtype receive the elements and their type. BT_INVALID_ARG, naming both counts, when the file
 * holds another number of elements. */
bt_status bt__datafile_read(const char *path, bt__dtype raw_dtype, size_t count, void **data,
                            bt__dtype *dtype, bt_diag *diag);

#endif
