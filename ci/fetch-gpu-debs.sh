#!/usr/bin/env bash
# Downloads (no install) the Debian packages a GPU machine lacks to build and run the cuda
# preset: MPICH, HDF5, Kokkos, yaml-cpp, CLI11, OpenBLAS, GoogleTest, and the shared
# libraries they load (the list is what `ldd minictx` and `ldd mpiexec.hydra` show here,
# outside the CUDA toolkit and libc/libstdc++). ci/gpu-check.sh unpacks them there: run
# this before the GPU machine's first command, and carry the folder along with every
# command (docs/nvidia.md, "On a GPU machine"). packages.txt beside the packages lists
# them by name, so that ci/gpu-check.sh refuses at once a folder that lacks one.
# Usage: ci/fetch-gpu-debs.sh [folder]   (default .gpu-debs, ignored by git)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.gpu-debs}

dev=(
  mpich libmpich-dev hdf5-helpers libhdf5-dev libaec-dev libssl-dev nlohmann-json3-dev libcurl4-openssl-dev
  zlib1g-dev libtrilinos-kokkos-dev libyaml-cpp-dev libcli11-dev libopenblas-dev libopenblas-pthread-dev libgtest-dev
)
runtime=(
  libmpich12 libhwloc15 libslurm38 libucx0 libnuma1 libudev1 libibverbs1 libnl-3-200 libnl-route-3-200
  libhdf5-103-1 libsz2 libaec0 libcurl4 libnghttp2-14 librtmp1 libssh2-1 libpsl5 libbrotli1 libldap-2.5-0
  libsasl2-2 libsasl2-modules-db libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2
  libidn2-0 libunistring2 libgnutls30 libhogweed6 libnettle8 libgmp10 libp11-kit0 libtasn1-6 libffi8 libssl3
  libzstd1 zlib1g libtrilinos-kokkos-13.2 libyaml-cpp0.7 libopenblas0 libopenblas0-pthread libgfortran5 libquadmath0
)

mkdir -p "$dest"
cd "$dest"
rm -f ./*.deb packages.txt
apt-get download "${dev[@]}" "${runtime[@]}"
printf '%s\n' "${dev[@]}" "${runtime[@]}" >packages.txt
echo "fetch-gpu-debs: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1) in $dest"
