#!/usr/bin/env bash
# The NVIDIA path on a GPU machine that has nvcc, CMake and python3 with PyTorch but none
# of minictx's other dependencies: unpacks the Debian packages ci/fetch-gpu-debs.sh
# downloaded into .gpu-debs (carried along), builds the cuda preset against them, runs
# the gpu-labelled ctest suite, the layer-stack grid on each kernel family, the
# sanitizers, the benchmarks beside PyTorch's and the benchmark's `tiny` class, and
# leaves logs and HDF5 results in $OUT (default outputs/gpu-check).
#
# Usage: ci/gpu-check.sh [stage...]
#   deps        unpack the packages, configure the cuda preset (skipped where done)
#   build       build it (every stage below builds first where this command has not)
#   kernels     the kernel tests alone (test_cuda_device), the Hopper probes first
#   grid        `minictx verify` of inputs/gpu-flash-grid.yaml (every backend and layout,
#               D 64 and 128, bf16 and fp16, each checkpointing policy, 4 ranks) and of
#               `local` on 1 rank, once per kernel family
#   acceptance  every kernel family's attention beside SDPA's backends (D = 128, H = 16,
#               bf16, S 4k-64k, causal and full), one table
#   test        the gpu-labelled ctest suite but the kernel tests (the kernels stage's),
#               and the tensor-core check; gpu tests skipped on a machine whose nvidia-smi
#               lists a GPU fail it (CUDA did not start for minictx)
#   sanitize    compute-sanitizer memcheck and racecheck on the kernel tests
#   layer       the llama-7b layer deck on each family and on the default family with the
#               tuned layer kernels (run.layer_kernels tuned, opt-in) beside eager PyTorch,
#               one table, and each run's phase times per step
#   documents   64 packed documents in 32k tokens beside none (inputs/gpu-documents.yaml) on
#               each family and its twin that masks documents in the kernels: the TFLOPS
#               of the counted pairs and their ratio, held to 0.8
#   bench       the default family's grid (D 64 and 128) beside SDPA, and the layer deck
#   nccl        the NCCL comm on the GPU: test_nccl_comm (every transfer through a one-rank
#               communicator behind a slow kernel), two ranks refused on the one GPU, an
#               NCCL error and an operation stalled behind a kernel that never ends, each
#               ending the job
#   gradsums    the weight-gradient sums (fp32 and 16-bit) and fp16's loss scale on the GPU
#               through the staged mpi comm, 4 ranks: tests/mpi/check_grad_sums.py
#   trace       the llama-7b layer's timeline at 16k tokens (bf16, the default family) as a
#               Perfetto trace, and its phases beside the projection's (report --compare)
#   eager       attention at run.input_scale 128 beside eager PyTorch fp32 on the CPU
#               (tools/compare-eager-attention.py --engine torch): the host device in fp32,
#               held within twice eager's error; the cuda device in fp32 and bf16, measured
#   tiny        the benchmark's `tiny` class measured, its verification run started beside
#               it in a session of its own (its fp64 reference takes one CPU core for
#               minutes, and outlives this command on a machine kept warm)
#   tiny-report waits for that verification (until TIME_LIMIT), then `minictx report
#               --submission` of the two runs; copies both results files to $OUT
# Default: deps build kernels test sanitize bench. For a 15-minute GPU allocation, the two
# commands of docs/nvidia.md, "On a GPU machine".
# Refused at once, before any stage runs: an unknown stage, a FAMILIES entry this GPU
# cannot run, and packages missing from .gpu-debs where they still have to be unpacked.
# Each stage prints its seconds, ends with a summary a person reads in a minute, and
# writes at most 2 files to $OUT (the device tool returns at most 8 a command). DRY_RUN=1
# stops after configuring (how CI-less machines check the script).
# Environment: OUT, DEPS_PREFIX (/tmp/minictx-deps), DEBS (.gpu-debs), BUILD_DIR (build-cuda),
#              FAMILIES: the kernel families grid, acceptance and layer run (sm80,sm90,sm90-onepass; auto:
#              the default family alone; unset: every family this GPU runs),
#              TIME_LIMIT (600): the seconds this command may run, which tiny-report's wait ends
#              before, TINY_DIR (/tmp/minictx-tiny): the tiny runs' files,
#              BENCH_SEQ (4096,16384,32768,65536), BENCH_HEAD_DIMS (64,128; acceptance: 128): the grid,
#              SDPA_BENCH (python3 tools/bench-torch-sdpa-gpu.py): the command that times SDPA,
#              TORCH_LAYER (python3 tools/bench-torch-layer-gpu.py): the command that times the layer,
#              GRAD_SUMS_CHECK (python3 tests/mpi/check_grad_sums.py): the gradsums stage's check.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
out=${OUT:-$repo/outputs/gpu-check}
prefix=${DEPS_PREFIX:-/tmp/minictx-deps}
debs=${DEBS:-$repo/.gpu-debs}
build=${BUILD_DIR:-build-cuda}
sdpa_bench=${SDPA_BENCH:-python3 tools/bench-torch-sdpa-gpu.py}
torch_layer=${TORCH_LAYER:-python3 tools/bench-torch-layer-gpu.py}
grad_sums_check=${GRAD_SUMS_CHECK:-python3 tests/mpi/check_grad_sums.py}
tiny_dir=${TINY_DIR:-/tmp/minictx-tiny}
time_limit=${TIME_LIMIT:-600}
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(deps build kernels test sanitize bench)
lib=$prefix/usr/lib/x86_64-linux-gnu
all_stages="deps build kernels grid acceptance test sanitize layer documents bench nccl gradsums trace eager tiny tiny-report"
for s in "${stages[@]}"; do
  case " $all_stages " in
    *" $s "*) ;;
    *) echo "gpu-check: error: unknown stage '$s' ($all_stages)"; exit 2 ;;
  esac
