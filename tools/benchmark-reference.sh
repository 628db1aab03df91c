#!/usr/bin/env bash
# The benchmark's reference results (docs/benchmark-reference.md): every class's host twin
# measured on this machine with its verification run and the submission report over
# them, and every class projected on the A100 and H100 profiles.
#
#   tools/benchmark-reference.sh OUTDIR [MINICTX]
#
# Writes OUTDIR/<twin>.h5, OUTDIR/<twin>-verify.h5, OUTDIR/twins.md (and .csv): the
# submission report over all twins; OUTDIR/projected-<class>-<machine>.h5,
# OUTDIR/projections.md (each projection's tables) and OUTDIR/projections-table.md (one
# row per class and machine: step, FOM, MFU, bound, memory). Needs h5py in $PYTHON
# (default python3). A SIGTERM or Ctrl-C stops the run in progress and the script.
set -euo pipefail
out=${1:?usage: tools/benchmark-reference.sh OUTDIR [MINICTX]}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tools/signals.bash"
minictx=${2:-$root/build/miniapp/minictx}
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

ranks_of() { sed -n 's/^  world_size: *\([0-9]*\).*/\1/p' "$1"; }

files=()
for class in tiny small medium large xl; do
  deck=$root/inputs/benchmark/$class-twin.yaml
  n=$(ranks_of "$deck")
  echo "== $class-twin on $n ranks"
  forward mpiexec -n "$n" "$minictx" run "$deck" -o "$out/$class-twin.h5" --force > "$out/$class-twin.log"
  forward mpiexec -n "$n" "$minictx" run "$deck" --set benchmark.role=verification -o "$out/$class-twin-verify.h5" \
    --force > "$out/$class-twin-verify.log"
  grep -hE '^(FOM|VERIFICATION)' "$out/$class-twin.log" "$out/$class-twin-verify.log"
  files+=("$out/$class-twin.h5" "$out/$class-twin-verify.h5")
done
forward "$minictx" report --submission "${files[@]}" --csv "$out/twins.csv" > "$out/twins.md"

: > "$out/projections.md"
for class in tiny small medium large xl; do
  for machine in a100-80gb-hdr h100-sxm-ndr; do
    echo "== $class on $machine"
    {
      echo "### $class on $machine"
      echo
      echo '```'
      echo "minictx project inputs/benchmark/$class.yaml --machine $machine"
      echo '```'
      echo
      forward "$minictx" project "$root/inputs/benchmark/$class.yaml" --machine "$machine" --columns summary \
        -o "$out/projected-$class-$machine.h5" --force
      echo
    } >> "$out/projections.md"
  done
done
forward "${PYTHON:-python3}" - "$out" > "$out/projections-table.md" <<'PY'
import sys
import h5py
text = lambda x: x.decode() if isinstance(x, bytes) else x
print("| class | machine | step (s) | tokens/s per GPU (FOM) | MFU, causal count (%) | bound | memory (MiB/GPU) | fits 80 GB |")
print("|---|---|---:|---:|---:|---|---:|---|")
for c in "tiny small medium large xl".split():
    for m in ("a100-80gb-hdr", "h100-sxm-ndr"):
        with h5py.File(f"{sys.argv[1]}/projected-{c}-{m}.h5", "r") as f:
            met, lab = f["points/point_0000/metrics"].attrs, f["points/point_0000/labels"].attrs
            print(f"| {c} | {m} | {met['step_seconds']:.1f} | {met['tokens_per_s_per_device']:.1f} | "
                  f"{100 * met['mfu_causal']:.1f} | {text(lab['bound'])} | {met['peak_memory_mb']:.0f} | "
                  f"{text(lab['fits'])} |")
PY
echo "reference results in $out"
