#!/usr/bin/env bash
# Quickstart: install dependencies, build Release, run the quickstart deck, print the table.
# The run verifies its own configuration against the fp64 reference: its FOM line ends
# VALID (verified in this run against fp64) or INVALID.
# Usage: jobs/quickstart.sh [RANKS]   (default 1: the quickstart deck uses the local backend;
#        with RANKS > 1 it runs the same model with the ring backend)
# A SIGTERM or Ctrl-C stops the step in progress and the script.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/signals.bash
ranks=${1:-1}
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "quickstart.sh: RANKS must be a whole number from 1, got '$ranks'" >&2; exit 2; }

forward ci/setup-deps.sh
forward cmake --preset default >/dev/null
# nproc obeys OMP_NUM_THREADS
forward cmake --build --preset default -j "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)" --target minictx

mkdir -p outputs
out="outputs/quickstart-$(date +%Y%m%d-%H%M%S).h5"
extra=(--set run.verify=true)
if [ "$ranks" -gt 1 ]; then extra+=(--set attention.backend=ring); fi
forward mpiexec -n "$ranks" build/miniapp/minictx run inputs/quickstart.yaml "${extra[@]}" -o "$out"
