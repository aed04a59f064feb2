#!/usr/bin/env bash
# reliability_test.sh KPM_DOS [MPIEXEC]: the promises of docs/reliability.md as a user meets
# them. kpm-dos never deletes or replaces a file it did not create or verify as its own,
# refuses clashing paths up front, turns a full disk into one readable error (exit 3, no
# crash, no partial file), keeps going when a periodic checkpoint does not fit, cleans the
# temporaries of a killed run, parses numbers strictly, survives a closed pipe or terminal,
# and under mpirun reports a write failure of rank 0 once, without an abort.
set -u
exe="$1"; mpiexec="${2:-}"
source "$(dirname "$0")/../support/script_lib.sh"
cleanup() { mountpoint -q "$work/tiny" 2>/dev/null && umount "$work/tiny"; rm -rf "$work"; }
trap cleanup EXIT
# run LOG ARGS...: kpm-dos with ARGS, output to LOG, exit code in rc (killed after 60 s).
run() { local log="$1"; shift; timeout 60 "$exe" "$@" > "$log" 2>&1; rc=$?; }
quick=(--lattice 6x6x4 --moments 64 --vectors 2 --threads 1 --quiet)
# Several seconds of moments: the window for signals and periodic checkpoints.
slow=(--lattice 24x24x12 --disorder 0.5 --moments 4000 --vectors 8 --energy-range -6:6 --threads 2)
one_line() { [ "$(grep -c . "$1")" -eq 1 ]; }
no_temporaries() { [ -z "$(ls -A "$1" | grep -E '\.(tmp|probe)-')" ]; }

# ---- files the program must not touch -------------------------------------------------
echo "my notes" > "$work/notes.txt"
run "$work/log" "${quick[@]}" --output "$work/a.h5" --checkpoint "$work/notes.txt"
check "--checkpoint naming a user's file is refused (exit 2)" "[ $rc -eq 2 ] && grep -q -- \"--checkpoint '$work/notes.txt'\" '$work/log'"
check "... and the file is intact" "[ \"\$(cat '$work/notes.txt')\" = 'my notes' ] && [ ! -e '$work/a.h5' ]"

run "$work/log" "${quick[@]}" --output "$work/notes.txt"
check "--output naming a file that is not a topokpm result is refused" "[ $rc -eq 2 ] && grep -q 'not a topokpm result file' '$work/log' && [ \"\$(cat '$work/notes.txt')\" = 'my notes' ]"

run "$work/log" "${quick[@]}" --output "$work/r.h5"
check "a first result is written" "[ $rc -eq 0 ] && [ -s '$work/r.h5' ]"
cp "$work/r.h5" "$work/r.orig"
run "$work/log" "${quick[@]}" --output "$work/r.h5"
check "a topokpm result is replaced by a rerun" "[ $rc -eq 0 ] && [ -s '$work/r.h5' ]"
cp "$work/r.h5" "$work/r.orig"

run "$work/log" "${quick[@]}" --output "$work/r.h5" --checkpoint "$work/r.h5"
check "--output and --checkpoint the same file: refused" "[ $rc -eq 2 ] && grep -q 'name the same file' '$work/log' && cmp -s '$work/r.h5' '$work/r.orig'"
mkdir -p "$work/sub"; run "$work/log" "${quick[@]}" --output "$work/r.h5" --checkpoint "$work/sub/../r.h5"
check "... also when spelled differently" "[ $rc -eq 2 ] && grep -q 'name the same file' '$work/log'"
ln -s "$work/r.h5" "$work/link.h5"
run "$work/log" "${quick[@]}" --output "$work/link.h5" --restart "$work/r.h5"
check "--output and --restart the same file via a link: refused" "[ $rc -eq 2 ] && grep -q 'name the same file' '$work/log' && cmp -s '$work/r.h5' '$work/r.orig'"

chmod 444 "$work/r.h5"
run "$work/log" "${quick[@]}" --output "$work/r.h5"
check "a write-protected result is refused and kept" "[ $rc -eq 2 ] && grep -q 'without write permission' '$work/log' && cmp -s '$work/r.h5' '$work/r.orig'"
chmod 644 "$work/r.h5"
mkfifo "$work/fifo"
run "$work/log" "${quick[@]}" --output "$work/fifo"
check "a FIFO as --output is refused" "[ $rc -eq 2 ] && grep -q 'not a regular file' '$work/log'"
echo "my matrix" > "$work/m.txt"
run "$work/log" "${quick[@]}" --output "$work/e.h5" --export-matrix "$work/m.txt"
check "--export-matrix over a file that is not Matrix Market: refused" "[ $rc -eq 2 ] && [ \"\$(cat '$work/m.txt')\" = 'my matrix' ]"

