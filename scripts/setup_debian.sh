#!/usr/bin/env bash
# Installs the Debian 12 packages topokpm needs (only those missing). Idempotent.
# Runs apt-get directly as root, through sudo otherwise. No stdin needed (CI).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev
  libhwloc-dev hwloc-nox
  libfftw3-dev
  libboost-program-options-dev
  libhdf5-openmpi-dev
  libopenblas-openmp-dev liblapacke-dev
  libgtest-dev
  libmetis-dev
  python3-h5py python3-matplotlib python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  # Package lists may be stale or absent on a fresh machine: refresh once and retry.
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
