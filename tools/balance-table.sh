#!/bin/bash
# The document load-balance table: ring attention, forward and backward, on long-tailed
# packings of documents (sequence.documents {pareto: ...}) at each world size, ring_type
# zigzag against balanced: the (query, key) pairs of the busiest rank over the mean (the
# imbalance) and the step time. Ends with `minictx report --columns balance`;
# docs/algorithms.md, "Document load balance", reads the result.
#
#   tools/balance-table.sh [OUT_DIR]          default OUT_DIR: outputs/balance-table
#
# Environment: WORLDS (default "4 8 16", whole numbers from 1; more ranks than cores are
# oversubscribed), LENGTH (sequence.length, default 8192), SEEDS (one packing per seed,
# default "1 2 3"), MIN_DOC (the shortest document drawn, default 32), ALPHA (the tail's
# exponent, default 1), ITERS (timed iterations, default 3), NICE (the runs' niceness,
# default 19: step times from a shared machine are what its other jobs leave), MINICTX (the
# binary, default build/miniapp/minictx), MPIEXEC (default mpiexec). A SIGTERM or Ctrl-C
# stops the run in progress (its completed points are kept) and the script exits with its
# status.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/signals.bash
. tools/whole_numbers.bash
out=${1:-outputs/balance-table}
minictx=${MINICTX:-build/miniapp/minictx}
mpiexec=${MPIEXEC:-mpiexec}
length=${LENGTH:-8192}
[ -x "$minictx" ] || { echo "balance-table.sh: no minictx at $minictx (build first, or set MINICTX)" >&2; exit 2; }
whole_numbers balance-table.sh WORLDS 1 "${WORLDS-4 8 16}"
whole_numbers balance-table.sh SEEDS 0 "${SEEDS-1 2 3}"
read -ra world_list <<< "${WORLDS-4 8 16}"
read -ra seed_list <<< "${SEEDS-1 2 3}"
packings=""
for seed in "${seed_list[@]}"; do
  packings+="${packings:+, }{pareto: [${MIN_DOC:-32}, $length], alpha: ${ALPHA:-1}, seed: $seed}"
done
mkdir -p "$out"
files=()
for w in "${world_list[@]}"; do
  echo "balance-table.sh: world size $w"
  forward nice -n "${NICE:-19}" "$mpiexec" -n "$w" "$minictx" run --set run.mode=attention \
    --set attention.backend=ring --set "sequence.length=$length" --set "sequence.documents=[$packings]" \
    --set 'attention.ring_type=[zigzag,balanced]' --set run.warmup=1 --set "run.iters=${ITERS:-3}" \
    -o "$out/world-$w.h5" --force >/dev/null
  files+=("$out/world-$w.h5")
done
forward "$minictx" report --columns balance "${files[@]}" > "$out/balance.md"
cat "$out/balance.md"
