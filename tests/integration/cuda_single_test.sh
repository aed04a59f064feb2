#!/bin/bash
# cuda_single_test.sh KPM_DOS: `kpm-dos --precision single --device cuda` (issue 36) is no longer
# refused for its precision, for --matrix sell and free.
#   - Where no GPU is visible (or the build has no CUDA): exit status 2 with one "--device cuda:
#     no CUDA device visible" / "no CUDA kernels" line, nothing about the precision, no file.
#   - Where a GPU is visible (scripts/device_check.sh runs this test there): the run succeeds
#     and its /kpm/moments lie within the single-precision rounding bound of the double CPU
#     run with the same seeds and Gershgorin scaling: |mu_n(single) - mu_n(double)| <=
#     4 kappa c eps_f sqrt(n/2 + 1), kappa = 1/sqrt(1 - (1 - e/2)^2), c = (m + 3)(2 + 1) for at most
#     m = 14 entries per row (tests/support/single_precision.hpp, docs/performance.md).
set -u
kpm=$1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
args=(--model ti --lattice 6x6x4 --moments 256 --vectors 4 --bounds gershgorin --epsilon 0.01 -q)

for matrix in sell free; do
  "$kpm" "${args[@]}" --matrix "$matrix" --precision single --device cuda -o "$work/gpu_$matrix.h5" > "$work/log" 2>&1
  rc=$?
  if grep -q -- "--precision single" "$work/log"; then cat "$work/log"; fail "$matrix: --precision single --device cuda refused for its precision"; fi
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 2 ] || { cat "$work/log"; fail "$matrix: without a GPU: exit status $rc, expected 2"; }
    n=$(grep -c -E -- "--device cuda: (no CUDA device visible|this build has no CUDA kernels)" "$work/log")
    [ "$n" -eq 1 ] || { cat "$work/log"; fail "$matrix: without a GPU: device refusal printed $n times, expected once"; }
    [ ! -e "$work/gpu_$matrix.h5" ] || fail "$matrix: refused run left a file"
    echo "ok: $matrix: no GPU here, refused for the device only: $(head -c 120 "$work/log")"
    continue
  fi
  "$py" -c 'import h5py, numpy' 2>/dev/null || fail "no python3 with h5py and numpy to compare the moments"
  "$kpm" "${args[@]}" --matrix "$matrix" --device cpu -o "$work/cpu_$matrix.h5" > "$work/log" 2>&1 || { cat "$work/log"; fail "$matrix: CPU double run"; }
  "$py" - "$work/gpu_$matrix.h5" "$work/cpu_$matrix.h5" "$matrix" <<'PY' || fail "$matrix: single GPU moments outside the rounding bound"
import sys, h5py, numpy as np
s = h5py.File(sys.argv[1], "r")["kpm/moments"][()]
d = h5py.File(sys.argv[2], "r")["kpm/moments"][()]
assert s.shape == d.shape, (s.shape, d.shape)
e, m, eps_f = 0.01, 14, float(np.finfo(np.float32).eps)
kappa = 1 / np.sqrt(1 - (1 - e / 2) ** 2)
n = np.arange(d.shape[-1])  # the moment index is the last axis
bound = 4 * kappa * (m + 3) * 3 * eps_f * np.sqrt(n / 2 + 1)
diff = np.abs(s - d)
print(f"ok: {sys.argv[3]}: single GPU vs double CPU, max |diff| {diff.max():.2e} ({(diff / bound).max():.2e} of the bound)")
sys.exit(0 if np.all(diff <= bound) else 1)
PY
done
