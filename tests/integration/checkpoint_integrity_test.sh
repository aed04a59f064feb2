#!/usr/bin/env bash
# Checkpoints that cannot lie (issue 30, docs/reliability.md "Checkpoints"):
# - one flipped bit in the vectors, the raw moments of the block under way or the moment
#   sums (found with h5py's get_offset, flipped in the raw bytes: a finite value one ulp
#   off, which no shape or range check sees) is refused with exit 2 naming the dataset;
# - a checkpoint written with --threads 1 resumes with --threads 2 (the restart line says
#   so): the per-thread partial dot products are added in another order, a relative change
#   of a few eps = 2.2e-16 per sweep that the stable recurrence (|T_n| <= 1) lets grow at
#   most linearly, so the moments equal the uninterrupted run's within 10 M eps (M = 4000:
#   8.9e-12), as the MPI tests allow for another rank count (the same --threads resumes bit
#   for bit: kpm_dos_checkpoint);
# - two runs on one checkpoint path: the second is refused (exit 2) naming the first's pid
#   and host, whether it would write or resume it; a lock left by a killed run does not block;
# - --restart through a symbolic link: the link stays, the spent checkpoint it points to is
#   removed; --checkpoint through a link writes the checkpoint to the link's target (the
#   link stays a link), and --restart LINK --checkpoint LINK resumes and writes through it.
set -u
exe="$1"
source "$(dirname "$0")/../support/script_lib.sh"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
if ! $py -c 'import h5py' 2>/dev/null; then echo "FAIL: /usr/bin/python3 has no h5py (every check here edits or reads HDF5) (scripts/setup_debian.sh installs python3-h5py, python3-numpy, python3-matplotlib)"; exit 1; fi
# As in checkpoint_test.sh: several seconds of moments on 2 cores.
args=(--model ti --lattice 24x24x12 --disorder 0.5 --moments 4000 --vectors 8 --energy-range -6:6)

# interrupted OUT CKPT LOG ARGS...: SIGTERM once the first periodic checkpoint exists; sets rc.
interrupted() {
  local out="$1" ck="$2" log="$3"; shift 3
  "$exe" "$@" --output "$out" --checkpoint "$ck" --checkpoint-every 0.2 > "$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do [ -e "$ck" ] && break; sleep 0.05; done
  sleep 0.3
  kill -TERM "$pid"
  wait "$pid"; rc=$?
}

"$exe" "${args[@]}" --threads 2 --output "$work/full.h5" --quiet > "$work/full.txt" 2>&1
check "uninterrupted --threads 2 run exits 0" "[ $? -eq 0 ]"
interrupted "$work/part.h5" "$work/ck.h5" "$work/part.txt" "${args[@]}" --threads 1
check "--threads 1 run stopped with a checkpoint (exit 75)" "[ $rc -eq 75 ] && [ -s '$work/ck.h5' ]"
check "the checkpoint has a block under way" "$py -c 'import h5py,sys; sys.exit(0 if \"/checkpoint/block/current\" in h5py.File(sys.argv[1], \"r\") else 1)' '$work/ck.h5'"
cp "$work/ck.h5" "$work/pristine.h5"