done

# The packages ci/fetch-gpu-debs.sh fetched, listed by name in packages.txt: checked
# before any stage, so that a command without them ends at once rather than after the
# machine's start and a configure that cannot find MPI.
check_debs() {
  local p missing=()
  if [ ! -f "$debs/packages.txt" ]; then
    echo "gpu-check: error: no packages in $debs (no packages.txt): fetch them before the GPU machine's" \
      "first command with ci/fetch-gpu-debs.sh, on a machine with network access, and carry .gpu-debs" \
      "along (docs/nvidia.md, \"On a GPU machine\")"
    exit 2
  fi
  while read -r p; do
    compgen -G "$debs/${p}_*.deb" >/dev/null || missing+=("$p")
  done <"$debs/packages.txt"
  if [ ${#missing[@]} -gt 0 ]; then
    echo "gpu-check: error: $debs lacks ${#missing[@]} of the packages its packages.txt lists" \
      "(${missing[*]}): fetch them again with ci/fetch-gpu-debs.sh"
    exit 2
  fi
}

# The prefix holds these packages unpacked: its stamp lists the files unpacked into it
# (with no .gpu-debs, as on a machine kept warm between commands, what is there serves).
debs_listing() { (cd "$debs" && ls ./*.deb) 2>/dev/null || true; }
deps_current() {
  [ -f "$prefix/.unpacked" ] && { [ ! -d "$debs" ] || [ "$(debs_listing)" = "$(cat "$prefix/.unpacked")" ]; }
}
deps_current || check_debs
mkdir -p "$out"

# Unpacked packages keep their /usr paths in wrapper scripts (mpicc, h5cc), CMake package
# files and alternatives links: point them into the prefix.
unpack_deps() {
  rm -rf "$prefix"
  mkdir -p "$prefix/usr/bin" "$prefix/usr/include/x86_64-linux-gnu" "$lib"
  for f in "$debs"/*.deb; do dpkg -x "$f" "$prefix"; done
  grep -rlI --null -e '/usr' "$prefix/usr/bin" "$lib/cmake" "$prefix/usr/share/cmake" "$lib/pkgconfig" \
      "$prefix/usr/share/pkgconfig" 2>/dev/null |
    xargs -0 -r sed -i -E "s#(^|[^/[:alnum:]_.-])/usr(/|\"|'|[[:space:]]|\$)#\1$prefix/usr\2#g"
  # Absolute links inside the packages.
  find "$prefix" -type l | while read -r l; do
    t=$(readlink "$l")
    case "$t" in /*) ln -sfn "$prefix$t" "$l" ;; esac
  done
  # Paths that CMake package files name but the packages do not hold are the machine's
  # own (libc's libdl.a, libm.so): link them from the prefix.
  grep -rhoI -e "$prefix/usr/[[:alnum:]_./+-]*" "$lib/cmake" "$prefix/usr/share/cmake" 2>/dev/null | sort -u |
    while read -r p; do
      if [ ! -e "$p" ] && [ -e "${p#"$prefix"}" ]; then mkdir -p "$(dirname "$p")"; ln -s "${p#"$prefix"}" "$p"; fi
    done
  # The links Debian's alternatives would make.
  ln -sfn mpicc.mpich "$prefix/usr/bin/mpicc"
  ln -sfn mpicxx.mpich "$prefix/usr/bin/mpicxx"
  ln -sfn mpiexec.hydra "$prefix/usr/bin/mpiexec"
  ln -sfn mpiexec.hydra "$prefix/usr/bin/mpiexec.mpich"
  for so in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3 libcblas.so; do
    [ -e "$lib/openblas-pthread/$so" ] && ln -sfn "openblas-pthread/$so" "$lib/$so"
  done
  ln -sfn openblas-pthread/cblas.h "$prefix/usr/include/x86_64-linux-gnu/cblas.h"
  debs_listing >"$prefix/.unpacked"
  echo "gpu-check: unpacked $(ls "$debs"/*.deb | wc -l) packages into $prefix"
}

# NCCL: the CUDA toolkit's if it has one, else PyTorch's (pip package nvidia-nccl-cu13).
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nccl_pip=""
if [ ! -e "$(dirname "$(dirname "$(readlink -f "$nvcc")")")/include/nccl.h" ] && [ ! -e /usr/include/nccl.h ]; then
  nccl_pip=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
fi

# The unpacked libraries only for minictx's own processes: python3 (PyTorch) keeps the
# machine's libraries.
deps_vars=(PATH="$prefix/usr/bin:$PATH"
           LD_LIBRARY_PATH="$lib:$lib/hdf5/serial:$lib/openblas-pthread${nccl_pip:+:$nccl_pip/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
           OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
deps_env() { env "${deps_vars[@]}" "$@"; }

# The tests' Python is the one that has h5py: on the GPU machine PyTorch's, not /usr/bin's.
configure() {
  local nccl=()
  [ -z "$nccl_pip" ] || nccl=(-DNCCL_INCLUDE_DIR="$nccl_pip/include" -DNCCL_LIBRARY="$(ls "$nccl_pip"/lib/libnccl.so* | head -1)")
  deps_env cmake --preset cuda -B "$build" -DCMAKE_PREFIX_PATH="$prefix/usr" -DCMAKE_CUDA_COMPILER="$nvcc" "${nccl[@]}" \
    -DMPI_C_COMPILER="$prefix/usr/bin/mpicc.mpich" -DHDF5_C_COMPILER_EXECUTABLE="$prefix/usr/bin/h5cc" \
    -DMPIEXEC_BIN="$prefix/usr/bin/mpiexec.hydra" -DSYSTEM_PYTHON3="$(command -v python3)" 2>&1 |
    tee "$out/build.log"
}

# What is done already is not redone, so that a command on a machine kept warm since the
# last one starts where it left off, and one on a fresh machine starts from the packages.
stage_deps() {
  if deps_current; then echo "gpu-check: deps: the packages are unpacked in $prefix"; else unpack_deps; fi
  if [ -f "$build/CMakeCache.txt" ]; then echo "gpu-check: deps: $build is configured"; else configure; fi
}

is_hopper() { [ "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)" = 9.0 ]; }
# Whether nvidia-smi lists a GPU: where it does, a gpu test must not be skipped.
gpu_listed() { nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }

# The kernel families (attention.kernels) this GPU runs: sm80 everywhere, sm90 and the
# opt-in sm90-onepass (the one-kernel backward) on Hopper; auto's is sm90 there.
gpu_families() { if is_hopper; then echo sm80 sm90 sm90-onepass; else echo sm80; fi; }
default_family() { if is_hopper; then echo sm90; else echo sm80; fi; }
# Those grid, acceptance and layer run: FAMILIES, or auto's family alone, or all of them.
families() {
  case "${FAMILIES:-}" in
    "") gpu_families ;;
    auto) default_family ;;
    *) echo "${FAMILIES//,/ }" ;;
  esac
}
if [ -n "${FAMILIES:-}" ]; then
  for f in $(families); do
    case " $(gpu_families) " in
      *" $f "*) ;;
      *) echo "gpu-check: error: FAMILIES names '$f', which this GPU does not run (it runs: $(gpu_families))"; exit 2 ;;
    esac
  done
fi

# Built once per command, before the first stage that runs what the build makes.
built=0
stage_build() {
  if [ ! -f "$build/CMakeCache.txt" ] || ! deps_current; then stage_deps; fi
  deps_env cmake --build "$build" -j "$(nproc)" 2>&1 | tail -n 40 | tee -a "$out/build.log"
  built=1
}
ensure_built() { [ "$built" = 1 ] || stage_build; }

# The gpu-labelled ctest suite but test_cuda_device's cases (gtest suites Cuda*: the kernels
# stage runs them), then the tensor-core check (its SASS half needs the cuobjdump of a
# full CUDA toolkit, which this machine has and CI's does not). A gpu test is skipped
# when minictx finds no usable GPU: on a machine whose nvidia-smi lists one that means
# CUDA did not start for minictx (a driver or runtime mismatch, say), which must not read
# as "all skipped", so the stage fails and names the first reason given.
stage_test() {
  ensure_built
  local log=$out/ctest-gpu.log rc=0 skipped first
  { nvidia-smi 2>&1 || true
    ok=0
    deps_env ctest --test-dir "$build" -L '^gpu$' -E '(^|/)Cuda[A-Za-z0-9]*[.]' -j "$(nproc)" --timeout 300 \
      --output-on-failure 2>&1 || ok=1
    deps_env ctest --test-dir "$build" -R '^flash_kernels_use_tensor_cores$' -V 2>&1 |
      grep -E '^[0-9]+: (\||SASS)|tests passed|Failed' || ok=1
    exit $ok; } | tee "$log" || rc=1
  skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" || true)
  if [ "$skipped" -gt 0 ] && gpu_listed; then
    first=$(grep -m1 -oE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" | sed -E 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/; s/ +# .*//')
    echo "gpu-check: test: $skipped gpu tests were skipped on a machine whose nvidia-smi lists a GPU:" \
      "CUDA did not start for minictx; $first says:" \
      "$(deps_env ctest --test-dir "$build" -R "^${first}\$" -V 2>&1 | grep -m1 -oE 'minictx: error: .*' || true)" |
      tee -a "$log"
    rc=1
  fi
  return $rc
}

# The kernel tests alone (test_cuda_device), the Hopper probes first: each names one wgmma
# descriptor form or TMA tile convention on its own, so a wrong one shows before the
# attention tests built on it fail. Probes skipped on a compute capability 9.0 GPU fail the
# stage (a build without 90a would otherwise pass it unseen). Then the proven kernels' tests,
# then the opt-in kernels' (not yet proven on a GPU) in a run of their own: each run
# bounded, so that a kernel that hangs still leaves the log and costs the others nothing.
stage_kernels() {
  ensure_built
  local tests=$build/tests/test_cuda_device probes='CudaWgmma.*:CudaTma.*' rc=0
  local opt_in='*Sm90Onepass*:*DocumentsInTheKernels*:CudaElementWise.Tuned*'
  (nvidia-smi 2>&1 || true
    deps_env timeout 60 "$tests" --gtest_filter="$probes" --gtest_brief=1 2>&1 | tee /tmp/minictx-probes.log || rc=1
    deps_env timeout 180 "$tests" --gtest_filter="-$probes:$opt_in" --gtest_brief=1 2>&1 || rc=1
    deps_env timeout 60 "$tests" --gtest_filter="$opt_in" --gtest_brief=1 2>&1 || rc=1
    if is_hopper && grep -q SKIPPED /tmp/minictx-probes.log; then
      echo "gpu-check: kernels: the Hopper probes were skipped on a compute capability 9.0 GPU (a build without 90a?)"
      rc=1
    fi
    exit $rc) | tee "$out/ctest-kernels.log"
}

# The layer stack on the flash kernels, once per family: inputs/gpu-flash-grid.yaml at 4
# ranks sharing the GPU (every backend and ring layout, D 64 and 128, bf16 and fp16, batch
# 2, a length no tile divides, each checkpointing policy), then `local` on 1 rank. Each
# launch bounded; the summary counts VALID and INVALID points per family and launch, and
# a launch's exit status is checked apart from its verdicts.
stage_grid() {
  ensure_built
  local rc=0 family log=$out/verify-grid.log mpiexec=$prefix/usr/bin/mpiexec.hydra m=$build/miniapp/minictx
  local local_sets=(--set attention.backend=local --set attention.ring_type=basic --set attention.ulysses_degree=1
                    --set "run.checkpointing=[none,selective,selective_half]" --set "sweep.zip=[]"
                    --set topology.ranks_per_node=0)
  : >"$log"
  for family in $(families); do
    echo "== attention.kernels=$family: inputs/gpu-flash-grid.yaml, 4 ranks" | tee -a "$log"
    deps_env timeout 240 "$mpiexec" -n 4 "$m" verify inputs/gpu-flash-grid.yaml \
      --set attention.kernels="$family" >>"$log" 2>&1 || { rc=1; echo "exit status: failed" >>"$log"; }
    echo "== attention.kernels=$family: local, 1 rank" | tee -a "$log"
    deps_env timeout 120 "$mpiexec" -n 1 "$m" verify inputs/gpu-flash-grid.yaml --set attention.kernels="$family" \
      "${local_sets[@]}" >>"$log" 2>&1 || { rc=1; echo "exit status: failed" >>"$log"; }
  done
  python3 tools/summarize-verify.py "$log" || rc=1
  return $rc
}

# compute-sanitizer's memcheck and racecheck on kernel tests that reach every attention
# kernel of every family (flash forward, dK/dV and dQ at D = 64 and 128 in bf16 and fp16,
# GQA 8, masks by padding and zigzag position; the SIMT fallback at D = 96) and the kernels
# that read and write 16-bit tensors in place (flash operands, GEMM, element-wise and row
# kernels, the tuned layer kernels): each must report no error.
stage_sanitize() {
  ensure_built
  local filter='*bf16_h4kv2_d64_len1000_causal*:*bf16_h8kv1_d128_len515_causal*:*fp16_h4kv4_d128_len777_full*'
  filter+=':*fp16_h2kv2_d96_len200_causal*:*PaddingAndZigzagMatchHost/bf16_d64:*PaddingAndZigzagMatchHost/fp16_d128'
  filter+=':CudaFlashOperands.*:CudaElementWise.ModelOperationsOn16BitTensorsMatchHost:CudaElementWise.Tuned*:CudaWgmma.*:CudaTma.*'
  local tool log=/tmp/minictx-sanitize.log failed=0
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool" | tee -a "$out/sanitize.log"
    deps_env timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/tests/test_cuda_device" \
      --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1 || failed=1
    # The kernels with a report, by name, and the summary lines.
    grep -oE '(Read|Write) access at [^(]*' "$log" | sort | uniq -c | sed 's/^/  /' | tee -a "$out/sanitize.log"
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$log" | tee -a "$out/sanitize.log"
  done
  return $failed
}

# The machine profile whose datasheet peak MFU is quoted against.
machine_profile() {
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)" in
    *H100*) echo h100-80gb ;;
    *H200*) echo h200-141gb ;;
    *) echo measure ;;
  esac
}

