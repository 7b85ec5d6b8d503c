/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_devices.c — `blocktune devices [--json]`: every device of every backend that loaded, the
 * default marked, and why each backend that did not load is missing.
 */
#include "cli.h"
#include "cli_opts.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
            "usage: blocktune devices [--json]\n\n"
            "Lists every device of every compute backend that loads on this machine (OpenCL,\n"
            "CUDA when present), in the order --device numbers them, and marks with '*' the\n"
            "default device (the first GPU, else the first CPU) that commands use when no\n"
            "--device is given. Backends are loaded at run time: one whose runtime is missing is\n"
            "not listed, and the reason is printed.\n\n"
            "options:\n"
            "  --json      print every field of every device (what the device reports, in the\n"
            "              hardware-table layout under \"props\") and the backends that did not\n"
            "              load, as one JSON object\n"
            "  -h, --help  this help\n\n"
            "environment:\n"
            "  BLOCKTUNE_CUDA_LIBRARY    the CUDA driver library to load instead of libcuda.so.1\n"
            "  BLOCKTUNE_NVRTC_LIBRARY   the NVRTC library to load instead of libnvrtc.so.13/.12\n"
            "  BLOCKTUNE_OPENCL_LIBRARY  the OpenCL library to load instead of libOpenCL.so.1\n\n"
            "examples:\n"
            "  blocktune devices\n"
            "  blocktune devices --json | python3 -m json.tool\n");
    bt_cli_exit_help(f, "the list could not be written");
}

/* "1.5 GiB"-style size into buf. */
static const char *human(int64_t bytes, char *buf, size_t size)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (v == (double)(int64_t)v)
        snprintf(buf, size, "%lld %s", (long long)v, units[u]);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

static void print_text(const bt_device_list *devs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const bt_device_info *d = bt_device_list_at(devs, i);
        const bt_gpu *g = &d->props;
        char a[32], b[32], c[32];
        printf("%c %-10s %-4s %s\n", d->is_default ? '*' : ' ', d->id, d->is_gpu ? "GPU" : "CPU",
               d->name);
        printf("    platform %s; %s; driver %s; %s\n", d->platform, d->api_version,
               d->driver_version, d->compiler_version);
        printf("    %d compute units at %.0f MHz, work-group <= %d, warp %d, local memory %s, "
               "cache %s, memory %s\n",
               g->sm_count, g->clock_mhz, g->max_threads_per_block, g->warp_size,
               human(g->smem_per_block, a, sizeof a), human(g->l2_bytes, b, sizeof b),
               human(g->mem_bytes, c, sizeof c));
        if (g->cc_major)
            printf("    compute capability %d.%d\n", g->cc_major, g->cc_minor);
        if (d->uuid[0])
            printf("    uuid %s\n", d->uuid);
        if (d->table_row[0])
            printf("    hardware table row %s\n", d->table_row);
    }
    if (n)
        printf("(* = the default device)\n");
}

