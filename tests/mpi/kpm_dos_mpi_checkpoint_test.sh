#!/bin/bash
# kpm_dos_mpi_checkpoint_test.sh MPIEXEC KPM_DOS SOURCE_DIR CASE: checkpoint/restart of `kpm-dos`
# under mpirun (docs/cluster.md), one CASE per ctest entry so each stays short:
#   sigterm   SIGTERM sent to mpirun mid-run (mpirun turns it into SIGCONT, then SIGTERM to the
#             ranks after odls_base_sigkill_timeout, then SIGKILL after the same time again;
#             mpirun itself then exits 1, not the ranks' 75): the ranks write their checkpoint
#             and say so once, then --restart on 2 ranks gives /kpm/moments bit-identical to the
#             uninterrupted 2-rank run (each rank takes its own partial sums back), and on 3
#             ranks equal to rounding.
#   sigusr1   the same with SIGUSR1 (mpirun forwards it at once; Slurm's --signal=B:USR1@T),
#             mpirun's exit status 75.
#   timelimit --time-limit of half the uninterrupted run's time: exit 75 on its own mid-run,
#             then the restart equals the uninterrupted run bit for bit; the same on one
#             rank without mpirun.
#   refused   a truncated checkpoint, one whose vector rows of rank 1 only hold a NaN
#             (only rank 1 reads them) and ones with a flipped bit in rank 1's rows or partial
#             raw moments (their CRC-64 put together from both ranks' pieces) are refused with
#             exit 2 and the message printed once, no hang; a checkpoint of other parameters
#             (--vector-seed) likewise.
#   imbalance the per-rank balance (slowest / mean busy time per sweep) in the summary and
#             /provenance, consistent.
# "Equal to rounding" (3 ranks, or one rank against 2): each dot product of a sweep is summed
# in another order (other row blocks per rank; rank 0 continues from the summed partials), a
# relative change of a few eps = 2.2e-16 per moment; the Chebyshev recurrence is stable
# (|T_n| <= 1) and such perturbations grow at most linearly in the step, so after M moments
# they differ by at most ~M eps (M = 4096: 9e-13; measured ~1e-15 .. 1e-13): 10 M eps.
set -u
mpiexec=$1 kpm=$2 src=$3 case=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; [ -f "$work/log" ] && cat "$work/log"; exit 1; }
# A 16384-row slab, 8 vectors, M = 4096: 2048 sweeps, about 2 s on 2 ranks of an idle core
# pair: long enough to be interrupted mid-run, short enough for CI (few sweeps: on a loaded
# machine the halo exchange of every sweep waits for the other rank to be scheduled).
moments=4096
# SIGTERM reaches the ranks only after mpirun's grace (2 s below): the run must outlast it
# by a margin (M = 32768: ~7 s of moments on an idle pair, more under load; M = 16384 left
# ~0.7 s on an idle pair), or it completes before the signal.
# --time-limit takes half the uninterrupted run's time, at least 1 s: the run must take
# well over 2 s, which M = 4096 no longer does on an idle pair since the R = 8 stencil
# got faster (0.55 s of moments).
case "$case" in sigterm | timelimit) moments=32768 ;; esac
args=(-c "$src/inputs/test/ti_tiny.ini" --lattice 32x32x4 --moments "$moments" --vectors 8)
rounding=$(awk -v m="$moments" 'BEGIN { printf "%.1e", 10 * m * 2.22e-16 }')
run_mpi() { local np=$1; shift; timeout 300 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$kpm" "${args[@]}" "$@"; }

same() {  # same A.h5 B.h5 TOLERANCE LABEL: /kpm/moments equal (TOLERANCE 0 = bit for bit)
  "$py" - "$@" <<'PY' || exit 1
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r")["kpm/moments"][()] for p in sys.argv[1:3])
tol, label = float(sys.argv[3]), sys.argv[4]
d = float(np.max(np.abs(a - b)))
if tol == 0.0 and not np.array_equal(a, b):
    print(f"FAIL: {label}: moments not bit-identical (max |diff| {d:.3e})"); sys.exit(1)
if not d <= tol:
    print(f"FAIL: {label}: max |diff| {d:.3e} > {tol:g}"); sys.exit(1)
print(f"ok: {label}: max |diff| = {d:.3e}")
PY
}

# Starts the 2-rank run with checkpoint ck.h5, waits for its first progress line (it is
# then mid-run), sends signal $1 to mpirun; expects exit 75 and the checkpoint.
interrupt() {
  local sig=$1
  # mpirun itself in the background (not under timeout, which would take the signal; the
  # ctest TIMEOUT is the watchdog).
  "$mpiexec" --oversubscribe --bind-to none -np 2 "$kpm" "${args[@]}" -o "$work/int.h5" --checkpoint "$work/ck.h5" \
    --progress-interval 0.05 > "$work/log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 400); do grep -q "  moments " "$work/log" && break; sleep 0.05; done
  grep -q "  moments " "$work/log" || fail "no progress line within 20 s"
  kill -"$sig" "$pid"
  wait "$pid"
  local rc=$?
  if [ "$sig" = TERM ]; then  # mpirun was told to terminate: it reports 1 whatever the ranks did
    [ "$rc" -ne 0 ] || fail "$sig: the run completed before the signal (exit 0)"
  else
    [ "$rc" -eq 75 ] || fail "$sig: mpirun exit status $rc, expected 75"
  fi
  [ -f "$work/ck.h5" ] || fail "$sig: no checkpoint written"
  [ ! -f "$work/int.h5" ] || fail "$sig: a result file although the run was stopped"
  grep -q "resume with: " "$work/log" || fail "$sig: no resume command printed"
  local n; n=$(grep -c "stopped by SIG$sig" "$work/log")
  [ "$n" -eq 1 ] || fail "$sig: 'stopped by' printed $n times, expected once"
  echo "ok: $sig: mpirun exit $rc, $(grep -o 'after [0-9]* of [0-9]* sweeps' "$work/log")"
}

resume_and_compare() {  # after interrupt(): restart on 2 ranks (bit-identical) and on 3 (rounding)
  cp "$work/ck.h5" "$work/ck3.h5"
  run_mpi 2 -o "$work/int.h5" --checkpoint "$work/ck.h5" --restart "$work/ck.h5" > "$work/log" 2>&1 ||
    fail "restart on 2 ranks: exit status $?"
  grep -q "same layout: each rank's own partial sums" "$work/log" || fail "the 2-rank restart did not take its own partials"
  [ ! -f "$work/ck.h5" ] || fail "the spent checkpoint was not removed"
  same "$work/full.h5" "$work/int.h5" 0 "restart on 2 ranks"
  run_mpi 3 -o "$work/int3.h5" --checkpoint "$work/ck3.h5" --restart "$work/ck3.h5" > "$work/log" 2>&1 ||
    fail "restart on 3 ranks: exit status $?"
  same "$work/full.h5" "$work/int3.h5" "$rounding" "restart on 3 ranks"
}

reference() {  # the uninterrupted 2-rank run; its wall time in $ref_seconds
  local t0; t0=$(date +%s.%N)
  run_mpi 2 -q -o "$work/full.h5" > "$work/log" 2>&1 || fail "uninterrupted 2-rank run: exit status $?"
  ref_seconds=$(echo "$(date +%s.%N) $t0" | awk '{ print $1 - $2 }')
}
half() { echo "$1" | awk '{ h = $1 / 2; print (h < 1 ? 1 : h) }'; }  # half, at least 1 s

case "$case" in
sigterm)
  # mpirun's grace between SIGCONT, SIGTERM and SIGKILL (default 1 s): 2 s, so a loaded CI
  # machine still writes the checkpoint before the SIGKILL while the run (M = 32768) is
  # still going when SIGTERM arrives.
  export OMPI_MCA_odls_base_sigkill_timeout=2
  reference
  interrupt TERM
  resume_and_compare
  ;;
