#!/usr/bin/env bash
# kpm-dos --exchange-mass as a user runs it (issue 34, docs/physics.md "Quantum anomalous
# Hall slab"):
#  - the matrix-free stencil (the term as one potential value per row) and SELL give the
#    same moments to rounding, and /model records exchange_mass;
#  - refused with exit 2 and one line naming --exchange-mass where there is no open z face
#    (ti --boundary ppp), on graphene and on a model from a file;
#  - a --restart with another exchange mass is refused by name, the same one continues.
set -u
dos="$1"; src="$2"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "FAIL: /usr/bin/python3 lacks h5py or numpy (the setup script installs them)"; exit 1; fi

slab=(--model ti --lattice 8x8x5 --exchange-mass 0.4 --disorder 0.3 --moments 128 --vectors 3 -q)
for m in free sell; do
  "$dos" "${slab[@]}" --matrix $m --output "$work/$m.h5" > "$work/$m.txt" 2>&1 ||
    { echo "FAIL: --matrix $m run: $(tail -2 "$work/$m.txt")"; fail=1; }
done
# 64 sweeps of 13 entries per row in another order: a few hundred ulp of mu_0 = 1 at most.
check "free and sell moments equal to rounding, /model records the term" "$py -c \"
import h5py, numpy as np, sys
a, b = h5py.File('$work/free.h5', 'r'), h5py.File('$work/sell.h5', 'r')
d = np.max(np.abs(a['/kpm/moments'][()] - b['/kpm/moments'][()]))
sys.exit(0 if d < 1e-12 and a['/model'].attrs['exchange_mass'] == 0.4 else 1)\""

refused() {  # refused NAME TEXT ARGS...: exit 2, one line naming TEXT, no result file
  local name="$1" want="$2"; shift 2
  "$dos" -q --moments 8 --vectors 1 --output "$work/refused.h5" "$@" > /dev/null 2> "$work/err.txt"; local rc=$?
  check "$name: exit 2, one line naming it" "[ $rc -eq 2 ] && [ \$(wc -l < '$work/err.txt') -eq 1 ] && grep -qF -- \"$want\" '$work/err.txt' || { echo rc=$rc; cat '$work/err.txt'; false; }"
  check "$name: no file" "[ ! -e '$work/refused.h5' ]"
}
refused "no open z face" "--exchange-mass 0.3: the exchange mass sits on the surfaces of a slab open in z, and --boundary ppp has none" \
  --model ti --lattice 4x4x4 --boundary ppp --exchange-mass 0.3
refused "graphene" "--exchange-mass 0.3: the exchange mass sits on the surfaces of a slab open in z, and model graphene has none" \
  --model graphene --lattice 4x4 --exchange-mass 0.3
refused "a model from a file" "--exchange-mass 0.3: model hr takes its on-site terms from --model-file" \
  --model hr --model-file "$src/inputs/ti_hr.dat" --lattice 4x4x4 --boundary ppo --exchange-mass 0.3

# The checkpoint records the exchange mass.
ck=(--model ti --lattice 40x40x8 --moments 20000 --vectors 4 --energy-range -6:6 --time-limit 1
    --output "$work/ck_run.h5" --checkpoint "$work/ck.h5")
"$dos" "${ck[@]}" --exchange-mass 0.3 > "$work/ck.txt" 2>&1; rc=$?
check "a stopped run leaves a checkpoint" "[ $rc -eq 75 ] && [ -e '$work/ck.h5' ] || { echo rc=$rc; tail -3 '$work/ck.txt'; false; }"
"$dos" "${ck[@]}" --exchange-mass 0.4 --restart "$work/ck.h5" > "$work/rs.txt" 2>&1; rc=$?
check "restart with another exchange mass refused" "[ $rc -eq 2 ] && grep -qF -- '--exchange-mass: checkpoint 0.29999999999999999, this run 0.40000000000000002' '$work/rs.txt' || { echo rc=$rc; tail -2 '$work/rs.txt'; false; }"
"$dos" "${ck[@]}" --restart "$work/ck.h5" > "$work/rs.txt" 2>&1; rc=$?
check "restart without it refused" "[ $rc -eq 2 ] && grep -qF -- '--exchange-mass: checkpoint 0.29999999999999999, not in this run' '$work/rs.txt' || { echo rc=$rc; tail -2 '$work/rs.txt'; false; }"
"$dos" "${ck[@]}" --exchange-mass 0.3 --restart "$work/ck.h5" > "$work/rs.txt" 2>&1; rc=$?
check "restart with the same exchange mass continues" "[ $rc -eq 75 ] && grep -q 'restart     : from' '$work/rs.txt' || { echo rc=$rc; tail -2 '$work/rs.txt'; false; }"
exit $fail
