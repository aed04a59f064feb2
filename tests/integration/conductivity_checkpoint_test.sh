#!/usr/bin/env bash
# Checkpoint/restart of the --conductivity phase (issue 34, docs/physics.md "Checkpoint and
# restart"), as a user meets it:
#  - SIGTERM early in the two-index moments (a block's right pass) and again later (a left
#    pass, with periodic checkpoints on): exit 75, the message with the resume command, a
#    checkpoint holding /checkpoint/conductivity, no result; --restart finishes with the DOS
#    moments, /conductivity/moments, sigma and sigma_stderr bit-identical to an
#    uninterrupted run, and removes the spent checkpoint;
#  - a changed --conductivity, and a checkpoint whose two-index sums were altered, are
#    refused with exit 2 (the parameter difference; the CRC-64) and leave it in place;
#  - --time-limit in a phase of tens of seconds: exit 75 within the limit, with a checkpoint.
set -u
dos="$1"
source "$(dirname "$0")/../support/script_lib.sh"
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "FAIL: /usr/bin/python3 lacks h5py or numpy (the setup script installs them)"; exit 1; fi
# 100x100 graphene in a field, M = 384, R = 4 in blocks of 2: 2 blocks of 383 right-pass and
# 383 left-pass sweeps (1532 in all), seconds of two-index moments on 2 cores.
args=(--model graphene --lattice 100x100 --magnetic-flux 1/100 --moments 384 --vectors 4 --block-width 2
      --conductivity xy --threads 2)

# interrupt NAME SWEEPS EXTRA...: starts the run, sends SIGTERM once its progress passed
# SWEEPS conductivity sweeps, sets rc.
interrupt() {
  local name="$1" at="$2"; shift 2
  "$dos" "${args[@]}" --output "$work/$name.h5" --checkpoint "$work/$name.ck.h5" --progress-interval 0.02 "$@" \
    > "$work/$name.txt" 2>&1 &
  local pid=$!
  for _ in $(seq 1 3000); do
    n=$(grep -o 'conductivity sweeps [0-9]*' "$work/$name.txt" 2>/dev/null | tail -1 | grep -o '[0-9]*$')
    [ -n "$n" ] && [ "$n" -ge "$at" ] && break
    sleep 0.02
  done
  kill -TERM "$pid"; wait "$pid"; rc=$?
}
same() {  # reference, resumed
  $py - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], 'r'), h5py.File(sys.argv[2], 'r')
names = ['/kpm/moments', '/dos/rho', '/conductivity/moments', '/conductivity/sigma', '/conductivity/sigma_stderr']
bad = [n for n in names if not np.array_equal(a[n][...], b[n][...])]
print('differ:', bad) if bad else None
sys.exit(1 if bad else 0)
PY
}
# What a checkpoint holds of the two-index moments: start (a block's start), left (a left pass under way) or none.
two_index() { $py -c "
import h5py
try:
    g = h5py.File('$1', 'r')['checkpoint'].get('conductivity')
    print('none' if g is None else 'left' if 'left' in g else 'start')
except OSError:
    print('none')"; }

"$dos" "${args[@]}" --output "$work/full.h5" --quiet > "$work/full.txt" 2>&1
check "uninterrupted run: exit 0" "[ $? -eq 0 ] || { cat '$work/full.txt'; false; }"

for stop in right left; do
  if [ $stop = right ]; then interrupt $stop 20; else interrupt $stop 480 --checkpoint-every 0.5; fi
  check "$stop: SIGTERM exits 75" "[ $rc -eq 75 ] || { echo rc=$rc; tail -3 '$work/$stop.txt'; false; }"
  check "$stop: message names the phase, the checkpoint and the resume command" \
    "grep -q 'stopped by SIGTERM during the --conductivity phase after [0-9]* of 1532 sweeps; checkpoint written to $work/$stop.ck.h5' '$work/$stop.txt' && grep -q -- 'resume with: .*--restart $work/$stop.ck.h5' '$work/$stop.txt' || { tail -3 '$work/$stop.txt'; false; }"
  check "$stop: no result" "[ ! -e '$work/$stop.h5' ]"
  if [ $stop = right ]; then
    check "right: the checkpoint is at a block's start" "[ \"\$(two_index '$work/$stop.ck.h5')\" = start ]"
  else
    check "left: the checkpoint holds a left recurrence under way" "[ \"\$(two_index '$work/$stop.ck.h5')\" = left ]"
  fi
done

# Refusals leave the checkpoint in place.
"$dos" "${args[@]/xy/yx}" --output "$work/bad.h5" --restart "$work/left.ck.h5" > "$work/bad.txt" 2>&1
check "changed --conductivity: exit 2 naming it" "[ $? -eq 2 ] && grep -q -- '--conductivity: checkpoint xy, this run yx' '$work/bad.txt' || { cat '$work/bad.txt'; false; }"
cp "$work/left.ck.h5" "$work/altered.ck.h5"
$py -c "import h5py; f = h5py.File('$work/altered.ck.h5', 'r+'); f['checkpoint/conductivity/sums'][0, 1, 1, 0] += 1e-3"
"$dos" "${args[@]}" --output "$work/bad.h5" --restart "$work/altered.ck.h5" > "$work/bad.txt" 2>&1
check "altered two-index sums: exit 2, the CRC-64" "[ $? -eq 2 ] && grep -q '/checkpoint/conductivity/sums does not match its CRC-64' '$work/bad.txt' || { cat '$work/bad.txt'; false; }"
check "refusals keep the checkpoint" "[ -s '$work/left.ck.h5' ] && [ ! -e '$work/bad.h5' ]"

for stop in right left; do
  "$dos" "${args[@]}" --output "$work/$stop.h5" --checkpoint "$work/$stop.ck.h5" --restart "$work/$stop.ck.h5" \
    > "$work/$stop.resume.txt" 2>&1
  check "$stop: restart exits 0" "[ $? -eq 0 ] || { cat '$work/$stop.resume.txt'; false; }"
  check "$stop: restart says where the two-index moments continue" "grep -q 'restart     : the two-index moments from block' '$work/$stop.resume.txt'"
  check "$stop: spent checkpoint removed" "[ ! -e '$work/$stop.ck.h5' ]"
  check "$stop: DOS and conductivity bit-identical to the uninterrupted run" "same '$work/full.h5' '$work/$stop.h5'"
done

# --time-limit: M = 2048 on 60x60 (tens of seconds of two-index moments) under a 6 s limit.
# The limit leaves the DOS moments and the phase's set-up (a fraction of a second, a few
# seconds on a loaded CI host) time to end first: the stop must come in the phase itself.
t0=$(date +%s.%N)
"$dos" --model graphene --lattice 60x60 --magnetic-flux 1/60 --moments 2048 --vectors 2 --block-width 1 \
  --conductivity xy --threads 2 --time-limit 6 --output "$work/tl.h5" --checkpoint "$work/tl.ck.h5" > "$work/tl.txt" 2>&1
rc=$?
t1=$(date +%s.%N)
check "--time-limit: exit 75" "[ $rc -eq 75 ] || { echo rc=$rc; tail -3 '$work/tl.txt'; false; }"
check "--time-limit: ended within the limit (+2 s)" "$py -c 'import sys; sys.exit(0 if $t1 - $t0 < 8 else 1)'"
check "--time-limit: the message and a conductivity checkpoint" "grep -q 'stopped before the --time-limit during the --conductivity phase' '$work/tl.txt' && [ \"\$(two_index '$work/tl.ck.h5')\" != none ] || { tail -3 '$work/tl.txt'; false; }"
exit $fail
