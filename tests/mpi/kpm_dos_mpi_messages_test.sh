#!/bin/bash
# kpm_dos_mpi_messages_test.sh MPIEXEC KPM_DOS KPM_EIGS SOURCE_DIR NP: messages under
# `mpirun -np NP` (docs/reliability.md "Messages"):
#   - an input error that every rank finds alike (a bad --weights, a wrong count of weights,
#     more ranks than x-planes, a bad --ldos selection, --plan refusing on rank 0, a kpm-dos
#     option given to kpm-eigs, a bad weights or ldos value in a --config file, which is
#     named by its file, line and key and not quoted)
#     is one error line, from one rank, with no MPI_ABORT banner and the exit code of the
#     one-process run (2; 3 for moments beyond too narrow an --energy-range);
#   - NP = 2 on a machine with at least 2 cores: `--threads 1` prints no PERFWARNING (the
#     ranks' pinning judges the team that runs, not OpenMP's default of one thread per
#     core), while `--threads 2` on the same one-core sets still does;
#   - NP = 2: `--weights 1:0.1` (rank 1 one x-plane of 16, its halo the two planes beside it)
#     prints the PERFWARNING that names rank 1's rows, share and halo; `--weights 1:0.6` (6
#     planes, halo 2) prints none.
set -u
mpiexec=$1 kpm=$2 eigs=$3 src=$4 np=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OMP_NUM_THREADS  # the default team is one thread per core: what --threads 1 must override
source "$(dirname "$0")/../support/script_lib.sh"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
run_mpi() { timeout 60 "$mpiexec" --oversubscribe --bind-to none -np "$np" "$@"; }
ti=(-c "$src/inputs/test/ti_tiny.ini" -q)  # 4x4x3 sites: 4 x-planes

# one_error LABEL EXPECTED_TEXT PROGRAM ARGS...: exit $code (default 2, an input error),
# exactly one line with "error", naming EXPECTED_TEXT, no MPI_ABORT, no result file.
one_error() {
  local label=$1 text=$2 expected=${code:-2}
  shift 2
  run_mpi "$@" -o "$work/out.h5" > "$work/log" 2>&1
  local rc=$?
  local lines
  lines=$(grep -c -i "error" "$work/log")
  if [ "$rc" -ne "$expected" ] || [ "$lines" -ne 1 ] || grep -q "MPI_ABORT" "$work/log" ||
     ! grep -q -F -- "$text" "$work/log" || [ -e "$work/out.h5" ]; then
    cat "$work/log"
    fail "$label: exit $rc (expected $expected), $lines error lines (expected 1), MPI_ABORT or the text '$text' missing, or a result file"
  else
    echo "ok: $label: $(grep -i error "$work/log")"
  fi
}

one_error "--weights 1:x" "--weights" "$kpm" "${ti[@]}" --weights 1:x
one_error "a wrong count of weights" "--weights" "$kpm" "${ti[@]}" --weights "$(seq -s: 1 $((np + 1)))"
one_error "--weights 1:x, --matrix sell" "--weights" "$kpm" "${ti[@]}" --weights 1:x --matrix sell
one_error "more ranks than x-planes (--matrix free)" "cannot split" "$kpm" --model ti --lattice "$((np - 1))x4x3" --boundary ooo -q \
  --moments 16 --vectors 1 --matrix free --decomposition 1d