sigusr1)
  reference
  interrupt USR1
  resume_and_compare
  ;;
timelimit)
  reference
  # Seconds count from the start of kpm-dos; half the uninterrupted run's time stops it
  # mid-way (the stop comes a little before the limit: twice 4 sweeps and the guessed write).
  limit=$(half "$ref_seconds")
  run_mpi 2 -o "$work/int.h5" --checkpoint "$work/ck.h5" --time-limit "$limit" > "$work/log" 2>&1
  rc=$?
  [ "$rc" -eq 75 ] || fail "--time-limit $limit: exit status $rc, expected 75"
  grep -q "stopped before the --time-limit" "$work/log" || fail "--time-limit: no message"
  done=$(grep -o 'after [0-9]* of' "$work/log" | grep -o '[0-9]*')
  [ "${done:-0}" -gt 0 ] || fail "--time-limit stopped before the first sweep"
  echo "ok: --time-limit $limit s (run: $ref_seconds s): exit 75, $(grep -o 'after [0-9]* of [0-9]* sweeps' "$work/log")"
  run_mpi 2 -o "$work/int.h5" --checkpoint "$work/ck.h5" --restart "$work/ck.h5" > "$work/log" 2>&1 ||
    fail "restart after --time-limit: exit status $?"
  same "$work/full.h5" "$work/int.h5" 0 "restart after --time-limit on 2 ranks"
  # The same on one rank (no mpirun): stops on its own and resumes.
  t0=$(date +%s.%N)
  timeout 300 "$kpm" "${args[@]}" -q -o "$work/one_full.h5" > "$work/log" 2>&1 || fail "one-rank run: exit status $?"
  limit=$(half "$(echo "$(date +%s.%N) $t0" | awk '{ print $1 - $2 }')")
  timeout 300 "$kpm" "${args[@]}" -o "$work/one.h5" --checkpoint "$work/ck1.h5" --time-limit "$limit" > "$work/log" 2>&1
  rc=$?
  [ "$rc" -eq 75 ] || fail "--time-limit $limit on one rank: exit status $rc, expected 75"
  timeout 300 "$kpm" "${args[@]}" -o "$work/one.h5" --checkpoint "$work/ck1.h5" --restart "$work/ck1.h5" > "$work/log" 2>&1 ||
    fail "one-rank restart after --time-limit: exit status $?"
  same "$work/one_full.h5" "$work/one.h5" 0 "one-rank restart after --time-limit"
  ;;
