#!/usr/bin/env bash
# files_test.sh KPM_DOS KPM_EIGS: the file promises of docs/reliability.md ("Files") that a
# fault injector broke (issue 30). A file that appears at --output while the run computes
# is never replaced; kpm-eigs leaves nothing on a full disk; a file merely named like a
# stale temporary survives; a printed resume command works for a path with spaces and
# quotes; /dev/null, /dev/full, a FIFO and a directory as a path to write are refused
# (exit 2) before anything is computed. --export-matrix follows the same rules: a file that
# appears there during the export is kept; a killed export's temporary is removed.
set -u
dos="$1"; eigs="$2"
source "$(dirname "$0")/../support/script_lib.sh"
cleanup() { mountpoint -q "$work/tiny" 2>/dev/null && umount "$work/tiny"; rm -rf "$work"; }
trap cleanup EXIT
quick=(--lattice 6x6x4 --moments 64 --vectors 2 --threads 1 --quiet)
# Several seconds of moments: the window in which a user's file appears.
slow=(--lattice 24x24x12 --disorder 0.5 --moments 8000 --vectors 8 --energy-range -6:6 --threads 2)
eig=(--model ti --lattice 4x4x4 --extremal lowest:4 --method lanczos --threads 1 --quiet)
host="$(hostname)"
one_line() { [ "$(grep -c . "$1")" -eq 1 ]; }
is_result() { /usr/bin/python3 -c 'import sys, h5py; f = h5py.File(sys.argv[1], "r"); sys.exit(0 if "dos" in f else 1)' "$1" 2>/dev/null; }

# slow_run OUT: starts a slow kpm-dos writing OUT (pid in $pid) and returns once it computes
# (its first periodic checkpoint exists: the files were checked long ago).
slow_run() {
  "$dos" "${slow[@]}" --quiet --output "$1" --checkpoint-every 0.2 > "$work/slow.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [ -e "$1.checkpoint.h5" ] && break; sleep 0.05; done
}

# ---- the output is checked again when the result is renamed into place -------------------
mkdir "$work/race"
slow_run "$work/race/a.h5"
echo "my notes" > "$work/race/a.h5"          # the path was free at the start
wait "$pid"; rc=$?
check "a file created at a free --output during the run is kept (exit 3)" "[ $rc -eq 3 ] && [ \"\$(cat '$work/race/a.h5')\" = 'my notes' ]"
check "... one line naming the path and where the result is" "one_line '$work/slow.log' && grep -q \"cannot write '$work/race/a.h5': another file was put there during the run\" '$work/slow.log' && grep -q \"saved as '$work/race/a.h5.new-$pid'\" '$work/slow.log'"
check "... the complete result is kept under that name" "is_result '$work/race/a.h5.new-$pid'"
check "... no temporary left" "[ -z \"\$(ls -A '$work/race' | grep -E '\.(tmp|probe)-')\" ]"

"$dos" "${quick[@]}" --output "$work/race/b.h5" > /dev/null 2>&1   # an old result, replaceable at the start
slow_run "$work/race/b.h5"
echo "my notes" > "$work/race/notes"; mv "$work/race/notes" "$work/race/b.h5"   # replaced by the user's file
wait "$pid"; rc=$?
check "an old result replaced by a user's file during the run: that file is kept (exit 3)" "[ $rc -eq 3 ] && [ \"\$(cat '$work/race/b.h5')\" = 'my notes' ] && is_result '$work/race/b.h5.new-$pid'"

"$dos" "${quick[@]}" --output "$work/race/c.h5" > /dev/null 2>&1
slow_run "$work/race/c.h5"
echo "my notes" > "$work/race/c.h5"          # the same inode, overwritten in place
wait "$pid"; rc=$?
check "an old result overwritten in place by the user: kept too (no longer a topokpm result)" "[ $rc -eq 3 ] && [ \"\$(cat '$work/race/c.h5')\" = 'my notes' ]"

