# SPDX-License-Identifier: Apache-2.0
"""gemm_smallm_frags.py — checks, on the host, the tensor-core operand and fragment mappings that
the small-M kernels document in their file-top comments, lane by lane, with the instructions built
from the PTX ISA's tables; every result must equal the product exactly (small integers) and every
element of a tile must be written exactly once. Run: python3 gemm_smallm_frags.py (exit status 0
when every case holds; tests/cli/smallm.sh runs it).

- gemm_smallm_nt.cu and gemm_smallm.cu (mma.sync m16n8k16): one warp's K steps (each lane's loads,
  the words it hands to mma as written in the kernels), the accumulators mapped back to C through
  MapNT / MapKN.
- gemm_smallm_tma.cu (wgmma m64nNk16 from shared memory): whole blocks, K slices and split-K sums:
  TMA's tiled copies with 128-byte swizzle into the ring (boxes, coordinates and offsets as the
  kernel issues them), the operands that the kernel's wgmma descriptors (start, LBO, SBO, K-major
  or MN-major) select under the canonical 128-byte-swizzle layouts, the m64nNk16 accumulator layout
  and MapTMA. This checks the kernel's bookkeeping against the hardware's documented layouts; the
  layouts themselves are gemm_wgmma's, verified on the H200 (bench/NOTES.md 9).
"""
import random
import sys


def mma(afr, bfr, acc):
    """D = A·B + C for one m16n8k16: afr[lane] = (a0..a3), each a pair (low, high element);
    bfr[lane] = (b0, b1); acc[lane] = 4 floats (c0..c3). PTX ISA, mma.m16n8k16 .f16/.bf16."""
    A = [[None] * 16 for _ in range(16)]
    B = [[None] * 8 for _ in range(16)]
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        a0, a1, a2, a3 = afr[lane]
        A[g][2 * t], A[g][2 * t + 1] = a0
        A[g + 8][2 * t], A[g + 8][2 * t + 1] = a1
        A[g][2 * t + 8], A[g][2 * t + 9] = a2
        A[g + 8][2 * t + 8], A[g + 8][2 * t + 9] = a3
        b0, b1 = bfr[lane]
        B[2 * t][g], B[2 * t + 1][g] = b0
        B[2 * t + 8][g], B[2 * t + 9][g] = b1
    assert all(v is not None for row in A + B for v in row), "a fragment element left unset"
    D = [[sum(A[r][k] * B[k][c] for k in range(16)) for c in range(8)] for r in range(16)]
    out = []
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        c = acc[lane]
        out.append([c[0] + D[g][2 * t], c[1] + D[g][2 * t + 1],
                    c[2] + D[g + 8][2 * t], c[3] + D[g + 8][2 * t + 1]])
    return out


def words(chunk):
    """8 elements as 4 words, each (low element, high element)."""
    return [(chunk[2 * q], chunk[2 * q + 1]) for q in range(4)]