# One kernel family's attention grid, both passes on it: bench_family FAMILY SEQ DIMS LOG.
# Bounded (4 minutes, several times what a grid should take), so that a kernel that hangs
# costs one grid, not the whole call.
bench_family() {
  deps_env timeout 240 "$build/miniapp/minictx" bench --device cuda --kernels "$1" --seq "$2" --head-dim "$3" \
    -o "/tmp/minictx-bench-$1.h5" --force 2>&1 | tee "$4"
}

# The default family's attention against its limit, in one job: `minictx bench --device
# cuda` (forward and forward+backward over S × mask × head dim beside a bf16 cuBLASLt GEMM
# calibration) and PyTorch SDPA's backends on the same grid, side by side with the ratios
# (tools/compare-attention-gpu.py, rebuilt from bench-kernels.log and bench-sdpa.csv at will),
# then the layer stage.
stage_bench() {
  ensure_built
  local rc=0 seq=${BENCH_SEQ:-4096,16384,32768,65536} dims=${BENCH_HEAD_DIMS:-64,128}
  bench_family auto "$seq" "$dims" "$out/bench-kernels.log" || rc=1
  $sdpa_bench --seq "$seq" --head-dims "$dims" 2>&1 | tee "$out/bench-sdpa.csv" || rc=1
  echo
  python3 tools/compare-attention-gpu.py "auto=$out/bench-kernels.log" "$out/bench-sdpa.csv" || rc=1
  stage_layer || rc=1
  return $rc
}

