#!/usr/bin/env bash
# Checkpoint/restart as a user meets it: SIGTERM in the middle of the moments writes a
# checkpoint and exits 75 with the resume command; --restart finishes with moments
# bit-identical to an uninterrupted run (h5py compares every moment array exactly); a
# changed option or a corrupted checkpoint is refused (exit 2) with a clear message;
# --quiet silences the progress lines.
set -u
exe="$1"
source "$(dirname "$0")/../support/script_lib.sh"
# Seconds of moments on 2 cores, in single precision too (the interrupted runs need more than
# the first checkpoint and 0.3 s): a 48x48x12 slab (N = 110592), M = 4000, R = 8. At 24x24x12
# the single run ended in 0.45 s on an AVX-512 host, before the SIGTERM.
args=(--model ti --lattice 48x48x12 --disorder 0.5 --moments 4000 --vectors 8 --energy-range -6:6 --threads 2)

# interrupted OUT CKPT LOG ARGS...: starts a run with periodic checkpoints, sends SIGTERM
# once the first checkpoint exists, and sets rc to the run's exit code.
interrupted() {
  local out="$1" ck="$2" log="$3"; shift 3
  "$exe" "$@" --output "$out" --checkpoint "$ck" --checkpoint-every 0.2 > "$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do [ -e "$ck" ] && break; sleep 0.05; done
  sleep 0.3
  kill -TERM "$pid"
  wait "$pid"; rc=$?
}

"$exe" "${args[@]}" --output "$work/full.h5" --quiet > "$work/full.txt" 2>&1
check "uninterrupted run exits 0" "[ $? -eq 0 ]"

interrupted "$work/part.h5" "$work/ck.h5" "$work/part.txt" "${args[@]}"
check "SIGTERM exits with code 75" "[ $rc -eq 75 ]"
check "message names the signal and the checkpoint" "grep -q 'stopped by SIGTERM' '$work/part.txt' && grep -q 'checkpoint written to $work/ck.h5' '$work/part.txt'"
check "message says how to resume" "grep -q -- 'resume with: .*--restart $work/ck.h5' '$work/part.txt'"
check "no result file after the interruption" "[ ! -e '$work/part.h5' ]"
check "checkpoint file present, no temporaries" "[ -s '$work/ck.h5' ] && [ -z \"\$(ls '$work' | grep tmp)\" ]"

# Refusals leave the checkpoint in place.
"$exe" "${args[@]/4000/3000}" --output "$work/part.h5" --restart "$work/ck.h5" > "$work/bad.txt" 2>&1
rc=$?
check "changed --moments is refused with exit 2" "[ $rc -eq 2 ]"
check "refusal lists the difference" "grep -q -- '--moments: checkpoint 4000, this run 3000' '$work/bad.txt'"
printf 'garbage, not HDF5' > "$work/corrupt.h5"
"$exe" "${args[@]}" --output "$work/part.h5" --restart "$work/corrupt.h5" > "$work/bad.txt" 2>&1
rc=$?
check "corrupted checkpoint is refused with exit 2" "[ $rc -eq 2 ]"
check "corrupted checkpoint message is clear" "grep -q 'not a usable topokpm checkpoint' '$work/bad.txt'"
head -c 4000 "$work/ck.h5" > "$work/truncated.h5"
"$exe" "${args[@]}" --output "$work/part.h5" --restart "$work/truncated.h5" > "$work/bad.txt" 2>&1
check "truncated checkpoint is refused" "[ $? -eq 2 ] && grep -q 'not a usable topokpm checkpoint' '$work/bad.txt'"

"$exe" "${args[@]}" --output "$work/part.h5" --checkpoint "$work/ck.h5" --restart "$work/ck.h5" --quiet > "$work/resume.txt" 2>&1
check "restart exits 0" "[ $? -eq 0 ]"
check "restart with --quiet prints only the result line" "[ \"\$(cat '$work/resume.txt')\" = 'result written to $work/part.h5' ]"
check "spent checkpoint removed" "[ ! -e '$work/ck.h5' ]"
if $py -c 'import h5py' 2>/dev/null; then
  check "moments bit-identical to the uninterrupted run" "$py - '$work/full.h5' '$work/part.h5' <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], 'r'), h5py.File(sys.argv[2], 'r')
names = ['/kpm/moments', '/kpm/moments_per_vector', '/kpm/moments_stderr', '/dos/rho', '/dos/rho_stderr']
bad = [n for n in names if not np.array_equal(a[n][...], b[n][...])]
print('differ:', bad) if bad else None
sys.exit(1 if bad else 0)
PY"
else
  echo "SKIPPED: bit-for-bit comparison (/usr/bin/python3 has no h5py)"
fi

# --quiet silences the progress lines that a normal run prints.
"$exe" "${args[@]/4000/600}" --output "$work/p.h5" --progress-interval 0.01 > "$work/loud.txt" 2>&1
"$exe" "${args[@]/4000/600}" --output "$work/q.h5" --progress-interval 0.01 --quiet > "$work/quiet.txt" 2>&1
check "progress lines without --quiet" "grep -q '  moments .*ETA.*Gflop/s' '$work/loud.txt'"
check "no progress lines with --quiet" "! grep -q 'moments' '$work/quiet.txt'"

# --precision single: the checkpoint holds the float vectors widened to double (exactly),
# so the restart continues bit for bit; a double checkpoint is refused for a single run.
sargs=("${args[@]}" --precision single)
"$exe" "${sargs[@]}" --output "$work/sfull.h5" --quiet > /dev/null 2>&1
check "single-precision run exits 0" "[ $? -eq 0 ]"
interrupted "$work/spart.h5" "$work/sck.h5" "$work/spart.txt" "${sargs[@]}"
check "single precision: SIGTERM exits with code 75" "[ $rc -eq 75 ]"
"$exe" "${args[@]}" --output "$work/spart.h5" --restart "$work/sck.h5" > "$work/sbad.txt" 2>&1
check "a single-precision checkpoint is refused for a double run" "[ $? -eq 2 ] && grep -q -- '--precision: checkpoint single, this run double' '$work/sbad.txt'"
"$exe" "${sargs[@]}" --output "$work/spart.h5" --checkpoint "$work/sck.h5" --restart "$work/sck.h5" --quiet > /dev/null 2>&1
check "single precision: restart exits 0" "[ $? -eq 0 ]"
if $py -c 'import h5py' 2>/dev/null; then
  check "single precision: moments bit-identical to the uninterrupted single run" "$py - '$work/sfull.h5' '$work/spart.h5' <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], 'r'), h5py.File(sys.argv[2], 'r')
sys.exit(0 if np.array_equal(a['/kpm/moments'][...], b['/kpm/moments'][...]) and b['/kpm'].attrs['precision'] == 'single' else 1)
PY"
fi
exit $fail
