#!/bin/bash
# kpm_dos_mpi_outputs_test.sh MPIEXEC KPM_DOS SOURCE_DIR NP...: the LDOS of all rows of a layer
# and A(k, E) under `mpirun -np NP` equal the files of the plain 1-process run (issue 17), for
# each NP given (the serial files made once; NP = 1 runs the first case only: one rank is the
# serial code path).
# Under mpirun every rank fills its own rows of the unit-vector / plane-wave starts and
# writes its own LDOS rows of the result file (collective HDF5 hyperslabs).
#   - ti_tiny (dots, disorder, 4x4x3) --ldos layer:0 with the --ldos-map-energy map, sell,
#     uneven weights, 2 realizations (per-row error bars written per rank);
#   - ti_tiny --ldos with unsorted and repeated rows, some on no rank but one (the ranks
#     without any write nothing), --matrix free (whole x-planes per rank);
#   - graphene_tiny --ldos layer:0 (the sheet: every row);
#   - A(k, E): clean graphene 6x6 --k-path G-K-M (the bands from the stencil on rank 0) and
#     ti_tiny --k-points with dots and disorder, --matrix free;
#   - the LDOS of a layer (sell) and A(k, E) (free) on 2-D process grids 1x2, 1x3, 2x2;
#   - the collective LDOS write on a full disk: exit 3, one message, no crash, no file.
# Few wide blocks (--vectors: the block width) keep the halo exchanges, slow on oversubscribed
# ranks, few. Bounds by Gershgorin (identical on every rank count: a min/max of the same discs), so the
# runs differ only in the association of the halo sums and of the dot products over the
# ranks: each vector entry differs by a few eps per product (<= 13 per row) and the stable
# Chebyshev recurrence carries that linearly, so a moment (|mu_n| <= 1) differs by at most
# ~ M * 13 * eps = 64 * 13 * 1.1e-16 ~ 1e-13: allowed TOL_MU = 1e-12. rho(E) is
# sum_n (2 g_n mu_n T_n(x)) / (a pi sqrt(1 - x^2)) with sqrt(1 - x^2) >= sin(pi / 2K) ~ pi / 2K
# on the Chebyshev grid: |d rho| <= 2 M TOL_MU 2K / (pi^2 a), computed below from the file's M,
# K and a. The map is a sum of `orbitals` rho values; /ldos/rows and the momenta are exact.
set -u
mpiexec=$1 kpm=$2 src=$3
shift 3
ranks="$*"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
run_mpi() { timeout 60 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$kpm" "$@"; }

compare() {  # compare serial.h5 mpi.h5 label
  "$py" - "$1" "$2" "$3" <<'PY' || exit 1
import sys, math, h5py, numpy as np
a, b, label = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), sys.argv[3]
m = int(a["kpm"].attrs["num_moments"])
scale = float(a["kpm"].attrs["scale_a"])
tol_mu = 1e-12
def tol_rho(k):
    return 4.0 * m * k * tol_mu / (math.pi ** 2 * scale)
names = []
a.visit(lambda n: names.append(n) if isinstance(a[n], h5py.Dataset) else None)
checked = 0
for name in names:
    if name not in b:
        print(f"FAIL: {label}: {name} missing under mpirun"); sys.exit(1)
    x, y = a[name][()], b[name][()]
    if x.shape != y.shape:
        print(f"FAIL: {label}: {name} shape {y.shape}, serial {x.shape}"); sys.exit(1)
    if x.dtype.kind in "iu" or name.endswith(("/k", "/path_distance", "/energy")):
        tol = 0.0 if x.dtype.kind in "iu" else 1e-15 * max(1.0, float(np.max(np.abs(x))))
    elif "moments" in name or name.endswith("bands"):
        tol = tol_mu if "moments" in name else 1e-12
    else:  # rho, A, their error bars, the map (a sum of `orbitals` rho values)
        k = int(a["dos/energy"].shape[0])  # K: every spectrum is on the run's one grid
        tol = tol_rho(k) * (4 if name.startswith("ldos_map") else 1)
    d = float(np.max(np.abs(x - y))) if x.size else 0.0
    if not d <= tol:
        print(f"FAIL: {label}: {name} differs by {d:.3e} > {tol:.3e}"); sys.exit(1)
    checked += 1
for attr in ("num_moments", "num_vectors", "trace", "num_rows"):
    if a["kpm"].attrs[attr] != b["kpm"].attrs[attr]:
        print(f"FAIL: {label}: /kpm {attr} differs"); sys.exit(1)
ranks = int(b["provenance"].attrs["ranks"])
print(f"ok: {label}: {checked} datasets equal on {ranks} rank(s)")
PY
}

