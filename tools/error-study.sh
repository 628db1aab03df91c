#!/bin/bash
# The error study: how far a sequence-parallel run is from fp64, and from one device, as
# the ring grows. The layer stack (tiny preset) on ring attention with the zigzag layout,
# at each world size, in fp32, bf16 and fp16, with fp32 and storage partials
# (attention.partials), 1 and 4 layers; every point verified (run.verify). Ends with the
# table (`minictx report --columns errors`) and the figure (`outputs/plot.py --kind errors`).
#
#   tools/error-study.sh [OUT_DIR]          default OUT_DIR: outputs/error-study
#
# Environment: WORLDS (default "1 2 4 8 16", whole numbers from 1; more ranks than cores are
# oversubscribed),
# LENGTH (sequence.length, default 512), LAYERS (default "[1,4]"), MINICTX (the binary,
# default build/miniapp/minictx), MPIEXEC (default mpiexec), PYTHON (default /usr/bin/python3).
# docs/numerics.md reads the result. A SIGTERM or Ctrl-C stops the run in progress (its
# completed points are kept) and the script exits with its status.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/signals.bash
out=${1:-outputs/error-study}
minictx=${MINICTX:-build/miniapp/minictx}
mpiexec=${MPIEXEC:-mpiexec}
python=${PYTHON:-/usr/bin/python3}
worlds=${WORLDS-1 2 4 8 16}
[ -x "$minictx" ] || { echo "error-study.sh: no minictx at $minictx (build first, or set MINICTX)" >&2; exit 2; }
read -ra world_list <<< "$worlds"
[ ${#world_list[@]} -gt 0 ] || { echo "error-study.sh: WORLDS names no world size" >&2; exit 2; }
for w in "${world_list[@]}"; do
  [[ $w =~ ^[1-9][0-9]*$ ]] || { echo "error-study.sh: WORLDS must list whole numbers from 1, got '$w'" >&2; exit 2; }
done
mkdir -p "$out"
common=(--set model.preset=tiny --set "model.layers=${LAYERS:-[1,4]}" --set "sequence.length=${LENGTH:-512}"
        --set attention.backend=ring --set attention.ring_type=zigzag
        --set run.verify=true --set run.warmup=0 --set run.iters=1 --force)
files=()
for w in "${world_list[@]}"; do
  echo "error-study.sh: world size $w"
  # fp32 partials and storage partials are the same in fp32: one run of each 16-bit dtype
  # with both, and one fp32 run.
  forward "$mpiexec" -n "$w" "$minictx" run "${common[@]}" --set run.dtype=fp32 -o "$out/world-$w-fp32.h5" >/dev/null
  forward "$mpiexec" -n "$w" "$minictx" run "${common[@]}" --set 'run.dtype=[bf16,fp16]' \
    --set 'attention.partials=[fp32,storage]' -o "$out/world-$w-16bit.h5" >/dev/null
  files+=("$out/world-$w-fp32.h5" "$out/world-$w-16bit.h5")
done
forward "$minictx" report --columns errors "${files[@]}" > "$out/errors.md"
cat "$out/errors.md"
forward "$python" outputs/plot.py "${files[@]}" -o "$out/errors.png" --kind errors
