#!/usr/bin/env bash
# The benchmark's reference results (docs/benchmark-reference.md): every class's host twin
# measured on this machine with its verification run and the submission report over
# them, and every class projected on the A100 and H100 profiles.
#
#   ci/benchmark-reference.sh OUTDIR [MINICTX]
#
# Writes OUTDIR/<twin>.h5, OUTDIR/<twin>-verify.h5, OUTDIR/twins.md (and .csv): the
# submission report over all twins; OUTDIR/projected-<class>-<machine>.h5 and
# OUTDIR/projections.md: each class's projected step, bound and memory.
set -euo pipefail
out=${1:?usage: ci/benchmark-reference.sh OUTDIR [MINICTX]}
root=$(cd "$(dirname "$0")/.." && pwd)
minictx=${2:-$root/build/miniapp/minictx}
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

ranks_of() { sed -n 's/^  world_size: *\([0-9]*\).*/\1/p' "$1"; }

files=()
for class in tiny small medium large xl; do
  deck=$root/inputs/benchmark/$class-twin.yaml
  n=$(ranks_of "$deck")
  echo "== $class-twin on $n ranks"
  mpiexec -n "$n" "$minictx" run "$deck" -o "$out/$class-twin.h5" --force | grep -E '^(FOM|VERIFICATION)'
  mpiexec -n "$n" "$minictx" run "$deck" --set benchmark.role=verification -o "$out/$class-twin-verify.h5" --force |
    grep -E '^(FOM|VERIFICATION)'
  files+=("$out/$class-twin.h5" "$out/$class-twin-verify.h5")
done
"$minictx" report --submission "${files[@]}" --csv "$out/twins.csv" > "$out/twins.md"

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
      "$minictx" project "$root/inputs/benchmark/$class.yaml" --machine "$machine" --columns summary \
        -o "$out/projected-$class-$machine.h5" --force
      echo
    } >> "$out/projections.md"
  done
done
echo "reference results in $out"
