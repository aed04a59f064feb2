#!/bin/bash
# sparse_direct_mpi_test.sh MPIEXEC KPM_DOS KPM_EIGS NP...: the sparse direct solver's users'
# paths under `mpirun -np NP` (issue 16) against the plain 1-process run, for each NP given:
#   - kpm-dos --ldos ROWS --green ETA (ti with dots and disorder): the energy grid is dealt
#     over the ranks, each energy factored and solved by the same serial code on the same
#     analysis as in the 1-process run, and rho summed over the ranks with exact zeros
#     elsewhere, so /green/rho must equal the 1-process file bit for bit (no tolerance);
#   - kpm-eigs --shift E0 --count k --method shift-invert: one factorization across the ranks
#     (DistributedLU) and Lanczos on the distributed vectors. Each returned value lambda has a
#     measured residual r = ||H v - lambda v|| (in the file); for Hermitian H some eigenvalue
#     lies within r of lambda (Weyl / Bauer-Fike), so a value of the NP-rank run and the same
#     value of the 1-process run differ by at most r_np + r_1 (the pairs matched in order:
#     the same count, ascending). The count must be equal (Kramers pairs whole in both).
set -u
mpiexec=$1 dos=$2 eigs=$3
shift 3
ranks="$*"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "FAIL: /usr/bin/python3 lacks h5py or numpy (scripts/setup_debian.sh installs python3-h5py, python3-numpy, python3-matplotlib)"; exit 1; fi
ti=(--model ti --lattice 4x4x4 --disorder 1.0 --dot-period 2 --dot-radius 1 --dot-potential 0.4)
green=(--ldos 0,5,17,100-103 --green 0.1 --moments 64 --energy-range -9:9 --energy-grid -3:3:31)
# shift-invert on a thinner slab: every solve is 2 broadcasts per supernode, milliseconds each
# on oversubscribed ranks, and Lanczos makes hundreds of them.
shift_args=(--model ti --lattice 4x4x2 --disorder 1.0 --dot-period 2 --dot-radius 1 --dot-potential 0.4
            --shift 0.2 --count 3 --method shift-invert)

"$dos" "${ti[@]}" "${green[@]}" --output "$work/g1.h5" > "$work/g1.txt" 2>&1 || { cat "$work/g1.txt"; fail "serial --green"; }
"$eigs" "${shift_args[@]}" --output "$work/e1.h5" > "$work/e1.txt" 2>&1 || { cat "$work/e1.txt"; fail "serial shift-invert"; }
for np in $ranks; do
  timeout 120 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$dos" "${ti[@]}" "${green[@]}" \
    --output "$work/g$np.h5" > "$work/g$np.txt" 2>&1 || { cat "$work/g$np.txt"; fail "--green on $np ranks"; }
  [ "$np" -eq 1 ] || grep -q "7 rows x 31 energies over $np ranks" "$work/g$np.txt" || fail "--green on $np ranks: no summary line"
  timeout 300 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$eigs" "${shift_args[@]}" \
    --output "$work/e$np.h5" > "$work/e$np.txt" 2>&1 || { cat "$work/e$np.txt"; fail "shift-invert on $np ranks"; }
  "$py" - "$work" "$np" <<'PY' || exit 1
import sys, h5py, numpy as np
work, np_ = sys.argv[1], sys.argv[2]
g1, gn = h5py.File(f"{work}/g1.h5", "r"), h5py.File(f"{work}/g{np_}.h5", "r")
for d in ("/green/rows", "/green/energy", "/green/rho"):
    a, b = g1[d][()], gn[d][()]
    if a.shape != b.shape or not np.array_equal(a, b):
        sys.exit(f"FAIL: {d} on {np_} ranks differs from one process (max |diff| "
                 f"{np.abs(a - b).max() if a.shape == b.shape else 'shape'})")
e1, en = h5py.File(f"{work}/e1.h5", "r"), h5py.File(f"{work}/e{np_}.h5", "r")
v1, vn = e1["/eigs/values"][()], en["/eigs/values"][()]
r1, rn = e1["/eigs/residuals"][()], en["/eigs/residuals"][()]
if len(v1) != len(vn):
    sys.exit(f"FAIL: shift-invert on {np_} ranks found {len(vn)} values, one process {len(v1)}")
excess = np.abs(vn - v1) / (r1 + rn)
if not np.all(np.abs(vn - v1) <= r1 + rn):
    sys.exit(f"FAIL: shift-invert values on {np_} ranks differ beyond r_np + r_1: {vn - v1} vs {r1 + rn}")
print(f"ok: {np_} ranks: /green/rho bitwise equal; shift-invert {len(vn)} values, max |diff| "
      f"{np.abs(vn - v1).max():.2e} <= r_np + r_1 (worst ratio {excess.max():.3f})")
PY
done
echo PASS
