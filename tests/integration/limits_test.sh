#!/usr/bin/env bash
# Numbers at their limits (issue 30), as a user meets them:
#  - energies beyond 1e100 in magnitude (numerics/base/energy_limits.hpp) and scales below
#    1e-100 are refused with exit 2 and one line naming the option and the allowed range
#    (no "internal check failed", no source path, no LAPACK message); the edge values
#    themselves run, and the printed bounds are printed in full;
#  - --green ETA on an exact eigenvalue (graphene 6x6 at E = -1, 0, 1): the exact LDOS is
#    >= 0 and equals numpy's eigen-decomposition sum within the bound derived from the
#    backward error the file records; an ETA below what double precision resolves is warned
#    about, with the achieved backward error;
#  - SIGTERM during the --green phase stops the run within one energy, exit 75, a message
#    that says the phase has no checkpoint, and no result file; --time-limit stops it the
#    same way, before the energy that would pass the limit;
#  - kpm-eigs --tolerance below the reachable one is raised to it with a warning, and a
#    degenerate level at the edge of a request is returned whole by every method.
set -u
dos="$1"; eigs="$2"
source "$(dirname "$0")/../support/script_lib.sh"
here="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1

# refused NAME TEXT... -- PROGRAM ARGS: exit 2, one stderr line containing every TEXT, nothing internal.
refused() {
  local name="$1"; shift
  local texts=()
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  check "$name: exit 2" "[ $rc -eq 2 ] || { echo \"exit $rc\"; cat '$work/err.txt'; false; }"
  check "$name: one line" "[ \$(wc -l < '$work/err.txt') -eq 1 ] || { cat '$work/err.txt'; false; }"
  for t in "${texts[@]}"; do
    check "$name: names '$t'" "grep -qF -- '$t' '$work/err.txt' || { cat '$work/err.txt'; false; }"
  done
  check "$name: nothing internal" "! grep -qiE 'internal|lapack|zheev|dsyev|[.]cpp|[.]hpp' '$work/err.txt'"
}

g=(--model graphene --lattice 6x6 --moments 16 --vectors 1 -q)
t=(--model ti --lattice 4x4x2 --moments 16 --vectors 1 -q)
ge=(--model graphene --lattice 6x6 -q)  # kpm-eigs refuses the kpm-dos-only --moments/--vectors
refused "--energy-range -1e308:1e308" --energy-range 1e+100 -- "$dos" "${g[@]}" --energy-range -1e308:1e308 -o "$work/x.h5"
refused "--energy-range 0:1e101" --energy-range 1e+100 -- "$dos" "${g[@]}" --energy-range -5:1e101 -o "$work/x.h5"
refused "--t 1e308" --t 1e+100 -- "$dos" "${g[@]}" --t 1e308 -o "$work/x.h5"
refused "--t -1e-300" --t 1e-100 -- "$dos" "${t[@]}" --t -1e-300 -o "$work/x.h5"
refused "--m -1e300" --m 1e+100 -- "$dos" "${t[@]}" --m -1e300 -o "$work/x.h5"
refused "--dot-potential 1e150" --dot-potential 1e+100 -- "$dos" "${g[@]}" --dot-period 2 --dot-radius 1 --dot-potential 1e150 -o "$work/x.h5"
refused "--disorder 1e101" --disorder 1e+100 -- "$dos" "${t[@]}" --disorder 1e101 -o "$work/x.h5"
refused "--energy-grid" --energy-grid 1e+100 -- "$dos" "${g[@]}" --energy-grid -1e200:0:5 -o "$work/x.h5"
refused "--ldos-map-energy" --ldos-map-energy 1e+100 -- "$dos" "${t[@]}" --ldos layer:0 --ldos-map-energy 1e300 -o "$work/x.h5"
refused "--green 1e200" --green 1e+100 -- "$dos" "${g[@]}" --ldos 0 --green 1e200 -o "$work/x.h5"
refused "--green 1e-300" --green 1e-100 -- "$dos" "${g[@]}" --ldos 0 --green 1e-300 -o "$work/x.h5"
refused "kpm-eigs --shift 1e300" --shift 1e+100 -- "$eigs" "${ge[@]}" --shift 1e300 --count 2 -o "$work/x.h5"
refused "kpm-eigs --window" --window 1e+100 -- "$eigs" "${ge[@]}" --window -1e300:0 -o "$work/x.h5"
refused "kpm-eigs --t 1e308" --t 1e+100 -- "$eigs" "${ge[@]}" --t 1e308 --extremal lowest:2 -o "$work/x.h5"
refused "--plan-network 1e-308" --plan-network 1e-3 -- "$dos" --model ti --lattice 8x8x4 --plan --ranks 2 --plan-network 1e-308
refused "--plan-bandwidth 1e308" --plan-bandwidth 1e6 -- "$dos" --model ti --lattice 8x8x4 --plan --plan-bandwidth 1e308
check "no file left by the refusals" "[ ! -e '$work/x.h5' ]"