n_case=0
check() {  # check LABEL ARGS...: the serial run once, then each NP, compared; "WEIGHTS" -> uneven
  # weights, "GRID" -> a 2-D process grid of NP ranks (x, y tiles: each rank's rows are
  # several canonical runs), "auto" in the serial run
  label=$1
  shift
  n_case=$((n_case + 1))
  serial_args=("${@//WEIGHTS/}")
  "$kpm" "${serial_args[@]//GRID/auto}" --bounds gershgorin -q -o "$work/serial.h5" > "$work/log" 2>&1 || { cat "$work/log"; fail "serial $label"; }
  for np in $ranks; do
    [ "$np" -gt 1 ] || [ "$n_case" -eq 1 ] || continue
    weights=$(echo "1:2.75:0.5:1.3" | cut -d: -f1-"$np")
    grid=$(echo "1x1 1x2 1x3 2x2" | cut -d' ' -f"$np")
    mpi_args=("${@//WEIGHTS/$weights}")
    run_mpi "${mpi_args[@]//GRID/$grid}" --bounds gershgorin -q -o "$work/mpi.h5" > "$work/log" 2>&1 \
      || { cat "$work/log"; fail "$label on $np ranks: exit status $?"; }
    compare "$work/serial.h5" "$work/mpi.h5" "$label"
  done
}

ti=$src/inputs/test/ti_tiny.ini
gr=$src/inputs/test/graphene_tiny.ini
check "ti layer:0 map, 2 realizations, uneven weights" -c "$ti" --ldos layer:0 --ldos-map-energy 0.3 \
  --realizations 2 --weights WEIGHTS --vectors 32
check "ti unsorted repeated rows, free" -c "$ti" --ldos "191,5,100-103,5,0" --matrix free --vectors 3
check "graphene layer:0" -c "$gr" --ldos layer:0 --vectors 72
check "graphene clean G-K-M" -c "$gr" --dot-potential 0 --disorder 0 --k-path G-K-M --vectors 12
check "ti dots k-points, free" -c "$ti" --k-points "0,0;1,2;2,2;3,1" --matrix free --vectors 48
check "ti layer:0 on a 2-D grid" -c "$ti" --ldos layer:0 --decomposition GRID --vectors 48
check "ti dots k-points on a 2-D grid, free" -c "$ti" --k-points "0,0;1,2" --matrix free \
  --decomposition GRID --vectors 32

# The collective LDOS write on a full disk (a small tmpfs, where root may mount one): every
# rank ends with exit 3 and the message once, no crash at MPI_Finalize (the descriptors of
# the abandoned file are pointed at memory before HDF5 closes it), no partial file.
mkdir "$work/tiny"
if mount -t tmpfs -o size=512k tmpfs "$work/tiny" 2>/dev/null; then
  trap 'umount "$work/tiny" 2>/dev/null; rm -rf "$work"' EXIT
  dd if=/dev/zero of="$work/tiny/filler" bs=1k count=504 status=none 2>/dev/null
  np=2
  run_mpi -c "$ti" --lattice 8x8x3 --ldos layer:0 --vectors 64 -q -o "$work/tiny/r.h5" > "$work/log" 2>&1
  rc=$?
  [ "$rc" -eq 3 ] || { cat "$work/log"; fail "full disk under mpirun: exit status $rc, expected 3"; }
  [ "$(grep -c "cannot write '$work/tiny/r.h5'" "$work/log")" -eq 1 ] || { cat "$work/log"; fail "full disk: the message not once"; }
  ! grep -q "Segmentation\|signal 11\|MPI_ABORT" "$work/log" || { cat "$work/log"; fail "full disk: a crash"; }
  [ "$(ls -A "$work/tiny")" = filler ] || fail "full disk: files left: $(ls -A "$work/tiny")"
  echo "ok: LDOS on a full disk under mpirun: exit 3, one message, nothing left"
else
  echo "note: no tmpfs can be mounted here (not root?): the full-disk case is not run"
fi
echo PASS
