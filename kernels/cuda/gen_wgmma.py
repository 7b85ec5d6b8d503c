#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gen_wgmma.py — writes the wgmma wrappers between the GENERATED markers of gemm_wgmma.cu and of
wgmma.cuh (gemm_wgmma_ldg.cu's; the same text: gemm_wgmma.cu keeps its own copy because its
source hash keys the shipped wisdom).

One wrapper per instruction width N (m64nNk16, fp32 accumulators, A and B from shared memory
through descriptors, B transposed: row-major B is N-contiguous in shared memory). Each thread
holds N/2 accumulators, named one by one in the asm statement, which is why this is generated.
Run after changing the widths: python3 kernels/cuda/gen_wgmma.py
"""
import pathlib
import re

WIDTHS = (64, 128, 256)


def wrapper(n):
    nr = n // 2
    regs = ", ".join("%%%d" % i for i in range(nr))
    regs_lines = []
    line = ""
    for tok in regs.split(", "):
        if len(line) + len(tok) > 60:
            regs_lines.append(line)
            line = ""
        line += tok + ", "
    regs_lines.append(line)
    regs_lines[-1] = regs_lines[-1].rstrip(", ")
    regs_src = "\n".join('                 "%s"' % l for l in regs_lines)
    outs = ['"+f"(d[%d])' % i for i in range(nr)]
    outs_src = ",\n".join("                   " + ", ".join(outs[i:i + 6]) for i in range(0, nr, 6))
    return f"""__device__ __forceinline__ void wgmma_n{n}(float (&d)[{nr}], unsigned long long da,
                                           unsigned long long db)
{{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nr + 2}, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k16.f32." WG_AB " {{"
{regs_src}
                 "}}, %{nr}, %{nr + 1}, p, 1, 1, 0, 1;\\n}}\\n"
                 :
{outs_src}
                 : "l"(da), "l"(db), "r"(1));
}}"""


def main():
    body = "\n".join(wrapper(n) for n in WIDTHS)
    for name in ("gemm_wgmma.cu", "wgmma.cuh"):
        path = pathlib.Path(__file__).with_name(name)
        text = path.read_text()
        new = re.sub(r"(/\* GENERATED BEGIN.*?\*/\n).*?(/\* GENERATED END \*/)",
                     lambda m: m.group(1) + body + "\n" + m.group(2), text, flags=re.S)
        path.write_text(new)


if __name__ == "__main__":
    main()
