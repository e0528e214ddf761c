#!/usr/bin/env bash
# Install what atf needs on Debian 12 (build tools, libraries, OpenMPI and ScaLAPACK for the
# optional MPI build, meson-python and venv/pip for `pip install .`, and the Python/data
# packages the tests use as independent references).
# Idempotent: installs only what is missing.
set -euo pipefail

packages=(
  build-essential meson ninja-build pkg-config
  libopenblas-dev liblapacke-dev libsuitesparse-dev libglpk-dev libhdf5-dev zlib1g-dev
  libplplot-dev plplot-driver-cairo libjansson-dev libxxhash-dev
  python3-numpy python3-scipy python3-h5py python3-cvxopt python3-torch
  python3-venv python3-pip python3-mesonpy
  libopenmpi-dev openmpi-bin libscalapack-openmpi-dev
  dataset-fashion-mnist nodejs npm
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from elsewhere than Debian (e.g. a preinstalled toolchain): accept those.
if command -v npm >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all packages present" >&2
fi