# The acceptance grid in one job: each kernel family this GPU runs, D = 128, H = 16, bf16,
# S = 4k-64k, causal and full, then SDPA's backends on the same grid, and one table of all
# of them with each family's ratios to FA2 and cuDNN (bench-acceptance.log).
stage_acceptance() {
  ensure_built
  local seq=${BENCH_SEQ:-4096,16384,32768,65536} dims=${BENCH_HEAD_DIMS:-128} rc=0 family grid
  local log=$out/bench-acceptance.log sdpa=/tmp/minictx-sdpa-acceptance.csv runs=()
  : >"$log"
  for family in $(families); do
    grid=/tmp/minictx-acceptance-$family.log
    echo "== attention.kernels=$family" | tee -a "$log"
    bench_family "$family" "$seq" "$dims" "$grid" | tee -a "$log" || rc=1
    runs+=("$family=$grid")
  done
  echo "== $sdpa_bench" | tee -a "$log"
  $sdpa_bench --seq "$seq" --head-dims "$dims" 2>&1 | tee "$sdpa" | tee -a "$log" || rc=1
  echo | tee -a "$log"
  python3 tools/compare-attention-gpu.py "${runs[@]}" "$sdpa" 2>&1 | tee -a "$log" || rc=1
  return $rc
}

# Packed documents beside the same length without them (inputs/gpu-documents.yaml: 64
# documents of 512 tokens in 32k, D = 128, H = 16, bf16, causal, forward and backward) on
# each kernel family and, for sm80 and sm90, on its twin that masks documents inside the
# kernels: the TFLOPS of the pairs each counts and their ratio, held to 0.8, one table
# (documents.log; tools/compare-documents-gpu.py).
stage_documents() {
  ensure_built
  local rc=0 family kernels limit runs=() log=$out/documents.log
  : >"$log"
  for family in $(families); do
    for kernels in "$family" "$family-documents"; do
      case "$kernels" in sm80 | sm90) limit=120 ;; sm80-documents | sm90-documents | sm90-onepass) limit=60 ;; *) continue ;; esac
      echo "== attention.kernels=$kernels" | tee -a "$log"
      deps_env timeout "$limit" "$build/miniapp/minictx" run inputs/gpu-documents.yaml \
        --set attention.kernels="$kernels" -o "/tmp/minictx-documents-$kernels.h5" --force 2>&1 | tee -a "$log" || rc=1
      runs+=("$kernels=/tmp/minictx-documents-$kernels.h5")
    done
  done
  echo | tee -a "$log"
  python3 tools/compare-documents-gpu.py "${runs[@]}" 2>&1 | tee -a "$log" || rc=1
  return $rc
}

