#!/usr/bin/env bash
# GPU check of the CUDA backend in one call of the device tool (issue 6): configure, build
# only the CUDA-relevant targets (-j16), run the CUDA tests and a --device cuda smoke run of
# kpm-dos, then the benchmark. Logs go to $OUT (or ./device-out when run by hand).
#
#   scripts/device_check.sh [all|test|bench] [lattice for the bench, default 200x200x40]
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
  (cd "$BUILD" && ctest -R "Device|BlockVectorMirror|CudaSpmmv|CudaKpm|BlockStencil|Kpm" --output-on-failure \
      -j4 > "$OUT/ctest.log" 2>&1)
  echo "ctest rc=$? in $(( $(date +%s) - t0 )) s"
  tail -30 "$OUT/ctest.log"
  if [ -x "$BUILD/app/kpm-dos" ]; then
    cd /tmp
    for m in sell free; do
      "$BUILD/app/kpm-dos" --model ti --lattice 32x32x16 --moments 256 --vectors 16 --matrix $m --device cuda \
          --output /tmp/dos_cuda_$m.h5 > "$OUT/kpm_dos_cuda_$m.log" 2>&1
      echo "kpm-dos --device cuda --matrix $m rc=$?"; grep -E "operator|moments  |error" "$OUT/kpm_dos_cuda_$m.log"
      "$BUILD/app/kpm-dos" --model ti --lattice 32x32x16 --moments 256 --vectors 16 --matrix $m --device cpu \
          --output /tmp/dos_cpu_$m.h5 > "$OUT/kpm_dos_cpu_$m.log" 2>&1
      echo "kpm-dos --device cpu  --matrix $m rc=$?"; grep -E "moments  " "$OUT/kpm_dos_cpu_$m.log"
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
  t0=$(date +%s)
  OMP_NUM_THREADS=16 "$BUILD/bench/cuda-spmmv-bench" --lattice "$LATTICE" --reps 20 > "$OUT/bench_$LATTICE.md" 2>&1
  echo "bench rc=$? in $(( $(date +%s) - t0 )) s"
  cat "$OUT/bench_$LATTICE.md"
fi
