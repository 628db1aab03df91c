#!/bin/bash
# The error study: how far a sequence-parallel run is from fp64 as the ring grows, and what
# the partials' precision costs. At each world size, seed and backend, one verified step
# (run.verify) of the layer stack (model mode) and of the attention alone (attention mode):
# fp32 once, and each 16-bit dtype with fp32, storage and accumulator partials
# (attention.partials: accumulator keeps a 16-bit running accumulator across ring steps,
# as many rings do). Ends with tools/error-study-table.py: the error against fp64 (mean and
# spread over the seeds), its ratio to the one-device run of the same problem (verify runs
# one beside every 16-bit point), the table and the figure.
#
#   tools/error-study.sh [OUT_DIR]          default OUT_DIR: outputs/error-study
#
# Environment (defaults in brackets):
#   WORLDS ["1 2 4 8 16"]  world sizes, whole numbers from 1 (more ranks than cores are
#                          oversubscribed)
#   SEEDS ["1 2 3"]        run.seed of each repetition
#   BACKENDS ["ring:zigzag ring:stripe allgather double_ring burst ulysses usp"]
#                          attention.backend[:ring_type]; ulysses and usp run where the
#                          world size divides the heads (usp as 2 × world/2)
#   HEADS [2], KV_HEADS [1], HEAD_DIM [128]    the model's attention (d_model = HEADS·HEAD_DIM)
#   TOKENS_PER_RANK [256]  sequence.length = TOKENS_PER_RANK × world size
#   LAYERS ["[1,8]"]       model.layers of the model panel; "" skips it
#   ATTENTION [1]          1: the attention-only panel too (run.mode attention)
#   DTYPES ["bf16 fp16"]   the 16-bit dtypes (each with the three partials); fp32 runs once
#   MINICTX (build/miniapp/minictx), MPIEXEC (mpiexec), PYTHON (/usr/bin/python3)
# docs/numerics.md reads the result. A SIGTERM or Ctrl-C stops the run in progress (its
# completed points are kept) and the script exits with its status.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/signals.bash
. tools/whole_numbers.bash
out=${1:-outputs/error-study}
minictx=${MINICTX:-build/miniapp/minictx}
mpiexec=${MPIEXEC:-mpiexec}
python=${PYTHON:-/usr/bin/python3}
worlds=${WORLDS-1 2 4 8 16}
seeds=${SEEDS-1 2 3}
backends=${BACKENDS-ring:zigzag ring:stripe allgather double_ring burst ulysses usp}
heads=${HEADS:-2}
kv_heads=${KV_HEADS:-1}
head_dim=${HEAD_DIM:-128}
tokens=${TOKENS_PER_RANK:-256}
layers=${LAYERS-[1,8]}
dtypes=${DTYPES:-bf16 fp16}
[ -x "$minictx" ] || { echo "error-study.sh: no minictx at $minictx (build first, or set MINICTX)" >&2; exit 2; }
whole_numbers error-study.sh WORLDS 1 "$worlds"
whole_numbers error-study.sh SEEDS 0 "$seeds"
for n in "$heads" "$kv_heads" "$head_dim" "$tokens"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "error-study.sh: HEADS, KV_HEADS, HEAD_DIM and TOKENS_PER_RANK must be whole numbers from 1, got '$n'" >&2; exit 2; }
done
read -ra dtype_list <<< "$dtypes"
zip_dtypes=fp32 zip_partials=fp32
for d in "${dtype_list[@]}"; do
  [[ $d == bf16 || $d == fp16 ]] || { echo "error-study.sh: DTYPES must list bf16 and fp16, got '$d'" >&2; exit 2; }
  zip_dtypes+=",$d,$d,$d" zip_partials+=",fp32,storage,accumulator"
done
zip_dtypes="[$zip_dtypes]" zip_partials="[$zip_partials]"
read -ra world_list <<< "$worlds"
read -ra seed_list <<< "$seeds"
read -ra backend_list <<< "$backends"
mkdir -p "$out"

# The backend's keys at world size $1, or nothing where it cannot run there.
backend_keys() {
  local w=$1 backend=${2%%:*} type=${2#*:}
  case "$backend" in
    ring) echo "--set attention.backend=ring --set attention.ring_type=$type" ;;
    allgather) echo "--set attention.backend=allgather" ;;
    double_ring) [ "$w" -ge 4 ] && echo "--set attention.backend=double_ring --set attention.window_size=2 --set attention.ring_type=zigzag" ;;
    burst) [ "$w" -ge 2 ] && [ $((w % 2)) = 0 ] && echo "--set attention.backend=burst --set topology.ranks_per_node=2 --set attention.ring_type=zigzag" ;;
    ulysses) [ $((heads % w)) = 0 ] && echo "--set attention.backend=ulysses" ;;
    usp) [ "$w" -ge 2 ] && [ $((w % 2)) = 0 ] && [ $((heads % 2)) = 0 ] &&
      echo "--set attention.backend=usp --set attention.ulysses_degree=2 --set attention.ring_type=zigzag" ;;
    *) echo "error-study.sh: unknown backend '$2'" >&2; exit 2 ;;
  esac
  return 0
}

files=()
for seed in "${seed_list[@]}"; do
  for w in "${world_list[@]}"; do
    for b in "${backend_list[@]}"; do
      keys=$(backend_keys "$w" "$b")
      [ -n "$keys" ] || continue
      read -ra backend_args <<< "$keys"
      common=(--set model.preset=tiny --set model.heads="$heads" --set model.kv_heads="$kv_heads"
              --set model.head_dim="$head_dim" --set model.d_model=$((heads * head_dim))
              --set sequence.length=$((tokens * w)) --set run.seed="$seed" "${backend_args[@]}"
              --set run.verify=true --set run.warmup=0 --set run.iters=1 --force)
      panels=()
      [ -n "$layers" ] && panels+=("model")
      [ "${ATTENTION:-1}" = 1 ] && panels+=("attention")
      for panel in "${panels[@]}"; do
        mode=(--set run.mode="$panel")
        [ "$panel" = model ] && mode+=(--set "model.layers=$layers")
        name="$out/${b/:/-}-world-$w-seed-$seed-$panel"
        echo "error-study.sh: seed $seed, world size $w, $b, $panel"
        # One launch, so one fp64 reference: fp32 once (its partials are all the same), and
        # each 16-bit dtype with the three partials, the two lists zipped.
        forward "$mpiexec" -n "$w" "$minictx" run "${common[@]}" "${mode[@]}" --set "run.dtype=$zip_dtypes" \
          --set "attention.partials=$zip_partials" --set 'sweep.zip=[run.dtype,attention.partials]' \
          -o "$name.h5" >/dev/null
        files+=("$name.h5")
      done
    done
  done
done
forward "$python" tools/error-study-table.py -o "$out/errors.png" "${files[@]}" > "$out/errors.md"
cat "$out/errors.md"
