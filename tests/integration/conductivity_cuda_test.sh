#!/usr/bin/env bash
# kpm-dos --conductivity with --device cuda (issue 34): the two-index moments on one GPU.
#  - a serial --device cuda --conductivity xy run (graphene 24x24 in a field): with a GPU it
#    runs and /conductivity/moments equal the --device cpu run's within (4 M^2 + N) eps
#    ||v_x|| ||v_y|| (tests/unit/cuda/two_index_device_test.cpp derives it); without one it is
#    refused for the device (exit 2, one line: "--device cuda: no CUDA device visible (...)"
#    or, in a CPU-only build, "--device cuda: this build has no CUDA kernels"), never by the
#    --conductivity row of the capability table;
#  - --plan --ranks 1 --gpus 1 prices the phase in device memory (gpu_memory_per_rank_bytes
#    holds it, the CPU ranks' memory does not);
#  - GPU ranks under mpirun stay refused: --plan --ranks 2 --gpus 1 exits 2 with one line
#    naming --conductivity (mpirun itself: tests/mpi/kpm_dos_mpi_conductivity_test.sh, case cuda).
set -u
dos="$1"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
if ! $py -c 'import h5py, numpy' 2>/dev/null; then echo "FAIL: /usr/bin/python3 lacks h5py or numpy"; exit 1; fi

cond=(--model graphene --lattice 24x24 --magnetic-flux 1/24 --moments 128 --vectors 4 --block-width 2
      --energy-range -3.1:3.1 --conductivity xy --quiet)
"$dos" "${cond[@]}" --device cuda --output "$work/gpu.h5" > "$work/out.txt" 2> "$work/err.txt"; rc=$?
if [ $rc -eq 0 ]; then
  "$dos" "${cond[@]}" --device cpu --output "$work/cpu.h5" > /dev/null 2>&1
  check "--device cuda: the moments equal the CPU's to rounding" "$py - '$work/gpu.h5' '$work/cpu.h5' <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p, 'r')['conductivity/moments'][()] for p in sys.argv[1:3])
tol = (4 * a.shape[0] ** 2 + 24 * 24 * 2) * np.finfo(float).eps * 3.4641
d = float(np.max(np.abs(a - b)))
print(f'max |Gamma_gpu - Gamma_cpu| {d:.2e} (allowed {tol:.1e})')
sys.exit(0 if d <= tol else 1)
PY"
else
  check "--device cuda without a GPU: exit 2" "[ $rc -eq 2 ] || { echo rc=$rc; cat '$work/err.txt'; false; }"
  check "--device cuda without a GPU: one line naming the device, not --conductivity" \
    "[ \$(wc -l < '$work/err.txt') -eq 1 ] && grep -qE -- '--device cuda: (no CUDA device visible|this build has no CUDA kernels)' '$work/err.txt' || { cat '$work/err.txt'; false; }"
  check "--device cuda without a GPU: no file" "[ ! -e '$work/gpu.h5' ]"
fi

big=(--model graphene --lattice 200x200 --magnetic-flux 1/200 --moments 512 --vectors 4 --conductivity xy
     --plan-bandwidth 20 --memory-limit 4)
"$dos" "${big[@]}" --ranks 1 --gpus 1 --plan-json "$work/plan.json" > "$work/out.txt" 2> "$work/err.txt"; rc=$?
check "--plan --ranks 1 --gpus 1: planned" "[ $rc -eq 0 ] || { echo rc=$rc; cat '$work/err.txt'; false; }"
check "--plan --ranks 1 --gpus 1: the phase in device memory" "$py - '$work/plan.json' <<'PY'
import sys, json
p = json.load(open(sys.argv[1]))
c, g, h = p['conductivity_memory_bytes'], p['gpu_memory_per_rank_bytes'], p['memory_per_rank_bytes']
print(f'conductivity {c:.3g} B, gpu rank {g:.3g} B, cpu ranks {h:.3g} B')
sys.exit(0 if c > 2.5 * 2**30 and g >= c and h < c else 1)
PY"
"$dos" "${big[@]}" --ranks 2 --gpus 1 --plan > "$work/out.txt" 2> "$work/err.txt"; rc=$?
check "--plan --ranks 2 --gpus 1: exit 2" "[ $rc -eq 2 ] || { echo rc=$rc; cat '$work/err.txt'; false; }"
check "--plan --ranks 2 --gpus 1: one line naming --conductivity on GPU ranks" \
  "[ \$(wc -l < '$work/err.txt') -eq 1 ] && grep -qF -- '--conductivity: the two-index moments run on CPU ranks (one, or several under mpirun) or on one GPU' '$work/err.txt' || { cat '$work/err.txt'; false; }"
exit $fail
