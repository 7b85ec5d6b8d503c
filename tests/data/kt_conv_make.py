#!/usr/bin/env python3
"""Makes kt_conv_files.json's data with the standard library only (no NumPy needed): the 52x52
input image as .npy, the 5x5 filter as raw little-endian float32, and the expected 48x48 output,
computed in double precision, as .npy. Seeded: running it again writes the same bytes."""
import random
import struct

W = H = 48
FW = FH = 5
IW, IH = W + FW - 1, H + FH - 1


def write_npy(path, values, shape):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(
        str(s) for s in shape)
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"  # pad to 64 bytes with a newline
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("ascii"))
        f.write(struct.pack("<%df" % len(values), *values))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


rng = random.Random(20261201)
image = [f32(rng.uniform(-1, 1)) for _ in range(IW * IH)]
filt = [f32(rng.uniform(0, 1)) for _ in range(FW * FH)]
out = []
for y in range(H):
    for x in range(W):
        out.append(sum(filt[j * FW + i] * image[(y + j) * IW + x + i]
                       for j in range(FH) for i in range(FW)))
write_npy("kt_conv_in.npy", image, (IH, IW))
with open("kt_conv_filter.bin", "wb") as f:
    f.write(struct.pack("<%df" % len(filt), *filt))
write_npy("kt_conv_out.npy", out, (H, W))
