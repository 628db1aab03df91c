#!/usr/bin/env bash
# The test command (CI runs it): install dependencies, check the format, then
#   1. Release (preset default) with -Werror: every ctest label (quick and full);
#   2. clang-tidy (ci/tidy.sh) over the default build's compile database: no finding;
#   3. Debug with ASan and UBSan (preset debug): the quick label;
#   4. Release against Open MPI (preset openmpi): the quick label, and Open MPI across the
#      hosts of the cluster in a box (batch_cluster_box: skipped where it cannot run);
#   5. where the CUDA toolkit is installed, the cuda preset (compile and link: no GPU
#      here) and its tests that need no GPU (label nogpu).
# The release builds treat warnings as errors.
# Usage: ci/test.sh [extra ctest arguments for step 1]
# Environment: STEPS (default "format default tidy debug openmpi cuda": the steps to run),
#              CUDA=0 (skip the cuda build), NVCC (default /usr/local/cuda/bin/nvcc).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-format default tidy debug openmpi cuda}
jobs=$(nproc)
# One thread per rank: ranks, not threads, fill the cores.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

ci/setup-deps.sh

# build PRESET [cmake options]
build() {
  cmake --preset "$1" "${@:2}"
  cmake --build --preset "$1" -j "$jobs"
}

step() { [[ " $steps " == *" $1 "* ]]; }

if step format; then ci/format-check.sh; fi
if step default; then
  build default -DMINICTX_WERROR=ON
  ctest --preset default -j "$jobs" "$@"
fi
# Over the default step's compile database (build/): no configure of its own.
if step tidy; then ci/tidy.sh build; fi
if step debug; then
  # Not -Werror: GCC's flow warnings misfire on sanitizer-instrumented code.
  build debug
  ctest --preset debug -j "$jobs" -L '^quick$'
fi
if step openmpi; then
  build openmpi -DMINICTX_WERROR=ON
  ctest --preset openmpi -j "$jobs" -L '^quick$'
  ctest --preset openmpi -R '^batch_cluster_box$'
fi

nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if ! step cuda || [ "${CUDA:-1}" = 0 ]; then
  echo "test.sh: the cuda preset is not built (not asked for)"
elif [ -x "$nvcc" ]; then
  export CUDACXX=$nvcc
  build cuda -DMINICTX_WERROR=ON
  ctest --preset cuda -j "$jobs" -L '^nogpu$'
else
  echo "test.sh: no CUDA toolkit at $nvcc: the cuda preset is not built"
fi