"$dos" "${quick[@]}" --output "$work/race/d.h5" > /dev/null 2>&1
slow_run "$work/race/d.h5"
wait "$pid"; rc=$?
check "an old result left alone is replaced as before (exit 0)" "[ $rc -eq 0 ] && is_result '$work/race/d.h5' && [ -z \"\$(ls '$work/race' | grep '^d.h5.new-')\" ]"

# ---- so is --export-matrix when the matrix is renamed into place ---------------------------
# race_export MTX free|old: a kpm-dos exporting a large matrix to MTX (free, or over an old
# exported matrix); as soon as its temporary appears, "my notes" is put at MTX (created, or
# moved over the old file). Sets rc, pid and raced (0: the user's file came while the export
# was still writing; a lost race, the export already complete, is tried again).
big=(--lattice 32x32x16 --t 0.3 --disorder 0.5 --energy-range -6:6 --moments 16 --vectors 1 --threads 1 --quiet)
race_export() {
  raced=1
  for _ in 1 2 3; do
    rm -f "$1" "$work/race/x.h5"
    [ "$2" = old ] && "$dos" "${quick[@]}" --output "$work/race/y.h5" --export-matrix "$1" > /dev/null 2>&1
    "$dos" "${big[@]}" --output "$work/race/x.h5" --export-matrix "$1" > "$work/export.log" 2>&1 &
    pid=$!
    until [ -e "$1.tmp-$pid-$host" ] || ! kill -0 "$pid" 2>/dev/null; do :; done
    echo "my notes" > "$work/race/notes"
    if [ "$2" = old ]; then mv "$work/race/notes" "$1"; raced=$?; else (set -C; cat "$work/race/notes" > "$1") 2>/dev/null; raced=$?; fi
    [ -e "$1.tmp-$pid-$host" ] || raced=1   # the export was already complete: not a race
    wait "$pid"; rc=$?
    [ $raced -eq 0 ] && return
  done
}
race_export "$work/race/m.mtx" free
check "a file created at a free --export-matrix during the export is kept (exit 3)" "[ $raced -eq 0 ] && [ $rc -eq 3 ] && [ \"\$(cat '$work/race/m.mtx')\" = 'my notes' ]"
check "... one line naming the path and where the matrix is" "one_line '$work/export.log' && grep -q \"'$work/race/m.mtx': another file was put there during the run\" '$work/export.log' && grep -q \"saved as '$work/race/m.mtx.new-$pid'\" '$work/export.log'"
check "... the complete matrix is kept under that name" "head -1 '$work/race/m.mtx.new-$pid' | grep -q '^%%MatrixMarket' && [ ! -e '$work/race/x.h5' ]"
race_export "$work/race/old.mtx" old
check "an old --export-matrix replaced by a user's file during the export: that file is kept (exit 3)" "[ $raced -eq 0 ] && [ $rc -eq 3 ] && [ \"\$(cat '$work/race/old.mtx')\" = 'my notes' ] && [ -e '$work/race/old.mtx.new-$pid' ]"
check "... no temporary left" "[ -z \"\$(ls -A '$work/race' | grep -E '\.(tmp|probe)-')\" ]"
rm -f "$work"/race/*.new-*

# ---- kpm-eigs follows the same file rules as kpm-dos -------------------------------------
echo "my notes" > "$work/notes.txt"
timeout 60 "$eigs" "${eig[@]}" --output "$work/notes.txt" > "$work/log" 2>&1
check "kpm-eigs: --output naming a user's file is refused (exit 2), the file intact" "[ $? -eq 2 ] && grep -q 'not a topokpm result file' '$work/log' && [ \"\$(cat '$work/notes.txt')\" = 'my notes' ]"
mkdir "$work/lim"
(ulimit -f 4; exec timeout 60 "$eigs" "${eig[@]}" --save-vectors --output "$work/lim/e.h5") > "$work/log" 2>&1
rc=$?
check "kpm-eigs, a result over the file-size limit: exit 3, one line" "[ $rc -eq 3 ] && one_line '$work/log' && grep -q \"cannot write '$work/lim/e.h5'\" '$work/log'"
check "... nothing left behind" "[ -z \"\$(ls -A '$work/lim')\" ]"
mkdir "$work/tiny"
if mount -t tmpfs -o size=256k tmpfs "$work/tiny" 2>/dev/null; then
  # Nearly full (HDF5's first writes fail inside H5Fcreate) and quite full (a dataset fails).
  for left in 0 16; do
    rm -f "$work/tiny/filler"
    if [ $left -eq 0 ]; then dd if=/dev/zero of="$work/tiny/filler" bs=4k status=none 2>/dev/null
    else dd if=/dev/zero of="$work/tiny/filler" bs=1k count=$((256 - left)) status=none 2>/dev/null; fi
    for prog in eigs dos; do
      if [ $prog = dos ]; then args=("${quick[@]}"); exe="$dos"; else args=("${eig[@]}" --save-vectors); exe="$eigs"; fi
      timeout 60 "$exe" "${args[@]}" --output "$work/tiny/e.h5" > "$work/log" 2>&1
      rc=$?
      check "kpm-$prog, full disk ($left KiB left): exit 3, one line with the reason" "[ $rc -eq 3 ] && one_line '$work/log' && grep -q 'No space left on device' '$work/log'"
      check "kpm-$prog, full disk ($left KiB left): no temporary left" "[ \"\$(ls -A '$work/tiny')\" = filler ]"
    done
  done
  umount "$work/tiny"
else
  echo "SKIPPED: kpm-eigs on a real full disk (cannot mount a tmpfs here); the file-size limit above covers its write path"
fi

# ---- stale temporaries: only what is marked as ours is deleted ---------------------------
marker='topokpm temporary file: renamed into place when complete; removed by the next run when its process is gone'
printf '%s\n' "$marker" > "$work/s.h5.tmp-999999999-$host"          # a killed run's (dead pid, marked)
printf '%s\n' "$marker" > "$work/s.h5.probe-999999997-3"
echo "my data" > "$work/s.h5.tmp-999999998-$host"                    # a user's file, named alike
: > "$work/s.h5.tmp-999999996"                                       # empty, older naming: unverifiable
timeout 60 "$dos" --lattice 6x6x4 --moments 64 --vectors 2 --threads 1 --output "$work/s.h5" > "$work/log" 2>&1
rc=$?
check "marked stale temporaries are removed and reported" "[ $rc -eq 0 ] && [ \$(grep -c 'removed .* (temporary file of a killed run)' '$work/log') -eq 2 ] && [ ! -e '$work/s.h5.tmp-999999999-$host' ] && [ ! -e '$work/s.h5.probe-999999997-3' ]"
check "a file only named like a stale temporary survives, with a warning" "[ \"\$(cat '$work/s.h5.tmp-999999998-$host')\" = 'my data' ] && [ -e '$work/s.h5.tmp-999999996' ] && [ \$(grep -c 'not marked as this program' '$work/log') -eq 2 ]"
check "the result itself does not carry the temporary marker" "! grep -q 'topokpm temporary file' '$work/s.h5'"
# A Matrix Market temporary starts with its banner: the marker is its second line, a comment.
banner='%%MatrixMarket matrix coordinate complex general'
printf '%s\n%%%s\n1 1 1\n1 1 1 0\n' "$banner" "$marker" > "$work/s.mtx.tmp-999999999-$host"   # a killed export's
printf '%s\n%% my notes\n1 1 1\n1 1 1 0\n' "$banner" > "$work/s.mtx.tmp-999999998-$host"     # a user's look-alike
timeout 60 "$dos" --lattice 6x6x4 --moments 64 --vectors 2 --threads 1 --output "$work/s2.h5" --export-matrix "$work/s.mtx" > "$work/log" 2>&1
rc=$?
check "a killed export's marked temporary (dead pid) is removed by the next run" "[ $rc -eq 0 ] && [ ! -e '$work/s.mtx.tmp-999999999-$host' ] && grep -q 'removed .*s.mtx.tmp-999999999-.* (temporary file of a killed run)' '$work/log'"
check "... an unmarked look-alike is kept, with a warning" "grep -q '^% my notes' '$work/s.mtx.tmp-999999998-$host' && grep -q 's.mtx.tmp-999999998-.*not marked as this program' '$work/log'"
check "... the exported matrix does not carry the marker" "head -1 '$work/s.mtx' | grep -q '^%%MatrixMarket' && ! grep -q 'topokpm temporary file' '$work/s.mtx'"

# ---- printed commands paste into a shell ----------------------------------------------------
odd="$work/my dir's \$HOME (1)"
mkdir "$odd"
"$dos" "${slow[@]}" --output "$odd/i.h5" --checkpoint-every 0.2 > "$work/i.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -e "$odd/i.h5.checkpoint.h5" ] && break; sleep 0.05; done
sleep 0.2; kill -TERM "$pid"; wait "$pid"; rc=$?
check "SIGTERM with an odd directory name: checkpoint written (exit 75)" "[ $rc -eq 75 ]"
resume="$(sed -n 's/^resume with: //p' "$work/i.log")"
timeout 120 bash -c "$resume --quiet" > "$work/log" 2>&1
check "the printed resume command, pasted into bash, completes the run" "[ \$? -eq 0 ] && is_result \"\$odd/i.h5\" && [ ! -e \"\$odd/i.h5.checkpoint.h5\" ]"
"$dos" "${slow[@]}" --output "$odd/j.h5" --checkpoint-every 0.2 > "$work/j.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -e "$odd/j.h5.checkpoint.h5" ] && break; sleep 0.05; done
sleep 0.2; kill -TERM "$pid"; wait "$pid"
timeout 60 "$dos" "${quick[@]}" --output "$odd/j.h5" > "$work/log" 2>&1
advice="$(sed -n 's/.*resume it with \(--restart .*\), or remove it.*/\1/p' "$work/log")"
check "the refusal's --restart advice quotes the path" "[ -n \"\$advice\" ] && (eval \"set -- \$advice\" && [ \"\$2\" = \"\$odd/j.h5.checkpoint.h5\" ])"

