#!/bin/bash
# kpm_dos_mpi_conductivity_test.sh MPIEXEC KPM_DOS CASE: `kpm-dos --conductivity` under mpirun
# (issue 34; docs/scaling.md), one CASE per ctest entry:
#   np2        2 ranks, 1-D: graphene 24x24 in a field (sell), and without a field (crs), and
#              sigma_yx: /conductivity/moments and sigma equal to the one-rank run of the same
#              operator to rounding (below); Gamma^yx = (Gamma^xy)^T and sigma_xy = -sigma_yx
#              on the Hall plateau; the phase's memory checked per rank (exit 3).
#   np3        3 ranks, 1-D: sell in a field, --matrix auto without one, crs with uneven
#              --weights, --comm-mode vector and --reduce-every-sweep.
#   np4        4 ranks, the 2-D grid 2x2: graphene in a field, and a ti slab 8x8x2 in a field.
#   checkpoint 2 ranks: SIGUSR1 (mpirun forwards it at once) in a left pass and in a right pass
#              of the two-index moments: exit 75 and a checkpoint; --restart on the same 2
#              ranks ends with /kpm/moments, /conductivity/moments, sigma and sigma_stderr
#              bit-identical to the uninterrupted 2-rank run; the same checkpoint restarted
#              on 3 ranks or on one is refused (exit 2, one line naming the ranks), and
#              --time-limit stops the 2-rank phase with exit 75 and a checkpoint.
#   cuda       --device cuda with --conductivity under mpirun (GPU ranks) is refused (exit 2, one
#              line naming --conductivity; one GPU without mpirun runs: conductivity_cuda_test.sh).
#
# Tolerance ("to rounding"). The ranks sum each row's entries in another order (local part
# plus halo correction) and each ZGEMM over their own rows, then add the partial sums once:
# the vectors of both Chebyshev recurrences differ by a relative c eps per sweep (c: a few
# roundings per row and step), and a perturbation made at sweep k reaches T_n as U_{n-k}(Ht)
# times it, |U_j| <= j + 1 (Chebyshev polynomials of the second kind), so after n sweeps it is
# at most sum_k (n - k + 1) c eps <= n^2 c eps of the vector (relative). Gamma_nm =
# <L_n|R_m>/N with |L_n|, |R_m| <= ||v|| |r| therefore moves by at most 2 M^2 c eps ||v_a|| ||v_b||
# ||v_a|| <= the largest row sum of |H_ij (r_i - r_j)_a|: graphene (t = 1, bond length 1)
# sqrt(3) for x and 2 for y; the ti slab (t = 1, unit cubic cell) at most 4 per axis (two
# bonds along a, at most two entries of magnitude <= t per row of a bond's block). With c = 2
# (the row's sum and the recurrence's combination): tol = 4 M^2 eps ||v_a|| ||v_b|| (5e-11 at
# M = 128 on graphene; a rank's share summed twice or missing moves Gamma by O(1)). The bound
# is a worst case: with the same bounds (--energy-range; Lanczos' own differ in the last
# digits between rank counts, which alone moved Gamma by 4e-12 here) the runs differ by
# ~1e-16. sigma(mu) is the same linear combination of Gamma in both runs; its rounding is
# taken relative to its own scale with the same factor: |d sigma| <= 4 M^2 eps max|sigma|.
set -u
mpiexec=$1 kpm=$2 case=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
source "$(dirname "$0")/../support/script_lib.sh"
"$py" -c 'import h5py, numpy' 2>/dev/null || { echo "FAIL: /usr/bin/python3 lacks h5py or numpy"; exit 1; }
failed=0
fail() { echo "FAIL: $*"; [ -f "$work/log" ] && tail -20 "$work/log"; failed=1; }
run_mpi() { local np=$1; shift; timeout 300 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$kpm" "$@"; }
# Fixed bounds: Lanczos' on several ranks differ in the last digits (another scaling, energy grid).
graphene=(--model graphene --lattice 24x24 --moments 128 --vectors 4 --block-width 2 --energy-range -3.1:3.1 --threads 1
          --quiet)

# close ONE P VNORM2 LABEL: /conductivity/moments and sigma of P equal ONE's to rounding.
close() {
  "$py" - "$@" <<'PY' || failed=1
import sys, h5py, numpy as np
one, p, vnorm2, label = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
a, b = h5py.File(one, "r"), h5py.File(p, "r")
m = a["conductivity/moments"].shape[0]
eps = np.finfo(float).eps
tol_g = 4 * m * m * eps * vnorm2
dg = float(np.max(np.abs(a["conductivity/moments"][()] - b["conductivity/moments"][()])))
sa, sb = a["conductivity/sigma"][()], b["conductivity/sigma"][()]
tol_s = 4 * m * m * eps * float(np.max(np.abs(sa)))
ds = float(np.max(np.abs(sa - sb)))
ok = dg <= tol_g and ds <= tol_s and np.array_equal(a["conductivity/energy"][()], b["conductivity/energy"][()])
print(f"{'ok' if ok else 'FAIL'}: {label}: max |dGamma| {dg:.2e} (allowed {tol_g:.1e}), max |dsigma| {ds:.2e} "
      f"(allowed {tol_s:.1e}), max |Gamma| {float(np.max(np.abs(a['conductivity/moments'][()]))):.3f}")
sys.exit(0 if ok else 1)
PY
}

# compare NP LABEL VNORM2 ARGS...: the run on one rank (no mpirun) and on NP ranks.
compare() {
  local np=$1 label=$2 vnorm2=$3; shift 3
  "$kpm" "$@" -o "$work/one.h5" > "$work/log" 2>&1 || { fail "$label: one rank failed"; return; }
  run_mpi "$np" "$@" -o "$work/p.h5" > "$work/log" 2>&1 || { fail "$label: $np ranks failed"; return; }
  close "$work/one.h5" "$work/p.h5" "$vnorm2" "$label on $np ranks"
}
vg=3.4641  # graphene: ||v_x|| ||v_y|| <= sqrt(3) * 2

case "$case" in
np2)
  compare 2 "graphene 1/24 sell xy" $vg "${graphene[@]}" --magnetic-flux 1/24 --matrix sell --conductivity xy
  compare 2 "graphene crs xy, no field" $vg "${graphene[@]}" --matrix crs --conductivity xy
  compare 2 "graphene 1/24 sell yx" $vg "${graphene[@]}" --magnetic-flux 1/24 --matrix sell --conductivity yx
  # sigma_xy = -sigma_yx: the exact trace of 6x6 graphene at PHI = 1/12 on 2 ranks (as
  # conductivity_test.sh on one): Gamma^yx_nm = Tr[v_y T_n v_x T_m]/N = Gamma^xy_mn (the trace
  # is cyclic) to rounding, and sigma_yx = -sigma_xy on the Hall plateau between Landau levels
  # 0 and 1 (0.25 < |mu| < 0.5; within 0.02 as on one rank).
  g6=(--model graphene --lattice 6x6 --moments 128 --trace exact --energy-range -3:3 --magnetic-flux 1/12 --quiet)
  for c in xy yx; do
    run_mpi 2 "${g6[@]}" --conductivity $c -o "$work/$c.h5" > "$work/log" 2>&1 || fail "$c on 2 ranks"
  done
  "$py" - "$work/xy.h5" "$work/yx.h5" $vg <<'PY' || failed=1
