# SPDX-License-Identifier: Apache-2.0
"""gemm_wgmma_ldg_check.py — checks, on the host, the producer of gemm_wgmma_ldg.cu: that the
chunks its threads copy fill a stage exactly as a 128-byte-swizzled TMA copy of the same tiles
would (what gemm_wgmma's consumers, whose wgmma descriptors gemm_wgmma_ldg keeps, were verified
against on the H200), zeros past M, K and N included, and that no load reads a 16-byte block
holding none of its row's elements. Buffers start at every even byte offset mod 16 and the
sizes are odd, so every misalignment the kernel can meet is met.

The emulation follows the kernel step by step: chunk_at (which chunk a thread takes, where it
comes from, how many of its elements are in the matrix, where it goes), chunk_load (the aligned
blocks read), chunk_align (selects by 8 and 4 bytes, the 16-bit funnel shift, the mask). Run:
python3 gemm_wgmma_ldg_check.py (exit status 0 when every case holds; tests/cli/wgmma_ldg.sh
runs it).
"""
import random
import sys

BK = 64


def words(mem, addr):
    """The little-endian 32-bit words of the 16-byte block at addr (16-byte aligned)."""
    return [int.from_bytes(mem[addr + 4 * i:addr + 4 * i + 4], "little") for i in range(4)]


def chunk_at(c, BM, BN, M, N, K, m0, n0, k0, abase, bbase):
    """(source byte address, valid elements, stage offset, (matrix, row, first column))."""
    a_chunks = BM * BK // 8
    if c < a_chunks:
        r, u = c // 8, c % 8
        m, k = m0 + r, k0 + u * 8
        valid = min(max(K - k, 0), 8) if m < M else 0
        src = abase + 2 * (min(m, M - 1) * K + min(k, K - 1))
        dst = r * 128 + ((u ^ (r & 7)) << 4)
        return src, valid, dst, ("A", m, k)
    c2 = c - a_chunks
    r, b, u = c2 // (BN // 8), (c2 % (BN // 8)) // 8, c2 % 8
    k, n = k0 + r, n0 + b * 64 + u * 8
    valid = min(max(N - n, 0), 8) if k < K else 0
    src = bbase + 2 * (min(k, K - 1) * N + min(n, N - 1))
    dst = BM * BK * 2 + b * (BK * 128) + r * 128 + ((u ^ (r & 7)) << 4)
    return src, valid, dst, ("B", k, n)


def chunk_load(mem, src, valid, reads):
    blk, sh = src & ~15, src & 15
    end = sh + 2 * valid
    lo = words(mem, blk) if end > sh else [0] * 4
    hi = words(mem, blk + 16) if end > 16 else [0] * 4
    if end > sh:
        reads.append((blk, src, valid))
    if end > 16:
        reads.append((blk + 16, src, valid))
    return lo, hi


def funnel_r(lo, hi, s):
    return (((hi << 32) | lo) >> (s & 31)) & 0xFFFFFFFF


def chunk_align(src, valid, lo, hi):
    sh = src & 15
    w = lo + hi
    y = [w[i + 2] if sh & 8 else w[i] for i in range(6)]
    x = [y[i + 1] if sh & 4 else y[i] for i in range(5)]
    s = (sh & 2) * 8
    o = [funnel_r(x[j], x[j + 1], s) for j in range(4)]
    if valid < 8:
        for j in range(4):
            keep = (0xFFFF if 2 * j < valid else 0) | (0xFFFF0000 if 2 * j + 1 < valid else 0)
            o[j] &= keep
    return b"".join(v.to_bytes(4, "little") for v in o)


