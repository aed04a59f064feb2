#!/usr/bin/env bash
# GPU check of the CUDA backend in one call of the device tool (issue 6): configure, build
# only the CUDA-relevant targets (-j16), run the CUDA tests and a --device cuda smoke run of
# kpm-dos, then the benchmark. Logs go to $OUT (or /tmp/topokpm-device-out when run by hand).
#
#   scripts/device_check.sh [all|test|bench] ["lattices for the bench", default "200x200x40"]
#
# The device image lacks Boost.program_options (only the headers of Boost 1.83). To still
# configure (and, if possible, build kpm-dos), the script points CMake at a generated
# boost_program_options package: the Boost 1.74 library and the headers it needs when they
# were carried in .devcarry/boost (see the report of issue 6), else an empty target, in which
# case kpm-dos is simply not built.
set -uo pipefail
MODE=${1:-all}
LATTICE=${2:-200x200x40}
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/topokpm-device-out}
BUILD=${BUILD:-/tmp/topokpm-build-cuda}
mkdir -p "$OUT" "$BUILD"
exec > >(tee -a "$OUT/device_check.log") 2>&1

echo "== $(date -u +%FT%TZ) device_check.sh $MODE $LATTICE"
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.mem,temperature.gpu --format=csv || true

# ---- a boost_program_options package for configure ----
PO_DIR=/tmp/topokpm-boost-po
mkdir -p "$PO_DIR"
BOOST_VERSION=$(sed -n 's/^#define BOOST_LIB_VERSION "\(.*\)"/\1/p' /usr/include/boost/version.hpp 2>/dev/null | tr _ .)
[ -n "$BOOST_VERSION" ] || BOOST_VERSION=1.83
[ "$(echo "$BOOST_VERSION" | tr -cd . | wc -c)" = 1 ] && BOOST_VERSION=$BOOST_VERSION.0
HAVE_PO=0
if ls /usr/lib/x86_64-linux-gnu/libboost_program_options.so* >/dev/null 2>&1; then
  HAVE_PO=system
elif [ -f "$SRC/.devcarry/boost/lib/libboost_program_options.a" ]; then
  HAVE_PO=carried
fi
if [ "$HAVE_PO" != system ]; then
  cat > "$PO_DIR/boost_program_options-config-version.cmake" <<EOF
set(PACKAGE_VERSION "$BOOST_VERSION")
set(PACKAGE_VERSION_EXACT TRUE)
set(PACKAGE_VERSION_COMPATIBLE TRUE)
EOF
  if [ "$HAVE_PO" = carried ]; then
    cat > "$PO_DIR/boost_program_options-config.cmake" <<EOF
if(NOT TARGET Boost::program_options)
  add_library(Boost::program_options STATIC IMPORTED)
  set_target_properties(Boost::program_options PROPERTIES
    IMPORTED_LOCATION "$SRC/.devcarry/boost/lib/libboost_program_options.a"
    INTERFACE_INCLUDE_DIRECTORIES "$SRC/.devcarry/boost/include")
endif()
EOF
  else
    cat > "$PO_DIR/boost_program_options-config.cmake" <<EOF
if(NOT TARGET Boost::program_options)
  add_library(Boost::program_options INTERFACE IMPORTED)
endif()
EOF
  fi
  PO_ARG="-Dboost_program_options_DIR=$PO_DIR"
else
  PO_ARG=""
fi
echo "boost program_options: $HAVE_PO (Boost headers $BOOST_VERSION)"

# ---- configure + build ----
t0=$(date +%s)
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTOPOKPM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DTOPOKPM_NATIVE_ARCH=ON $PO_ARG > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
grep -E "topokpm: CUDA|CUDA compiler identification" "$OUT/configure.log"
TARGETS="cuda_device_test cuda_block_vector_mirror_test cuda_spmmv_test cuda_kpm_test block_stencil_test kpm_test cuda-spmmv-bench"
[ "$HAVE_PO" != 0 ] && TARGETS="$TARGETS kpm-dos"
cmake --build "$BUILD" -j16 --target $TARGETS > "$OUT/build.log" 2>&1
build_rc=$?
if [ $build_rc -ne 0 ] && [ "$HAVE_PO" = carried ]; then
  echo "build with the carried Boost failed; retrying without kpm-dos"
  grep -E "error" "$OUT/build.log" | head -5
  TARGETS=${TARGETS% kpm-dos}
  cmake --build "$BUILD" -j16 --target $TARGETS >> "$OUT/build.log" 2>&1
  build_rc=$?
fi
echo "build rc=$build_rc in $(( $(date +%s) - t0 )) s"
[ $build_rc -eq 0 ] || { grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; }

