#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# options.sh — the rules every subcommand shares (tools/cli_opts.c, docs/cli.md): --opt=value means
# --opt value, -h/--help everywhere with the exit-status table, an unknown option, a missing value
# and a value given to a flag are usage errors (exit 2) naming the option and pointing to
# 'blocktune CMD --help', --json puts JSON alone on stdout, and each subcommand's exit statuses.
# Needs no device (the one tune run fails before it would need one). $1 is the blocktune binary.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# want RC ARGS...: blocktune ARGS exits RC (stdout in $tmp/out, stderr in $tmp/err)
want() {
    local rc_want="$1"
    shift
    "$bt" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq "$rc_want" ] || bad "blocktune $*: exit $rc, want $rc_want: $(head -3 "$tmp/err")"
}
# err_has TEXT: the last command's stderr holds TEXT
err_has() { grep -qF -- "$1" "$tmp/err" || bad "stderr lacks '$1': $(head -3 "$tmp/err")"; }

cmds="plan tune gpus devices simulate cache report"

# --- help everywhere, with the exit statuses ------------------------------------------------------
want 0 --help
grep -q "^exit status" "$tmp/out" || bad "blocktune --help has no exit-status table"
for c in $cmds; do
    for h in -h --help; do
        want 0 "$c" "$h"
        grep -q "^usage: blocktune $c" "$tmp/out" || bad "$c $h: no usage line"
        grep -q "^  2  usage" "$tmp/out" || bad "$c $h: no exit-status table"
    done
done

# --- usage errors name the option and point to the command's help ---------------------------------
for c in $cmds; do
    case $c in
    plan) want 2 plan vector_add --gpu h200 --no-such-option 1
          err_has "unknown option or size --no-such-option" ;;
    tune) want 2 tune vector_add --no-such-option 1 --store none
          err_has "unknown option or size --no-such-option" ;;
    *) want 2 "$c" --no-such-option
       err_has "unknown option" ;;
    esac
    err_has "--no-such-option"
    err_has "see 'blocktune $c --help'"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || bad "$c --no-such-option: not one line"
    [ -s "$tmp/out" ] && bad "$c --no-such-option wrote to stdout"
done
want 2 plan gemm --gpu;               err_has "option --gpu needs a value"
want 2 gpus --gpu-file;               err_has "option --gpu-file needs a value"
want 2 report -o;                     err_has "option -o needs a value"
want 2 simulate x.json --runs;        err_has "option --runs needs a value"
want 2 cache --db;                    err_has "option --db needs a value"
want 2 tune vector_add --budget;      err_has "option --budget needs a value"
want 2 devices --json=yes;            err_has "option --json takes no value"
want 2 plan gemm --gpu h200 --all=1;  err_has "option --all takes no value"
want 2 devices -x;                    err_has "unknown option '-x'"
want 2 devices extra;                 err_has "unexpected argument 'extra'"
# no abbreviations: --gp is not --gpu
want 2 gpus --gp h200;                err_has "unknown option '--gp'"
# strict numbers (tools/cli_num.c) behind = as behind a space
want 2 simulate x.json --runs=1e3;    err_has "--runs wants 1..1000000, got '1e3'"
want 2 cache --db "$tmp/none.db" export --top=0x10 "$tmp/x.json"
err_has "--top takes a count from 1 to 1000, not '0x10'"
want 2 tune vector_add --threads=-1;  err_has "--threads needs a non-negative decimal number"
want 2 cache --db "$tmp/none.db" list --top 3; err_has "'list' does not take --top"

# --- --opt=value is --opt value -------------------------------------------------------------------
# (the model's own time, "model: 0.012 s", left out)
plan() { "$bt" plan "$@" | sed 's/model: [0-9.]* s/model: T s/'; }
plan gemm --gpu h200 --m 256 --n 128 --k 64 --dtype fp16 >"$tmp/a" || bad "plan (spaces) failed"
plan gemm --gpu=h200 --m=256 --n=128 --k=64 --dtype=fp16 >"$tmp/b" || bad "plan (=) failed"
cmp -s "$tmp/a" "$tmp/b" || bad "plan --opt=value differs from --opt value"
plan gemm --gpu h200 --set M=256 --set=N=128 --k 64 --dtype fp16 >"$tmp/c" || bad "plan --set failed"
cmp -s "$tmp/a" "$tmp/c" || bad "plan --set NAME=V differs from --NAME V"
grep -q "M=256 N=128 K=64 dtype=fp16" "$tmp/a" || bad "plan did not take the sizes: $(head -1 "$tmp/a")"
"$bt" gpus --json h200 >"$tmp/g.json" || bad "gpus --json failed"
want 0 gpus --gpu-file="$tmp/g.json" h200
want 0 report --help
"$bt" -- 2>/dev/null; [ $? -eq 2 ] || bad "blocktune -- is not a usage error"
# '--' ends the options: a GPU name after it may start with '-'
want 2 gpus -- --bogus;               err_has "unknown GPU '--bogus'"

# --- --json: JSON alone on stdout ------------------------------------------------------------------
isjson() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" 2>/dev/null ||
           bad "$1: stdout is not one JSON document"; }
want 0 plan vector_add --gpu h200 --n 4096 --json; isjson "plan --json"
want 0 gpus --json;                   isjson "gpus --json"
want 0 devices --json;                isjson "devices --json"
want 0 cache --db="$tmp/s.db" import "$src/tests/data/kt/convolution_milo_A4000.json.gz"
want 0 cache --db "$tmp/s.db" list --json; isjson "cache list --json"
space="$src/tests/data/kt/convolution_milo_A4000.json.gz"
want 0 simulate "$space" --strategy=random --runs=1 --budget=5 --json; isjson "simulate --json"

# --- exit statuses of each subcommand --------------------------------------------------------------
want 2                                 # no command
want 2 no-such-command
want 0 --version
want 2 plan no_such_kernel --gpu h200; err_has "unknown kernel"
want 2 plan gemm --gpu h200 --q 5;    err_has "see 'blocktune plan --help'"
want 2 tune;                           err_has "which kernel?"
want 2 tune vector_add --n 12 --n2 3 --device nosuch:0
want 3 tune vector_add --n 4096 --device nosuch:0 --store none
want 2 gpus h300
want 2 simulate
want 2 simulate "$tmp/missing.json.gz"
want 1 cache --db "$tmp/s.db" show no-such-key
want 1 cache --db "$tmp/s.db" forget all
want 2 cache --db "$tmp/s.db" bogus
want 2 cache --db "$tmp/typo/x.db" list
want 2 report r.json
want 0 report --db "$tmp/s.db" -o "$tmp/r.html"
cp "$tmp/s.db" "$tmp/e.db"
want 0 cache --db "$tmp/e.db" forget all --yes
want 1 report --db "$tmp/e.db" -o "$tmp/r.html"; err_has "nothing to report"
exit $fail