def tma_stage(Am, Bm, BM, BN, M, N, K, m0, n0, k0):
    """The stage as two 128-byte-swizzled TMA copies leave it (boxes of 64 columns; zeros past
    the edges): A as BM rows of 64 K columns, B as BN/64 boxes of BK rows of 64 N columns."""
    st = bytearray(BM * BK * 2 + BK * BN * 2)
    for r in range(BM):
        for e in range(BK):
            m, k = m0 + r, k0 + e
            v = Am[m][k] if m < M and k < K else 0
            off = r * 128 + (((e // 8) ^ (r & 7)) << 4) + 2 * (e % 8)
            st[off:off + 2] = v.to_bytes(2, "little")
    for b in range(BN // 64):
        for r in range(BK):
            for e in range(64):
                k, n = k0 + r, n0 + b * 64 + e
                v = Bm[k][n] if k < K and n < N else 0
                off = BM * BK * 2 + b * (BK * 128) + r * 128 + (((e // 8) ^ (r & 7)) << 4) + 2 * (e % 8)
                st[off:off + 2] = v.to_bytes(2, "little")
    return st


def producer_stage(mem, BM, BN, M, N, K, m0, n0, k0, abase, bbase, reads):
    """The stage as the producer warpgroup's 128 threads fill it: thread tid takes chunks
    tid + 128 * i (in batches: the order does not matter, each chunk has one owner)."""
    chunks = BM * BK // 8 + BK * BN // 8
    assert chunks % 128 == 0
    st = bytearray(BM * BK * 2 + BK * BN * 2)
    written = [0] * (len(st) // 16)
    for tid in range(128):
        for i in range(chunks // 128):
            src, valid, dst, _ = chunk_at(tid + 128 * i, BM, BN, M, N, K, m0, n0, k0, abase, bbase)
            lo, hi = chunk_load(mem, src, valid, reads)
            st[dst:dst + 16] = chunk_align(src, valid, lo, hi)
            written[dst // 16] += 1
    assert all(w == 1 for w in written), "a chunk of the stage written %s times" % (
        sorted(set(written)))
    return st


def check(BM, BN, M, N, K, aoff, boff, rng):
    """Every stage of every tile of an M×N×K problem whose A starts aoff bytes and B boff bytes
    past a 16-byte boundary."""
    Am = [[rng.randrange(1, 65536) for _ in range(K)] for _ in range(M)]
    Bm = [[rng.randrange(1, 65536) for _ in range(N)] for _ in range(K)]
    abase = 4096 + aoff
    bbase = (abase + 2 * M * K + 64) // 16 * 16 + 256 + boff
    mem = bytearray(bbase + 2 * K * N + 64)
    for m in range(M):
        for k in range(K):
            mem[abase + 2 * (m * K + k):abase + 2 * (m * K + k) + 2] = Am[m][k].to_bytes(2, "little")
    for k in range(K):
        for n in range(N):
            mem[bbase + 2 * (k * N + n):bbase + 2 * (k * N + n) + 2] = Bm[k][n].to_bytes(2, "little")
    bad = 0
    for m0 in range(0, M, BM):
        for n0 in range(0, N, BN):
            for k0 in range(0, K, BK):
                reads = []
                got = producer_stage(mem, BM, BN, M, N, K, m0, n0, k0, abase, bbase, reads)
                want = tma_stage(Am, Bm, BM, BN, M, N, K, m0, n0, k0)
                if got != want:
                    diff = next(i for i in range(len(got)) if got[i] != want[i])
                    print("FAIL %dx%d tile (%d,%d,%d) of %dx%dx%d, A+%d B+%d: stage byte %d differs"
                          % (BM, BN, m0, n0, k0, M, N, K, aoff, boff, diff))
                    bad += 1
                for blk, src, valid in reads:
                    if not (blk < src + 2 * valid and src < blk + 16):
                        print("FAIL %dx%dx%d: block %d read for a chunk at %d of %d elements"
                              % (M, N, K, blk, src, valid))
                        bad += 1
    return bad


def main():
    rng = random.Random(1)
    cases = 0
    bad = 0
    shapes = [(1, 37, 9), (17, 33, 48), (63, 65, 100), (129, 127, 257), (70, 136, 71),
              (200, 131, 128), (65, 72, 64)]
    tiles = [(64, 64), (128, 64), (64, 128), (128, 128), (64, 256), (256, 64), (128, 256),
             (256, 128)]
    for BM, BN in tiles:
        for M, N, K in shapes:
            aoff = rng.randrange(0, 16, 2)
            boff = rng.randrange(0, 16, 2)
            bad += check(BM, BN, M, N, K, aoff, boff, rng)
            cases += 1
    for off in range(0, 16, 2):  # every misalignment of both buffers
        bad += check(64, 64, 9, 67, 71, off, 14 - off, rng)
        cases += 1
    print("gemm_wgmma_ldg producer: %d cases, %d failures" % (cases, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