one_error "a bad --ldos selection" "--ldos" "$kpm" "${ti[@]}" --ldos 5000
# Every rank holds the summed moments: bounds too tight are one message, exit 3 as on one process.
code=3 one_error "--energy-range narrower than the spectrum" "exceeds 1" "$kpm" "${ti[@]}" --energy-range -0.1:0.1
one_error "--plan with a bad --weights (rank 0 plans)" "--weights" "$kpm" "${ti[@]}" --plan --ranks 4 --weights 1:x
one_error "kpm-eigs --weights 1:x" "--weights" "$eigs" --model ti --lattice 4x4x3 -q --extremal lowest:2 --weights 1:x
one_error "kpm-eigs --ldos" "--ldos" "$eigs" --model ti --lattice 4x4x3 -q --extremal lowest:2 --ldos 0
# The same values from a --config file: named by the file, line and key, never quoted
# (the weights are checked in Distribution::agree, the --ldos rows by the run).
for bad in "weights = 1:hunter2-S3CRET" "ldos = 1,hunter2-S3CRET"; do
  key=${bad%% *}
  { cat "$src/inputs/test/ti_tiny.ini"; echo "$bad"; } > "$work/$key.ini"
  line=$(wc -l < "$work/$key.ini")
  one_error "--config $key" "--config '$work/$key.ini' line $line, key '$key': " "$kpm" -c "$work/$key.ini" -q
  ! grep -q S3CRET "$work/log" || fail "--config $key: the file's value is quoted: $(cat "$work/log")"
done

if [ "$np" -eq 2 ]; then
  cores=$(hwloc-calc --number-of core all 2> /dev/null || echo 0)
  if [ "$cores" -ge 2 ]; then
    run_mpi "$kpm" "${ti[@]}" --threads 1 -o "$work/t1.h5" > "$work/log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] || grep -q PERFWARNING "$work/log"; then
      cat "$work/log"
      fail "--threads 1 on 2 ranks of $cores cores: exit $rc, or a PERFWARNING"
    else
      echo "ok: --threads 1 on 2 ranks of $cores cores: no PERFWARNING"
    fi
    # The control: two threads per rank on sets of one core each is the layout to warn about.
    cpus=$(hwloc-calc --number-of pu all 2> /dev/null || echo 0)
    if [ "$cores" -eq 2 ] && [ "$cpus" -eq 2 ]; then
      run_mpi "$kpm" "${ti[@]}" --threads 2 -o "$work/t2.h5" > "$work/log" 2>&1
      grep -q "PERFWARNING: 2 OpenMP threads on the 1 PU" "$work/log" ||
        { cat "$work/log"; fail "--threads 2 on 2 ranks of 2 cores: no PERFWARNING about the shared PU"; }
      echo "ok: --threads 2 on 2 ranks of 2 single-PU cores: the PERFWARNING"
    else
      echo "SKIPPED: the --threads 2 control needs exactly 2 cores of 1 PU each ($cores cores, $cpus PUs here)"
    fi
  else
    echo "SKIPPED: --threads 1 without PERFWARNING needs at least 2 cores (hwloc-calc says '$cores')"
  fi
fi

if [ "$np" -eq 2 ]; then
  small=(--model ti --lattice 16x16x8 -q --moments 16 --vectors 1 --matrix free --threads 1)
  run_mpi "$kpm" "${small[@]}" --weights 1:0.1 -o "$work/w1.h5" > "$work/log" 2>&1
  if [ $? -ne 0 ] || [ "$(grep -c 'receives a halo' "$work/log")" -ne 1 ] ||
     ! grep -q "PERFWARNING: rank 1 (CPU) holds 512 rows (0.125 of the mean share) and receives a halo of 1024 rows per sweep, 2.00 times its own" "$work/log"; then
    cat "$work/log"
    fail "--weights 1:0.1: no single PERFWARNING naming rank 1's 512 rows and 1024 halo rows"
  else
    echo "ok: --weights 1:0.1: $(grep 'receives a halo' "$work/log")"
  fi
  run_mpi "$kpm" "${small[@]}" --weights 1:0.6 -o "$work/w6.h5" > "$work/log" 2>&1
  if [ $? -ne 0 ] || grep -q "receives a halo" "$work/log"; then
    cat "$work/log"
    fail "--weights 1:0.6 (6 planes, halo 2): failed or warned about the halo"
  else
    echo "ok: --weights 1:0.6: no halo PERFWARNING"
  fi
fi

[ "$failed" -eq 0 ] && echo PASS
exit "$failed"
