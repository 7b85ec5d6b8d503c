"""gemm_smallm_frags.py — checks, on the host, the mma.sync fragment mappings that
gemm_smallm_nt.cu and gemm_smallm.cu document in their file-top comments: one warp's K steps are
emulated lane by lane (each lane's loads, the words it hands to mma as written in the kernels),
with an m16n8k16 built from the PTX ISA's fragment tables, and the accumulators mapped back to C
through the kernels' MapNT / MapKN; the result must equal the product exactly (small integers)
and every element of the tile must be written exactly once. Run: python3 gemm_smallm_frags.py
(exit status 0 when every case holds; tests/cli/smallm.sh runs it).
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
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
