#!/usr/bin/env bash
# Installs every Debian package minictx needs to build, test, report and plot.
# A no-op when they are all present. Run as root (or with sudo available).
set -euo pipefail

# Open MPI is the second MPI that CI builds against (preset openmpi); MPICH stays the
# machine's default mpicc/mpiexec. clang-format and clang-tidy: ci/format-check.sh,
# ci/tidy.py (whose cache of clean results hashes clang's preprocessor output).
# jube: the benchmark definition jube/minictx.xml and its test (benchmark_jube). ccache:
# ci/test.sh's builds compile only what changed since the last run. libssl-dev:
# SHA-256 (libcrypto) for the results' digests; nlohmann-json3-dev: the JSON minictx writes.
# python3-torch (CPU): the outside PyTorch fp64 checks of dumps (tools/check-dump-torch.py).
packages=(
  build-essential cmake pkg-config git ccache
  mpich libmpich-dev
  openmpi-bin libopenmpi-dev
  libhdf5-dev
  libtrilinos-kokkos-dev
  libyaml-cpp-dev libcli11-dev
  libssl-dev nlohmann-json3-dev
  libopenblas-dev
  libgtest-dev
  clang-format clang-tidy clang
  python3 python3-h5py python3-numpy python3-matplotlib python3-jsonschema python3-torch
  slurmctld slurmd slurm-client
  jube
)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# Open MPI's alternatives outrank MPICH's: point the plain names back at MPICH.
keep_mpich_default() {
  $SUDO update-alternatives --quiet --set mpi /usr/bin/mpicc.mpich
  $SUDO update-alternatives --quiet --set mpirun /usr/bin/mpirun.mpich
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#packages[@]} packages present"
  keep_mpich_default
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
keep_mpich_default
