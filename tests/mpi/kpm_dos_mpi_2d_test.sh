#!/bin/bash
# kpm_dos_mpi_2d_test.sh MPIEXEC KPM_DOS SOURCE_DIR CASE: the 2-D (x, y) decomposition of
# `kpm-dos` under mpirun (--decomposition PXxPY, docs/scaling.md), one CASE per ctest entry:
#   grids       ti_tiny (4x4x3, x periodic, dots, disorder) and graphene_tiny (6x6 periodic),
#               --matrix sell and free, process grids 2x1, 1x2 and 2x2, the three comm modes
#               rotated over the grids so every (input, matrix) sees every mode and every grid
#               sees every mode: /kpm/moments and /kpm/moments_per_vector equal the 1-process
#               file to 1e-12. Tolerance: each moment is (1/N) sum over N ~ 10^2 rows of O(1)
#               products; on a tile the local and remote parts of a row and the dot sums are
#               added in another order (a few eps = 2.2e-16 relative per sweep), and the
#               Chebyshev recurrence (|T_n| <= 1) lets such perturbations grow at most
#               linearly: M = 64 moments give <= ~64 x 10 eps ~ 1.4e-13; 1e-12 keeps a margin
#               (measured ~1e-15 .. 6e-15). A start vector filled in the permuted order
#               instead of per canonical row changes the moments by 0.4 (measured, ti 2x2).
#               Also: `auto` takes 2d where the grid's halo is smaller (ti 4x8x3 on 2 ranks:
#               1x2), --decomposition 2d with --weights is refused with one message.
#   checkpoint  a 2x2 run interrupted by SIGUSR1 writes its checkpoint (each rank its tile's
#               row runs, canonical order); --restart on 2 ranks with --decomposition 1d gives
#               the uninterrupted moments to rounding, 10 M eps (as in
#               kpm_dos_mpi_checkpoint_test.sh: M steps of a stable recurrence).
set -u
mpiexec=$1 kpm=$2 src=$3 case=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; [ -f "$work/log" ] && cat "$work/log"; exit 1; }
run_mpi() { local np=$1; shift; timeout 300 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$kpm" "$@"; }

compare() {  # compare A.h5 B.h5 TOLERANCE LABEL
  "$py" - "$@" <<'PY' || exit 1
import sys, h5py, numpy as np
a, b, tol, label = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), float(sys.argv[3]), sys.argv[4]
worst = 0.0
for key in ("kpm/moments", "kpm/moments_per_vector"):
    if key in a:
        worst = max(worst, float(np.max(np.abs(a[key][()] - b[key][()]))))
if not worst <= tol:
    print(f"FAIL: {label}: max |diff| {worst:.3e} > {tol:g}"); sys.exit(1)
print(f"ok: {label}: decomposition {b['provenance'].attrs['decomposition']}, max |diff| = {worst:.3e}")
PY
}

case "$case" in
grids)
  modes=(vector overlap task)
  k=0
  for input in ti_tiny graphene_tiny; do
    for matrix in sell free; do
      "$kpm" -c "$src/inputs/test/$input.ini" --matrix "$matrix" -q -o "$work/serial.h5" > /dev/null ||
        fail "serial $input $matrix"
      g=0
      for grid in 2x1 1x2 2x2; do
        np=$(( ${grid%x*} * ${grid#*x} ))
        mode=${modes[$(( (k + g) % 3 ))]}
        label="$input $matrix grid $grid $mode"
        run_mpi "$np" -c "$src/inputs/test/$input.ini" --matrix "$matrix" --decomposition "$grid" \
          --comm-mode "$mode" -q -o "$work/mpi.h5" > "$work/log" 2>&1 || fail "$label: exit status $?"
        compare "$work/serial.h5" "$work/mpi.h5" 1e-12 "$label"
        g=$((g + 1))
      done
      k=$((k + 1))
    done
  done
  # auto: ti 4x8x3 on 2 ranks: 1x2 tiles of 4x4 sites (x periodic inside the tile) exchange
  # 2 x 4 site columns, 2x1 slabs 2 x 8: auto takes the 1x2 grid. (On a square lattice and
  # 4 ranks 2x2 and 4x1 tie, 2 L columns each, and auto keeps 1d.)
  "$kpm" -c "$src/inputs/test/ti_tiny.ini" --lattice 4x8x3 -q -o "$work/serial.h5" > /dev/null || fail "serial 4x8x3"
  run_mpi 2 -c "$src/inputs/test/ti_tiny.ini" --lattice 4x8x3 -o "$work/mpi.h5" > "$work/log" 2>&1 ||
    fail "auto: exit status $?"
  grep -q "decomposition: 2d, process grid 1 x 2" "$work/log" || fail "auto did not choose the 1x2 grid"
  compare "$work/serial.h5" "$work/mpi.h5" 1e-12 "ti 4x8x3 sell auto"
  out=$(run_mpi 2 -c "$src/inputs/test/ti_tiny.ini" --decomposition 2d --weights 1:2 -o "$work/w.h5" 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] || fail "2d with --weights: exit status $rc, expected 2"
  [ "$(grep -c "needs --decomposition 1d\|need --decomposition 1d" <<<"$out")" -eq 1 ] ||
    fail "2d with --weights: message not printed once: $out"
  echo "ok: --decomposition 2d with --weights refused once"
  ;;
checkpoint)
  moments=4096
  args=(-c "$src/inputs/test/ti_tiny.ini" --lattice 32x32x4 --moments "$moments" --vectors 8)
  rounding=$(awk -v m="$moments" 'BEGIN { printf "%.1e", 10 * m * 2.22e-16 }')
  timeout 300 "$kpm" "${args[@]}" -q -o "$work/full.h5" > /dev/null || fail "1-process run"
  "$mpiexec" --oversubscribe --bind-to none -np 4 "$kpm" "${args[@]}" --decomposition 2x2 -o "$work/int.h5" \
    --checkpoint "$work/ck.h5" --progress-interval 0.05 > "$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 400); do grep -q "  moments " "$work/log" && break; sleep 0.05; done
  grep -q "  moments " "$work/log" || fail "no progress line within 20 s"
  kill -USR1 "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" -eq 75 ] || fail "SIGUSR1: mpirun exit status $rc, expected 75"
  [ -f "$work/ck.h5" ] || fail "no checkpoint written"
  echo "ok: 2x2 stopped by SIGUSR1 $(grep -o 'after [0-9]* of [0-9]* sweeps' "$work/log")"
  run_mpi 2 "${args[@]}" --decomposition 1d -o "$work/int.h5" --checkpoint "$work/ck.h5" --restart "$work/ck.h5" \
    > "$work/log" 2>&1 || fail "restart on 2 ranks, 1d: exit status $?"
  compare "$work/full.h5" "$work/int.h5" "$rounding" "2x2 checkpoint restarted on 1d 2 ranks"
  ;;
*) fail "unknown case $case" ;;
esac
echo PASS
