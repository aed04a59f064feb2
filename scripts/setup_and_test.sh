#!/usr/bin/env bash
# ONE command from a fresh Debian 12 checkout to a passing test suite: installs missing
# packages, configures, builds, and runs every test with CTest (GoogleTest inside).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_debian.sh
bash scripts/build.sh
build_dir="${TOPOKPM_BUILD_DIR:-build}"
jobs="$(nproc 2>/dev/null || echo 2)"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600