# flip NAME DATASET INDEX: NAME.h5 = the checkpoint with the lowest bit of the INDEX-th
# float64 of DATASET flipped in the file's bytes.
flip() { $py "$(dirname "$0")/flip_bit.py" "$work/pristine.h5" "$work/$1.h5" "$2" "$3"; }
# refused NAME PATTERN: --restart NAME.h5 exits 2 with the one-line message naming it.
refused() {
  timeout 60 "$exe" "${args[@]}" --threads 1 --output "$work/never.h5" --restart "$work/$1.h5" > "$work/$1.txt" 2>&1
  local rc=$?
  check "$1: refused with exit 2 (got $rc)" "[ $rc -eq 2 ]"
  check "$1: the message names it" "grep -q 'not a usable topokpm checkpoint: $2' '$work/$1.txt' && [ \$(wc -l < '$work/$1.txt') -eq 1 ]"
  check "$1: no output, the checkpoint left alone" "[ ! -e '$work/never.h5' ] && [ -e '$work/$1.h5' ]"
  sed 's/^/    /' "$work/$1.txt"
}
flip vectors /checkpoint/block/current 100001
refused vectors "/checkpoint/block/current does not match its CRC-64"
flip previous /checkpoint/block/previous 7
refused previous "/checkpoint/block/previous does not match its CRC-64"
flip raw /checkpoint/block/raw 1234
refused raw "/checkpoint/block/raw does not match its CRC-64"
flip sums /checkpoint/sums 3
refused sums "/checkpoint/sums does not match its CRC-64"
# A header value that decides the moments (scale_a one ulp off), rewritten with h5py.
cp "$work/pristine.h5" "$work/header.h5"
$py - "$work/header.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    c = f["/checkpoint"]
    c.attrs["scale_a"] = np.nextafter(c.attrs["scale_a"], 10.0)
PY
refused header "its header values do not match their CRC-64"

# Two runs on one checkpoint: A writes ck.h5 (periodic checkpoints), B is refused.
cp "$work/pristine.h5" "$work/ck.h5"
"$exe" "${args[@]}" --threads 1 --output "$work/a.h5" --checkpoint "$work/ck.h5" --restart "$work/ck.h5" --checkpoint-every 0.2 > "$work/a.txt" 2>&1 &
apid=$!
for _ in $(seq 1 300); do [ -s "$work/ck.h5.lock" ] && break; sleep 0.05; done
check "run A holds the lock file" "grep -q '^kpm-dos pid $apid host ' '$work/ck.h5.lock'"
"$exe" "${args[@]}" --threads 1 --output "$work/b.h5" --checkpoint "$work/ck.h5" > "$work/b.txt" 2>&1
rc=$?
check "B writing A's checkpoint: refused with exit 2 (got $rc)" "[ $rc -eq 2 ]"
sed 's/^/    /' "$work/b.txt"
check "B's refusal names A's pid and host" "grep -q -- \"--checkpoint '$work/ck.h5': in use by another kpm-dos run (pid $apid on host $(hostname))\" '$work/b.txt'"
ln -s "$work/ck.h5" "$work/ck-link.h5"
"$exe" "${args[@]}" --threads 1 --output "$work/b.h5" --restart "$work/ck-link.h5" > "$work/b2.txt" 2>&1
rc=$?
check "B resuming A's checkpoint through a link: refused with exit 2 (got $rc)" "[ $rc -eq 2 ] && grep -q 'in use by another kpm-dos run (pid $apid on host' '$work/b2.txt'"
check "A still running" "kill -0 $apid"
kill -TERM "$apid"; wait "$apid"; rc=$?
check "A stopped with its checkpoint (exit 75, got $rc), lock file removed" "[ $rc -eq 75 ] && [ -s '$work/ck.h5' ] && [ ! -e '$work/ck.h5.lock' ]"
# A run killed with SIGKILL leaves its lock file; its lock died with it.
"$exe" "${args[@]}" --threads 1 --output "$work/k.h5" --checkpoint "$work/k.ck.h5" > "$work/k.txt" 2>&1 &
kpid=$!
for _ in $(seq 1 300); do [ -s "$work/k.ck.h5.lock" ] && break; sleep 0.05; done
kill -KILL "$kpid"; wait "$kpid" 2>/dev/null
check "a killed run leaves its lock file" "[ -s '$work/k.ck.h5.lock' ]"
"$exe" "${args[@]/4000/200}" --threads 1 --output "$work/k.h5" --checkpoint "$work/k.ck.h5" --quiet > "$work/k2.txt" 2>&1
check "the killed run's stale lock does not block (exit 0)" "[ $? -eq 0 ] && [ ! -e '$work/k.ck.h5.lock' ]"
echo 'my notes' > "$work/n.ck.h5.lock"
"$exe" "${args[@]/4000/200}" --threads 1 --output "$work/n.h5" --checkpoint "$work/n.ck.h5" > "$work/n.txt" 2>&1
check "a user's file where the lock file goes: refused (exit 2), left alone" "[ $? -eq 2 ] && grep -q 'is not a kpm-dos lock file' '$work/n.txt' && [ \"\$(cat '$work/n.ck.h5.lock')\" = 'my notes' ]"

