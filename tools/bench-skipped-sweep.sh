#!/usr/bin/env bash
# Seconds to record a sweep of N points of which all but the first are skipped (Ulysses over 8
# ranks on this run's 1 rank), so the time is the results file's
# bookkeeping, not compute.  docs/performance.md, "Recording a sweep".
#   tools/bench-skipped-sweep.sh [N] [MINICTX]   (defaults: 10000, build/miniapp/minictx)
set -euo pipefail
n=${1:-10000}
minictx=${2:-build/miniapp/minictx}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
lengths=$(seq -s, 64 64 $((64 * n)))
degrees=1$(printf ',8%.0s' $(seq 2 "$n"))
start=$(date +%s.%N)
"$minictx" run --set run.mode=attention --set attention.backend=usp --set run.warmup=0 \
  --set run.iters=1 --set "sequence.length=[$lengths]" \
  --set "attention.ulysses_degree=[$degrees]" --set "sweep.zip=[sequence.length,attention.ulysses_degree]" \
  -o "$dir/sweep.h5" >"$dir/out.txt"
end=$(date +%s.%N)
recorded=$(grep -c '^skipped: ' "$dir/out.txt" || true)
echo "points=$n skipped=$recorded bytes=$(stat -c %s "$dir/sweep.h5") seconds=$(echo "$end - $start" | bc)"