# An interrupted run's checkpoint (the default path) survives a later, different run.
"$exe" "${slow[@]}" --output "$work/i.h5" --checkpoint-every 0.2 > "$work/i.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -e "$work/i.h5.checkpoint.h5" ] && break; sleep 0.05; done
sleep 0.2; kill -TERM "$pid"; wait "$pid"; rc=$?
check "SIGTERM leaves <output>.checkpoint.h5 (exit 75)" "[ $rc -eq 75 ] && [ -s '$work/i.h5.checkpoint.h5' ]"
cp "$work/i.h5.checkpoint.h5" "$work/i.ck.orig"
run "$work/log" "${quick[@]}" --output "$work/i.h5"
check "a different run with the same --output is refused, naming --restart" "[ $rc -eq 2 ] && grep -q 'checkpoint of an interrupted run' '$work/log'"
check "... and the checkpoint is intact" "cmp -s '$work/i.h5.checkpoint.h5' '$work/i.ck.orig'"
resume="$(sed -n 's/^resume with: //p' "$work/i.log")"
timeout 120 bash -c "$resume --quiet" > "$work/log" 2>&1
check "the printed resume command completes the run" "[ $? -eq 0 ] && [ -s '$work/i.h5' ] && [ ! -e '$work/i.h5.checkpoint.h5' ]"

# Stale temporaries of a killed run are removed and reported; a live process's are kept.
host="$(hostname)"
# (marked as this program's temporaries, as a killed run leaves them: files_test.sh checks
# that look-alikes without the marker survive)
for t in "$work/s.h5.tmp-999999999-$host" "$work/s.h5.tmp-999999998" "$work/s.h5.checkpoint.h5.tmp-999999997-$host"; do
  printf 'topokpm temporary file: renamed into place when complete; removed by the next run when its process is gone\n' > "$t"
done
touch "$work/s.h5.tmp-$$-$host"
run "$work/log" --lattice 6x6x4 --moments 64 --vectors 2 --threads 1 --output "$work/s.h5"
check "stale temporaries removed and reported" "[ $rc -eq 0 ] && [ \$(grep -c 'temporary file of a killed run' '$work/log') -eq 3 ] && [ ! -e '$work/s.h5.tmp-999999998' ] && [ ! -e '$work/s.h5.checkpoint.h5.tmp-999999997-$host' ]"
check "a live process's temporary is kept, with a warning" "[ -e '$work/s.h5.tmp-$$-$host' ] && grep -q 'left alone' '$work/log'"
rm -f "$work/s.h5.tmp-$$-$host"

# ---- faults: a file that does not fit --------------------------------------------------
# A file-size limit (ulimit -f, 1 KiB blocks) makes every write beyond it fail (EFBIG),
# like a full disk: one readable line, exit 3, no crash at exit, nothing left behind.
mkdir "$work/lim"
(ulimit -f 8; exec timeout 60 "$exe" "${quick[@]}" --output "$work/lim/r.h5") > "$work/log" 2>&1
rc=$?
check "a result that does not fit: exit 3, no crash" "[ $rc -eq 3 ]"
check "... one line naming the file, the reason and the free space" "one_line '$work/log' && grep -q \"cannot write '$work/lim/r.h5'\" '$work/log' && grep -q 'File too large' '$work/log' && grep -q 'free in' '$work/log'"
check "... and no partial file or temporary" "[ -z \"\$(ls -A '$work/lim')\" ]"
# The result (~100 KiB) fits under 1 MiB, the block vectors of a checkpoint (7 MiB) do not:
# every periodic checkpoint fails with a warning and the run completes.
(ulimit -f 1024; exec timeout 120 "$exe" "${slow[@]/4000/1200}" --output "$work/lim/c.h5" --checkpoint-every 0.05) > "$work/log" 2>&1
rc=$?
check "periodic checkpoints that do not fit: the run goes on and completes (exit 0)" "[ $rc -eq 0 ] && [ -s '$work/lim/c.h5' ]"
check "... each failure is a warning" "grep -q 'WARNING: checkpoint not written, the run goes on' '$work/log' && grep -q 'periodic checkpoint(s) could not be written' '$work/log'"
check "... and nothing is left behind" "[ \"\$(ls -A '$work/lim')\" = c.h5 ]"

