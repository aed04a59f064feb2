#!/bin/bash
# run_mpi_check.sh MPIEXEC EXE NP MODE: runs "EXE MODE" on NP ranks (as root too, with
# --oversubscribe --bind-to none) under a 20 s timeout and checks the outcome:
#   collectives, multiple, distributed, dense, dense_qr, sparse_lu: exit 0 and the success line;
#   validate: exit status 2 (InputError, agreed by all ranks), the message once;
#   abort:    non-zero exit status (MPI_Abort), the message once, no hang.
set -u
mpiexec=$1 exe=$2 np=$3 mode=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
start=$(date +%s)
out=$(timeout "${TOPOKPM_MPI_TIMEOUT:-20}" "$mpiexec" --oversubscribe --bind-to none -np "$np" "$exe" "$mode" 2>&1)
rc=$?
echo "$out"
echo "exit status $rc after $(( $(date +%s) - start )) s"
[ "$rc" -ne 124 ] || { echo "FAIL: job still running after ${TOPOKPM_MPI_TIMEOUT:-20} s (hung)"; exit 1; }
once() {  # the error line of rank 1 exactly once, no other rank's error line
  n=$(grep -c "error (rank 1): --weights 'x:1'" <<<"$out")
  [ "$n" -eq 1 ] || { echo "FAIL: error message printed $n times, expected once"; exit 1; }
  if grep -q "error (rank [02])" <<<"$out"; then echo "FAIL: another rank reported an error"; exit 1; fi
}
success() {  # exit 0 and the check's success line
  [ "$rc" -eq 0 ] || { echo "FAIL: exit status $rc"; exit 1; }
  grep -q "$1" <<<"$out" || { echo "FAIL: no success line ($1)"; exit 1; }
}
case $mode in
  collectives | files | distributed | dense) success "$mode check on $np ranks: ok" ;;
  dense_qr) success "dense qr check on $np ranks: ok" ;;
  sparse_lu) success "sparse lu check on $np ranks: ok" ;;
  multiple) success "thread level check: ok" ;;
  validate)
    [ "$rc" -eq 2 ] || { echo "FAIL: exit status $rc, expected 2 (input error)"; exit 1; }
    once
    if grep -q "passed validation" <<<"$out"; then echo "FAIL: a rank went on after failed validation"; exit 1; fi
    n=$(grep -c "leaves with exit code 2" <<<"$out")
    [ "$n" -eq "$np" ] || { echo "FAIL: $n of $np ranks left with exit code 2"; exit 1; }
    ;;
  abort)
    [ "$rc" -ne 0 ] || { echo "FAIL: exit status 0 after an error"; exit 1; }
    once
    if grep -q "passed the barrier" <<<"$out"; then echo "FAIL: a rank passed the barrier"; exit 1; fi
    ;;
  *) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
echo PASS