def nt_warp(W, A, TN, BM):
    """gemm_smallm_nt, MATH=1: one warp's TN rows of W (N×K) against A (M×K); K a multiple
    of 32."""
    K, M = len(W[0]), len(A)
    RT, MJ = TN // 16, (BM + 7) // 8
    As = [A[m] if m < M else [0] * K for m in range(BM)]
    acc = [[0] * (RT * MJ * 4) for _ in range(32)]
    for s in range(K // 32):
        def w(lane, i):  # load i: row g + 8i, 16 bytes at k = 8t of the step
            k = s * 32 + 8 * (lane & 3)
            return W[8 * i + (lane >> 2)][k:k + 8]

        def z(lane, j):  # row 8j + g of A (zeros past BM), same k
            g, k = lane >> 2, s * 32 + 8 * (lane & 3)
            return As[8 * j + g][k:k + 8] if BM >= 8 or g < BM else [0] * 8
        for r in range(RT):
            for h in range(2):
                for j in range(MJ):
                    afr, bfr, cfr = [], [], []
                    for lane in range(32):
                        x, y = words(w(lane, 2 * r)), words(w(lane, 2 * r + 1))
                        zz = words(z(lane, j))
                        afr.append((x[2 * h], y[2 * h], x[2 * h + 1], y[2 * h + 1]))
                        bfr.append((zz[2 * h], zz[2 * h + 1]))
                        cfr.append(acc[lane][(r * MJ + j) * 4:(r * MJ + j) * 4 + 4])
                    for lane, v in enumerate(mma(afr, bfr, cfr)):
                        acc[lane][(r * MJ + j) * 4:(r * MJ + j) * 4 + 4] = v
    C = [[None] * TN for _ in range(8 * MJ)]
    for lane in range(32):
        for i in range(RT * MJ * 4):  # MapNT
            q, j, r = i & 3, (i >> 2) % MJ, (i >> 2) // MJ
            n = 16 * r + (lane >> 2) + 8 * (q >> 1)
            m = 8 * j + 2 * (lane & 3) + (q & 1)
            assert C[m][n] is None, "tile element written twice"
            C[m][n] = acc[lane][i]
    assert all(v is not None for row in C for v in row), "tile element not written"
    return C[:M]


def kn_warp(B, A, TN, BM):
    """gemm_smallm, MATH=1: A (M×K) against one warp's TN columns of B (K×TN); K a multiple
    of 32."""
    K, M = len(B), len(A)
    VW = 8 if TN >= 64 else 4
    CG, MT = TN // (8 * VW), (BM + 15) // 16
    As = [A[m] if m < M else [0] * K for m in range(BM)]
    nacc = MT * CG * VW * 4
    acc = [[0] * nacc for _ in range(32)]
    for s in range(K // 32):
        def r_(lane, i):  # load i = 8c + row: row 8t + row of the step, VW columns of group c
            c, col = i >> 3, VW * (lane >> 2)
            row = B[s * 32 + 8 * (lane & 3) + (i & 7)]
            return row[8 * VW * c + col:8 * VW * c + col + VW] + [0] * (8 - VW)

        def a_(lane, row):  # 16 bytes of row `row` of A at k = 8t (zeros past BM)
            k = s * 32 + 8 * (lane & 3)
            return As[row][k:k + 8] if row < BM else [0] * 8
        for h in range(2):
            for c in range(CG):
                for j in range(VW):
                    for i in range(MT):
                        afr, bfr, cfr = [], [], []
                        for lane in range(32):
                            rw = [words(r_(lane, 8 * c + 4 * h + e)) for e in range(4)]
                            half = j & 1  # prmt 0x5410 (even j) / 0x7632 (odd j)
                            b0 = (rw[0][j >> 1][half], rw[1][j >> 1][half])
                            b1 = (rw[2][j >> 1][half], rw[3][j >> 1][half])
                            g = lane >> 2
                            x = words(a_(lane, 16 * i + g) if BM >= 16 or g < BM else [0] * 8)
                            y = words(a_(lane, 16 * i + g + 8) if BM >= 16 else [0] * 8)
                            afr.append((x[2 * h], y[2 * h], x[2 * h + 1], y[2 * h + 1]))
                            bfr.append((b0, b1))
                            base = ((i * CG + c) * VW + j) * 4
                            cfr.append(acc[lane][base:base + 4])
                        for lane, v in enumerate(mma(afr, bfr, cfr)):
                            base = ((i * CG + c) * VW + j) * 4
                            acc[lane][base:base + 4] = v
    C = [[None] * TN for _ in range(16 * MT)]
    for lane in range(32):
        for i in range(nacc):  # MapKN
            q, j, c, mi = i & 3, (i >> 2) % VW, (i >> 2) // VW % CG, (i >> 2) // VW // CG
            m = 16 * mi + (lane >> 2) + 8 * (q >> 1)
            n = 8 * VW * c + VW * (2 * (lane & 3) + (q & 1)) + j
            assert C[m][n] is None, "tile element written twice"
            C[m][n] = acc[lane][i]
    assert all(v is not None for row in C for v in row), "tile element not written"
    return C[:M]


# ---- gemm_smallm_tma.cu: TMA + wgmma ------------------------------------------------------------

def swz(addr):
    """The 128-byte swizzle of a shared-memory byte address (atoms of 1024 bytes, 1024-aligned):
    its 16-byte chunk within the 128-byte row is XORed with the row's index within the atom."""
    return addr ^ (((addr >> 7) & 7) << 4)


def tma_box(smem, dst, T, c0, c1, rows):
    """A tiled TMA copy with 128-byte swizzle of the box {64 elements (innermost), rows} of the 2-D
    tensor T (T[outer][inner]) at (c0 inner, c1 outer) to the 1024-aligned byte address dst; what
    lies outside T arrives as zeros."""
    assert dst % 1024 == 0
    for r in range(rows):
        for c in range(64):
            o, i = c1 + r, c0 + c
            smem[swz(dst + 128 * r + 2 * c) // 2] = T[o][i] if o < len(T) and i < len(T[0]) else 0


def operand(smem, start, lbo, sbo, rows, kmajor):
    """The rows × 16 matrix (i along M or N, j along K) that a wgmma descriptor with 128-byte
    swizzle selects: K-major, 8-row groups SBO apart, rows 128 bytes apart, K contiguous (start
    advanced 32 bytes per k16 inside the row); MN-major, 8-row groups of K SBO apart, K rows 128
    bytes apart, M contiguous, 64-element atoms along M LBO apart."""
    out = []
    for i in range(rows):
        row = []
        for j in range(16):
            if kmajor:
                a = start + (i // 8) * sbo + (i % 8) * 128 + 2 * j
            else:
                a = start + (j // 8) * sbo + (j % 8) * 128 + 2 * (i % 64) + (i // 64) * lbo
            row.append(smem[swz(a) // 2])
        out.append(row)
    return out


def wgmma(acc, off, Wop, Xop, MP):
    """acc[t][off + ..] += D = Wop (64 × 16) · Xopᵀ (16 × MP), as wgmma.m64nMPk16 leaves D in the
    consumer warpgroup's 128 threads: d[4q + 2h + e] = D[16w + l/4 + 8h][8q + 2(l%4) + e]."""
    D = [[sum(Wop[i][j] * Xop[n][j] for j in range(16)) for n in range(MP)] for i in range(64)]
    for t in range(128):
        w, l = t // 32, t % 32
        for q in range(MP // 8):
            for h in range(2):
                for e in range(2):
                    acc[t][off + 4 * q + 2 * h + e] += D[16 * w + l // 4 + 8 * h][8 * q + 2 * (l % 4) + e]


def tma_block(nt, MP, BN, BK, SPLIT, A, B, K, x, y):
    """One block (x, y) of gemm_smallm_tma (B as K×N) or gemm_smallm_nt_tma (B as N×K): its K
    slice through the ring (one stage suffices: the emulation is sequential), the consumer
    threads' accumulators."""
    RB, KB, WB = BN // 64, BK // 64, BN * BK * 2
    kc = -(-(-(-K // SPLIT)) // BK) * BK
    kb, n0 = y * kc, x * BN
    ke = min(K, kb + kc)
    ntiles = -(-(ke - kb) // BK) if ke > kb else 0
    acc = [[0] * (RB * MP // 2) for _ in range(128)]
    for t in range(ntiles):
        smem, k = {}, kb + BK * t
        for a in range(KB):
            if nt:  # KB boxes {64 k, BN rows} of B (N×K) at (k + 64a, n0), BN·128 bytes apart
                tma_box(smem, a * BN * 128, B, k + 64 * a, n0, BN)
            tma_box(smem, WB + a * MP * 128, A, k + 64 * a, 0, MP)  # {64 k, MP rows} of A
        if not nt:  # RB boxes {64 n, BK k} of B (K×N) at (n0 + 64r, k), BK·128 bytes apart
            for r in range(RB):
                tma_box(smem, r * BK * 128, B, n0 + 64 * r, k, BK)
        for kk in range(BK // 16):
            Xop = operand(smem, WB + (kk // 4) * MP * 128 + (kk % 4) * 32, 16, 1024, MP, True)
            for r in range(RB):
                if nt:
                    Wop = operand(smem, (kk // 4) * BN * 128 + r * 8192 + (kk % 4) * 32, 16,
                                  1024, 64, True)
                else:
                    Wop = operand(smem, r * BK * 128 + kk * 2048, BK * 128, 1024, 64, False)
                wgmma(acc, r * MP // 2, Wop, Xop, MP)
    return acc


def map_tma(i, lane, wn, MP):
    """MapTMA of gemm_smallm_tma.cu: (m, n) of acc[i], or None (the producer warp)."""
    if wn >= 4:
        return None
    r, j = i // (MP // 2), i % (MP // 2)
    return (8 * (j >> 2) + 2 * (lane & 3) + (j & 1),
            64 * r + 16 * wn + (lane >> 2) + 8 * ((j >> 1) & 1))


def tma_gemm(nt, MP, BN, BK, SPLIT, A, B, M, N, K):
    """C (M×N) as the kernel computes it: every block's partial tile through MapTMA (each of the
    MP × BN elements exactly once per block), summed over the SPLIT K slices."""
    C = [[0] * N for _ in range(M)]
    for x in range(-(-N // BN)):
        for y in range(SPLIT):
            acc = tma_block(nt, MP, BN, BK, SPLIT, A, B, K, x, y)
            seen = set()
            for t in range(160):
                for i in range(BN // 64 * MP // 2):
                    mn = map_tma(i, t % 32, t // 32, MP)
                    if mn is None:
                        continue
                    assert mn not in seen, "tile element written twice"
                    seen.add(mn)
                    m, n = mn
                    if m < M and x * BN + n < N:
                        C[m][x * BN + n] += acc[t][i]
            assert len(seen) == MP * BN, "tile element not written"
    return C


def tma_persistent(nt, MP, BN, BK, SPLIT, grid, A, B, M, N, K, rnd):
    """C as the persistent kernel (PERSIST > 0) computes it: units u = (tile u / nsl, K slice
    u % nsl) taken by `grid` blocks, the first blockIdx.x and the next ones from the counter Q[0]
    one unit ahead, in an order the emulation draws at random (blocks race for the counter); each
    block's producer tags its ring's stages (TAG_LAST on a unit's last one, -1 at the end) and
    its consumer ends a unit when it reads TAG_LAST: C itself when nsl == 1, else fp32 atomics
    into W and a ticket in T, the tile's last ticket writing C and zeroing W and T. Returns C and
    whether W, T and Q are back to zero and every unit ran exactly once."""
    TAG_LAST, STAGES = 0x40000000, 4
    kc = -(-(-(-K // SPLIT)) // BK) * BK
    nsl = -(-K // kc)
    units = -(-N // BN) * nsl
    C = [[None] * N for _ in range(M)]
    W = [[0] * N for _ in range(M)]
    T, Q = [0] * N, [0, 0]
    seq = {b: [b] if b < units else [] for b in range(grid)}  # each block's units, in order
    nxt = {}
    for b in rnd.sample(range(grid), grid):  # the first fetches, in a random order
        if b < units:
            nxt[b] = grid + Q[0]
            Q[0] += 1
    live = [b for b in nxt]
    while live:  # a block finishing a unit fetches again: random interleaving
        b = rnd.choice(live)
        u = nxt[b]
        if u >= units:
            live.remove(b)
            continue
        seq[b].append(u)
        nxt[b] = grid + Q[0]
        Q[0] += 1
    ran = sorted(u for b in seq for u in seq[b])
    events = []  # (block, unit) in the order the consumers end them: any interleaving
    for b in range(grid):
        ring, s = [None] * STAGES, 0
        tags = []
        for u in seq[b]:
            kb = u % nsl * kc
            nt_ = -(-(min(K, kb + kc) - kb) // BK)
            for t in range(nt_):
                ring[s] = u | TAG_LAST if t == nt_ - 1 else u
                tags.append(ring[s])
                s = (s + 1) % STAGES
        tags.append(-1)
        ended = [tg & ~TAG_LAST for tg in tags if tg >= 0 and tg & TAG_LAST]
        assert ended == seq[b] and tags[-1] == -1, "the ring's tags do not end each unit once"
        events += [(b, u) for u in ended]
    rnd.shuffle(events)
    for b, u in events:
        x, y = u // nsl, u % nsl
        acc = tma_block(nt, MP, BN, BK, SPLIT, A, B, K, x, y)
        for t in range(128):
            for i in range(BN // 64 * MP // 2):
                m, n = map_tma(i, t % 32, t // 32, MP)
                if m < M and x * BN + n < N:
                    if nsl == 1:
                        assert C[m][x * BN + n] is None, "C written twice"
                        C[m][x * BN + n] = acc[t][i]
                    else:
                        W[m][x * BN + n] += acc[t][i]
        if nsl > 1:
            T[x] += 1
            if T[x] == nsl:  # the last ticket: C from W, W and the ticket cleaned
                for m in range(M):
                    for n in range(x * BN, min(N, x * BN + BN)):
                        assert C[m][n] is None, "C written twice"
                        C[m][n], W[m][n] = W[m][n], 0
                T[x] = 0
    Q[1] = grid  # every block arrives; the last one resets both counters
    Q[0] = Q[1] = 0
    clean = all(v == 0 for row in W for v in row) and not any(T) and ran == list(range(units))
    return C, clean


def main():
    rnd = random.Random(1)
    mat = lambda r, c: [[rnd.randint(-3, 3) for _ in range(c)] for _ in range(r)]
    bad = 0
    for TN, BM, M in [(16, 1, 1), (16, 4, 3), (32, 8, 5), (16, 16, 13), (64, 64, 63)]:
        W, A = mat(TN, 64), mat(M, 64)
        want = [[sum(A[m][k] * W[n][k] for k in range(64)) for n in range(TN)] for m in range(M)]
        ok = nt_warp(W, A, TN, BM) == want
        bad += not ok
        print("gemm_smallm_nt WARP_N=%d BLOCK_M=%d M=%d: %s" % (TN, BM, M, "ok" if ok else "WRONG"))
    for TN, BM, M in [(64, 1, 1), (32, 2, 2), (128, 8, 5), (32, 16, 9), (64, 32, 17), (32, 64, 63)]:
        Bm, A = mat(64, TN), mat(M, 64)
        want = [[sum(A[m][k] * Bm[k][n] for k in range(64)) for n in range(TN)] for m in range(M)]
        ok = kn_warp(Bm, A, TN, BM) == want
        bad += not ok
        print("gemm_smallm WARP_N=%d BLOCK_M=%d M=%d: %s" % (TN, BM, M, "ok" if ok else "WRONG"))
    # TMA kernels: M tails (rows past M arrive as zeros), N tails (blocks past N), K tails and
    # K slices (SPLIT), both layouts, every BLOCK_M class and slab count
    for nt, MP, BN, BK, M, N, K, SPLIT in [
            (1, 8, 64, 64, 1, 70, 200, 2), (0, 8, 256, 128, 3, 264, 72, 1),
            (1, 8, 64, 256, 2, 64, 520, 2), (0, 8, 64, 256, 1, 72, 600, 2),
            (1, 16, 128, 128, 13, 100, 200, 1), (0, 16, 64, 64, 9, 72, 136, 4),
            (1, 32, 64, 64, 29, 64, 64, 1), (0, 32, 128, 64, 17, 136, 64, 2),
            (1, 64, 128, 64, 63, 130, 64, 1), (0, 64, 64, 128, 64, 64, 136, 1)]:
        A = mat(M, K)
        Bm = mat(N, K) if nt else mat(K, N)
        want = [[sum(A[m][k] * (Bm[n][k] if nt else Bm[k][n]) for k in range(K)) for n in range(N)]
                for m in range(M)]
        ok = tma_gemm(nt, MP, BN, BK, SPLIT, A, Bm, M, N, K) == want
        bad += not ok
        print("%s BLOCK_M=%d BLOCK_N=%d BLOCK_K=%d SPLIT_K=%d M=%d N=%d K=%d: %s" % (
            "gemm_smallm_nt_tma" if nt else "gemm_smallm_tma", MP, BN, BK, SPLIT, M, N, K,
            "ok" if ok else "WRONG"))
    # the persistent grid: units over tiles and K slices (with empty slices past K: nsl < SPLIT),
    # fewer blocks than units, more blocks than units, nsl == 1 (C stored directly)
    rnd2 = random.Random(7)
    for nt, MP, BN, BK, M, N, K, SPLIT, grid in [
            (1, 8, 64, 64, 1, 200, 520, 4, 5), (0, 8, 64, 128, 3, 136, 600, 4, 3),
            (1, 16, 128, 64, 13, 130, 200, 2, 4), (0, 32, 64, 64, 17, 72, 64, 4, 6),
            (1, 8, 64, 128, 2, 64, 1000, 8, 3), (0, 64, 128, 64, 63, 136, 136, 1, 2)]:
        A = mat(M, K)
        Bm = mat(N, K) if nt else mat(K, N)
        want = [[sum(A[m][k] * (Bm[n][k] if nt else Bm[k][n]) for k in range(K)) for n in range(N)]
                for m in range(M)]
        got, clean = tma_persistent(nt, MP, BN, BK, SPLIT, grid, A, Bm, M, N, K, rnd2)
        ok = got == want and clean
        bad += not ok
        print("%s PERSIST grid=%d BLOCK_M=%d BLOCK_N=%d BLOCK_K=%d SPLIT_K=%d M=%d N=%d K=%d: %s" % (
            "gemm_smallm_nt_tma" if nt else "gemm_smallm_tma", grid, MP, BN, BK, SPLIT, M, N, K,
            "ok" if ok else "WRONG"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