# The llama-7b layer deck (16k and 32k tokens, bf16, 16-bit storage) on each kernel family,
# with the tuned layer kernels on the default family, and with them on sm90-onepass where
# that family runs, beside eager PyTorch's layer (tools/bench-torch-layer-gpu.py): one
# table of step time, MFU and peak memory with the ratios to PyTorch (bench-layer.log).
stage_layer() {
  ensure_built
  local rc=0 family profile log=$out/bench-layer.log runs=()
  profile=$(machine_profile)
  : >"$log"
  for family in $(families); do
    echo "== attention.kernels=$family" | tee -a "$log"
    # An opt-in family, not yet proven, is bounded closer (a run takes about 13 s on an H200).
    local limit=120
    case "$family" in sm80 | sm90) ;; *) limit=60 ;; esac
    deps_env timeout "$limit" "$build/miniapp/minictx" run inputs/gpu-layer.yaml --set machine.profile="$profile" \
      --set attention.kernels="$family" -o "/tmp/minictx-layer-$family.h5" --force 2>&1 | tee -a "$log" || rc=1
    runs+=("$family=/tmp/minictx-layer-$family.h5")
  done
  # The opt-in layer kernels on the default family, beside the standard ones above.
  echo "== run.layer_kernels=tuned" | tee -a "$log"
  # Opt-in, not yet proven: bounded closer than the families' runs (about 13 s on an H200).
  deps_env timeout 60 "$build/miniapp/minictx" run inputs/gpu-layer.yaml --set machine.profile="$profile" \
    --set run.layer_kernels=tuned -o /tmp/minictx-layer-tuned.h5 --force 2>&1 | tee -a "$log" || rc=1
  runs+=("tuned=/tmp/minictx-layer-tuned.h5")
  # The one-pass backward with the tuned layer kernels: both opt-in sets together, the
  # step a default made of them would take.
  if [[ " $(families) " == *" sm90-onepass "* ]]; then
    echo "== attention.kernels=sm90-onepass with run.layer_kernels=tuned" | tee -a "$log"
    deps_env timeout 60 "$build/miniapp/minictx" run inputs/gpu-layer.yaml --set machine.profile="$profile" \
      --set attention.kernels=sm90-onepass --set run.layer_kernels=tuned -o /tmp/minictx-layer-onepass-tuned.h5 \
      --force 2>&1 | tee -a "$log" || rc=1
    runs+=("sm90-onepass+tuned=/tmp/minictx-layer-onepass-tuned.h5")
  fi
  echo "== $torch_layer" | tee -a "$log"
  $torch_layer 2>&1 | tee /tmp/minictx-torch-layer.csv | tee -a "$log" || rc=1
  echo | tee -a "$log"
  python3 tools/compare-layer-gpu.py "${runs[@]}" /tmp/minictx-torch-layer.csv 2>&1 | tee -a "$log" || rc=1
  return $rc
}