import sys, h5py, numpy as np
xy, yx = (h5py.File(p, "r")["conductivity"] for p in sys.argv[1:3])
gxy, gyx = xy["moments"][()], yx["moments"][()]
m = gxy.shape[0]
tol = 4 * m * m * np.finfo(float).eps * float(sys.argv[3])
d = float(np.max(np.abs(gyx - gxy.T)))
E, sxy, syx = xy["energy"][()], xy["sigma"][()], yx["sigma"][()]
gap = (np.abs(E) > 0.25) & (np.abs(E) < 0.5)
h = float(np.max(np.abs(sxy[gap] + syx[gap])))
ok = d <= tol and h < 0.02 and np.all(np.abs(np.abs(sxy[gap]) - 1) < 0.1)
print(f"{'ok' if ok else 'FAIL'}: 2 ranks: max |Gamma^yx - (Gamma^xy)^T| {d:.2e} (allowed {tol:.1e}); on the plateau "
      f"max |sigma_xy + sigma_yx| {h:.2e} (allowed 0.02), |sigma_xy| = 1 within {float(np.max(np.abs(np.abs(sxy[gap]) - 1))):.3f}")
sys.exit(0 if ok else 1)
PY
  # Memory per rank: 200x200 graphene, M = 512, W = 4 needs 2.7 GiB for the phase on one rank
  # (conductivity_test.sh); each of 2 ranks holds half the rows (1.35 GiB) plus its share of
  # the velocities and their halo of 2 x 400 rows: 1.4 GiB, refused before the run (exit 3).
  run_mpi 2 --model graphene --lattice 200x200 --magnetic-flux 1/200 --moments 512 --vectors 4 --conductivity xy \
    --memory-limit 1 -o "$work/big.h5" > "$work/out" 2> "$work/err"
  rc=$?
  if [ "$rc" -eq 3 ] && [ "$(grep -c 'conductivity 1.4 GiB' "$work/err")" -eq 1 ]; then
    echo "ok: the phase's memory is checked per rank (conductivity 1.4 GiB on each of 2 ranks)"
  else
    fail "memory per rank: exit $rc, expected 3 with 'conductivity 1.4 GiB' once"; cat "$work/err"
  fi
  ;;