/* The JSON object of one device: every field of bt_device_info. */
static json_t *device_json(const bt_device_info *d)
{
    const bt_gpu *g = &d->props;
    json_t *peaks = json_array();
    for (int k = 0; k < BT_PEAK__COUNT; k++)
        json_array_append_new(peaks, json_real(g->peak_tflops[k]));
    json_t *props = json_pack(
        "{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:I,"
        " s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:o, s:s}",
        "name", g->name, "aliases", g->aliases, "vendor", g->vendor, "arch", g->arch, "cc_major",
        g->cc_major, "cc_minor", g->cc_minor, "sm_count", g->sm_count, "warp_size", g->warp_size,
        "max_threads_per_sm", g->max_threads_per_sm, "max_warps_per_sm", g->max_warps_per_sm,
        "max_blocks_per_sm", g->max_blocks_per_sm, "max_threads_per_block",
        g->max_threads_per_block, "regs_per_sm", g->regs_per_sm, "regs_per_block",
        g->regs_per_block, "max_regs_per_thread", g->max_regs_per_thread, "reg_alloc_unit",
        g->reg_alloc_unit, "smem_per_sm", (json_int_t)g->smem_per_sm, "smem_per_block",
        (json_int_t)g->smem_per_block, "smem_per_block_optin", (json_int_t)g->smem_per_block_optin,
        "smem_reserved_per_block", (json_int_t)g->smem_reserved_per_block, "l2_bytes",
        (json_int_t)g->l2_bytes, "mem_bytes", (json_int_t)g->mem_bytes, "mem_bw_gbps",
        g->mem_bw_gbps, "clock_mhz", g->clock_mhz,
        /* In bt_peak_kind order (fp64, fp32, fp16, tf32_tc, fp16_tc, bf16_tc, fp8_tc, int8_tc,
         * fp64_tc); 0 where unknown. */
        "peak_tflops", peaks, "source", g->source);
    return json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:o, s:s}", "id",
                     d->id, "backend", d->backend, "index", d->index, "name", d->name, "vendor",
                     d->vendor, "platform", d->platform, "api_version", d->api_version,
                     "driver_version", d->driver_version, "compiler_version", d->compiler_version,
                     "uuid", d->uuid, "is_gpu", d->is_gpu, "is_default", d->is_default, "props",
                     props, "table_row", d->table_row);
}

static int print_json(const bt_device_list *devs, size_t n)
{
    json_t *root = json_object();
    json_t *arr = json_array();
    json_t *missing = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = device_json(bt_device_list_at(devs, i));
        if (!o) {
            fprintf(stderr, "blocktune devices: cannot encode %s as JSON\n", bt_device_list_at(devs, i)->id);
            json_decref(arr);
            json_decref(missing);
            json_decref(root);
            return 1;
        }
        json_array_append_new(arr, o);
    }
    for (int i = 0, nb = bt_backend_count(); i < nb; i++) {
        const char *name = NULL, *reason = NULL;
        if (bt_backend_status(i, &name, &reason) == 0 && reason)
            json_array_append_new(missing,
                                  json_pack("{s:s, s:s}", "backend", name, "reason", reason));
    }
    json_object_set_new(root, "devices", arr);
    json_object_set_new(root, "unavailable", missing);
    int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0 ? 0 : 1;
    printf("\n");
    json_decref(root);
    return rc;
}

int bt_cmd_devices(int argc, char **argv)
{
    static const bt_cli_opt opts[] = {{"json", 0, 0, 1}};
    int json = 0;
    bt_cli_parser P;
    bt_cli_begin(&P, "devices", opts, 1, 0, argc, argv);
    for (int id; (id = bt_cli_next(&P)) != BT_CLI_END;) {
        if (id == BT_CLI_HELP) {
            help(stdout);
            return 0;
        }
        if (id == BT_CLI_ARG)
            return bt_cli_usage_error("devices", "unexpected argument '%s'", P.value);
        if (id == BT_CLI_ERROR)
            return BT_EXIT_USAGE;
        json = 1;
    }
    bt_device_list *devs = NULL;
    bt_diag diag = {0};
    bt_status st = bt_devices_list(&devs, &diag);
    if (st != BT_OK)
        return bt_cli_fail(st, &diag);
    size_t n = bt_device_list_count(devs);
    int rc = 0;
    if (json) {
        rc = print_json(devs, n);
    } else if (n == 0) {
        /* Not a failure: the machine simply has no device; say why each backend is missing. */
        printf("no devices: %s\n", diag.msg[0] ? diag.msg : "no backend loaded");
    } else {
        print_text(devs, n);
        for (int i = 0, nb = bt_backend_count(); i < nb; i++) {
            const char *name = NULL, *reason = NULL;
            if (bt_backend_status(i, &name, &reason) == 0 && reason)
                printf("(%s not loaded: %s)\n", name, reason);
        }
    }
    bt_device_list_destroy(devs);
    return rc;
}
