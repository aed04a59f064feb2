#!/usr/bin/env bash
# --ldos-method probing (issue 33: LDOS maps at the cost of a few DOS runs), as a user runs it:
#  - a probing distance past half the lattice gives every row its own colour: the moments and
#    the map equal the exact LDOS to rounding (1e-12: the probed moments are entries of the
#    plain recurrence, the exact ones the doubling formulas of the dots, both within
#    ~M x 1e-16 of the true values);
#  - at the default distance (auto: 6 here, see below) a 16x16x4 layer map at E = 1 t (M = 128, in the bulk band)
#    agrees with the exact map to 4 % rms of the mean map value: measured 2.75 % (the
#    cross terms of rows of one colour, >= 6 hops apart; the seeds are fixed, so the number
#    is fixed up to rounding; the margin covers other thread counts and kernels);
#  - at a map energy in the surface band (16x16x4, E = 0.6 t, M = 128) the probing vectors
#    filtered at that energy span the filter's range on the layer (few states there), and
#    their Nystrom map is within 1 % rms of the exact map (measured 0.16 %; the issue asks
#    5 %), where the map of the probed moments is off by more than 5 % (measured ~20 %);
#    /ldos_map@method says which map was written; under mpirun the Nystrom map equals the
#    serial one to 1e-9 of its mean (measured 2e-15: F summed in another order, through a
#    pseudo-inverse that keeps eigenvalues down to 1e-10 of the largest);
#  - the result records the method and its parameters (/ldos attributes); a probing run
#    stopped by --time-limit resumes bit for bit, and its checkpoint is refused to an exact run;
#  - bad values are refused with exit 2 and one line naming the option and the range;
#  - a map energy outside the spectrum bounds is refused with the bounds (it gave a map of zeros);
#  - under mpirun (2 ranks, each reading its own rows) the probed moments equal the serial
#    ones to 1e-12 (the distributed operator sums in another order: ~M x 1e-16).
set -u
dos="$1"; mpiexec="${2:-}"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "SKIPPED: /usr/bin/python3 lacks h5py or numpy"; exit 77; fi

# refused NAME TEXT... -- ARGS: exit 2, one stderr line containing every TEXT, no result file.
refused() {
  local name="$1"; shift
  local texts=() text
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  rm -f "$work/x.h5"
  "$dos" "$@" -o "$work/x.h5" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  check "$name: exit 2" "[ $rc -eq 2 ] || { echo \"exit $rc\"; cat '$work/err.txt'; false; }"
  check "$name: one line" "[ \$(wc -l < '$work/err.txt') -eq 1 ] || { cat '$work/err.txt'; false; }"
  for text in "${texts[@]}"; do
    check "$name: names '$text'" "grep -qF -- '$text' '$work/err.txt' || { cat '$work/err.txt'; false; }"
  done
  check "$name: no result file" "[ ! -e '$work/x.h5' ]"
}

# ---- the exact limit: distance 4 on a 6x6x2 slab (periodic x, y: 6 < 2 x 4) ----
small=(--model ti --lattice 6x6x2 --ldos layer:0 --ldos-map-energy 1.0 --moments 64)
"$dos" "${small[@]}" -q -o "$work/ex6.h5" > /dev/null 2>&1
check "exact 6x6x2: exit 0" "[ $? -eq 0 ]"
"$dos" "${small[@]}" --ldos-method probing --probing-distance 4 -o "$work/pr6.h5" > "$work/pr6.txt" 2>&1
check "probing 6x6x2 distance 4: exit 0" "[ $? -eq 0 ] || { cat '$work/pr6.txt'; false; }"
check "probing 6x6x2 distance 4: says one row per colour" "grep -q 'in 144 colours at distance 4 x 1 draw(s) = 144 vectors.*one row per colour' '$work/pr6.txt'"
check "probing past half the lattice equals the exact LDOS (1e-12)" "$py - '$work/ex6.h5' '$work/pr6.h5' <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
dm = np.abs(a['/ldos/moments'][:] - b['/ldos/moments'][:]).max()
dr = np.abs(a['/ldos_map/rho'][:] - b['/ldos_map/rho'][:]).max() / a['/ldos_map/rho'][:].mean()
print('max moment difference', dm, 'map', dr)
at = dict(b['/ldos'].attrs)
assert dm < 1e-12 and dr < 1e-12, (dm, dr)
assert at['method'] == 'probing' and at['probing_distance'] == 4 and at['probing_draws'] == 1, at
assert at['probing_colours'] == 144 and at['probing_exact_moments'] == 64, at
assert dict(a['/ldos'].attrs)['method'] == 'exact'
PY"

