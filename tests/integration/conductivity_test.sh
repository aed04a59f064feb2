#!/usr/bin/env bash
# kpm-dos --conductivity as a user runs it (issue 34, models.md §9):
#  - the result's /conductivity group (energy, sigma, moments [M, M] complex128, the
#    attributes with units and descriptions) next to the DOS;
#  - clean graphene 6x6 at PHI = 1/12, exact trace: the Hall plateau sigma_xy = +1 / -1
#    between Landau levels 0 and 1 (within 10 %), sigma_yx = -sigma_xy there, the reversed
#    field flips the sign (Onsager), sigma_xx ~ 0 in that gap; a stochastic run of the
#    same moments, equal to the exact one within its error bars (/conductivity/sigma_stderr);
#    --temperature smooths sigma;
#  - refusals, exit 2 with one line naming the option and the allowed values: a model
#    without positions, zz on a 2-D model and on a slab, a bad component, --temperature
#    without --conductivity, --energy-grid, --ldos; --plan --ranks P prices the phase per rank
#    (exit 3 when a rank does not fit); exit 3 naming the bytes when the
#    two-index vectors do not fit --memory-limit (a stop in the phase, its checkpoint and
#    restart: conductivity_checkpoint_test.sh; under mpirun: tests/mpi/kpm_dos_mpi_conductivity_test.sh).
set -u
dos="$1"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "FAIL: /usr/bin/python3 lacks h5py or numpy (the setup script installs them)"; exit 1; fi

refused() {  # name, expected exit code, expected text, command...
  local name="$1" code="$2" want="$3"; shift 3
  "$@" --output "$work/refused.h5" > "$work/out.txt" 2> "$work/err.txt"; local rc=$?
  check "$name: exit $code" "[ $rc -eq $code ] || { echo rc=$rc; cat '$work/err.txt'; false; }"
  check "$name: one line naming it" "[ \$(wc -l < '$work/err.txt') -eq 1 ] && grep -qF -- \"\$want\" '$work/err.txt' || { cat '$work/err.txt'; false; }"
  check "$name: no file" "[ ! -e '$work/refused.h5' ]"
}
# One scaling for both field directions (Lanczos' bounds of H and of its conjugate differ in
# the last digits), so that Onsager's relation holds to rounding.
g6=(--model graphene --lattice 6x6 --moments 128 --trace exact --energy-range -3:3 --quiet)
refused "model without positions" 2 "--conductivity: model hr has no positions for the velocity operators (allowed: ti, graphene, hr with --cell-vectors and --orbital-positions)" \
  "$dos" --model hr --model-file "$(dirname "$0")/../../inputs/graphene_hr.dat" --lattice 4x4 --moments 16 --conductivity xx
refused "zz on graphene" 2 "--conductivity zz: model graphene is two-dimensional, its sheet conductance has in-plane components only (allowed: xx, xy, yx, yy)" \
  "$dos" "${g6[@]}" --conductivity zz
refused "xz on a ti slab" 2 "--conductivity xz: model ti is a slab open in z (boundary ppo)" \
  "$dos" --model ti --lattice 3x3x2 --moments 16 --conductivity xz
refused "bad component" 2 "xyz': not a tensor component (allowed: xx, xy, yx, yy)" \
  "$dos" "${g6[@]}" --conductivity xyz
refused "--temperature alone" 2 "--temperature needs --conductivity" "$dos" "${g6[@]}" --temperature 0.1
refused "negative temperature" 2 "1': out of range (allowed: >= 0, units of t)" \
  "$dos" "${g6[@]}" --conductivity xx --temperature -1
refused "--energy-grid" 2 "--conductivity is evaluated on the Chebyshev grid" \
  "$dos" "${g6[@]}" --conductivity xx --energy-grid -1:1:11
refused "--ldos" 2 "--conductivity comes with the DOS; not with --ldos" "$dos" "${g6[@]}" --conductivity xx --ldos 0
# --plan prices the phase per rank (the run's own conductivity_bytes): the 200x200 run below
# needs 2.7 GiB on one rank, 1.4 GiB on each of 2 (half the rows, plus the velocities' halo).
big=(--model graphene --lattice 200x200 --magnetic-flux 1/200 --moments 512 --vectors 4 --conductivity xy)
"$dos" "${big[@]}" --plan --ranks 2 --memory-limit 2 --plan-bandwidth 20 > "$work/plan.txt" 2>&1
check "--plan --ranks 2: fits, the phase priced per rank" "grep -q 'conductivity: the two-index moments after the DOS need up to 1.4 GiB per rank' '$work/plan.txt' && grep -q 'plan fits: largest rank needs 1.4 GiB' '$work/plan.txt' || { cat '$work/plan.txt'; false; }"
"$dos" "${big[@]}" --plan --ranks 1 --memory-limit 4 --plan-bandwidth 20 > "$work/plan.txt" 2>&1
check "--plan --ranks 1: 2.7 GiB" "grep -q 'need up to 2.7 GiB per rank' '$work/plan.txt' || { cat '$work/plan.txt'; false; }"
# --plan predicts the phase's time (sweeps at the plan's rate for this machine, the ZGEMM at a
# rate timed here): within a factor 3 of the run's own conductivity phase, as kpm_plan_json
# asks of the moments (measured 0.62-0.67 with the phase's reconstruction).
mid=(--model graphene --lattice 96x96 --magnetic-flux 1/96 --moments 256 --vectors 4 --conductivity xy --threads 2)
"$dos" "${mid[@]}" --plan-json "$work/plan.json" > /dev/null 2>&1
"$dos" "${mid[@]}" --output "$work/mid.h5" > "$work/mid.txt" 2>&1
check "--plan: the phase's time within 3x of the run's" "$py -c \"
import json, re, sys
p = json.load(open('$work/plan.json'))['conductivity_seconds']
t = float(re.search(r'conductivity ([0-9.]+) s', open('$work/mid.txt').read()).group(1))
sys.exit(0 if 1 / 3 <= p / t <= 3 else 'predicted %g s, ran %g s' % (p, t))\" || { cat '$work/mid.txt'; false; }"
refused "--plan --ranks 2 over the limit" 3 "needs 1.38 GiB per rank, the limit --memory-limit is 1.0 GiB" \
  "$dos" "${big[@]}" --plan --ranks 2 --memory-limit 1 --plan-bandwidth 20
