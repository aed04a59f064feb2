#!/usr/bin/env bash
# --magnetic-flux PHI as a user runs it (issue 34, models.md §9):
#  - refusals with exit 2 and one line naming the option: a torus whose total flux Nx Ny PHI
#    is not an integer (the message names the smallest admissible lattice), a malformed PHI,
#    a model without positions (hr), --matrix free on the GPU (its stencil kernels carry no
#    phases yet);
#  - --matrix auto picks sell; the result records PHI and the gauge (check_field.py);
#  - sell, crs and free (the CPU stencil's field tables), ti and graphene, with dots and
#    disorder: the exported matrix is Hermitian and complex, and the exact-trace moments equal
#    those of numpy's eigenvalues of it;
#  - kpm-eigs and --green take the phases (check_eigs.py / check_green.py against the export);
#  - clean graphene's Landau levels in the KPM DOS (check_field.py --landau), and those of the ti
#    slab's surface Dirac cone in a surface site's LDOS (--surface-landau);
#  - a checkpoint records PHI: a restart with another flux is refused;
#  - mpirun, 1-D and 2-D: the moments equal the serial run's, sell and free.
set -u
dos="$1"; eigs="$2"; mpiexec="${3:-}"
source "$(dirname "$0")/../support/script_lib.sh"
here="$(dirname "$0")"
src="$here/../.."
export OMP_NUM_THREADS=1
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "SKIPPED: /usr/bin/python3 lacks h5py or numpy"; exit 77; fi

# ---- refusals: exit 2, one line on stderr, no file ----
refused() {  # name, expected text, command...
  local name="$1" want="$2"; shift 2
  "$@" --output "$work/refused.h5" > "$work/out.txt" 2> "$work/err.txt"; local rc=$?
  check "$name: exit 2" "[ $rc -eq 2 ] || { echo rc=$rc; cat '$work/err.txt'; false; }"
  check "$name: one line naming it" "[ \$(wc -l < '$work/err.txt') -eq 1 ] && grep -qF -- '$want' '$work/err.txt' || { cat '$work/err.txt'; false; }"
  check "$name: no file" "[ ! -e '$work/refused.h5' ]"
}
refused "non-integer total flux" "--magnetic-flux 1/7 on --lattice 20x20: the total flux Nx Ny PHI = 20 x 20 x 1/7 through the periodic x-y supercell is not an integer (allowed: Nx Ny a multiple of 7); the smallest admissible lattice is 20x21" \
  "$dos" --model graphene --lattice 20x20 --magnetic-flux 1/7 --moments 16
refused "non-integer total flux, ti with dots" "the smallest admissible lattice is 8x12x2" \
  "$dos" --model ti --lattice 8x8x2 --dot-period 4 --dot-radius 1 --magnetic-flux 2/3 --moments 16
refused "malformed flux" "not a flux (allowed: p/q with integers" \
  "$dos" --model graphene --lattice 20x20 --magnetic-flux 1e-3 --moments 16
refused "model hr has no positions" "--magnetic-flux 1/4: the Peierls phases on model hr need orbital positions" \
  "$dos" --model hr --model-file "$src/inputs/graphene_hr.dat" --lattice 4x4 --magnetic-flux 1/4 --moments 16
# (--matrix free on --device cuda carries the phases: cuda_field_test.sh.)
refused "kpm-eigs: non-integer total flux" "smallest admissible lattice is 6x10" \
  "$eigs" --model graphene --lattice 6x6 --magnetic-flux 0.1 --shift 0 --count 4
# An open direction has no torus: any PHI.
"$dos" --model graphene --lattice 20x20 --boundary po --magnetic-flux 1/7 --moments 16 --vectors 1 --quiet --output "$work/open.h5" > /dev/null 2>&1
check "open boundary: any PHI runs" "[ $? -eq 0 ] && $py '$here/check_field.py' '$work/open.h5' 1/7"