# In a magnetic field (Peierls phases on the rows): the colouring is the field-free lattice's.
fld=(--model ti --lattice 6x6x2 --ldos layer:0 --moments 64 --magnetic-flux 1/36 --matrix sell -q)
"$dos" "${fld[@]}" -o "$work/fe.h5" > /dev/null 2>&1
"$dos" "${fld[@]}" --ldos-method probing --probing-distance 4 -o "$work/fp.h5" > "$work/fp.txt" 2>&1
check "probing in a field: exit 0" "[ $? -eq 0 ] || { cat '$work/fp.txt'; false; }"
check "probing in a field past half the lattice equals the exact LDOS (1e-12)" "$py -c \"
import h5py, numpy as np
assert np.abs(h5py.File('$work/fe.h5')['/ldos/moments'][:] - h5py.File('$work/fp.h5')['/ldos/moments'][:]).max() < 1e-12\""

# ---- the default distance on a 16x16x4 layer map ----
mid=(--model ti --lattice 16x16x4 --ldos layer:0 --ldos-map-energy 1.0 --moments 128)
"$dos" "${mid[@]}" -q -o "$work/ex16.h5" > /dev/null 2>&1
check "exact 16x16x4: exit 0" "[ $? -eq 0 ]"
"$dos" "${mid[@]}" --ldos-method probing -o "$work/pr16.h5" > "$work/pr16.txt" 2>&1
check "probing 16x16x4: exit 0" "[ $? -eq 0 ] || { cat '$work/pr16.txt'; false; }"
check "probing 16x16x4: 256 colours at the default distance 6" "grep -q '1024 rows in 256 colours at distance 6 x 1 draw(s) = 256 vectors of 127 sweeps' '$work/pr16.txt'"
check "default distance: map within 4 % rms of the mean map value of the exact map" "$py - '$work/ex16.h5' '$work/pr16.h5' <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
x, y = a['/ldos_map/rho'][:], b['/ldos_map/rho'][:]
rms = np.sqrt(np.mean((x - y) ** 2)) / x.mean()
print('rms / mean', rms)
assert 1e-4 < rms < 0.04, rms  # not exact (the colours hold 4 rows), within the stated rms
at = dict(b['/ldos'].attrs)
assert at['probing_distance'] == 6 and at['probing_colours'] == 256 and at['probing_exact_moments'] == 6, at
PY"

# ---- a map energy in the surface band: the Nystrom map of the filtered probing vectors ----
gap=(--model ti --lattice 16x16x4 --ldos layer:0 --ldos-map-energy 0.6 --moments 128)
"$dos" "${gap[@]}" -q -o "$work/gx.h5" > /dev/null 2>&1
check "exact 16x16x4 at 0.6 t: exit 0" "[ $? -eq 0 ]"
"$dos" "${gap[@]}" --ldos-method probing -o "$work/gp.h5" > "$work/gp.txt" 2>&1
check "probing 16x16x4 at 0.6 t: exit 0, the Nystrom map" "[ $? -eq 0 ] && grep -q 'ldos map    : Nystrom' '$work/gp.txt' || { cat '$work/gp.txt'; false; }"
check "surface band: the Nystrom map within 1 % rms of the exact map, the probed moments' map not within 5 %" "$py - '$work/gx.h5' '$work/gp.h5' <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
x, y = a['/ldos_map/rho'][:], b['/ldos_map/rho'][:]
rms = lambda m: np.sqrt(np.mean((x - m) ** 2)) / x.mean()
# the map of the probed moments, as the moments' reconstruction (Jackson, models.md 4) gives it
mu = b['/ldos/moments'][:]; m = mu.shape[1]; n = np.arange(m); q = np.pi / (m + 1)
g = ((m - n + 1) * np.cos(q * n) + np.sin(q * n) / np.tan(q)) / (m + 1)
sa, sb = b['/kpm'].attrs['scale_a'], b['/kpm'].attrs['scale_b']; x0 = (0.6 - sb) / sa
h = g * np.cos(n * np.arccos(x0)) * np.where(n == 0, 1.0, 2.0) / (np.pi * sa * np.sqrt(1 - x0 * x0))
moments_map = (mu @ h).reshape(16, 16, 4).sum(axis=2)
print('rms / mean: Nystrom', rms(y), 'probed moments', rms(moments_map))
at = dict(b['/ldos_map'].attrs)
assert at['method'] == 'nystrom' and 2 * at['nystrom_rank'] <= at['nystrom_columns'] == 256, at
assert rms(y) < 0.01 and rms(moments_map) > 0.05, (rms(y), rms(moments_map))
PY"

