#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_mpi.sh — issue 19 item 1 on the one H200: the CUDA path under MPI, for correctness only
# (2 ranks bound to the same GPU, so no speed-up is claimed): vector_add exhaustive (every valid
# config) with one process and with 2 ranks, then a 2-rank sweep; expected: the 2-rank store holds
# the same configs with the same statuses as one process's (each once), rows from both ranks
# (extra_json {"mpi": {"rank": 0|1, ...}}), one winner per key, rc 0 everywhere; a winner within
# the noise of one process's (the same config or a tie).
#
# The device has no Open MPI: Debian 12's (4.1.4; its binaries need glibc 2.36, the device has
# 2.39) is packed here into .carry/ompi (about 30 MB) and relocated with Open MPI's installdirs
# variables (OPAL_PREFIX, OPAL_LIBDIR, OPAL_PKGLIBDIR for the MCA components, OPAL_PKGDATADIR for
# the help files, OPAL_SYSCONFDIR for openmpi-mca-params.conf) and PMIx's component path; one
# node needs no orted (mpirun starts the ranks itself), only orterun. Here, before the run:
#   ./dev.sh build   (or cmake -DBT_MPI=ON ...; build/blocktune links libmpi.so.40)
#   bash bench/experiments/h200_mpi.sh pack
#   device run, carrying build and .carry/ompi: bash bench/experiments/h200_mpi.sh
set -u
D=$PWD/.carry/ompi
if [ "${1:-}" = pack ]; then
    L=/usr/lib/x86_64-linux-gnu
    rm -rf "$D" && mkdir -p "$D/bin" "$D/lib" "$D/etc" "$D/share"
    cp /usr/bin/orterun "$D/bin/mpirun"
    cp -r $L/openmpi/lib/openmpi3 "$D/lib/openmpi3"
    cp -r $L/pmix2/lib/pmix "$D/lib/pmix"
    cp -r /usr/share/openmpi "$D/share/openmpi"
    cp -r /usr/share/pmix "$D/share/pmix" 2>/dev/null
    cp /etc/openmpi/* "$D/etc/"
    # every library the launcher, blocktune and the components load, but glibc's own
    for f in "$D/bin/mpirun" build/blocktune "$D"/lib/openmpi3/*.so "$D"/lib/pmix/*.so; do
        ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
    done | sort -u | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
        while read -r so; do cp -L "$so" "$D/lib/"; done
    du -sh "$D"
    exit 0
fi
BT_RUN=mpi . bench/device_env.sh
[ -x "$D/bin/mpirun" ] || { echo "no $D: run 'bash bench/experiments/h200_mpi.sh pack' here first"; exit 1; }
export PATH="$D/bin:$PATH" LD_LIBRARY_PATH="$D/lib:${LD_LIBRARY_PATH:-}"
export OPAL_PREFIX=$D OPAL_EXEC_PREFIX=$D OPAL_BINDIR=$D/bin OPAL_LIBDIR=$D/lib
export OPAL_PKGLIBDIR=$D/lib/openmpi3 OPAL_DATADIR=$D/share OPAL_PKGDATADIR=$D/share/openmpi
export OPAL_SYSCONFDIR=$D/etc PMIX_MCA_mca_base_component_path=$D/lib/pmix
export PMIX_INSTALL_PREFIX=$D OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export BLOCKTUNE_CACHE_DIR="$OUT/cache"
mpirun --version | head -1 | tee "$OUT/summary.txt"
q=(--warmup-ms 5 --rep-ms 20 --device cuda:0)
rows() { python3 -c "import sqlite3,sys; [print(*r, sep='|') for r in sqlite3.connect(sys.argv[1]).execute(
  'SELECT key, config_json, status FROM measurements ORDER BY key, config_json')]" "$1"; }
log "vector_add, one process"
build/blocktune tune vector_add --n 16777216 "${q[@]}" --store "$OUT/one.db" > "$OUT/one.txt" 2>&1
echo "one process rc=$?" | tee -a "$OUT/summary.txt"
log "vector_add, 2 ranks on cuda:0"
t0=$(date +%s)
mpirun --enable-recovery --oversubscribe -np 2 build/blocktune tune vector_add --n 16777216 "${q[@]}" \
    --store "$OUT/two.db" > "$OUT/two.txt" 2> "$OUT/two.err"
echo "2 ranks rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
[ "$(rows "$OUT/one.db")" = "$(rows "$OUT/two.db")" ] && echo "stores equal: yes" | tee -a "$OUT/summary.txt" \
    || echo "stores equal: NO" | tee -a "$OUT/summary.txt"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print('rows', c.execute('SELECT count(*) FROM measurements').fetchone()[0], 'by rank', c.execute('SELECT extra_json, count(*) FROM measurements GROUP BY extra_json').fetchall(), 'winners', c.execute('SELECT count(*) FROM winners').fetchone()[0])" "$OUT/two.db" | tee -a "$OUT/summary.txt"
grep -A2 "^Winner" "$OUT/one.txt" "$OUT/two.txt" | tee -a "$OUT/summary.txt"
log "softmax sweep of rows, 2 ranks"
mpirun --enable-recovery --oversubscribe -np 2 build/blocktune tune softmax --rows 1024,4096 --cols 4096 \
    "${q[@]}" --store "$OUT/sweep.db" > "$OUT/sweep.txt" 2> "$OUT/sweep.err"
echo "sweep rc=$?" | tee -a "$OUT/summary.txt"
tail -6 "$OUT/sweep.txt" | tee -a "$OUT/summary.txt"
