#!/usr/bin/env bash
# capabilities_test.sh KPM_DOS KPM_EIGS [MPIEXEC]: issue 31, one capability table
# (app/cli/capabilities.hpp). Every refused combination of precision, operator kind,
# device and ranks is refused by kpm-dos, kpm-eigs, kpm-dos --plan and (with MPIEXEC) a
# run under mpirun with exit 2 and the same one-line message; --plan refuses exactly what
# the run it plans refuses (--plan --gpus with --matrix naive), and plans what a run does
# (--precision single on one rank, on CPU ranks and on GPU ranks).
set -u
dos="$1"; eigs="$2"; mpiexec="${3:-}"
source "$(dirname "$0")/../support/script_lib.sh"
cd "$work" || exit 1
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
export OMP_NUM_THREADS=1
lat=(--lattice 4x4x2 --moments 16 --vectors 2)
plan=(--plan --plan-bandwidth 10 --memory-limit 1)
eigs_req=(--extremal lowest:2)

# message NAME CMD...: runs CMD; sets msg to the refusal's text (after "input error: "
# serially, "error (rank 0): " under mpirun); checks exit 2, one such line, no result file.
message() {
  local name="$1"; shift
  "$@" -o "$work/out.h5" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [ "$rc" -eq 2 ] || bad "$name: exit $rc, expected 2 ($(head -c 300 "$work/stderr"))"
  [ ! -e "$work/out.h5" ] || { bad "$name: wrote a result"; rm -f "$work/out.h5"; }
  local lines
  lines=$(grep -c -E '(input error|error \(rank [0-9]+\)): ' "$work/stderr")
  [ "$lines" -eq 1 ] || bad "$name: $lines error lines, expected 1"
  if [ -z "$mpiexec" ] || [[ "$name" != mpirun* ]]; then
    [ "$(wc -l < "$work/stderr")" -eq 1 ] || bad "$name: stderr is not one line: $(cat "$work/stderr")"
  fi
  msg=$(sed -n -E 's/^.*(input error|error \(rank [0-9]+\)): //p' "$work/stderr" | head -1)
}

# same EXPECTED_PREFIX NAME1 'CMD1' NAME2 'CMD2' ...: every command gives the same message,
# which starts with EXPECTED_PREFIX.
same() {
  local prefix="$1"; shift
  local first="" firstname=""
  while [ $# -gt 0 ]; do
    local name="$1" cmd="$2"; shift 2
    eval "message \"$name\" $cmd"
    [[ "$msg" == "$prefix"* ]] || bad "$name: message '$msg' does not start with '$prefix'"
    if [ -z "$firstname" ]; then first="$msg"; firstname="$name"; ok "$name: $msg"
    elif [ "$msg" != "$first" ]; then bad "$name: message differs from $firstname's: '$msg' vs '$first'"
    else ok "$name: $prefix (same as $firstname)"; fi
  done
}

mpi_cases=()
if [ -n "$mpiexec" ]; then
  mpirun2="env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 '$mpiexec' --oversubscribe --bind-to none -np 2"
else
  echo "SKIPPED: the mpirun cases (no MPIEXEC given)"
fi

# --matrix naive: one CPU rank only.
cases=("kpm-dos naive cuda" "\"\$dos\" \${lat[@]} --matrix naive --device cuda"
       "kpm-eigs naive cuda" "\"\$eigs\" \${lat[@]:0:2} \${eigs_req[@]} --matrix naive --device cuda"
       "plan naive 2 ranks" "\"\$dos\" \${lat[@]} \${plan[@]} --ranks 2 --matrix naive"
       "plan naive --gpus 1" "\"\$dos\" \${lat[@]} \${plan[@]} --ranks 1 --gpus 1 --matrix naive")
[ -n "$mpiexec" ] && cases+=("mpirun kpm-dos naive" "$mpirun2 \"\$dos\" \${lat[@]} --matrix naive"
                             "mpirun kpm-eigs naive" "$mpirun2 \"\$eigs\" \${lat[@]:0:2} \${eigs_req[@]} --matrix naive")
same "--matrix naive: " "${cases[@]}"

# --precision single: kpm-dos on CPU and GPU ranks (any number), not naive.
cases=("kpm-dos single naive" "\"\$dos\" \${lat[@]} --precision single --matrix naive"
       "kpm-eigs single" "\"\$eigs\" \${lat[@]:0:2} \${eigs_req[@]} --precision single"
       "kpm-eigs single cuda" "\"\$eigs\" \${lat[@]:0:2} \${eigs_req[@]} --precision single --device cuda"
       "plan single naive" "\"\$dos\" \${lat[@]} \${plan[@]} --ranks 1 --precision single --matrix naive")
same "--precision single: " "${cases[@]}"

# --device cuda: kpm-eigs is CPU-only (kpm-dos refuses it only where there is no GPU).
cases=("kpm-eigs cuda" "\"\$eigs\" \${lat[@]:0:2} \${eigs_req[@]} --device cuda")
[ -n "$mpiexec" ] && cases+=("mpirun kpm-eigs cuda" "$mpirun2 \"\$eigs\" \${lat[@]:0:2} \${eigs_req[@]} --device cuda")
same "--device cuda: kpm-eigs runs on the CPU" "${cases[@]}"

# What a run does, --plan plans: single precision on one rank (CPU or GPU), on CPU ranks and on
# GPU ranks (all of them, or one of four).
for shape in "1 0" "1 1" "4 0" "2 2" "4 1"; do
  set -- $shape
  if "$dos" "${lat[@]}" "${plan[@]}" --ranks "$1" --gpus "$2" --precision single > "$work/plan.txt" 2>&1 &&
     grep -q '^plan fits' "$work/plan.txt"; then
    ok "--plan --ranks $1 --gpus $2 --precision single is planned, as the run runs"
  else
    bad "--plan --ranks $1 --gpus $2 --precision single refused: $(cat "$work/plan.txt")"
  fi
done
if "$dos" "${lat[@]}" --precision single -q -o "$work/single.h5" > /dev/null 2>&1; then
  ok "the serial --precision single run runs"
else
  bad "the serial --precision single run failed"
fi
if [ -n "$mpiexec" ]; then
  if eval "$mpirun2 \"\$dos\" \${lat[@]} --precision single -q -o \"$work/single2.h5\"" > "$work/mpi.txt" 2>&1; then
    ok "--precision single under mpirun -np 2 runs"
  else
    bad "--precision single under mpirun -np 2 failed: $(tail -5 "$work/mpi.txt")"
  fi
fi
exit $fail
