#!/usr/bin/env bash
# Quickstart: install dependencies, build Release, run the quickstart deck, print the table.
# Usage: ci/quickstart.sh [RANKS]   (default 1: the quickstart deck uses the local backend;
#        with RANKS > 1 it runs the same model with the ring backend)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-1}

ci/setup-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target minictx

mkdir -p outputs
out="outputs/quickstart-$(date +%Y%m%d-%H%M%S).h5"
extra=()
if [ "$ranks" -gt 1 ]; then extra=(--set attention.backend=ring); fi
mpiexec -n "$ranks" build/miniapp/minictx run inputs/quickstart.yaml "${extra[@]}" -o "$out"
echo
build/miniapp/minictx verify inputs/quickstart.yaml | tail -n 1
