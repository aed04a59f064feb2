#!/usr/bin/env bash
# ONE command from a fresh Debian 12 checkout to a DOS: installs missing packages,
# configures, builds, runs kpm-dos on an example input (default: the 64x64x16 TI slab) and
# draws the result with kpm-plot.
#   bash scripts/setup_and_run.sh [INPUT.ini] [extra kpm-dos options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_debian.sh
bash scripts/build.sh
input="${1:-inputs/ti_64x64x16.ini}"
shift || true
build_dir="${TOPOKPM_BUILD_DIR:-build}"
mkdir -p results
"$build_dir/app/kpm-dos" --config "$input" --output "results/$(basename "${input%.ini}").h5" "$@"
"$build_dir/app/kpm-plot" "results/$(basename "${input%.ini}").h5" -o "results/$(basename "${input%.ini}").png"