# One launch of stage_nccl, judged as the host's check_launch.py judges: nccl_check NAME
# EXIT SECONDS REGEX COMMAND...: passes when COMMAND exits EXIT within SECONDS and, with a
# REGEX, prints exactly one line of minictx's own ("minictx: ..."), matching it. Prints
# the summary row; the output goes to $out/nccl.log.
nccl_check() {
  local name=$1 want=$2 seconds=$3 regex=$4 code=0 started=$SECONDS took lines why=""
  shift 4
  echo "== $name: $*" >>"$out/nccl.log"
  "$@" >/tmp/minictx-nccl-check.log 2>&1 || code=$?
  took=$((SECONDS - started))
  cat /tmp/minictx-nccl-check.log >>"$out/nccl.log"
  lines=$(grep -c '^minictx:' /tmp/minictx-nccl-check.log || true)
  [ "$code" = "$want" ] || why="exit $code, expected $want"
  [ "$took" -le "$seconds" ] || why="${why:+$why; }took $took s, more than $seconds s"
  if [ -n "$regex" ] && { [ "$lines" != 1 ] || ! grep -Eq "$regex" /tmp/minictx-nccl-check.log; }; then
    why="${why:+$why; }expected one minictx line matching /$regex/, got $lines"
  fi
  echo "| $name | $code | $took | ${why:-ok} |"
  [ -z "$why" ]
}

# NCCL on the one GPU (docs/nvidia.md, "NCCL failures"): the one-rank communicator's
# transfers, each behind a deliberately slow kernel on the compute stream, against the
# host's values (test_nccl_comm); two ranks on the GPU with comm nccl refused in one line
# naming the GPU's bus id; a model step on one rank, whose layer stack starts a sub-group's
# communicator, within the watchdog's 5 s; with the test seam (MINICTX_INJECT_FAULT), an NCCL error on an
# operation in flight and an NCCL operation queued behind a kernel that never ends, each
# ending the job with exit 2 and one line (run.watchdog_seconds 5; the bound allows for
# the launch's CUDA and NCCL start).
stage_nccl() {
  ensure_built
  local m=$build/miniapp/minictx mpiexec=$prefix/usr/bin/mpiexec.hydra rc=0
  local cuda_nccl=(--set run.device=cuda --set run.comm=nccl)
  local one_point=(run "${cuda_nccl[@]}" --set attention.backend=allgather --set run.mode=attention
                   --set sequence.length=1024 --set run.iters=1 --set run.warmup=0 --set run.watchdog_seconds=5
                   -o /tmp/minictx-nccl-fault.h5 --force)
  : >"$out/nccl.log"
  echo "| check | exit | seconds | result |"
  echo "|---|---|---|---|"
  nccl_check "test_nccl_comm, one rank" 0 120 "" deps_env timeout 120 "$build/tests/test_nccl_comm" \
    --gtest_brief=1 || rc=1
  nccl_check "two ranks on one GPU refused" 2 60 \
    "^minictx: error: comm nccl needs a GPU of its own per rank, but ranks 0 and 1 both use GPU [0-9A-Fa-f:.]+ on " \
    deps_env timeout 60 "$mpiexec" -n 2 "$m" verify "${cuda_nccl[@]}" --set attention.backend=ring || rc=1
  nccl_check "a model step on NCCL (the layer stack's sub-group)" 0 60 "" \
    deps_env timeout 60 "$mpiexec" -n 1 "$m" run "${cuda_nccl[@]}" --set run.mode=model --set model.preset=tiny \
    --set model.layers=2 --set sequence.length=1024 --set run.iters=1 --set run.warmup=0 \
    --set run.watchdog_seconds=5 -o /tmp/minictx-nccl-model.h5 --force || rc=1
  nccl_check "NCCL error ends the job" 2 30 \
    "^minictx: error: rank 0: NCCL reported an error \(injected by MINICTX_INJECT_FAULT\) in ncclAllGather .* at point_0000 .*; aborting the job$" \
    deps_env env MINICTX_INJECT_FAULT=0:shift timeout 60 "$mpiexec" -n 1 "$m" "${one_point[@]}" || rc=1
  nccl_check "stalled NCCL operation ends the job" 2 30 \
    "^minictx: watchdog: rank 0 waited [0-9.]+ s in ncclAllGather .* at point_0000 .*; aborting the job \(run.watchdog_seconds = 5 s\)$" \
    deps_env env MINICTX_INJECT_FAULT=0:stall timeout 60 "$mpiexec" -n 1 "$m" "${one_point[@]}" || rc=1
  return $rc
}

