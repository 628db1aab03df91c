#!/usr/bin/env bash
# The test command: install dependencies, build (Release, host path), run every ctest suite.
# Usage: ci/test.sh [extra ctest arguments]   (PRESET=debug ci/test.sh for ASan/UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${PRESET:-default}

ci/setup-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$(nproc)"
# One thread per rank: ranks, not threads, fill the cores.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
ctest --preset "$preset" -j "$(nproc)" "$@"
