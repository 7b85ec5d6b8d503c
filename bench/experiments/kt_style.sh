#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kt_style.sh — issue 12's device run: the kernels of tests/data written in Kernel Tuner's style
# (C++ names, a template entry, a __constant__ filter, sizes as defines, block_size_x/y as the
# block, the grid as the problem divided by parameters, data and answers from files) tuned
# unmodified on the H200, at the tests' sizes and at Kernel Tuner's example sizes (a 4096² image
# with a 17×17 filter; 2^24 elements). Each tune verifies every config against a baseline config
# or the answers file and checks the boundary sizes the spec lists. About a minute.
# Run from the repository root with build/ and .carry/ carried along:
#   device run: bash bench/experiments/kt_style.sh
set -u
BT_RUN=kt_style . bench/device_env.sh
rm -rf "$BLOCKTUNE_CACHE_DIR"
export TUNE_TIMEOUT=${TUNE_TIMEOUT:-120}
opts="--store none --warmup-ms 10 --rep-ms 40"
t_start=$(date +%s)
tune kt_conv_48 tests/data/kt_conv.json $opts
tune kt_conv_4096 tests/data/kt_conv.json --w 4096 --h 4096 --fw 17 --fh 17 $opts
tune kt_conv_files tests/data/kt_conv_files.json $opts
tune kt_scale_10000 tests/data/kt_scale.json $opts
tune kt_scale_2e24 tests/data/kt_scale.json --n 16777216 $opts
log "whole run $(( $(date +%s) - t_start )) s"
