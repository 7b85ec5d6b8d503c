/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvrtc_log.c — prints the log NVRTC gives for a small kernel compiled for sm_90, and what the
 * ptxas resource parser reads from it: the check that `plan --exact` and the tuner's resource
 * columns work with the NVRTC of the machine it runs on.
 */
#include "backends/cuda/nvrtc.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    const char *src = "extern \"C\" __global__ void probe(float *o, int n)\n"
                      "{\n"
                      "    __shared__ float s[256];\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "    s[threadIdx.x] = i;\n"
                      "    __syncthreads();\n"
                      "    if (i < n) o[i] = s[255 - threadIdx.x];\n"
                      "}\n";
    bt_diag d = {0};
    if (!bt__nvrtc_available(&d)) {
        printf("no NVRTC: %s\n", d.msg);
        return 77;
    }
    int maj = 0, min = 0;
    bt__nvrtc_version(&maj, &min, NULL);
    bt__blob cubin = {0};
    char *log = NULL;
    bt_status st = bt__nvrtc_compile(src, NULL, 0, NULL, 9, 0, false, &cubin, &log, &d);
    printf("NVRTC %d.%d: compile %s (%s), %zu bytes of cubin\n--- log ---\n%s\n--- end ---\n", maj,
           min, bt_err_name(st), d.msg, cubin.size, log ? log : "(none)");
    int regs = -1;
    int64_t spill = -1, smem = -1, stack = -1;
    st = bt__nvrtc_resources(log, "probe", &regs, &spill, &smem, &stack);
    printf("parsed: %s regs=%d spill=%lld smem=%lld stack=%lld\n", bt_err_name(st), regs,
           (long long)spill, (long long)smem, (long long)stack);
    free(log);
    free(cubin.data);
    return st == BT_OK ? 0 : 1;
}