# The weight-gradient sums and fp16's loss scale on the cuda device, 4 ranks sharing the GPU
# through the staged mpi comm (NCCL needs a GPU per rank): check_grad_sums.py's sweep, whose
# bytes, errors, overflows and refusal are those of the host's ctest case. The layer grid
# (stage grid) runs the defaults, fp32 sums and the dynamic scale, in bf16 and fp16.
stage_gradsums() {
  ensure_built
  deps_env timeout 240 $grad_sums_check "$prefix/usr/bin/mpiexec.hydra" "$build/miniapp/minictx" \
    --set run.device=cuda 2>&1 | tee "$out/grad-sums.log"
}

# The benchmark's `tiny` class (inputs/benchmark/tiny.yaml: llama-7b, 32 layers, 64k
# tokens, full checkpointing, one GPU, NCCL) as docs/benchmark.md runs it, the machine
# profile set to this GPU's, and its verification run (1,024 tokens, one layer, against
# the fp64 reference, which runs on one CPU core of rank 0 for minutes). The verification
# starts first, in a session of its own (setsid), so that it outlives this command on a
# machine kept warm for the next; its GPU step is over in seconds, inside the
# measurement's warm-up step. The measurement runs here, bounded by TIME_LIMIT;
# tiny-report collects the verification.
stage_tiny() {
  ensure_built
  local m=$build/miniapp/minictx mpiexec=$prefix/usr/bin/mpiexec.hydra profile
  profile=$(machine_profile)
  rm -rf "$tiny_dir"
  mkdir -p "$tiny_dir"
  setsid env "${deps_vars[@]}" bash -c '"$@" >"$0.log" 2>&1; echo $? >"$0.rc"' "$tiny_dir/verify" \
    timeout 1800 "$mpiexec" -n 1 "$m" run inputs/benchmark/tiny.yaml --set benchmark.role=verification \
    --set machine.profile="$profile" -o "$tiny_dir/tiny-verify.h5" </dev/null >/dev/null 2>&1 &
  echo "== the verification run, started in the background: $tiny_dir/verify.log" | tee "$out/tiny.log"
  echo "== inputs/benchmark/tiny.yaml --set machine.profile=$profile" | tee -a "$out/tiny.log"
  # Bounded by what is left of the command, so that its summary still comes back.
  deps_env timeout "$(( time_limit - 20 - SECONDS > 30 ? time_limit - 20 - SECONDS : 30 ))" "$mpiexec" -n 1 "$m" \
    run inputs/benchmark/tiny.yaml --set machine.profile="$profile" -o "$tiny_dir/tiny.h5" 2>&1 | tee -a "$out/tiny.log"
}

