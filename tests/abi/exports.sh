#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# exports.sh LIB — the shared library exports only the public API: every defined dynamic symbol
# is a bt_ name (no bt__ internal, no helper of a dependency), and the public calls are there.
set -e
lib=$1
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
# (a sanitizer build also exports the runtime's hooks that src/backends/backend.c defines there)
bad=$(echo "$syms" | grep -v '^bt_[a-z0-9]' | grep -v '^__[al]san_default_' || true)
internal=$(echo "$syms" | grep '^bt__' || true)
if [ -n "$bad$internal" ]; then
    echo "exports.sh: $lib exports names outside the public API:"
    echo "$bad$internal" | head -20
    exit 1
fi
n=$(echo "$syms" | wc -l)
for want in bt_version bt_version_number bt_kernel_launch_ex bt_device_wrap_cuda bt_buffer_wrap \
            bt_kernel_lookup bt_tune_options_create bt_config_get bt_gpudb_origin \
            bt_gpudb_write_json bt_report_create bt_report_add_store bt_report_write_html_file \
            bt_store_write_winners_json bt_store_write_measurements bt_wisdom_export_ex \
            bt_simulation_create bt_simulation_add_store bt_simulation_write_json \
            bt_tune_options_error bt_inflight_size bt_inflight_share bt_inflight_clear \
            bt_inflight_get bt_kernel_set_stored_only bt_result_store_note \
            bt_result_set_time_limit_s bt_result_winner_rate bt_result_count \
            bt_report_set_source bt_mpi_cli_begin bt_mpi_cli_end bt_tune_options_set_screen_ms; do
    echo "$syms" | grep -qx "$want" || { echo "exports.sh: $want is not exported"; exit 1; }
done
echo "exports.sh: $n symbols, all bt_ public names"