# ---- --matrix auto: sell, and the recorded field ----
"$dos" --model graphene --lattice 12x12 --magnetic-flux 0.0625 --moments 32 --vectors 2 --output "$work/auto.h5" > "$work/auto.txt" 2>&1
check "auto: exit 0" "[ $? -eq 0 ] || { cat '$work/auto.txt'; false; }"
check "auto: sell, for the Peierls phases" "grep -q 'sell: in a field the stencil sweeps the Peierls phases' '$work/auto.txt' || { cat '$work/auto.txt'; false; }"
check "auto: /model records PHI = 1/16 and the gauge" "$py '$here/check_field.py' '$work/auto.h5' 1/16"

# ---- the phased matrix through the operators: exact moments of the exported matrix ----
gr=(--model graphene --lattice 6x6 --magnetic-flux 1/12 --dot-period 3 --dot-radius 1.1 --dot-potential 0.4 --disorder 0.5)
ti=(--model ti --lattice 4x4x3 --magnetic-flux -3/8 --dot-period 2 --dot-radius 1 --dot-potential 0.3 --disorder 0.8)
for matrix in sell crs free; do
  for m in gr ti; do
    declare -n args="$m"
    "$dos" "${args[@]}" --matrix "$matrix" --trace exact --moments 64 --export-matrix "$work/$m.mtx" \
      --output "$work/$m-$matrix.h5" --quiet > "$work/$m.txt" 2>&1
    check "$m $matrix: exit 0" "[ $? -eq 0 ] || { cat '$work/$m.txt'; false; }"
    phi=$(printf '%s\n' "${args[@]}" | grep -A1 -- --magnetic-flux | tail -1)
    check "$m $matrix: Hermitian, complex, exact moments" "(cd '$here' && $py check_field.py '$work/$m-$matrix.h5' '$phi' --matrix '$work/$m.mtx')"
  done
done

# ---- kpm-eigs and --green take the phases ----
"$eigs" "${gr[@]}" --shift 0 --count 6 --method dense --output "$work/eigs.h5" > "$work/eigs.txt" 2>&1
check "kpm-eigs: exit 0" "[ $? -eq 0 ] || { cat '$work/eigs.txt'; false; }"
check "kpm-eigs: the export's eigenvalues" "$py '$here/check_eigs.py' '$work/eigs.h5' --matrix '$work/gr.mtx'"
"$dos" "${gr[@]}" --ldos 0,7,30 --green 0.1 --moments 64 --energy-grid -2:2:21 --output "$work/green.h5" > "$work/green.txt" 2>&1
check "--green: exit 0" "[ $? -eq 0 ] || { cat '$work/green.txt'; false; }"
check "--green: the export's eigen-decomposition" "$py '$here/check_green.py' '$work/green.h5' '$work/gr.mtx'"

# ---- clean graphene's Landau levels: PHI = 1/90 on 60x60 cells (40 flux quanta) ----
"$dos" --model graphene --lattice 60x60 --magnetic-flux 1/90 --moments 1024 --vectors 16 --output "$work/ll.h5" --quiet > "$work/ll.txt" 2>&1
check "Landau levels: exit 0" "[ $? -eq 0 ] || { cat '$work/ll.txt'; false; }"
check "Landau levels: at 0 and +-E_1, +-E_2" "$py '$here/check_field.py' '$work/ll.h5' 1/90 --landau"

# ---- the ti slab's surface Dirac cone: Landau levels in a top-surface site's LDOS ----
"$dos" --model ti --lattice 40x40x4 --magnetic-flux 1/100 --ldos site:20,20,0 --moments 1024 --output "$work/tll.h5" --quiet > "$work/tll.txt" 2>&1
check "ti surface Landau levels: exit 0" "[ $? -eq 0 ] || { cat '$work/tll.txt'; false; }"
check "ti surface Landau levels: at 0, +-E_1 .. +-E_3" "$py '$here/check_field.py' '$work/tll.h5' 1/100 --surface-landau"

