#!/usr/bin/env bash
# kpm-dos --model hr with positions as a user runs it (issue 34, models.md §8, §9):
#  - graphene's own _hr.dat with graphene's cell vectors and positions (Wannier90
#    _centres.xyz with atom lines after the centres) gives built-in graphene's
#    /conductivity/moments (xx, xy; disorder and a field, positions shifted so that the hr
#    gauge origin, the Cartesian origin, is graphene's) with --trace exact, to rounding;
#  - the ti slab as hr (cubic, spacing 1) gives ti's /conductivity/moments in a field;
#  - in a field on an open lattice any gauge origin (graphene's positions unshifted) is a
#    gauge transformation: the exact DOS moments are built-in graphene's to rounding;
#  - /model records cell_vectors, orbital_positions (and their file) and the gauge; the
#    --config file form gives the same model;
#  - dots on every layer: ti's own file with ti's dots (--dot-depth Nz) has ti's moments;
#  - under mpirun (given MPIEXEC) -np 2 (1-D) and 4 (2-D) the serial DOS and sigma_xy
#    moments in a field;
#  - refusals, exit 2 with one line naming the option: positions on a built-in, positions
#    without vectors, dependent vectors, a positions file of the wrong count (path and
#    counts, not its text), a field on a torus whose total flux is not an integer (the
#    smallest admissible lattice), --matrix free in a field, --dot-depth on hr, dots
#    without positions;
#  - momenta: ti's and graphene's files with their cells give the built-ins' A(k, E), path
#    lengths and bands (--k-path needs --cell-vectors);
#  - a --restart with other cell vectors or another positions file (or none) is refused.
set -u
dos="$1"; src="$2"; mpiexec="${3:-}"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "FAIL: /usr/bin/python3 lacks h5py or numpy (the setup script installs them)"; exit 1; fi

ghr=(--model hr --model-file "$src/inputs/graphene_hr.dat")
vec="1.7320508075688772,0,0;0.8660254037844386,1.5,0"  # sqrt(3), sqrt(3)/2: 17 digits read back exactly
# Graphene's A (origin) and B (0, 1) as Wannier90 writes them: count, comment, centres, atoms.
printf '4\n Wannier centres\nX 0 0 0\nX 0 1 0\nC 0 0 0\nC 0 1 0\n' > "$work/g_centres.xyz"
# The same shifted by (a1 + a2)/6: the hr gauge origin (0) on graphene's r0 = -(a1 + a2)/6 from A.
$py -c "
import math
x = 1.5 * math.sqrt(3) / 6
print('%.17g 0.25 0' % x); print('%.17g 1.25 0' % x)" > "$work/g_shifted.txt"
printf '0 0 0\n0 0 0\n0 0 0\n0 0 0\n' > "$work/ti_sites.txt"

run() {  # run NAME ARGS...: a run that must succeed
  local name="$1"; shift
  "$dos" --quiet --trace exact "$@" > "$work/$name.out" 2>&1
  check "$name runs" "[ $? -eq 0 ] || { cat '$work/$name.out'; false; }"
}
common=(--moments 32 --lattice 6x6 --disorder 1 --disorder-seed 9 --magnetic-flux 1/6 --energy-range -4.5:4.5)
for c in xx xy; do
  run "g_$c" --model graphene "${common[@]}" --conductivity $c -o "$work/g_$c.h5"
  run "hr_$c" "${ghr[@]}" --cell-vectors "$vec" --orbital-positions "$work/g_shifted.txt" "${common[@]}" \
      --conductivity $c -o "$work/hr_$c.h5"
done
tcommon=(--lattice 4x4x3 --boundary ppo --magnetic-flux 1/4 --energy-range -6:6 --moments 16)
run ti_xy --model ti "${tcommon[@]}" --conductivity xy -o "$work/ti_xy.h5"
run hr_ti_xy --model hr --model-file "$src/inputs/ti_hr.dat" --cell-vectors "1,0,0;0,1,0;0,0,1" \
    --orbital-positions "$work/ti_sites.txt" "${tcommon[@]}" --conductivity xy -o "$work/hr_ti_xy.h5"