# ---- tests ----
if [ "$MODE" = all ] || [ "$MODE" = test ]; then
  t0=$(date +%s)
  # The test binaries are run directly: CMake 4 (on the device image) writes gtest_discover_tests
  # files that its own ctest cannot parse when a test has SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]".
  status=0
  for t in cuda_device_test cuda_block_vector_mirror_test cuda_spmmv_test cuda_kpm_test block_stencil_test kpm_test; do
    exe=$(find "$BUILD/tests" -name "$t" -type f -perm -u+x | head -1)
    "$exe" > "/tmp/test_$t.log" 2>&1
    rc=$?; [ $rc -eq 0 ] || status=1
    echo "$t rc=$rc: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "/tmp/test_$t.log" | tr '\n' ' ')"
    grep -E "Failure|FAILED  \]|error" "/tmp/test_$t.log" | head -20
    cat "/tmp/test_$t.log" >> "$OUT/tests.log"
  done
  echo "tests status=$status in $(( $(date +%s) - t0 )) s"
  if [ -x "$BUILD/app/kpm-dos" ]; then
    cd /tmp
    for m in sell free; do
      "$BUILD/app/kpm-dos" --model ti --lattice 32x32x16 --moments 256 --vectors 16 --matrix $m --device cuda \
          --output /tmp/dos_cuda_$m.h5 > /tmp/kpm_dos_cuda_$m.log 2>&1
      echo "kpm-dos --device cuda --matrix $m rc=$?"; grep -E "operator|moments  |error" /tmp/kpm_dos_cuda_$m.log; cat /tmp/kpm_dos_cuda_$m.log >> "$OUT/kpm_dos.log"
      "$BUILD/app/kpm-dos" --model ti --lattice 32x32x16 --moments 256 --vectors 16 --matrix $m --device cpu \
          --output /tmp/dos_cpu_$m.h5 > /tmp/kpm_dos_cpu_$m.log 2>&1
      echo "kpm-dos --device cpu  --matrix $m rc=$?"; grep -E "moments  " /tmp/kpm_dos_cpu_$m.log; cat /tmp/kpm_dos_cpu_$m.log >> "$OUT/kpm_dos.log"
    done
    python3 - <<'EOF'
import h5py, numpy as np
for m in ("sell", "free"):
    a = h5py.File(f"/tmp/dos_cuda_{m}.h5")["/kpm/moments"][:]
    b = h5py.File(f"/tmp/dos_cpu_{m}.h5")["/kpm/moments"][:]
    dev = h5py.File(f"/tmp/dos_cuda_{m}.h5")["/provenance"].attrs["devices"]
    print(f"kpm-dos moments cuda vs cpu ({m}): max |diff| = {np.max(np.abs(a - b)):.2e}; devices = {dev}")
EOF
  fi
fi

# ---- benchmark ----
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  for lattice in $LATTICE; do
    t0=$(date +%s)
    OMP_NUM_THREADS=16 "$BUILD/bench/cuda-spmmv-bench" --lattice "$lattice" --reps 20 > "$OUT/bench_$lattice.md" 2>&1
    echo "bench $lattice rc=$? in $(( $(date +%s) - t0 )) s"
    cat "$OUT/bench_$lattice.md"
  done
fi

# ---- profile (PROFILE=1): DRAM and L2 -> L1 traffic of the R = 32 kernels, to tell DRAM-bound from
# L2-bound (Nsight Compute, one launch each, on a 100x100x40 lattice) ----
if [ "${PROFILE:-0}" = 1 ] && command -v ncu >/dev/null; then
  t0=$(date +%s)
  # The bench launches each kernel 1 + 3 times per width R = 1, 2, 4, 8, 16, 32 (--reps 3):
  # launch 1 is R = 1, launch 21 is R = 32.
  for spec in "sell_augmented_kernel 21" "stencil_site_kernel 21" "sell_augmented_kernel 1"; do
    set -- $spec
    timeout 120 ncu --kernel-name-base function --kernel-name "$1" --launch-skip "$2" --launch-count 1 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active \
      "$BUILD/bench/cuda-spmmv-bench" --lattice 100x100x40 --reps 3 > /tmp/ncu.log 2>&1
    echo "ncu $1 launch $2 rc=$?"; grep -E "gpu__time|dram__bytes|lts__t_sectors|l1tex__t_sector_hit|warps_active|==ERR|==WARN" /tmp/ncu.log | head -12
    cat /tmp/ncu.log >> "$OUT/ncu.log"
  done
  echo "profile in $(( $(date +%s) - t0 )) s"
fi