# ---- a checkpoint belongs to its flux: a restart with another PHI (or none) is refused ----
# (192x192: about 4 s on an idle core, so the SIGTERM arrives mid-run; 48x48 finished in 0.3 s)
ck=(--model graphene --lattice 192x192 --moments 20000 --vectors 4 --energy-range -3.5:3.5 --checkpoint "$work/ck.h5")
"$dos" "${ck[@]}" --magnetic-flux 1/16 --checkpoint-every 0.2 --output "$work/part.h5" > "$work/ck.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -e "$work/ck.h5" ] && break; sleep 0.05; done
sleep 0.3
kill -TERM "$pid"; wait "$pid"; rc=$?
check "stopped field run: exit 75 with a checkpoint" "[ $rc -eq 75 ] && [ -e '$work/ck.h5' ] || { echo rc=$rc; cat '$work/ck.txt'; false; }"
for other in "--magnetic-flux 1/8|--magnetic-flux: checkpoint 1/16, this run 1/8" "--magnetic-flux 0|--magnetic-flux: checkpoint 1/16, not in this run"; do
  "$dos" "${ck[@]}" ${other%%|*} --restart "$work/ck.h5" --output "$work/again.h5" > "$work/again.txt" 2>&1; rc=$?
  check "restart with ${other%%|*}: refused naming the flux" "[ $rc -eq 2 ] && grep -qF -- '${other#*|}' '$work/again.txt' || { echo rc=$rc; cat '$work/again.txt'; false; }"
done

# ---- mpirun: 1-D and 2-D decompositions give the serial moments ----
if [ -n "$mpiexec" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  run=(--model graphene --lattice 12x12 --magnetic-flux 1/16 --disorder 0.3 --moments 64 --vectors 2 --matrix sell --energy-range -3.5:3.5)
  "$dos" "${run[@]}" --output "$work/serial.h5" --quiet > "$work/serial.txt" 2>&1
  check "serial reference: exit 0" "[ $? -eq 0 ] || { cat '$work/serial.txt'; false; }"
  for dec in 1d 2x2; do
    timeout 180 "$mpiexec" -np 4 --bind-to none "$dos" "${run[@]}" --decomposition "$dec" --output "$work/mpi-$dec.h5" --quiet > "$work/mpi.txt" 2>&1
    check "mpirun -np 4 --decomposition $dec: exit 0" "[ $? -eq 0 ] || { cat '$work/mpi.txt'; false; }"
    check "mpirun -np 4 --decomposition $dec: the serial moments to 1e-12" "$py -c \"
import h5py, numpy as np
a = h5py.File('$work/serial.h5')['/kpm/moments'][()]; b = h5py.File('$work/mpi-$dec.h5')['/kpm/moments'][()]
assert np.abs(a - b).max() < 1e-12, np.abs(a - b).max()\""
  done
  for dec in 1d 2x2; do  # the matrix-free stencil with the field tables of each rank's slab or tile
    timeout 180 "$mpiexec" -np 4 --bind-to none "$dos" "${run[@]/sell/free}" --decomposition "$dec" --output "$work/free-$dec.h5" --quiet > "$work/free.txt" 2>&1
    check "mpirun -np 4 --matrix free --decomposition $dec: exit 0" "[ $? -eq 0 ] || { cat '$work/free.txt'; false; }"
    check "mpirun -np 4 --matrix free --decomposition $dec: the serial sell moments to 1e-12" "$py -c \"
import h5py, numpy as np
a = h5py.File('$work/serial.h5')['/kpm/moments'][()]; b = h5py.File('$work/free-$dec.h5')['/kpm/moments'][()]
assert np.abs(a - b).max() < 1e-12, np.abs(a - b).max()\""
  done
else
  echo "SKIPPED: mpirun checks (no MPI launcher configured)"
fi

exit $fail
