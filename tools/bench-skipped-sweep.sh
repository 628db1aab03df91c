#!/usr/bin/env bash
# Seconds to record a sweep of N points of which all but the first are skipped (Ulysses over 8
# ranks on this run's 1 rank), so the time is the results file's
# bookkeeping, not compute.  docs/performance.md, "Recording a sweep".
#   tools/bench-skipped-sweep.sh [N] [MINICTX]   (defaults: 10000, build/miniapp/minictx; N from 1)
set -euo pipefail
. "$(dirname "$0")/signals.bash"
n=${1:-10000}
minictx=${2:-build/miniapp/minictx}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-skipped-sweep.sh: N must be a whole number from 1, got '$n'" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Point i: length 64·i, Ulysses degree 1 for the first point and 8 for every other.
lengths=$(seq -s, 64 64 $((64 * n)))
degrees=1
for ((i = 2; i <= n; i++)); do degrees+=,8; done
start=$(date +%s.%N)
forward "$minictx" run --set run.mode=attention --set attention.backend=usp --set run.warmup=0 \
  --set run.iters=1 --set "sequence.length=[$lengths]" \
  --set "attention.ulysses_degree=[$degrees]" --set "sweep.zip=[sequence.length,attention.ulysses_degree]" \
  -o "$dir/sweep.h5" >"$dir/out.txt"
end=$(date +%s.%N)
recorded=$(grep -c '^skipped: ' "$dir/out.txt" || true)
echo "points=$n skipped=$recorded bytes=$(stat -c %s "$dir/sweep.h5") seconds=$(echo "$end - $start" | bc)"