np3)
  compare 3 "graphene 1/24 sell xy" $vg "${graphene[@]}" --magnetic-flux 1/24 --matrix sell --conductivity xy --decomposition 1d
  compare 3 "graphene auto xx, no field" 3.0 "${graphene[@]}" --matrix auto --conductivity xx --decomposition 1d
  compare 3 "graphene 1/24 crs xy, weights 1:2:1, vector mode, dots reduced every sweep" $vg "${graphene[@]}" \
    --magnetic-flux 1/24 --matrix crs --conductivity xy --weights 1:2:1 --comm-mode vector --reduce-every-sweep
  ;;
np4)
  compare 4 "graphene 1/24 sell xy, grid 2x2" $vg "${graphene[@]}" --magnetic-flux 1/24 --matrix sell --conductivity xy \
    --decomposition 2x2
  "$py" -c "
import h5py, sys
d = h5py.File('$work/p.h5', 'r')['provenance'].attrs['decomposition']
sys.exit(0 if (d.decode() if isinstance(d, bytes) else d) == '2d 2x2' else 1)" || fail "the 4-rank run did not use the 2x2 grid"
  # ti: v_a = i[H, r_a] has per row the hoppings t along +-a (|r| = 1) and the spin-orbit
  # terms; bounded generously by 4 t per axis.
  compare 4 "ti 8x8x2 slab 1/8 xy, grid 2x2" 16 --model ti --lattice 8x8x2 --magnetic-flux 1/8 --moments 64 --vectors 2 \
    --energy-range -4.7:4.7 --threads 1 --quiet --conductivity xy --decomposition 2x2
  ;;
checkpoint)
  # 200x200 graphene in a field, M = 128, R = 4 in blocks of 2: 2 blocks of 127 right-pass
  # sweeps (cheap: ~0.3 s) and 127 left-pass sweeps (the ZGEMMs: ~1 s); past sweep 130 block
  # 1's left pass, past 260 block 2's right pass (mpirun relays the progress lines late, so
  # the right pass must last a while).
  args=(--model graphene --lattice 200x200 --magnetic-flux 1/200 --moments 128 --vectors 4 --block-width 2
        --conductivity xy --threads 1)
  run_mpi 2 "${args[@]}" --quiet -o "$work/full.h5" > "$work/log" 2>&1 || fail "uninterrupted 2-rank run"
  # stop NAME SWEEPS: SIGUSR1 to mpirun once the progress passed SWEEPS conductivity sweeps.
  stop() {
    local name=$1 at=$2
    rm -f "$work/$name.ck.h5"
    "$mpiexec" --oversubscribe --bind-to none -np 2 "$kpm" "${args[@]}" -o "$work/$name.h5" \
      --checkpoint "$work/$name.ck.h5" --progress-interval 0.02 > "$work/log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 3000); do
      n=$(grep -o 'conductivity sweeps [0-9]*' "$work/log" 2>/dev/null | tail -1 | grep -o '[0-9]*$')
      [ -n "$n" ] && [ "$n" -ge "$at" ] && break
      sleep 0.02
    done
    kill -USR1 "$pid"; wait "$pid"; rc=$?
  }
  # same NAME: the restarted result bit-identical to the uninterrupted one.
  same() {
    "$py" - "$work/full.h5" "$work/$1.h5" "$1" <<'PY' || failed=1
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = ["/kpm/moments", "/conductivity/moments", "/conductivity/sigma", "/conductivity/sigma_stderr"]
bad = [n for n in names if not np.array_equal(a[n][()], b[n][()])]
print(f"FAIL: stopped in a {sys.argv[3]} pass, restarted on 2 ranks, not bit-identical: {bad}" if bad else
      f"ok: stopped in a {sys.argv[3]} pass, restarted on 2 ranks: bit-identical")
sys.exit(1 if bad else 0)
PY
  }
  for where in "right 260" "left 130"; do
    set -- $where
    stop "$1" "$2"
    [ "$rc" -eq 75 ] || { fail "$1: mpirun exit $rc, expected 75 (stopped mid-phase)"; continue; }
    grep -q "during the --conductivity phase" "$work/log" || fail "$1: no stop message of the phase"
    grep -q "resume with: mpirun (or srun) with the same 2 ranks and decomposition" "$work/log" ||
      fail "$1: the resume line does not ask for the same ranks"
    [ "$(grep -c 'checkpoint written to' "$work/log")" -eq 1 ] || fail "$1: the stop is not reported once"
    [ -f "$work/$1.ck.h5" ] || { fail "$1: no checkpoint"; continue; }
    "$py" -c "