# Dots on every layer: ti's own file with ti's dots (--dot-depth Nz).
dcommon=(--lattice 6x6x3 --boundary ppo --dot-period 3 --dot-radius 1 --dot-potential 0.7 --energy-range -6:6 --moments 32)
run ti_dots --model ti "${dcommon[@]}" --dot-depth 3 -o "$work/ti_dots.h5"
run hr_ti_dots --model hr --model-file "$src/inputs/ti_hr.dat" --cell-vectors "1,0,0;0,1,0;0,0,1" \
    --orbital-positions "$work/ti_sites.txt" "${dcommon[@]}" -o "$work/hr_ti_dots.h5"
ocommon=(--moments 32 --lattice 5x4 --boundary oo --magnetic-flux 2/7 --energy-range -3.5:3.5)
run g_open --model graphene "${ocommon[@]}" -o "$work/g_open.h5"
run hr_open "${ghr[@]}" --cell-vectors "$vec" --orbital-positions "$work/g_centres.xyz" "${ocommon[@]}" -o "$work/hr_open.h5"
# The --config form of the same options.
printf 'model = hr\nmodel-file = %s\nlattice = 6x6\ncell-vectors = %s\norbital-positions = %s\n' \
  "$src/inputs/graphene_hr.dat" "$vec" "$work/g_centres.xyz" > "$work/hr.ini"
run config --config "$work/hr.ini" --moments 32 --conductivity xx --energy-range -3.5:3.5 -o "$work/config.h5"
run cli "${ghr[@]}" --moments 32 --lattice 6x6 --cell-vectors "$vec" --orbital-positions "$work/g_centres.xyz" \
    --conductivity xx --energy-range -3.5:3.5 -o "$work/cli.h5"

