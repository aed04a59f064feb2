#!/bin/bash
# slurm_scripts_test.sh KPM_DOS SOURCE_DIR MPIEXEC: scripts/slurm/kpm-dos.sbatch (mpirun) and
# kpm-dos-srun.sbatch (srun) without Slurm. Stub commands on PATH stand in for Slurm:
# `scontrol` logs its arguments, `srun` drops its Slurm options and runs the real mpirun on
# 2 ranks (writing its pid, so the test can signal it as Slurm's --signal=USR1@T would),
# `mpirun` drops --map-by (this host has one NUMA domain) and adds -np 2. For each script,
# with the input, result and checkpoint in a directory whose name has spaces:
#   1. SIGUSR1 mid-run (to the batch shell for mpirun, B:USR1; to the srun task otherwise):
#      exit 75, the checkpoint written, no result, `scontrol requeue JOBID` called once;
#   2. the requeued start (the same command again) resumes from the checkpoint: exit 0, the
#      result's /kpm/moments bit-identical to an uninterrupted 2-rank run (same split, each
#      rank takes its own partial sums back: docs/cluster.md section 5), the spent checkpoint
#      removed, no second requeue;
# and no PERFWARNING in either part (2 ranks x 1 thread on this 2-core host).
set -u
kpm=$1 src=$2 real_mpirun=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The stop costs mpirun 2 x this grace (docs/cluster.md section 4); 1 s keeps the test short.
export OMPI_MCA_odls_base_sigkill_timeout=1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; [ -f "$log" ] && cat "$log"; exit 1; }
log=$work/none

stubs="$work/stub bin"
dir="$work/run dir with spaces"
mkdir -p "$stubs" "$dir"
cp "$src/inputs/test/ti_tiny.ini" "$dir/my input.ini"
cat > "$stubs/scontrol" <<'STUB'
#!/bin/bash
echo "$*" >> "$STUB_LOG"
STUB
cat > "$stubs/mpirun" <<'STUB'
#!/bin/bash
args=()
while [ $# -gt 0 ]; do
  case $1 in --map-by) shift 2 ;; *) args+=("$1"); shift ;; esac
done
exec "$REAL_MPIRUN" --oversubscribe -np 2 "${args[@]}"
STUB
cat > "$stubs/srun" <<'STUB'
#!/bin/bash
while [ $# -gt 0 ]; do
  case $1 in --mpi=* | --cpu-bind=*) shift ;; *) break ;; esac
done
echo $$ > "$SRUN_PID"
exec "$REAL_MPIRUN" --oversubscribe --bind-to none -np 2 "$@"
STUB
chmod +x "$stubs"/*
export PATH="$stubs:$PATH" REAL_MPIRUN="$real_mpirun" STUB_LOG="$work/scontrol.log" SRUN_PID="$work/srun.pid"
export KPM_DOS=$kpm SLURM_JOB_ID=4242 SLURM_CPUS_PER_TASK=1
unset OMP_NUM_THREADS KPM_TIME_LIMIT MPIRUN SRUN

# M = 2048, 8 vectors, 16384 rows: 1024 sweeps, about 1 s on 2 idle ranks: the first progress
# line comes long before the end.
args=(-c "$dir/my input.ini" --lattice 32x32x4 --moments 2048 --vectors 8 --progress-interval 0.05)
log=$work/ref.log
timeout 300 "$real_mpirun" --oversubscribe --bind-to none -np 2 "$kpm" "${args[@]}" --threads 1 \
  -o "$work/ref.h5" > "$log" 2>&1 || fail "the uninterrupted 2-rank run failed"

for variant in mpirun srun; do
  script=$src/scripts/slurm/kpm-dos.sbatch
  [ "$variant" = srun ] && script=$src/scripts/slurm/kpm-dos-srun.sbatch
  [ -f "$script" ] || fail "no $script"
  export KPM_CHECKPOINT="$dir/my ckpt $variant.h5"
  out="$dir/my result $variant.h5"
  rm -f "$STUB_LOG" "$SRUN_PID"

  log=$work/$variant.1.log
  (cd "$dir" && exec bash "$script" "${args[@]}" -o "$out") > "$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 400); do grep -q "  moments " "$log" && break; sleep 0.05; done
  grep -q "  moments " "$log" || fail "$variant: no progress line within 20 s"
  if [ "$variant" = srun ]; then kill -USR1 "$(cat "$SRUN_PID")"; else kill -USR1 "$pid"; fi
  wait "$pid"
  rc=$?
  [ "$rc" -eq 75 ] || fail "$variant: first part exit $rc, expected 75"
  [ -f "$KPM_CHECKPOINT" ] || fail "$variant: no checkpoint at '$KPM_CHECKPOINT'"
  [ ! -e "$out" ] || fail "$variant: a result file although the run was stopped"
  [ "$(cat "$STUB_LOG" 2>/dev/null)" = "requeue 4242" ] || fail "$variant: scontrol not called as 'requeue 4242' once"
  ! grep -q PERFWARNING "$log" || fail "$variant: PERFWARNING in the first part"
  echo "ok: $variant: SIGUSR1 -> exit 75, $(grep -o 'after [0-9]* of [0-9]* sweeps' "$log"), requeued"

  log=$work/$variant.2.log
  (cd "$dir" && SLURM_RESTART_COUNT=1 exec bash "$script" "${args[@]}" -o "$out") > "$log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || fail "$variant: resumed part exit $rc, expected 0"
  grep -q "resuming from $KPM_CHECKPOINT" "$log" || fail "$variant: the second part did not resume"
  [ -f "$out" ] || fail "$variant: no result '$out'"
  [ ! -e "$KPM_CHECKPOINT" ] || fail "$variant: the spent checkpoint was not removed"
  [ "$(wc -l < "$STUB_LOG")" -eq 1 ] || fail "$variant: requeued again after exit 0"
  ! grep -q PERFWARNING "$log" || fail "$variant: PERFWARNING in the resumed part"
  "$py" - "$work/ref.h5" "$out" <<'PY' || fail "$variant: resumed moments differ"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r")["kpm/moments"][()] for p in sys.argv[1:3])
if not np.array_equal(a, b):
    print(f"moments not bit-identical: max |diff| {float(np.max(np.abs(a - b))):.3e}"); sys.exit(1)
PY
  echo "ok: $variant: requeued start resumed, exit 0, moments bit-identical to the uninterrupted run"
done