# Resume the --threads 1 checkpoint with --threads 2 through a symbolic link of the user's.
mkdir "$work/store"
cp "$work/pristine.h5" "$work/store/real.h5"
ln -s "$work/store/real.h5" "$work/link.h5"
"$exe" "${args[@]}" --threads 2 --output "$work/resumed.h5" --restart "$work/link.h5" > "$work/resume.txt" 2>&1
check "--threads 2 resumes the --threads 1 checkpoint (exit 0)" "[ $? -eq 0 ] && [ -s '$work/resumed.h5' ]"
check "the restart line names the thread counts" "grep -q 'written with --threads 1, this run has 2: the moments equal an uninterrupted run.s to rounding' '$work/resume.txt'"
check "the spent checkpoint (the link's target) is removed" "[ ! -e '$work/store/real.h5' ] && grep -q 'checkpoint  : $work/store/real.h5 removed' '$work/resume.txt'"
check "the user's link is left alone" "[ -L '$work/link.h5' ] && [ \"\$(readlink '$work/link.h5')\" = '$work/store/real.h5' ]"
check "moments equal the uninterrupted run's within 10 M eps" "$py - '$work/full.h5' '$work/resumed.h5' <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], 'r'), h5py.File(sys.argv[2], 'r')
tol = 10 * 4000 * 2.22e-16
for n in ['/kpm/moments', '/kpm/moments_per_vector']:
    d = float(np.max(np.abs(a[n][...] - b[n][...])))
    print(f'{n}: max |diff| {d:.3e} (tolerance {tol:.1e})')
    if not d <= tol: sys.exit(1)
PY"

# --checkpoint through a user's symbolic link (a relative one, its target not there yet):
# the periodic and the forced checkpoints go to the target, the link stays a link; the
# resume through the same link writes through it again, and the spent checkpoint (the
# target) is removed while the link stays (dangling, ready for the next run).
mkdir "$work/store2"
ln -s store2/w.h5 "$work/wlink.h5"
interrupted "$work/w.h5" "$work/wlink.h5" "$work/w1.txt" "${args[@]}" --threads 1
check "--checkpoint LINK: stopped with a checkpoint (exit 75, got $rc)" "[ $rc -eq 75 ] || { tail -3 '$work/w1.txt'; false; }"
check "--checkpoint LINK: the link is still a link to its target" "[ -L '$work/wlink.h5' ] && [ \"\$(readlink '$work/wlink.h5')\" = store2/w.h5 ]"
check "--checkpoint LINK: the target holds the checkpoint" "[ -f '$work/store2/w.h5' ] && [ ! -L '$work/store2/w.h5' ] && $py -c \"import h5py,sys; sys.exit(0 if '/checkpoint' in h5py.File('$work/store2/w.h5', 'r') else 1)\""
"$exe" "${args[@]}" --threads 1 --output "$work/w.h5" --restart "$work/wlink.h5" --checkpoint "$work/wlink.h5" \
  --checkpoint-every 0.2 > "$work/w2.txt" 2>&1
check "--restart LINK --checkpoint LINK: completes (exit 0)" "[ $? -eq 0 ] && [ -s '$work/w.h5' ] || { tail -3 '$work/w2.txt'; false; }"
check "--restart LINK --checkpoint LINK: the spent checkpoint (the target) is removed" "[ ! -e '$work/store2/w.h5' ] && grep -q 'checkpoint  : .*store2/w.h5 removed' '$work/w2.txt' || { grep checkpoint '$work/w2.txt'; ls -l '$work' '$work/store2'; false; }"
check "--restart LINK --checkpoint LINK: the link stays" "[ -L '$work/wlink.h5' ] && [ \"\$(readlink '$work/wlink.h5')\" = store2/w.h5 ]"
exit $fail