# ---- paths that are not files: refused before anything is computed ------------------------
mkfifo "$work/fifo"
mkdir "$work/dir"
for target in /dev/null /dev/full "$work/fifo" "$work/dir"; do
  case "$target" in "$work/dir") why='is a directory' ;; *) why='is not a regular file' ;; esac
  for prog in dos eigs; do
    if [ $prog = dos ]; then args=("${quick[@]}"); exe="$dos"; else args=("${eig[@]}"); exe="$eigs"; fi
    timeout 20 "$exe" "${args[@]}" --output "$target" > "$work/log" 2>&1
    rc=$?
    check "kpm-$prog --output $target: exit 2, one line naming it ($why)" "[ $rc -eq 2 ] && one_line '$work/log' && grep -q -- \"--output '$target': $why\" '$work/log'"
  done
  timeout 20 "$dos" "${quick[@]}" --output "$work/k.h5" --checkpoint "$target" > "$work/log" 2>&1
  check "kpm-dos --checkpoint $target: exit 2 ($why)" "[ $? -eq 2 ] && grep -q -- \"--checkpoint '$target': $why\" '$work/log' && [ ! -e '$work/k.h5' ]"
done
check "nothing was created in the directory" "[ -z \"\$(ls -A '$work/dir')\" ]"
check "nothing was created next to the FIFO" "[ -z \"\$(ls -A '$work' | grep -E '^fifo.')\" ]"

exit $fail