# ---- --probing-distance auto (the default) with a map energy ----
# The smallest distance whose colours x draws reach twice the filter's rank at an average
# LDOS, at least twice 32: 16x16x4 layer (1024 rows), Jackson M = 512: the filter's window
# is 0.026 of the spectrum, rank estimate 26.7, so 64 colours: distance 3 (4 x 4 x 4
# orbitals = 64; distance 2 gives 16). The surface band at 0.6 t holds fewer states than the average (measured rank
# below the estimate): the Nystrom map, within 1 % rms of the exact one (as above) with 8x
# fewer sweeps (64 vectors x 511 sweeps against 1024 rows x 256), and the estimated error
# (the trace defect) within 1 % of the mean as well.
auto=(--model ti --lattice 16x16x4 --ldos layer:0 --ldos-map-energy 0.6 --moments 512)
"$dos" "${auto[@]}" -q -o "$work/ax.h5" > /dev/null 2>&1
check "exact 16x16x4 M = 512: exit 0" "[ $? -eq 0 ]"
"$dos" "${auto[@]}" --ldos-method probing -o "$work/ap.h5" > "$work/ap.txt" 2>&1
check "probing auto: exit 0, distance 3 chosen" "[ $? -eq 0 ] && grep -q 'in 64 colours at distance 3 x 1 draw(s) = 64 vectors of 511 sweeps (distance: auto)' '$work/ap.txt' || { cat '$work/ap.txt'; false; }"
check "probing auto: the Nystrom map within 1 % rms, its rank below the estimate, the stored error" "$py - '$work/ax.h5' '$work/ap.h5' <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
x, y = a['/ldos_map/rho'][:], b['/ldos_map/rho'][:]
rms = np.sqrt(np.mean((x - y) ** 2)) / x.mean()
at, lt = dict(b['/ldos_map'].attrs), dict(b['/ldos'].attrs)
print('rms / mean', rms, 'mean error', (x - y).mean() / x.mean(), at)
assert lt['probing_distance'] == 3 and lt['probing_distance_source'] == 'auto' and lt['probing_colours'] == 64, lt
assert at['method'] == 'nystrom' and abs(at['nystrom_rank_estimate'] - 26.7) < 1 and at['nystrom_rank'] <= at['nystrom_rank_estimate'], at
assert rms < 0.01 and abs(at['nystrom_trace_defect']) < 0.01, (rms, at)
PY"
"$dos" "${auto[@]}" --ldos-method probing --probing-distance 3 -q -o "$work/a3.h5" > /dev/null 2>&1
check "a given distance is recorded as given, the same map as auto's" "$py -c \"
import h5py, numpy as np
a, b = h5py.File('$work/ap.h5'), h5py.File('$work/a3.h5')
assert b['/ldos'].attrs['probing_distance_source'] == 'given'
assert np.array_equal(a['/ldos_map/rho'][:], b['/ldos_map/rho'][:])\""

# ---- checkpoint and restart ----
pr=(--model ti --lattice 12x12x4 --ldos layer:0 --ldos-map-energy 0.6 --moments 1024 --ldos-method probing --probing-distance 3 --probing-draws 2)
"$dos" "${pr[@]}" -q -o "$work/full.h5" > /dev/null 2>&1
"$dos" "${pr[@]}" -o "$work/part.h5" --checkpoint "$work/ck.h5" --time-limit 0.3 > "$work/part.txt" 2>&1
check "probing stopped by --time-limit: exit 75" "[ $? -eq 75 ] || { cat '$work/part.txt'; false; }"
# (the refusal lists every differing parameter, one per line)
"$dos" --model ti --lattice 12x12x4 --ldos layer:0 --ldos-map-energy 0.6 --moments 1024 -o "$work/x.h5" --restart "$work/ck.h5" > /dev/null 2> "$work/err.txt"
check "exact restart of a probing checkpoint: exit 2" "[ $? -eq 2 ]"
check "exact restart of a probing checkpoint: names the method" "grep -qF -- '--ldos-method: checkpoint probing, not in this run' '$work/err.txt'"
"$dos" "${pr[@]}" -q -o "$work/part.h5" --checkpoint "$work/ck.h5" --restart "$work/ck.h5" > /dev/null 2>&1
check "probing restart: exit 0" "[ $? -eq 0 ]"
check "probing restart: moments and map bit for bit" "$py -c \"
import h5py, numpy as np
for k in ['/ldos/moments', '/ldos_map/rho']: assert np.array_equal(h5py.File('$work/full.h5')[k][:], h5py.File('$work/part.h5')[k][:]), k\""