# The edges run: t = 1e100 (the spectrum is +-3e100, Gershgorin bounds printed in full).
"$dos" --model graphene --lattice 6x6 --moments 16 --vectors 1 --t 1e100 --bounds gershgorin -o "$work/big.h5" > "$work/big.txt" 2>&1
check "--t 1e100: exit 0" "[ $? -eq 0 ] || { cat '$work/big.txt'; false; }"
check "--t 1e100: bounds printed in full (101 digits)" "grep -qE 'bounds      : \\[-[0-9]{101}[.][0-9]{6}, [0-9]{101}[.][0-9]{6}\\]' '$work/big.txt' || { grep bounds '$work/big.txt'; false; }"
"$dos" --model graphene --lattice 6x6 --moments 16 --vectors 1 --t -1e-100 -o "$work/small.h5" -q > "$work/small.txt" 2>&1
check "--t -1e-100: exit 0" "[ $? -eq 0 ] || { cat '$work/small.txt'; false; }"
"$dos" "${g[@]}" --energy-range -1e100:1e100 -o "$work/range.h5" > "$work/range.txt" 2>&1
check "--energy-range -1e100:1e100: exit 0" "[ $? -eq 0 ] || { cat '$work/range.txt'; false; }"
"$eigs" --model graphene --lattice 6x6 --t 1e100 --extremal lowest:2 -o "$work/bige.h5" -q > "$work/bige.txt" 2>&1
check "kpm-eigs --t 1e100: exit 0" "[ $? -eq 0 ] || { cat '$work/bige.txt'; false; }"

if ! $py -c 'import h5py, numpy' 2>/dev/null; then
  echo "SKIPPED: --green and kpm-eigs file checks: /usr/bin/python3 lacks h5py or numpy"
  exit $fail
fi
check "--t 1e100: DOS finite, integral 1" "$py -c \"
import h5py, numpy as np, sys
f = h5py.File('$work/big.h5'); e = f['/dos/energy'][()]; r = f['/dos/rho'][()]
sys.exit(0 if np.all(np.isfinite(r)) and abs(np.trapz(r, e) - 1) < 0.05 else 1)\""

