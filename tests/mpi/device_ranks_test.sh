#!/bin/bash
# device_ranks_test.sh MPIEXEC DEVICE_RANKS_CHECK KPM_DOS SOURCE_DIR: GPU ranks in MPI jobs
# (issue 36, docs/cuda_backend.md "GPU ranks under mpirun").
#   1. device_ranks_check on 2 and 3 ranks: the distributed operator's device path on the host
#      stand-in (1 device rank + CPU ranks, every rank a device rank) gives the CPU sweep and
#      moments (1e-12 relative; the check program's comment derives the tolerances).
#   2. `mpirun -np 2 kpm-dos --device cuda` is no longer refused as unimplemented:
#      - where no GPU is visible (or the build has no CUDA), exit status 2 with the
#        "no CUDA device visible" / "no CUDA kernels" message, once;
#      - where a GPU is visible (scripts/device_check.sh runs this test there), rank 0 drives
#        GPU 0 and rank 1 a second GPU or the CPU: /kpm/moments equal the 1-process CPU run to
#        1e-12 for --matrix sell and free (as kpm_dos_mpi_test.sh).
set -u
mpiexec=$1 check=$2 kpm=$3 src=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
source "$(dirname "$0")/../support/script_lib.sh"
"$py" -c 'import h5py, numpy' 2>/dev/null || { echo "FAIL: no python3 with h5py and numpy (apt-get install python3-h5py)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
run_mpi() { local np=$1; shift; timeout "${TOPOKPM_MPI_TIMEOUT:-120}" "$mpiexec" --oversubscribe --bind-to none -np "$np" "$@"; }

for np in 2 3; do
  out=$(run_mpi "$np" "$check" device 2>&1); rc=$?
  echo "$out" | tail -5
  [ "$rc" -eq 0 ] || fail "device_ranks_check on $np ranks: exit status $rc"
  grep -q "device check on $np ranks: ok" <<<"$out" || fail "device_ranks_check on $np ranks: no success line"
done

for matrix in sell free; do
  run_mpi 2 "$kpm" -c "$src/inputs/test/ti_tiny.ini" --matrix "$matrix" --device cuda -q -o "$work/gpu.h5" \
    > "$work/log" 2>&1
  rc=$?
  if grep -q "not implemented" "$work/log"; then cat "$work/log"; fail "--device cuda under mpirun still refused as unimplemented"; fi
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 2 ] || { cat "$work/log"; fail "--device cuda without a GPU: exit status $rc, expected 2"; }
    n=$(grep -c -E -- "--device cuda: (no CUDA device visible|this build has no CUDA kernels)" "$work/log")
    [ "$n" -eq 1 ] || { cat "$work/log"; fail "--device cuda without a GPU: refusal printed $n times, expected once"; }
    echo "ok: $matrix: no GPU here, refused once: $(grep -m1 -- '--device cuda' "$work/log")"
    continue
  fi
  "$kpm" -c "$src/inputs/test/ti_tiny.ini" --matrix "$matrix" -q -o "$work/cpu.h5" > /dev/null || fail "serial cpu run"
  "$py" - "$work/cpu.h5" "$work/gpu.h5" "$matrix" <<'PY' || exit 1
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
d = float(np.max(np.abs(a["kpm/moments"][()] - b["kpm/moments"][()])))
if not d < 1e-12:
    print(f"FAIL: {sys.argv[3]}: GPU ranks' moments differ from the CPU run by {d:.3e}")
    sys.exit(1)
print(f"ok: {sys.argv[3]}: 2 ranks --device cuda (rank 0: {b['provenance'].attrs['devices']}) = CPU, max |diff| {d:.1e}")
PY
done
echo PASS
