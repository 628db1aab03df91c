#!/usr/bin/env bash
# Checks the Spack recipe (spack/packages/minictx) with a real Spack, offline, against the
# libraries already installed on this machine: finds them as externals, concretizes
# minictx and minictx +cuda cuda_arch=90, builds and installs the host variant from the
# committed HEAD of this checkout with `spack dev-build`, and runs the installed minictx.
#
#   tools/check-spack.sh SPACK_ROOT [WORKDIR]
#
# SPACK_ROOT is a Spack checkout: 0.23, which carries its builtin packages, or 1.x with
# SPACK_PACKAGES naming a checkout of spack-packages (Spack 1.x would clone it). Spack must be
# able to import a clingo Python module (`python3 -c 'import clingo'`, or PYTHONPATH naming
# one): bootstrapping is turned off, since it downloads. Everything Spack writes (its
# configuration, caches, stage, install tree and the copy of the checkout) goes under
# WORKDIR, default a new temporary directory; PREFIX (default /usr) is where the libraries
# without a Spack detector (Kokkos, yaml-cpp, nlohmann-json, CLI11, GoogleTest) are looked
# for. BUILD=0 stops after the concretizations. A SIGTERM or Ctrl-C stops the Spack command
# or run in progress and the script.
set -euo pipefail
spack_root=${1:?usage: tools/check-spack.sh SPACK_ROOT [WORKDIR]}
spack_root=$(cd "$spack_root" && pwd)  # the script changes directory below
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tools/signals.bash"
work=${2:-$(mktemp -d /tmp/minictx-spack.XXXXXX)}
prefix=${PREFIX:-/usr}
mkdir -p "$work/config" "$work/system"
work=$(cd "$work" && pwd)

# Spack's own scopes point into WORKDIR, so no ~/.spack or /etc/spack takes part.
export SPACK_USER_CONFIG_PATH=$work/config SPACK_SYSTEM_CONFIG_PATH=$work/system
unset SPACK_DISABLE_LOCAL_CONFIG
export SPACK_USER_CACHE_PATH=$work/cache
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
spack() {
  echo "\$ spack $*" >&2
  forward "$spack_root/bin/spack" "$@"
}

forward python3 -c 'import clingo; print("clingo", clingo.__version__)'
spack --version
spack config --scope user add "config:install_tree:root:$work/opt"
spack config --scope user add "config:build_stage:[$work/stage]"
spack config --scope user add "config:source_cache:$work/sources"
spack config --scope user add "config:build_jobs:2"
spack config --scope user add "bootstrap:enable:false"
if [[ -n ${SPACK_PACKAGES:-} ]]; then
  printf 'repos:\n  builtin: %s\n' "$SPACK_PACKAGES/repos/spack_repo/builtin" > "$work/config/repos.yaml"
fi
spack repo add --scope user "$root/spack"
spack compiler find --scope user

# What Spack can detect, made not buildable so that nothing is downloaded.
spack external find --scope user --not-buildable cmake gmake pkgconf mpich openmpi hdf5 cuda openssl

# The others, with their versions read from their own files.
cmake_version() {  # the version in a library's CMake package file under PREFIX
  local file
  file=$(find "$prefix/lib" "$prefix/share" -path "*/cmake/*" -name "$1" 2>/dev/null | head -n 1)
  [[ -z $file ]] || sed -n 's/^ *set(PACKAGE_VERSION "\([0-9.]*\)")/\1/p' "$file" | head -n 1
}
header_version() {  # MAJOR.MINOR.PATCH from a header's NAME_MAJOR, NAME_MINOR, NAME_PATCH
  [[ -f $1 ]] || return 0
  local part parts=()
  for part in MAJOR MINOR PATCH; do parts+=("$(sed -n "s/^#define $2_$part  *\([0-9]*\).*/\1/p" "$1")"); done
  (IFS=.; echo "${parts[*]}")
}
external() {  # NAME VERSION VARIANTS PREFIX; nothing when the version was not found
  [[ -n $2 ]] || return 0
  printf '  %s:\n    buildable: false\n    externals:\n    - spec: %s@%s %s\n      prefix: %s\n' \
    "$1" "$1" "$2" "$3" "$4" >> "$work/config/packages.yaml"
}
blas_library=$(readlink -f "$(find "$prefix/lib" -name 'libopenblas.so' 2>/dev/null | head -n 1)" || true)
case $blas_library in
  *pthread*) blas_threads=pthreads ;;
  *openmp*) blas_threads=openmp ;;
  *) blas_threads=none ;;
esac
cuda_prefix=$(dirname "$(dirname "$(command -v nvcc || echo /none/bin/nvcc)")")
external openblas "$(pkg-config --modversion openblas 2>/dev/null || true)" "threads=$blas_threads" "$prefix"
# The NCCL of a CUDA toolkit is built for every architecture the recipe names.
external nccl "$(header_version "$cuda_prefix/include/nccl.h" NCCL)" "+cuda cuda_arch=80,90" "$cuda_prefix"
external kokkos "$(cmake_version KokkosConfigVersion.cmake)" "+serial ~openmp ~threads ~cuda" "$prefix"
external yaml-cpp "$(cmake_version yaml-cpp-config-version.cmake)" "+shared" "$prefix"
external nlohmann-json "$(cmake_version nlohmann_jsonConfigVersion.cmake)" "" "$prefix"
external cli11 "$(cmake_version CLI11ConfigVersion.cmake)" "" "$prefix"
external googletest "$(cmake_version GTestConfigVersion.cmake)" "" "$prefix"
spack config get packages

spack info minictx
spack spec -I minictx
spack spec -I minictx +cuda cuda_arch=90

if [[ ${BUILD:-1} == 0 ]]; then
  echo "spack check ok, concretized only (BUILD=0): $work"
  exit 0
fi

# The committed HEAD, with its git history so that --version names its sha; the build
# directory dev-build makes stays in this copy.
git clone --quiet --no-checkout "$root" "$work/src"
git -C "$work/src" checkout --quiet "$(git -C "$root" rev-parse HEAD)"
# MPI=mpich|openmpi picks the MPI (default mpich); the run uses that MPI's mpiexec.
mpi=${MPI:-mpich}
# In this shell, not a subshell: a signal to the script reaches the build (signals.bash).
cd "$work/src"
spack dev-build minictx@0.9.0 ~cuda ^"$mpi"

exe=$(spack location -i minictx@0.9.0 ~cuda)/bin/minictx
mpiexec=$(spack location -i "$mpi")/bin/mpiexec
[[ ! -x $mpiexec.$mpi ]] || mpiexec=$mpiexec.$mpi  # Debian's co-installed MPIs
"$exe" --version
cd "$work"
forward "$mpiexec" -n 2 "$exe" run --set attention.backend=ring --set run.verify=true -o "$work/quickstart.h5" \
  > "$work/quickstart.log"
grep -E "^FOM" "$work/quickstart.log"
echo "spack check ok: $work"