# A real full disk where this machine lets us mount a small tmpfs (root, no container limits).
mkdir "$work/tiny"
if mount -t tmpfs -o size=512k tmpfs "$work/tiny" 2>/dev/null; then
  dd if=/dev/zero of="$work/tiny/filler" bs=1k count=504 status=none 2>/dev/null
  run "$work/log" --lattice 24x24x8 --moments 256 --vectors 2 --threads 1 --quiet --output "$work/tiny/r.h5"
  check "full disk: exit 3 (no segmentation fault)" "[ $rc -eq 3 ]"
  check "full disk: one line with the reason and the free space" "one_line '$work/log' && grep -q 'No space left on device' '$work/log' && grep -q 'free in $work/tiny' '$work/log'"
  check "full disk: no partial file" "[ \"\$(ls -A '$work/tiny')\" = filler ]"
  # Under mpirun rank 0 writes: its failure ends every rank with the exit code of the
  # one-process run and one message, without MPI_Abort (the write is agreed collectively).
  if [ -n "$mpiexec" ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 "$mpiexec" --oversubscribe --bind-to none \
      -np 2 -x OMP_NUM_THREADS=1 "$exe" --lattice 24x24x8 --moments 256 --vectors 2 --quiet --output "$work/tiny/r.h5" > "$work/log" 2>&1
    rc=$?
    check "mpirun, full disk on rank 0: every rank ends with exit 3" "[ $rc -eq 3 ]"
    check "mpirun: the message once, no MPI_ABORT, no crash" "[ \$(grep -c 'No space left on device' '$work/log') -eq 1 ] && ! grep -q -e MPI_ABORT -e 'Segmentation' '$work/log'"
    check "mpirun: no partial file" "[ \"\$(ls -A '$work/tiny')\" = filler ]"
  else
    echo "SKIPPED: the mpirun full-disk case (no MPI launcher given)"
  fi
  rm -f "$work/tiny/filler"
  # A periodic checkpoint (7 MiB of block vectors) that does not fit a 512 KiB disk: a
  # warning each time, and the result (~170 KiB) is still written.
  run "$work/log" "${slow[@]/4000/1200}" --output "$work/tiny/c.h5" --checkpoint-every 0.05
  check "full disk for checkpoints: the run completes" "[ $rc -eq 0 ] && [ -s '$work/tiny/c.h5' ] && grep -q 'checkpoint not written, the run goes on' '$work/log'"
  check "... nothing else is left on the disk" "[ \"\$(ls -A '$work/tiny')\" = c.h5 ]"
  umount "$work/tiny"
else
  echo "SKIPPED: real full-disk cases, serial and under mpirun (cannot mount a tmpfs here); the file-size-limit cases above cover the serial write path"
fi

# ---- numbers are never wrapped or reinterpreted -----------------------------------------
bad_number() {  # bad_number OPTION VALUE [EXTRA...]
  local opt="$1" val="$2"; shift 2
  run "$work/log" "${quick[@]}" --output "$work/n.h5" "$@" "$opt=$val"
  check "$opt '$val' refused (exit 2) naming the option" "[ $rc -eq 2 ] && grep -q -- \"$opt\" '$work/log' && [ ! -e '$work/n.h5' ]"
}
bad_number --vector-seed " -1"
bad_number --disorder-seed -1
bad_number --disorder-seed 18446744073709551616
bad_number --moments 0x40
bad_number --moments 1e3
bad_number --moments 99999999999999999999
bad_number --moments " 64"
bad_number --vectors 2.5
bad_number --disorder nan
bad_number --disorder inf
bad_number --disorder 0x1p-2
bad_number --epsilon 1e999
bad_number --k-points "4294967297,0"
run "$work/log" --lattice 6x6x4 --plan --ranks 2 --weights 0x1p1:1 --plan-bandwidth 10
check "--weights with a hex float refused" "[ $rc -eq 2 ] && grep -q -- '--weights' '$work/log'"
run "$work/log" "${quick[@]}" --output "$work/n.h5" --disorder 1e-310
check "a tiny but valid number is accepted" "[ $rc -eq 0 ]"

# ---- a closed pipe or terminal does not lose the run -------------------------------------
( "$exe" "${slow[@]/4000/600}" --progress-interval 0.01 --output "$work/p.h5"; echo "rc=$?" > "$work/p.rc" ) 2>/dev/null | head -c 1 > /dev/null
wait
check "stdout closed early (| head): the run completes (exit 0) and writes its result" "grep -q 'rc=0' '$work/p.rc' && [ -s '$work/p.h5' ]"
"$exe" "${slow[@]/4000/1500}" --output "$work/h.h5" > "$work/h.log" 2>&1 &
pid=$!
# The hang-up must reach the run, not the dynamic loader: before main() (0.3-0.5 s of library
# start-up with CUDA linked) SIGHUP's default action still applies. Wait for the first line.
for _ in $(seq 300); do [ -s "$work/h.log" ] && break; sleep 0.1; done
kill -HUP "$pid"; sent=$?; wait "$pid"; rc=$?
check "SIGHUP (terminal closed) does not stop the run" "[ $sent -eq 0 ] && [ $rc -eq 0 ] && [ -s '$work/h.h5' ]"

exit $fail
