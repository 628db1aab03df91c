#!/usr/bin/env bash
# Installs every Debian package minictx needs to build, test, report and plot.
# A no-op when they are all present. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  mpich libmpich-dev
  libhdf5-dev hdf5-tools
  libtrilinos-kokkos-dev
  libyaml-cpp-dev libcli11-dev
  libopenblas-dev
  libgtest-dev libbenchmark-dev
  python3 python3-h5py python3-numpy python3-matplotlib
  slurmctld slurmd slurm-client
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