# 200x200 graphene, M = 512, W = 4: 512+32+4 blocks of 80000 x 4 complex = 2.6 GiB of vectors,
# with the velocities, the moments and a checkpoint's copy of the two-index state 2.7 GiB.
refused "memory" 3 "conductivity 2.7 GiB" \
  "$dos" --model graphene --lattice 200x200 --magnetic-flux 1/200 --moments 512 --vectors 4 --conductivity xy --memory-limit 1
# ---- clean graphene in a field: the Hall plateau ----
for c in xy yx xx; do
  "$dos" "${g6[@]}" --magnetic-flux 1/12 --conductivity $c --output "$work/$c.h5" > "$work/$c.txt" 2>&1
  check "$c: exit 0" "[ $? -eq 0 ] || { cat '$work/$c.txt'; false; }"
done
"$dos" "${g6[@]}" --magnetic-flux -1/12 --conductivity xy --output "$work/xy_reversed.h5" > /dev/null 2>&1
check "reversed field: exit 0" "[ $? -eq 0 ]"
"$dos" "${g6[@]}" --magnetic-flux 1/12 --conductivity xy --temperature 0.3 --output "$work/xy_hot.h5" > /dev/null 2>&1
check "temperature: exit 0" "[ $? -eq 0 ]"
"$dos" --model graphene --lattice 6x6 --moments 128 --vectors 8 --block-width 4 --quiet --magnetic-flux 1/12 \
  --conductivity xy --output "$work/xy_stochastic.h5" > /dev/null 2>&1
check "stochastic: exit 0" "[ $? -eq 0 ]"
check "plateaus, antisymmetry, Onsager, schema" "$py - '$work' <<'PY'
import sys, h5py, numpy as np
w = sys.argv[1]
def read(name):
    with h5py.File(f'{w}/{name}.h5', 'r') as f:
        g = f['conductivity']
        for d in ('energy', 'sigma', 'moments'):
            assert g[d].attrs['unit'] and g[d].attrs['description'], d
        assert g['moments'].dtype == np.complex128 and g['moments'].shape == (128, 128), g['moments']
        assert g['energy'].shape == f['dos/energy'].shape
        a = dict(g.attrs)
        assert a['unit'] == 'e^2/h' and a['kernel'] == 'jackson' and abs(a['area'] - 36 * 3 * 3**0.5 / 2) < 1e-9, a
        return g['energy'][:], g['sigma'][:], a
E, xy, a = read('xy'); _, yx, _ = read('yx'); _, xx, _ = read('xx'); _, rev, _ = read('xy_reversed')
_, hot, ah = read('xy_hot'); _, sto, _ = read('xy_stochastic')
assert a['component'] == 'xy' and a['temperature'] == 0.0 and ah['temperature'] == 0.3
gap = (np.abs(E) > 0.25) & (np.abs(E) < 0.5)       # between Landau levels 0 and 1 (E_1 = 0.67 t)
plateau = np.where(E[gap] < 0, 1.0, -1.0)
assert np.all(np.abs(xy[gap] - plateau) < 0.1), xy[gap]
assert np.all(np.abs(yx[gap] + xy[gap]) < 0.02), (yx[gap], xy[gap])
assert np.max(np.abs(rev - yx)) < 1e-9, 'Onsager: sigma_xy(-PHI) = sigma_yx(PHI)'
assert np.all(np.abs(rev[gap] + xy[gap]) < 0.02), (rev[gap], xy[gap])
assert np.all(np.abs(xx[gap]) < 0.1), xx[gap]
assert np.max(np.abs(hot - xy)) > 0.05 and np.max(np.abs(hot)) < np.max(np.abs(xy)), 'temperature smooths'
# 8 random vectors of 72 rows: an estimate of the same sigma within its error bars
with h5py.File(f'{w}/xy_stochastic.h5', 'r') as f:
    err = f['conductivity/sigma_stderr'][:]
    assert f['conductivity/sigma_stderr'].attrs['unit'] == 'e^2/h'
with h5py.File(f'{w}/xy.h5', 'r') as f:
    assert 'sigma_stderr' not in f['conductivity'], 'the exact trace has no error bars'
inside = np.abs(E) < 2.5
z = np.abs(sto - xy)[inside] / err[inside]
print('stochastic vs exact: median |z|', np.median(z), 'max', z.max(), 'median stderr', np.median(err[inside]))
assert np.all(err[inside] > 0) and np.median(z) < 2.0 and np.mean(z < 4.0) > 0.95, z
PY"
exit $fail