import h5py, sys
g = h5py.File('$work/$1.ck.h5', 'r')['checkpoint']
c = g.get('conductivity')
ok = c is not None and ('left' in c) == ('$1' == 'left') and c['rank_sums'].shape == (2, 4 * 128 * 128 * 2)
ok = ok and ('$1' == 'right' or (c['left/current'].shape == (80000, 2, 2) and c['left/rank_raw'].shape[0] == 2))
sys.exit(0 if ok else 1)" ||
      { fail "$1: the checkpoint does not hold the 2 ranks' two-index state of a $1 pass (docs/format.md)"; grep -o 'after [0-9]* of [0-9]* sweeps' "$work/log"; }
    if [ "$1" = left ]; then  # other rank counts: refused, the checkpoint kept
      for np in 3 1; do
        if [ $np -eq 1 ]; then "$kpm" "${args[@]}" -o "$work/other.h5" --restart "$work/left.ck.h5" > "$work/out" 2> "$work/err"
        else run_mpi $np "${args[@]}" -o "$work/other.h5" --restart "$work/left.ck.h5" > "$work/out" 2> "$work/err"; fi
        rc=$?
        [ "$rc" -eq 2 ] || fail "restart on $np rank(s): exit $rc, expected 2"
        [ "$(grep -c 'its --conductivity phase was written by 2 ranks' "$work/err")" -eq 1 ] ||
          { fail "restart on $np rank(s): not one line naming the ranks"; cat "$work/err"; }
        [ -f "$work/left.ck.h5" ] || fail "restart on $np rank(s): the checkpoint was removed"
      done
      echo "ok: restarts on 3 ranks and on one are refused with one line"
    fi
    run_mpi 2 "${args[@]}" -o "$work/$1.h5" --checkpoint "$work/$1.ck.h5" --restart "$work/$1.ck.h5" > "$work/log" 2>&1 ||
      { fail "$1: restart on 2 ranks failed"; continue; }
    grep -q "two-index moments from block" "$work/log" || fail "$1: the restart did not resume the two-index moments"
    same "$1"
  done
  # --time-limit: the DOS moments take a fraction of a second, the phase several seconds.
  long=(--model graphene --lattice 64x64 --magnetic-flux 1/64 --moments 1024 --vectors 4 --block-width 2
        --conductivity xy --threads 1)
  run_mpi 2 "${long[@]}" -o "$work/limit.h5" --checkpoint "$work/limit.ck.h5" --time-limit 3 > "$work/log" 2>&1
  rc=$?
  [ "$rc" -eq 75 ] || fail "--time-limit: exit $rc, expected 75"
  grep -q "stopped before the --time-limit during the --conductivity phase" "$work/log" ||
    fail "--time-limit: no stop in the phase"
  [ -f "$work/limit.ck.h5" ] && echo "ok: --time-limit stops the phase on 2 ranks with a checkpoint" ||
    fail "--time-limit: no checkpoint"
  ;;
cuda)
  run_mpi 2 "${graphene[@]}" --conductivity xy --device cuda -o "$work/gpu.h5" > "$work/out" 2> "$work/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "--device cuda: exit $rc, expected 2"
  [ "$(grep -c -- '--conductivity: the two-index moments run on CPU ranks (one, or several under mpirun) or on one GPU' "$work/err")" -eq 1 ] ||
    { fail "--device cuda: not one line naming the GPU-rank restriction"; cat "$work/err"; }
  [ ! -e "$work/gpu.h5" ] || fail "--device cuda: a result was written"
  [ $failed -eq 0 ] && echo "ok: --device cuda with --conductivity under mpirun refused"
  ;;
*) echo "unknown case $case"; exit 1 ;;
esac
exit $failed