refused)
  interrupt USR1
  expect_refused() {  # expect_refused LABEL PATTERN CHECKPOINT [extra args]
    local label=$1 pattern=$2 ck=$3; shift 3
    local start; start=$(date +%s)
    timeout 30 "$mpiexec" --oversubscribe --bind-to none -np 2 "$kpm" "${args[@]}" "$@" -o "$work/r.h5" \
      --checkpoint "$ck" --restart "$ck" > "$work/log" 2>&1
    local rc=$?
    [ "$rc" -ne 124 ] || fail "$label: still running after 30 s (hung)"
    [ "$rc" -eq 2 ] || fail "$label: exit status $rc, expected 2 (input error)"
    local n; n=$(grep -c -- "$pattern" "$work/log")
    [ "$n" -eq 1 ] || fail "$label: message '$pattern' printed $n times, expected once"
    [ -f "$ck" ] || fail "$label: the refused checkpoint was removed"
    echo "ok: $label: refused on every rank with one message in $(( $(date +%s) - start )) s"
  }
  cp "$work/ck.h5" "$work/nan.h5"
  "$py" - "$work/nan.h5" <<'PY' || fail "could not edit the checkpoint"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    f["checkpoint/block/current"][12000, 0, 0] = np.nan   # row 12000 of 16384: rank 1's half
PY
  expect_refused "NaN in rank 1's rows" "block/current holds non-finite values" "$work/nan.h5"
  # One flipped bit (the lowest of a float64, in the file's bytes: finite, one ulp off) in
  # rank 1's rows and in rank 1's partial raw moments: only rank 1 reads them, and the CRC
  # of the whole dataset is put together from both ranks' pieces.
  flip_bit() {  # flip_bit DST DATASET INDEX (tests/integration/flip_bit.py)
    "$py" "$src/tests/integration/flip_bit.py" "$work/ck.h5" "$@" || fail "could not flip a bit of $2"
  }
  flip_bit "$work/flip.h5" /checkpoint/block/current $((12000 * 8 * 2 + 3))  # row 12000 of 16384, W = 8
  expect_refused "a flipped bit in rank 1's rows" "/checkpoint/block/current does not match its CRC-64" "$work/flip.h5"
  flip_bit "$work/flipraw.h5" /checkpoint/block/rank_raw $((8 * moments + 5))  # rank 1's row of [2, W M]
  expect_refused "a flipped bit in rank 1's raw moments" "/checkpoint/block/rank_raw does not match its CRC-64" "$work/flipraw.h5"
  head -c 20000 "$work/ck.h5" > "$work/cut.h5"
  expect_refused "truncated file" "not a usable topokpm checkpoint" "$work/cut.h5"
  cp "$work/ck.h5" "$work/other.h5"
  expect_refused "other --vector-seed" "other parameters" "$work/other.h5" --vector-seed 99
  ;;
imbalance)
  # The per-rank balance in the summary and /provenance (a timing, so only its consistency
  # is checked: slowest >= mean > 0, imbalance = slowest / mean >= 1).
  args=(-c "$src/inputs/test/ti_tiny.ini" --lattice 16x16x4 --moments 256 --vectors 4)
  run_mpi 2 --weights 1:3 -o "$work/w.h5" > "$work/log" 2>&1 || fail "balance run: exit status $?"
  [ "$(grep -c '^ranks       : busy per sweep slowest' "$work/log")" -eq 1 ] || fail "no balance line in the summary"
  "$py" - "$work/w.h5" <<'PY' || fail "balance attributes"
import sys, h5py
a = h5py.File(sys.argv[1], "r")["provenance"].attrs
s, m, i = a["sweep_busy_seconds_slowest"], a["sweep_busy_seconds_mean"], a["rank_imbalance"]
assert s >= m > 0 and abs(i - s / m) <= 1e-12 * i and i >= 1.0, (s, m, i)
assert a["sweep_wait_seconds_mean"] >= 0
print(f"ok: balance: slowest {s*1e3:.3f} ms, mean {m*1e3:.3f} ms, imbalance {i:.3f} (weights 1:3)")
PY
  ;;
*) fail "unknown case '$case'" ;;
esac
echo PASS