# ---- --green on exact eigenvalues (graphene 6x6: E = -1, 0, 1 are eigenvalues) ----
# check_near_singular FILE MTX: rho >= 0 and |rho - ref| <= B ref + 1e-12 peak, with
# B = 4 w max_E ||H - z||_1 / eta from the recorded backward error w (green.hpp); the
# reference's own error (zheev: O(eps ||H||) in the values, so (d/eta)^2 ~ 1e-12 relative at
# a pole) is the 1e-12 term.
check_near_singular() {
  $py - "$1" "$2" "$here" <<'EOF'
import sys
import h5py, numpy as np
sys.path.insert(0, sys.argv[3])
from matrix_market import read_mtx
f = h5py.File(sys.argv[1])
rows = f['/green/rows'][()]; energy = f['/green/energy'][()]; rho = f['/green/rho'][()]
eta = float(f['/green'].attrs['eta']); w = float(f['/green'].attrs['worst_backward_error'])
h = read_mtx(sys.argv[2]); n = h.shape[0]
e, v = np.linalg.eigh(h)
wt = np.abs(v[rows, :]) ** 2
ref = wt @ ((eta / np.pi) / ((energy[None, :] - e[:, None]) ** 2 + eta ** 2))
norm1 = max(np.abs(h - (z + 1j * eta) * np.eye(n)).sum(axis=0).max() for z in energy)
bound = 4 * w * norm1 / eta
peak = 1 / (np.pi * eta)
err = np.abs(rho - ref)
ok = rho.min() >= 0 and np.all(err <= bound * ref + 1e-12 * peak) and bound < 1e-3
print(f"min rho {rho.min():.3e}, max rel err {(err / ref).max():.2e}, bound {bound:.2e}, backward error {w:.1e}")
sys.exit(0 if ok else 1)
EOF
}
gn=(--model graphene --lattice 6x6 --moments 64 --vectors 1 --ldos 0,1,7 --energy-grid -1:1:3)
"$dos" "${gn[@]}" --green 1e-10 --export-matrix "$work/g6.mtx" -o "$work/g10.h5" > "$work/g10.txt" 2>&1
check "--green 1e-10 on eigenvalues: exit 0" "[ $? -eq 0 ] || { cat '$work/g10.txt'; false; }"
check "--green 1e-10 on eigenvalues: rho >= 0, equals the eigen-decomposition within the bound" \
  "check_near_singular '$work/g10.h5' '$work/g6.mtx'"
"$dos" "${gn[@]}" --green 1e-18 -o "$work/g18.h5" > "$work/g18.txt" 2>&1
check "--green 1e-18 on eigenvalues: exit 0" "[ $? -eq 0 ] || { cat '$work/g18.txt'; false; }"
check "--green 1e-18: warned with the backward error" "grep -q 'WARNING: --green 1e-18: the exact LDOS is guaranteed only to about .* relative at the worst energy (backward error .*ETA is too small for double precision' '$work/g18.txt' || { cat '$work/g18.txt'; false; }"
check "--green 1e-18: rho >= 0" "$py -c \"import h5py,sys; sys.exit(0 if h5py.File('$work/g18.h5')['/green/rho'][()].min() >= 0 else 1)\""
check "--green 0.1: no such warning" "'$dos' ${gn[*]} --green 0.1 -o '$work/g1.h5' 2>&1 | { ! grep -q 'guaranteed only'; }"

# ---- SIGTERM during the --green phase ----
# ti 6x6x4 (576 rows), 4000 energies: the phase lasts seconds; the signal is sent once its
# first progress line is out.
"$dos" --model ti --lattice 6x6x4 --moments 16 --vectors 1 --ldos 0 --green 0.1 --energy-grid -3:3:4000 \
  --progress-interval 0.05 -o "$work/term.h5" > "$work/term.txt" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q 'green energy' "$work/term.txt" 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid
t0=$(date +%s.%N)
wait $pid; rc=$?
t1=$(date +%s.%N)
check "SIGTERM in --green: exit 75" "[ $rc -eq 75 ] || { echo \"exit $rc\"; tail -5 '$work/term.txt'; false; }"
check "SIGTERM in --green: stopped within 5 s" "$py -c 'import sys; sys.exit(0 if $t1 - $t0 < 5 else 1)'"
check "SIGTERM in --green: says the phase has no checkpoint" "grep -q 'stopped by SIGTERM during the --green phase after [0-9]* of 4000 energies; that phase has no checkpoint and no result was written; no checkpoint exists' '$work/term.txt' || { tail -3 '$work/term.txt'; false; }"
check "SIGTERM in --green: no result, no temporary" "[ -z \"\$(ls '$work' | grep term.h5)\" ]"

