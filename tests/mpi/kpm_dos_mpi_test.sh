#!/bin/bash
# kpm_dos_mpi_test.sh MPIEXEC KPM_DOS SOURCE_DIR NP: `kpm-dos` under `mpirun -np NP` gives the
# moments of the plain 1-process run (docs/scaling.md), and a bad input seen by one rank
# ends every rank fast with the message once.
#   - ti 4x4x3 (x periodic, dots, disorder) and graphene_tiny: --matrix sell and free, every
#     --comm-mode, equal and uneven weights (1:2.75:0.5:1.3 cut to NP), --weights auto,
#     --reduce-every-sweep once, --bounds gershgorin once (each rank scans its own rows);
#     /kpm/moments_per_vector and /kpm/moments equal to 1e-12
#     (each moment is (1/N) times a sum of N ~ 10^2 products of O(1) numbers taken in
#     another order, propagated through M = 64 stable Chebyshev steps: a few 1e-14 here).
#   - --output in a missing directory: only rank 0 checks it (rank 0 writes); every rank
#     must leave with the exit status of the 1-process run (3, an I/O error), the message
#     printed once, within 20 s.
set -u
mpiexec=$1 kpm=$2 src=$3 np=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
run_mpi() { timeout 60 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$kpm" "$@"; }

weights_uneven=$(echo "1:2.75:0.5:1.3" | cut -d: -f1-"$np")
compare() {  # compare serial.h5 other.h5 label
  "$py" - "$1" "$2" "$3" <<'PY' || exit 1
import sys, h5py, numpy as np
a, b, label = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), sys.argv[3]
for key in ("kpm/moments", "kpm/moments_per_vector"):
    if key not in a:
        continue
    d = float(np.max(np.abs(a[key][()] - b[key][()])))
    if not d < 1e-12:
        print(f"FAIL: {label}: {key} differs by {d:.3e}")
        sys.exit(1)
print(f"ok: {label}: ranks = {b['provenance'].attrs['ranks']}, max |diff| <= 1e-12")
PY
}

for input in ti_tiny graphene_tiny; do
  for matrix in sell free; do
    "$kpm" -c "$src/inputs/test/$input.ini" --matrix "$matrix" -q -o "$work/serial.h5" > /dev/null || fail "serial $input $matrix"
    for mode in vector overlap task; do
      for weights in "" "$weights_uneven"; do
        label="$input $matrix $mode weights='$weights'"
        run_mpi -c "$src/inputs/test/$input.ini" --matrix "$matrix" --comm-mode "$mode" --weights "$weights" -q \
          -o "$work/mpi.h5" > "$work/log" 2>&1 || { cat "$work/log"; fail "$label: exit status $?"; }
        compare "$work/serial.h5" "$work/mpi.h5" "$label"
      done
    done
    label="$input $matrix auto weights, reduce every sweep"
    run_mpi -c "$src/inputs/test/$input.ini" --matrix "$matrix" --weights auto --reduce-every-sweep -q \
      -o "$work/mpi.h5" > "$work/log" 2>&1 || { cat "$work/log"; fail "$label"; }
    compare "$work/serial.h5" "$work/mpi.h5" "$label"
  done
done

# --weights auto probes each rank's operator on the rows one rank owns under equal weights
# (ti 32x32x18: 73 728 rows in x-planes of 2 304; a fixed 65 536-row probe sat in a CPU's cache
# and was launch-bound on a GPU, handing the CPU rank most rows beside a GPU, issue 36).
if [ "$np" -ge 2 ]; then
  share=$(( 73728 / np / 2304 * 2304 ))
  run_mpi --model ti --lattice 32x32x18 --matrix free --moments 4 --vectors 1 --weights auto \
    -o "$work/auto.h5" > "$work/log" 2>&1 || { cat "$work/log"; fail "auto weights probe run"; }
  grep -q "SpMMV rate on the same $share rows" "$work/log" ||
    { grep weights "$work/log"; fail "--weights auto probe: expected the equal share of $share rows"; }
  echo "ok: --weights auto probed $share rows per rank"
  # each rank's sweep time split (pack, local, remote, wait), one line per rank (<= 8 ranks);
  # every rank has a neighbour on this one node: its halo goes through the shared window
  n=$(grep -cE "^rank [0-9]+ \(CPU\): [0-9]+ rows, [1-9][0-9]* peer\(s\) through shared memory; per sweep pack [0-9.]+ ms, local [0-9.]+ ms, remote [0-9.]+ ms, halo wait [0-9.]+ ms$" "$work/log")
  [ "$n" -eq "$np" ] || { grep "^rank" "$work/log"; fail "expected $np per-rank sweep lines, got $n"; }
fi

# Gershgorin bounds from each rank's own rows (min/max over the ranks) = the serial bounds.
"$kpm" -c "$src/inputs/test/ti_tiny.ini" --bounds gershgorin -q -o "$work/serial.h5" > /dev/null || fail "serial gershgorin"
run_mpi -c "$src/inputs/test/ti_tiny.ini" --bounds gershgorin --weights "$weights_uneven" -q -o "$work/mpi.h5" \
  > "$work/log" 2>&1 || { cat "$work/log"; fail "gershgorin"; }
compare "$work/serial.h5" "$work/mpi.h5" "ti_tiny sell gershgorin bounds"

# A bad input seen by rank 0 only.
"$kpm" -c "$src/inputs/test/ti_tiny.ini" -o "$work/no/such/dir/out.h5" > /dev/null 2>&1
serial_rc=$?
[ "$serial_rc" -ne 0 ] || fail "the 1-process run accepted an unwritable --output"
start=$(date +%s)
out=$(timeout 20 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$kpm" -c "$src/inputs/test/ti_tiny.ini" \
      -o "$work/no/such/dir/out.h5" 2>&1)
rc=$?
echo "$out" | grep -v "^\[topokpm\] PERFWARNING"
[ "$rc" -ne 124 ] || fail "job still running after 20 s (hung)"
[ "$rc" -eq "$serial_rc" ] || fail "exit status $rc, expected $serial_rc as without mpirun"
n=$(grep -c "no/such/dir" <<<"$out")
[ "$n" -eq 1 ] || fail "the error message was printed $n times, expected once"
echo "ok: unwritable output refused on $np rank(s) in $(( $(date +%s) - start )) s"
echo PASS
