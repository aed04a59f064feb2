#!/bin/bash
# cuda_field_test.sh KPM_DOS: `kpm-dos --device cuda --matrix free --magnetic-flux PHI` (issue 34:
# the GPU stencil kernels carry the Peierls phases) is no longer refused for the field, in double
# and single precision, for ti and graphene.
#   - Where no GPU is visible (or the build has no CUDA): exit status 2 with one "--device cuda:
#     no CUDA device visible" / "no CUDA kernels" line, nothing about the field, no file.
#   - Where a GPU is visible (scripts/device_check.sh runs this test there): the run succeeds
#     and its /kpm/moments lie within the rounding bound of the CPU stencil's double run with
#     the same seeds and Gershgorin scaling: |mu_n(gpu) - mu_n(cpu)| <= 4 kappa c eps sqrt(n/2 + 1),
#     kappa = 1/sqrt(1 - (1 - e/2)^2), c = (m + 3)(2 + 1) for at most m = 14 entries per row,
#     eps = eps_f in single, eps_d in double (tests/support/single_precision.hpp,
#     docs/performance.md; the double GPU and CPU sweeps each round within the double model).
set -u
kpm=$1
source "$(dirname "$0")/../support/script_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
common=(--moments 256 --vectors 4 --bounds gershgorin --epsilon 0.01 -q --matrix free)

run_case() {  # run_case NAME PRECISION MODEL-ARGS...
  local name=$1 precision=$2; shift 2
  "$kpm" "$@" "${common[@]}" --precision "$precision" --device cuda -o "$work/gpu_$name.h5" > "$work/log" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    if grep -qiE -- "magnetic|Peierls|field" "$work/log"; then cat "$work/log"; fail "$name: refused for the field on --device cuda"; fi
    [ "$rc" -eq 2 ] || { cat "$work/log"; fail "$name: without a GPU: exit status $rc, expected 2"; }
    local n
    n=$(grep -c -E -- "--device cuda: (no CUDA device visible|this build has no CUDA kernels)" "$work/log")
    [ "$n" -eq 1 ] || { cat "$work/log"; fail "$name: without a GPU: device refusal printed $n times, expected once"; }
    [ ! -e "$work/gpu_$name.h5" ] || fail "$name: refused run left a file"
    echo "ok: $name: no GPU here, refused for the device only: $(head -c 120 "$work/log")"
    return
  fi
  "$py" -c 'import h5py, numpy' 2>/dev/null || fail "no python3 with h5py and numpy to compare the moments"
  "$kpm" "$@" "${common[@]}" --device cpu -o "$work/cpu_$name.h5" > "$work/log" 2>&1 || { cat "$work/log"; fail "$name: CPU double run"; }
  "$py" - "$work/gpu_$name.h5" "$work/cpu_$name.h5" "$name" "$precision" <<'PY' || fail "$name: GPU moments outside the rounding bound of the CPU's"
import sys, h5py, numpy as np
g = h5py.File(sys.argv[1], "r")["kpm/moments"][()]
c = h5py.File(sys.argv[2], "r")["kpm/moments"][()]
assert g.shape == c.shape, (g.shape, c.shape)
e, m = 0.01, 14
eps = float(np.finfo(np.float32 if sys.argv[4] == "single" else np.float64).eps)
kappa = 1 / np.sqrt(1 - (1 - e / 2) ** 2)
n = np.arange(c.shape[-1])  # the moment index is the last axis
bound = 4 * kappa * (m + 3) * 3 * eps * np.sqrt(n / 2 + 1)
diff = np.abs(g - c)
print(f"ok: {sys.argv[3]}: GPU vs CPU double, max |diff| {diff.max():.2e} ({(diff / bound).max():.2e} of the bound)")
sys.exit(0 if np.all(diff <= bound) else 1)
PY
}

ti=(--model ti --lattice 6x4x3 --magnetic-flux 1/24 --disorder 0.5)           # torus in x, y: Nx Ny PHI = 1
graphene=(--model graphene --lattice 6x6 --magnetic-flux 1/12 --disorder 0.3)  # Nx Ny PHI = 3
graphene_open=(--model graphene --lattice 5x7 --boundary op --magnetic-flux 2/9) # x open: any PHI
for precision in double single; do
  run_case "ti_$precision" $precision "${ti[@]}"
  run_case "graphene_$precision" $precision "${graphene[@]}"
  run_case "graphene_open_$precision" $precision "${graphene_open[@]}"
done