# ---- --time-limit during the --green phase ----
# The same 4000 energies (tens of seconds) under --time-limit 2: the phase stops before the
# energy that would pass the limit, like a signal (exit 75, no result); the whole run within
# the limit plus 2 s for the start-up before the clock and the exit after it.
t0=$(date +%s.%N)
"$dos" --model ti --lattice 6x6x4 --moments 16 --vectors 1 --ldos 0 --green 0.1 --energy-grid -3:3:4000 \
  --time-limit 2 -o "$work/tl.h5" > "$work/tl.txt" 2>&1
rc=$?
t1=$(date +%s.%N)
check "--time-limit in --green: exit 75" "[ $rc -eq 75 ] || { echo \"exit $rc\"; tail -5 '$work/tl.txt'; false; }"
check "--time-limit in --green: ended within the limit (+2 s)" "$py -c 'import sys; sys.exit(0 if $t1 - $t0 < 4 else 1)'"
check "--time-limit in --green: says the phase has no checkpoint" "grep -q 'stopped before the --time-limit during the --green phase after [0-9]* of 4000 energies; that phase has no checkpoint and no result was written; no checkpoint exists' '$work/tl.txt' || { tail -3 '$work/tl.txt'; false; }"
check "--time-limit in --green: no result, no temporary" "[ -z \"\$(ls '$work' | grep tl.h5)\" ]"

# ---- kpm-eigs: tolerance below the reachable one, degenerate levels at the edge ----
# graphene 6x6: E = 0 is a 4-fold level; --shift 0 --count 1 must return all 4.
eig=(--model graphene --lattice 6x6 --shift 0 --count 1)
for m in dense shift-invert; do
  for tol in 1e-16 1e-10 0.01; do
    "$eigs" "${eig[@]}" --method $m --tolerance $tol -o "$work/e_${m}_${tol}.h5" > "$work/e.txt" 2>&1
    check "kpm-eigs --method $m --tolerance $tol: exit 0" "[ $? -eq 0 ] || { cat '$work/e.txt'; false; }"
    check "kpm-eigs --method $m --tolerance $tol: the 4-fold level whole" \
      "[ \"\$($py -c \"import h5py; print(len(h5py.File('$work/e_${m}_${tol}.h5')['/eigs/values']))\")\" = 4 ]"
    if [ $tol = 1e-16 ]; then
      check "kpm-eigs --tolerance 1e-16: raised to the reachable tolerance, said" \
        "grep -q 'WARNING: --tolerance 1e-16 is below what double precision reaches for this matrix' '$work/e.txt' || { cat '$work/e.txt'; false; }"
      check "kpm-eigs --tolerance 1e-16: the file records the tolerance used" \
        "$py -c \"import h5py,sys; a=h5py.File('$work/e_${m}_${tol}.h5')['/eigs'].attrs; sys.exit(0 if a['tolerance'] > 1e-16 else 1)\""
    fi
  done
done
# The lowest of ti 4x4x2 (clean slab): a Kramers pair, then an 8-fold level; lowest:3 ends
# inside the 8-fold level: 10 values.
ti=(--model ti --lattice 4x4x2 --extremal lowest:3)
for m in dense lanczos chebfd; do
  for tol in 1e-16 1e-6; do
    "$eigs" "${ti[@]}" --method $m --tolerance $tol -o "$work/t.h5" > "$work/e.txt" 2>&1
    check "kpm-eigs ti lowest:3 --method $m --tolerance $tol: exit 0" "[ $? -eq 0 ] || { cat '$work/e.txt'; false; }"
    check "kpm-eigs ti lowest:3 --method $m --tolerance $tol: the edge level whole (10 values)" \
      "[ \"\$($py -c \"import h5py; print(len(h5py.File('$work/t.h5')['/eigs/values']))\")\" = 10 ]"
  done
done

exit $fail
