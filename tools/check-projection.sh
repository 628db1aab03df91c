#!/usr/bin/env bash
# The projection against this machine (docs/projection.md, "Against a measured machine"): calibrate the host (`minictx
# bench` for the kernels and `minictx bench --comm` for the link, both on 2 ranks: the
# kernels measured on both cores at once, as the runs load them; the attention rows at
# the decks' heads, head dims and block lengths, both masks), run the
# 2-rank check decks (every backend and layout in attention mode at two lengths; the
# model under each checkpointing policy), project the same decks on the calibrated
# generic-cpu profile, and print measured/projected per point with `report --compare`.
# A benchmark, not a test: its timings depend on the machine being quiet.
#   tools/check-projection.sh [OUTDIR]      (default outputs/check-projection)
# A SIGTERM or Ctrl-C stops the run in progress and the script.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/signals.bash
MINICTX=${MINICTX:-build/miniapp/minictx}
OUT=${1:-outputs/check-projection}
mkdir -p "$OUT"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

forward mpiexec -n 2 "$MINICTX" bench --seq 256,512,1024,2048,4096 --head-dim 32,64 --mask both --heads 8 \
  --memory-seq 1024 --layer-seq 1024 --min-seconds 0.3 -o "$OUT/kernels.h5" --force > "$OUT/kernels.txt"
forward mpiexec -n 2 "$MINICTX" bench --comm --min-seconds 0.2 -o "$OUT/comm.h5" --force > "$OUT/comm.txt"
calibration=(--calibration "$OUT/kernels.h5" --calibration "$OUT/comm.h5")

for deck in check-projection-2ranks check-projection-model-2ranks; do
  forward mpiexec -n 2 "$MINICTX" run "inputs/$deck.yaml" -o "$OUT/$deck-measured.h5" --force > "$OUT/$deck-run.txt"
  forward "$MINICTX" project "inputs/$deck.yaml" --machine generic-cpu "${calibration[@]}" -o "$OUT/$deck-projected.h5" \
    --force > "$OUT/$deck-project.txt"
  echo "### $deck"
  forward "$MINICTX" report "$OUT/$deck-measured.h5" "$OUT/$deck-projected.h5" --compare
  echo
done
grep -h "calibration\|link:" "$OUT/kernels.txt" "$OUT/comm.txt"
