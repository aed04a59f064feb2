#!/usr/bin/env bash
# Configures and builds topokpm (Release) in ./build (or $TOPOKPM_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${TOPOKPM_BUILD_DIR:-build}"
jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$jobs"
