#!/usr/bin/env bash
# The test command: install dependencies, build (Release, host path), run every ctest suite;
# then, where the CUDA toolkit is installed, build the cuda preset (compile and link: no
# GPU here) and run its tests that need no GPU (label nogpu).
# Usage: ci/test.sh [extra ctest arguments]   (PRESET=debug ci/test.sh for ASan/UBSan;
#        CUDA=0 skips the cuda build)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${PRESET:-default}

ci/setup-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
# One thread per rank: ranks, not threads, fill the cores.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
ctest --preset "$preset" -j "$(nproc)" "$@"

nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ "${CUDA:-1}" != 0 ] && [ -x "$nvcc" ]; then
  export CUDACXX=$nvcc
  cmake --preset cuda
  cmake --build --preset cuda -j "$(nproc)"
  ctest --preset cuda -j "$(nproc)" -L nogpu
else
  echo "test.sh: no CUDA toolkit at $nvcc: the cuda preset is not built"
fi
