#!/usr/bin/env bash
# rank_layout_test.sh KPM_DOS [MPIEXEC]: issue 31, one rank layout (rank_layout in
# app/cli/resolved_run.hpp). --plan splits the rows over the ranks as a run under mpirun
# does: whole x-planes for --matrix free, whole sites otherwise, the same 2-D grid.
set -u
dos="$1"; mpiexec="${2:-}"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
# plan_rows ARGS: the plan's rows per rank, "r0:r1:..."
plan_rows() {
  "$dos" --lattice 8x8x4 --plan --plan-bandwidth 10 --memory-limit 1 "$@" 2>&1 |
    awk '$2 == "cpu" || $2 == "gpu" { printf "%s%s", sep, $3; sep = ":" }'
}
# ti 8x8x4: 8 x-planes of 8 x 4 sites x 4 orbitals = 128 rows. --matrix free keeps whole
# planes: 3 ranks get 3, 2 and 3 planes (hetero::split_rows' rounding), not 86/85/85 sites.
free3=$(plan_rows --matrix free --decomposition 1d --ranks 3)
check "--plan --matrix free on 3 ranks splits whole x-planes: 384:256:384 (got $free3)" "[ '$free3' = 384:256:384 ]"
sell3=$(plan_rows --matrix sell --decomposition 1d --ranks 3)
check "--plan --matrix sell on 3 ranks splits whole sites (got $sell3)" "[ '$sell3' = 340:344:340 ]"

if [ -z "$mpiexec" ] || ! /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  echo "SKIPPED: the runs under mpirun (no MPIEXEC given, or /usr/bin/python3 has no h5py)"
  exit $fail
fi
# run_rows NP ARGS: /provenance rows_per_rank of that run under mpirun.
run_rows() {
  local np="$1"; shift
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 "$mpiexec" --oversubscribe --bind-to none \
    -np "$np" "$dos" --lattice 8x8x4 --moments 16 --vectors 2 -q -o "$work/r.h5" "$@" > "$work/run.txt" 2>&1 || {
    cat "$work/run.txt"; return; }
  /usr/bin/python3 -c 'import h5py,sys; print(h5py.File(sys.argv[1])["provenance"].attrs["rows_per_rank"])' "$work/r.h5"
  rm -f "$work/r.h5"
}
for args in "--matrix free --decomposition 1d" "--matrix sell --decomposition 1d" "--matrix free" "--matrix sell --decomposition 2x2"; do
  np=3; [[ "$args" == *2x2* ]] && np=4
  planned=$(plan_rows $args --ranks $np); ran=$(run_rows $np $args)
  check "$args on $np ranks: --plan's rows per rank = the run's ($planned vs $ran)" "[ -n '$planned' ] && [ '$planned' = '$ran' ]"
done
exit $fail