# ---- under mpirun ----
if [ -n "$mpiexec" ]; then
  p=(--model ti --lattice 8x8x4 --ldos layer:1 --ldos-map-energy 1.0 --moments 96 --ldos-method probing --probing-distance 3 -q)
  "$dos" "${p[@]}" -o "$work/ps.h5" > /dev/null 2>&1
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$mpiexec" -n 2 --oversubscribe --bind-to none \
    "$dos" "${p[@]}" -o "$work/pm.h5" > "$work/pm.txt" 2>&1
  check "probing under mpirun -n 2: exit 0" "[ $? -eq 0 ] || { cat '$work/pm.txt'; false; }"
  check "probing under mpirun -n 2: the serial moments and map (1e-12)" "$py -c \"
import h5py, numpy as np
a, b = h5py.File('$work/ps.h5'), h5py.File('$work/pm.h5')
for k in ['/ldos/moments', '/ldos_map/rho']: assert np.abs(a[k][:] - b[k][:]).max() < 1e-12, k\""
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$mpiexec" -n 2 --oversubscribe --bind-to none \
    "$dos" "${gap[@]}" --ldos-method probing -q -o "$work/gm.h5" > "$work/gm.txt" 2>&1
  check "Nystrom map under mpirun -n 2: exit 0" "[ $? -eq 0 ] || { cat '$work/gm.txt'; false; }"
  check "Nystrom map under mpirun -n 2: the serial map (1e-9 of its mean)" "$py -c \"
import h5py, numpy as np
a, b = h5py.File('$work/gp.h5'), h5py.File('$work/gm.h5')
x, y = a['/ldos_map/rho'][:], b['/ldos_map/rho'][:]
assert b['/ldos_map'].attrs['method'] == 'nystrom' and np.abs(x - y).max() < 1e-9 * x.mean()\""
else
  echo "SKIPPED: the mpirun part (no mpiexec found at configure time)"
fi

# ---- refusals ----
t=(--model ti --lattice 6x6x2 --moments 16 -q)
refused "--ldos-method foo" "--ldos-method" "foo" "expected exact or probing" -- "${t[@]}" --ldos layer:0 --ldos-method foo
refused "--probing-distance 0" "--probing-distance 0" "auto or 1 .. 1000" -- "${t[@]}" --ldos layer:0 --ldos-method probing --probing-distance 0
refused "--probing-distance 1001" "--probing-distance 1001" "1 .. 1000" -- "${t[@]}" --ldos layer:0 --ldos-method probing --probing-distance 1001
refused "--probing-distance two" "--probing-distance" -- "${t[@]}" --ldos layer:0 --ldos-method probing --probing-distance two
refused "--probing-draws 0" "--probing-draws 0" "1 .. 1000" -- "${t[@]}" --ldos layer:0 --ldos-method probing --probing-draws 0
refused "--probing-draws without probing" "--probing-distance and --probing-draws apply to --ldos-method probing" -- "${t[@]}" --ldos layer:0 --probing-draws 2
refused "--ldos-method without --ldos" "--ldos-method needs --ldos" -- "${t[@]}" --ldos-method probing
"$dos" "${t[@]}" --vectors 1 --export-matrix "$work/m.mtx" -o "$work/m.h5" > /dev/null 2>&1
refused "probing without a lattice" "--ldos-method probing" "no lattice" "--ldos-method exact" -- \
  --model matrix-market --model-file "$work/m.mtx" --moments 16 -q --ldos 0,1 --ldos-method probing
for method in "" "--ldos-method probing"; do  # the default (exact) and probing
  refused "--ldos-map-energy 50 ${method:-exact}" "--ldos-map-energy 50" "outside the spectrum bounds [-" "] t" -- \
    "${t[@]}" --ldos layer:0 $method --ldos-map-energy 50
  refused "--ldos-map-energy -70 ${method:-exact}" "--ldos-map-energy -70" "outside the spectrum bounds [-" -- \
    "${t[@]}" --ldos layer:0 $method --ldos-map-energy -70 --bounds gershgorin
done

exit $fail