# Waits for the verification the tiny stage started (until 20 s before TIME_LIMIT), then
# joins the two runs as a submission does (minictx report --submission) and copies both
# results files to $OUT.
stage_tiny_report() {
  ensure_built
  local log=$out/tiny-report.log deadline=$((time_limit - 20))
  : >"$log"
  if [ ! -f "$tiny_dir/tiny.h5" ] || [ ! -f "$tiny_dir/verify.log" ]; then
    echo "gpu-check: tiny-report: no tiny run on this machine (the tiny stage makes one; a machine given back" \
      "between two commands loses it)" | tee -a "$log"
    return 1
  fi
  while [ ! -f "$tiny_dir/verify.rc" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 5; done
  if [ ! -f "$tiny_dir/verify.rc" ]; then
    echo "gpu-check: tiny-report: the verification run had not ended $SECONDS s into this command; its last lines:" |
      tee -a "$log"
    tail -n 5 "$tiny_dir/verify.log" | tee -a "$log"
    return 1
  fi
  echo "== the verification run (exit status $(cat "$tiny_dir/verify.rc"))" | tee -a "$log"
  grep -E '^(VERIFICATION|FOM|VALID|INVALID|minictx: )|\| (NO|yes) \|$' "$tiny_dir/verify.log" | tee -a "$log" || true
  echo "== minictx report --submission" | tee -a "$log"
  cp "$tiny_dir/tiny.h5" "$tiny_dir/tiny-verify.h5" "$out/" 2>/dev/null || true
  # One launch is not a compliant class run (the run rules ask for three): the report's exit
  # status is shown; only inconsistent (6) or a refusal (2) fails the stage.
  local report_rc=0
  deps_env "$build/miniapp/minictx" report --submission "$tiny_dir/tiny.h5" "$tiny_dir/tiny-verify.h5" \
    >"$tiny_dir/report.txt" 2>&1 || report_rc=$?
  tee -a "$log" <"$tiny_dir/report.txt"
  echo "== report --submission exit status $report_rc (0 compliant, 4 unverified, 5 non-compliant, 6 inconsistent)" |
    tee -a "$log"
  [ "$report_rc" != 2 ] && [ "$report_rc" != 6 ] && [ "$(cat "$tiny_dir/verify.rc")" = 0 ]
}

# The 16-bit llama-7b layer recorded once with run.ring_timeline (16k tokens, the default
# kernel family): gpu-layer-trace.json for Perfetto, and trace-layer.log with the run's
# phases per step beside the projection's on h100-sxm-ndr (docs/performance.md).
stage_trace() {
  ensure_built
  local h5=/tmp/minictx-layer-trace.h5 projected=/tmp/minictx-layer-projected.h5 log=$out/trace-layer.log
  local trace=$out/gpu-layer-trace.json
  rm -f "$trace" "$projected" "$projected.journal"
  deps_env timeout 120 "$build/miniapp/minictx" run inputs/gpu-layer.yaml --set machine.profile="$(machine_profile)" \
    --set sequence.length=16384 --set run.ring_timeline=true -o "$h5" --force 2>&1 | tee "$log" || return 1
  deps_env "$build/miniapp/minictx" report "$h5" --trace point_0000 -o "$trace" 2>&1 | tee -a "$log" || return 1
  deps_env "$build/miniapp/minictx" project inputs/gpu-layer.yaml --machine h100-sxm-ndr --ranks 1 \
    --set sequence.length=16384 -o "$projected" > /dev/null 2>> "$log" || return 1
  deps_env "$build/miniapp/minictx" report "$h5" "$projected" --compare 2>&1 | tee -a "$log"
}

# Large logits beside eager PyTorch (docs/numerics.md, "fp32 at large logits"): one verify
# dump each, compared on the CPU with torch; about 30 s (eager.log).
stage_eager() {
  ensure_built
  local m=$build/miniapp/minictx rc=0 run device dtype
  local attention=(--set run.mode=attention --set sequence.length=255 --set run.input_scale=128)
  : >"$out/eager.log"
  for run in kokkos:fp32 cuda:fp32 cuda:bf16; do
    device=${run%:*} dtype=${run#*:}
    rm -f "/tmp/minictx-eager-$device-$dtype.h5"
    echo "== run.device=$device run.dtype=$dtype" | tee -a "$out/eager.log"
    deps_env timeout 120 "$m" verify "${attention[@]}" --set run.device="$device" --set run.dtype="$dtype" \
      --dump "/tmp/minictx-eager-$device-$dtype.h5" >>"$out/eager.log" 2>&1 || true
    local limit=()
    [ "$device" = kokkos ] && limit=(--max-ratio 2)
    python3 tools/compare-eager-attention.py "/tmp/minictx-eager-$device-$dtype.h5" --engine torch "${limit[@]}" \
      2>&1 | tee -a "$out/eager.log" || rc=1
  done
  return $rc
}

# A failed test stage still lets the benchmarks run; the exit status reports both.
failed=()
for s in "${stages[@]}"; do
  started=$SECONDS
  case "$s" in
    deps) stage_deps; [ "${DRY_RUN:-0}" = 1 ] && { echo "gpu-check: dry run, configured only"; exit 0; } ;;
    build) stage_build ;;
    test) stage_test || failed+=(test) ;;
    kernels) stage_kernels || failed+=(kernels) ;;
    grid) stage_grid || failed+=(grid) ;;
    layer) stage_layer || failed+=(layer) ;;
    documents) stage_documents || failed+=(documents) ;;
    sanitize) stage_sanitize || failed+=(sanitize) ;;
    bench) stage_bench || failed+=(bench) ;;
    acceptance) stage_acceptance || failed+=(acceptance) ;;
    nccl) stage_nccl || failed+=(nccl) ;;
    gradsums) stage_gradsums || failed+=(gradsums) ;;
    tiny) stage_tiny || failed+=(tiny) ;;
    tiny-report) stage_tiny_report || failed+=(tiny-report) ;;
    trace) stage_trace || failed+=(trace) ;;
    eager) stage_eager || failed+=(eager) ;;
  esac
  echo "gpu-check: stage $s took $((SECONDS - started)) s"
done
[ ${#failed[@]} -eq 0 ] || { echo "gpu-check: failed stages: ${failed[*]}"; exit 1; }