# Under mpirun (1-D and 2-D decompositions) the rows in a field and the velocities are the serial ones.
if [ -n "$mpiexec" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for np in 2 4; do
    "$mpiexec" --oversubscribe --bind-to none -np $np "$dos" --quiet --trace exact "${ghr[@]}" --cell-vectors "$vec" \
      --orbital-positions "$work/g_shifted.txt" "${common[@]}" --conductivity xy --decomposition $([ $np -eq 2 ] && echo 1d || echo 2d) \
      -o "$work/mpi_$np.h5" > "$work/mpi_$np.out" 2>&1
    check "mpirun -np $np runs" "[ $? -eq 0 ] || { cat '$work/mpi_$np.out'; false; }"
  done
else
  echo "SKIPPED: mpirun checks (no MPIEXEC given)"
fi

cat > "$work/compare.py" <<'EOF'
import sys, h5py, numpy as np
w = sys.argv[1]
def get(name, path):
    with h5py.File(f"{w}/{name}.h5", "r") as f:
        return f[path][()]
bad = []
# Gamma_nm = Tr[v_a T_n v_b T_m]/N: |v| <= 3 (bonds of length 1 times |t| = 1 per neighbour),
# n + m + 2 <= 64 factors; entries that differ by rounding (|dH| < 1e-15 measured, 1e-13
# bounded in hr_positions_test) move each moment by at most 64 x 9 x 1e-13 / a < 1e-10.
for a, b, path in [("hr_xx", "g_xx", "conductivity/moments"), ("hr_xy", "g_xy", "conductivity/moments"),
                   ("hr_ti_xy", "ti_xy", "conductivity/moments"), ("hr_open", "g_open", "kpm/moments"),
                   ("hr_xx", "g_xx", "kpm/moments"), ("config", "cli", "conductivity/moments"),
                   ("hr_ti_dots", "ti_dots", "kpm/moments")]:
    x, y = get(a, path), get(b, path)
    d = np.abs(x - y).max()
    print(f"{a} vs {b} {path}: max |difference| {d:.3g}, max |moment| {np.abs(y).max():.3g}")
    if x.shape != y.shape or not d <= 1e-10:
        bad.append(f"{a} vs {b}")
import os
for np_ in (2, 4):
    if os.path.exists(f"{w}/mpi_{np_}.h5"):
        d = max(np.abs(get(f"mpi_{np_}", "kpm/moments") - get("hr_xx", "kpm/moments")).max(),
                np.abs(get(f"mpi_{np_}", "conductivity/moments") - get("hr_xy", "conductivity/moments")).max())
        print(f"mpirun -np {np_} vs serial kpm/moments and conductivity/moments: max |difference| {d:.3g}")
        if not d <= 1e-12:  # sums over ranks in another order: rounding of M terms of size 1
            bad.append(f"mpirun -np {np_}")
# The field matters: the hr run in a field is not the field-free one (a vacuous comparison
# would pass with no phases at all).
if np.abs(get("hr_xy", "conductivity/moments")).max() < 1e-3:
    bad.append("sigma_xy moments vanish: no field?")
with h5py.File(f"{w}/hr_xx.h5", "r") as f:
    m = f["model"].attrs
    want = {"cell_vectors": "1.7320508075688772,0,0;0.8660254037844386,1.5,0",
            "orbital_positions": "0.43301270189221935,0.25,0;0.43301270189221935,1.25,0",
            "magnetic_flux_fraction": "1/6"}
    for k, v in want.items():
        got = m.get(k)
        got = got.decode() if isinstance(got, bytes) else got
        if got != v:
            bad.append(f"/model@{k} = {got!r}, want {v!r}")
    for k in ("orbital_positions_file", "orbital_positions_sha256", "orbital_positions_size", "gauge"):
        if k not in m:
            bad.append(f"/model@{k} missing")
    g = m["gauge"]
    if "r0 = 0, the origin of the Cartesian frame" not in (g.decode() if isinstance(g, bytes) else g):
        bad.append("gauge origin not recorded")
print("\n".join(bad) if bad else "all equal")
sys.exit(1 if bad else 0)
EOF
check "hr with positions equals the built-ins (conductivity, field, config form)" "$py '$work/compare.py' '$work'"

refused() {  # refused NAME TEXT ARGS...: exit 2, one line naming TEXT, no result file
  local name="$1" want="$2"; shift 2
  "$dos" -q --moments 8 --vectors 1 --output "$work/refused.h5" "$@" > /dev/null 2> "$work/err.txt"; local rc=$?
  check "$name: exit 2, one line naming it" "[ $rc -eq 2 ] && [ \$(wc -l < '$work/err.txt') -eq 1 ] && grep -qF -- \"$want\" '$work/err.txt' || { echo rc=$rc; cat '$work/err.txt'; false; }"
  check "$name: no file" "[ ! -e '$work/refused.h5' ]"
}
printf '0 0 0\nSECRET 1 0\n' > "$work/bad.txt"
refused "vectors on ti" "--cell-vectors: model ti has its own positions (the option goes with --model hr)" \
  --model ti --lattice 3x3x3 --cell-vectors "1,0,0;0,1,0;0,0,1"
refused "positions on matrix-market" "--orbital-positions: model matrix-market has no lattice" \
  --model matrix-market --model-file "$src/inputs/graphene_hr.dat" --orbital-positions "$work/g_centres.xyz"
refused "positions without vectors" "--orbital-positions $work/g_centres.xyz: the positions are offsets within the cell, which needs --cell-vectors" \
  "${ghr[@]}" --lattice 4x4 --orbital-positions "$work/g_centres.xyz"
refused "dependent vectors" "--cell-vectors '1,0,0;2,0,0': the vectors are not linearly independent" \
  "${ghr[@]}" --lattice 4x4 --cell-vectors "1,0,0;2,0,0"
refused "bad positions line" "--orbital-positions $work/bad.txt line 2: expected a position" \
  "${ghr[@]}" --lattice 4x4 --cell-vectors "$vec" --orbital-positions "$work/bad.txt"
check "bad positions line: the file's text is not quoted" "! grep -q SECRET '$work/err.txt'"
printf '0 0 0\n' > "$work/one.txt"
refused "positions count" "--orbital-positions $work/one.txt: 1 positions found, the model has num_wann = 2" \
  "${ghr[@]}" --lattice 4x4 --cell-vectors "$vec" --orbital-positions "$work/one.txt"
refused "field without positions" "--magnetic-flux 1/4: the Peierls phases on model hr need orbital positions" \
  "${ghr[@]}" --lattice 4x4 --magnetic-flux 1/4
refused "field: total flux" "the smallest admissible lattice is 3x4x1" \
  "${ghr[@]}" --lattice 3x3 --cell-vectors "$vec" --orbital-positions "$work/g_centres.xyz" --magnetic-flux 1/4
refused "field: matrix free" "--matrix free with --magnetic-flux 1/4" \
  "${ghr[@]}" --lattice 4x4 --cell-vectors "$vec" --orbital-positions "$work/g_centres.xyz" --magnetic-flux 1/4 --matrix free
refused "dot depth on hr" "--dot-depth: dots on model hr act on every layer (--dot-depth is ti's)" \
  "${ghr[@]}" --lattice 6x6 --cell-vectors "$vec" --orbital-positions "$work/g_centres.xyz" --dot-period 3 --dot-depth 1
refused "dots without positions" "--dot-period 3: dots on model hr need orbital positions" \
  "${ghr[@]}" --lattice 6x6 --dot-period 3 --dot-radius 1
check "--help explains both options" "'$dos' --help | grep -q -- '--cell-vectors' && '$dos' --help | grep -q -- '--orbital-positions'"

# Momenta (models.md §8: a file model takes what the built-ins do where it has what it
# needs): the plane waves of hr's cells are the built-ins', so ti's file with ti's cubic cell
# along --k-path M-G-X, and graphene's file with graphene's cell at --k-points, give the
# built-ins' /spectral/A, momenta, path lengths (the reciprocal basis of --cell-vectors) and
# clean bands, to rounding.
"$dos" --model ti --lattice 8x8x3 --k-path M-G-X --moments 64 -q --output "$work/k_ti.h5" > /dev/null 2>&1
"$dos" --model hr --model-file "$src/inputs/ti_hr.dat" --lattice 8x8x3 --boundary ppo --cell-vectors "1,0,0;0,1,0;0,0,1" \
  --k-path M-G-X --moments 64 -q --output "$work/k_ti_hr.h5" > "$work/k.txt" 2>&1
"$dos" --model graphene --lattice 6x6 --k-points "0,0;2,1;3,3;4,2" --moments 64 -q --output "$work/k_gr.h5" > /dev/null 2>&1
"$dos" "${ghr[@]}" --lattice 6x6 --cell-vectors "$vec" --k-points "0,0;2,1;3,3;4,2" --moments 64 -q \
  --output "$work/k_gr_hr.h5" >> "$work/k.txt" 2>&1
check "hr momenta: the built-ins' A(k, E), path lengths and bands" "$py -c \"
import h5py, numpy as np, sys
for a, b in (('k_ti', 'k_ti_hr'), ('k_gr', 'k_gr_hr')):
    x, y = h5py.File('$work/%s.h5' % a, 'r'), h5py.File('$work/%s.h5' % b, 'r')
    for d in ('/spectral/A', '/spectral/k', '/spectral/path_distance', '/spectral/bands'):
        if np.abs(x[d][()] - y[d][()]).max() > 1e-12: sys.exit('%s %s %s' % (a, b, d))
\" || { cat '$work/k.txt'; false; }"

# A restart needs the same positions: the checkpoint records the cell vectors and the SHA-256
# of the positions file; other values are refused by name, the same ones continue (here to
# the next --time-limit stop).
ck=("${ghr[@]}" --lattice 300x300 --moments 20000 --vectors 4 --energy-range -3.5:3.5 --time-limit 1
    --output "$work/ck_run.h5" --checkpoint "$work/ck.h5")
"$dos" "${ck[@]}" --cell-vectors "$vec" --orbital-positions "$work/g_centres.xyz" > "$work/ck.txt" 2>&1; rc=$?
check "positions: a stopped run leaves a checkpoint" "[ $rc -eq 75 ] && [ -e '$work/ck.h5' ] || { echo rc=$rc; tail -3 '$work/ck.txt'; false; }"
restart() {  # restart NAME WANT_RC TEXT ARGS...
  local name="$1" want="$2" text="$3"; shift 3
  "$dos" "${ck[@]}" --restart "$work/ck.h5" "$@" > "$work/rs.txt" 2>&1; local rc=$?
  check "$name: exit $want" "[ $rc -eq $want ] && grep -qF -- \"$text\" '$work/rs.txt' || { echo rc=$rc; tail -3 '$work/rs.txt'; false; }"
}
restart "restart with other positions refused" 2 "--orbital-positions-sha256: checkpoint" \
  --cell-vectors "$vec" --orbital-positions "$work/g_shifted.txt"
restart "restart with other cell vectors refused" 2 "--cell-vectors: checkpoint" \
  --cell-vectors "1.8,0,0;0.9,1.5,0" --orbital-positions "$work/g_centres.xyz"
restart "restart without positions refused" 2 "--cell-vectors: checkpoint" 
restart "restart with the same positions continues" 75 "restart     : from" \
  --cell-vectors "$vec" --orbital-positions "$work/g_centres.xyz"

exit $fail
