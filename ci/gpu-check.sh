#!/usr/bin/env bash
# The NVIDIA path on a GPU machine that has nvcc, CMake and python3 with PyTorch but none
# of minictx's other dependencies: unpacks the Debian packages ci/fetch-gpu-debs.sh
# downloaded into .gpu-debs (carried along), builds the cuda preset against them, runs
# the gpu-labelled ctest suite (kernel tests; `minictx verify` of every backend at 1 and 4
# ranks on the one GPU, bf16 and fp16) and the benchmarks (the bench stage ends with the
# table of minictx's attention beside SDPA's; the hopper stage, on compute capability 9.0,
# measures the opt-in wgmma and TMA-fed kernels the same way), and leaves logs and HDF5
# results in $OUT (default outputs/gpu-check).
#
# Usage: ci/gpu-check.sh [stage...]
#   stages: deps build test sanitize bench hopper (default: all, in order), and two for a
#   short lease: kernels (the kernel tests alone, Hopper probes first) and acceptance
#   (issue 12's grid, every kernel family beside SDPA, one table).
# Each stage fits one device call (10 minutes; the bench stage's full grid only with the tensor-core
# kernels: on SIMT ones set BENCH_SEQ=4096,16384) and prints its seconds; build outputs and the
# SDPA table (kept in the build folder for the hopper stage) stay between calls on a warm
# machine. `deps build kernels acceptance` fits one call (docs/nvidia.md, "On a GPU machine"). All
# stages leave 8 files in $OUT (the device tool returns at most 8). DRY_RUN=1 stops after configuring (how CI-less machines check the script).
# Environment: OUT, DEPS_PREFIX (/tmp/minictx-deps), DEBS (.gpu-debs), BUILD_DIR (build-cuda),
#              BENCH_SEQ (4096,16384,32768,65536), BENCH_HEAD_DIMS (64,128; acceptance: 128): the grid,
#              SDPA_BENCH (python3 ci/bench_torch_sdpa_gpu.py): the command that times SDPA.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
out=${OUT:-$repo/outputs/gpu-check}
prefix=${DEPS_PREFIX:-/tmp/minictx-deps}
debs=${DEBS:-$repo/.gpu-debs}
build=${BUILD_DIR:-build-cuda}
sdpa_bench=${SDPA_BENCH:-python3 ci/bench_torch_sdpa_gpu.py}
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(deps build test sanitize bench hopper)
mkdir -p "$out"
lib=$prefix/usr/lib/x86_64-linux-gnu

# Unpacked packages keep their /usr paths in wrapper scripts (mpicc, h5cc), CMake package
# files and alternatives links: point them into the prefix.
unpack_deps() {
  ls "$debs"/*.deb >/dev/null || { echo "gpu-check: no packages in $debs (run ci/fetch-gpu-debs.sh)"; exit 1; }
  rm -rf "$prefix"
  mkdir -p "$prefix"
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
deps_env() {
  env PATH="$prefix/usr/bin:$PATH" \
      LD_LIBRARY_PATH="$lib:$lib/hdf5/serial:$lib/openblas-pthread${nccl_pip:+:$nccl_pip/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$@"
}

# The tests' Python is the one that has h5py: on the GPU machine PyTorch's, not /usr/bin's.
configure() {
  local nccl=()
  [ -z "$nccl_pip" ] || nccl=(-DNCCL_INCLUDE_DIR="$nccl_pip/include" -DNCCL_LIBRARY="$(ls "$nccl_pip"/lib/libnccl.so* | head -1)")
  deps_env cmake --preset cuda -B "$build" -DCMAKE_PREFIX_PATH="$prefix/usr" -DCMAKE_CUDA_COMPILER="$nvcc" "${nccl[@]}" \
    -DMPI_C_COMPILER="$prefix/usr/bin/mpicc.mpich" -DHDF5_C_COMPILER_EXECUTABLE="$prefix/usr/bin/h5cc" \
    -DMPIEXEC_BIN="$prefix/usr/bin/mpiexec.hydra" -DSYSTEM_PYTHON3="$(command -v python3)" 2>&1 |
    tee "$out/build.log"
}

stage_deps() { unpack_deps; configure; }

is_hopper() { [ "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)" = 9.0 ]; }

stage_build() {
  [ -f "$build/CMakeCache.txt" ] || configure
  deps_env cmake --build "$build" -j "$(nproc)" 2>&1 | tail -n 40 | tee -a "$out/build.log"
}

stage_test() {
  # The gpu-labelled suite, then the tensor-core check (its SASS half needs the cuobjdump of
  # a full CUDA toolkit, which this machine has and CI's does not).
  { nvidia-smi 2>&1 || true; deps_env ctest --test-dir "$build" -L '^gpu$' -j "$(nproc)" --timeout 300 --output-on-failure 2>&1
    deps_env ctest --test-dir "$build" -R '^flash_kernels_use_tensor_cores$' -V 2>&1 | grep -E '^[0-9]+: (\||SASS)|tests passed|Failed'; } |
    tee "$out/ctest-gpu.log"
}

# The kernel tests alone (test_cuda_device), the Hopper probes first: each names one wgmma
# descriptor form or TMA tile convention on its own, so a wrong one shows before the
# attention tests built on it fail. On compute capability 9.0, then `minictx verify` of the
# layer stack on each opt-in Hopper family (both passes), 4 ranks sharing the GPU, at the
# points of the gpu suite whose head dims the flash kernels serve (64: ring zigzag; 128:
# Burst with dO sent beside Q), bf16 and fp16: whether each family is VALID where the
# backends use it. Probes skipped on such a GPU fail the stage (a build without 90a would
# otherwise pass it unseen). Bounded, so that a kernel that hangs still leaves the log.
stage_kernels() {
  local tests=$build/verify/test_cuda_device probes='CudaWgmma.*:CudaTma.*' rc=0 family dtype points
  local layers='run.device=cuda model.preset=tiny model.layers=2 sequence.length=1000 attention.ring_type=zigzag'
  local d64='model.heads=4 model.kv_heads=2 model.head_dim=64 attention.backend=ring'
  local d128='model.heads=2 model.kv_heads=1 model.head_dim=128 attention.backend=burst attention.bwd_comm=q'
  d128+=' topology.ranks_per_node=2'
  (nvidia-smi 2>&1 || true
    deps_env timeout 60 "$tests" --gtest_filter="$probes" --gtest_brief=1 2>&1 | tee /tmp/minictx-probes.log || rc=1
    deps_env timeout 240 "$tests" --gtest_filter="-$probes" --gtest_brief=1 2>&1 || rc=1
    if is_hopper && grep -q SKIPPED /tmp/minictx-probes.log; then
      echo "gpu-check: kernels: the Hopper probes were skipped on a compute capability 9.0 GPU (a build without 90a?)"
      rc=1
    fi
    if is_hopper; then
      for family in wgmma wgmma_tma; do
        points=()
        for dtype in bf16 fp16; do
          points+=(--point "$layers run.dtype=$dtype $d64"
                   --point "$layers run.dtype=$dtype $d128")
        done
        echo "== minictx verify, MINICTX_FLASH_FWD=$family MINICTX_FLASH_BWD=$family"
        MINICTX_FLASH_FWD=$family MINICTX_FLASH_BWD=$family deps_env timeout 120 "$prefix/usr/bin/mpiexec.hydra" \
          -n 4 "$build/miniapp/minictx" verify "${points[@]}" 2>&1 || rc=1
      done
    fi
    exit $rc) | tee "$out/ctest-kernels.log"
}

# compute-sanitizer's memcheck and racecheck on kernel tests that reach every attention
# kernel (flash forward, dK/dV and dQ at D = 64 and 128 in bf16 and fp16, GQA 8, masks by
# padding and zigzag position; the SIMT fallback at D = 96) and the kernels that read and
# write 16-bit tensors in place (flash operands, GEMM, element-wise and row kernels): each
# must report no error. (The TMA backward hands the query vectors from producer lanes to
# consumers through an mbarrier alone; should racecheck report a hazard on them, check
# first whether it models mbarrier arrive/wait as synchronisation.)
stage_sanitize() {
  local filter='*bf16_h4kv2_d64_len1000_causal*:*bf16_h8kv1_d128_len515_causal*:*fp16_h4kv4_d128_len777_full*'
  filter+=':*fp16_h2kv2_d96_len200_causal*:*PaddingAndZigzagMatchHost/bf16_d64:*PaddingAndZigzagMatchHost/fp16_d128'
  filter+=':CudaFlashOperands.*:CudaElementWise.ModelOperationsOn16BitTensorsMatchHost'
  filter+=':CudaWgmma.*:CudaTma.*:*WgmmaPaddingAndZigzagMatchHost*:*WgmmaTma*PaddingAndZigzagMatchHost*'
  local tool log=/tmp/minictx-sanitize.log failed=0
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool" | tee -a "$out/ctest-gpu.log"
    deps_env timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/verify/test_cuda_device" \
      --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1 || failed=1
    tail -n 6 "$log" | tee -a "$out/ctest-gpu.log"
  done
  return $failed
}

# The machine profile whose datasheet peak MFU is quoted against.
machine_profile() {
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)" in
    *H100*) echo h100-80gb ;;
    *) echo measure ;;
  esac
}

# The attention kernels against their limit, in one job: `minictx bench --device cuda`
# (forward and forward+backward over S × mask × head dim beside a bf16 cuBLASLt GEMM
# calibration) and PyTorch SDPA's backends on the same grid, then the llama-7b layer deck;
# last, ci/compare-attention-gpu.py prints the two side by side with the ratios (rebuilt
# from bench-kernels.log and bench-sdpa.csv at will; not a file of its own).
stage_bench() {
  local m=$build/miniapp/minictx profile rc=0
  local seq=${BENCH_SEQ:-4096,16384,32768,65536} dims=${BENCH_HEAD_DIMS:-64,128}
  profile=$(machine_profile)
  deps_env "$m" bench --device cuda --seq "$seq" --head-dim "$dims" -o "$out/bench-kernels.h5" --force 2>&1 |
    tee "$out/bench-kernels.log" || rc=1
  $sdpa_bench --seq "$seq" --head-dims "$dims" 2>&1 | tee "$out/bench-sdpa.csv" || rc=1
  deps_env "$m" run inputs/gpu-layer.yaml --set machine.profile="$profile" -o "$out/gpu-layer.h5" --force \
    2>&1 | tee "$out/bench-layer.log" || rc=1
  # PyTorch's eager layer beside it (appended: $OUT already holds the 8 files that come back).
  python3 ci/bench_torch_layer_gpu.py 2>&1 | tee -a "$out/bench-layer.log" || rc=1
  cp "$out/bench-sdpa.csv" "$build/bench-sdpa.csv" 2>/dev/null || true  # for a later call's hopper stage
  echo
  python3 ci/compare-attention-gpu.py "$out/bench-kernels.log" "$out/bench-sdpa.csv" || rc=1
  return $rc
}

# One kernel family's grid, both passes on it: bench_family FAMILY SEQ DIMS LOG. Bounded
# (4 minutes, several times what a grid should take), so that a kernel that hangs costs the
# lease one grid, not the call.
bench_family() {
  MINICTX_FLASH_FWD=$1 MINICTX_FLASH_BWD=$1 deps_env timeout 240 "$build/miniapp/minictx" bench --device cuda \
    --seq "$2" --head-dim "$3" -o "/tmp/minictx-bench-$1.h5" --force 2>&1 | tee "$4"
}

# The opt-in Hopper kernels (compute capability 9.0 only), both passes on each family in
# turn: the kernel grid, its table beside SDPA's (this call's bench stage's, or the one an
# earlier call kept in the build folder), and the llama-7b layer deck, all into
# bench-hopper.log.
stage_hopper() {
  local m=$build/miniapp/minictx profile rc=0 family grid sdpa log=$out/bench-hopper.log
  local seq=${BENCH_SEQ:-4096,16384,32768,65536} dims=${BENCH_HEAD_DIMS:-64,128}
  if ! is_hopper; then
    echo "gpu-check: hopper: not a compute capability 9.0 GPU, nothing to measure" | tee "$log"
    return 0
  fi
  profile=$(machine_profile)
  sdpa=$out/bench-sdpa.csv
  [ -f "$sdpa" ] || sdpa=$build/bench-sdpa.csv
  : >"$log"
  for family in wgmma wgmma_tma; do
    grid=/tmp/minictx-bench-$family.log
    echo "== MINICTX_FLASH_FWD=$family MINICTX_FLASH_BWD=$family" | tee -a "$log"
    bench_family "$family" "$seq" "$dims" "$grid" | tee -a "$log" || rc=1
    if [ -f "$sdpa" ]; then
      python3 ci/compare-attention-gpu.py "$grid" "$sdpa" 2>&1 | tee -a "$log" || rc=1
    else
      echo "gpu-check: hopper: no SDPA table (run the bench stage first) for the comparison" | tee -a "$log"
    fi
    MINICTX_FLASH_FWD=$family MINICTX_FLASH_BWD=$family deps_env "$m" run inputs/gpu-layer.yaml \
      --set machine.profile="$profile" -o "/tmp/minictx-gpu-layer-$family.h5" --force 2>&1 | tee -a "$log" || rc=1
  done
  return $rc
}

# Issue 12's acceptance in one job: each kernel family this GPU runs (flash-mma; on compute
# capability 9.0 also flash-wgmma and flash-wgmma-tma, both passes on each), D = 128,
# H = 16, bf16, S = 4k-64k, causal and full, then SDPA's backends on the same grid, and one
# table of all of them with each family's ratios to FA2 and cuDNN (bench-acceptance.log;
# the SDPA rows are also kept in the build folder for a later hopper stage).
stage_acceptance() {
  local seq=${BENCH_SEQ:-4096,16384,32768,65536} dims=${BENCH_HEAD_DIMS:-128} rc=0 family grid
  local log=$out/bench-acceptance.log sdpa=$build/bench-sdpa-acceptance.csv families=(mma) runs=()
  ! is_hopper || families+=(wgmma wgmma_tma)
  : >"$log"
  for family in "${families[@]}"; do
    grid=/tmp/minictx-acceptance-$family.log
    echo "== MINICTX_FLASH_FWD=$family MINICTX_FLASH_BWD=$family" | tee -a "$log"
    bench_family "$family" "$seq" "$dims" "$grid" | tee -a "$log" || rc=1
    runs+=("$family=$grid")
  done
  echo "== $sdpa_bench" | tee -a "$log"
  $sdpa_bench --seq "$seq" --head-dims "$dims" 2>&1 | tee "$sdpa" | tee -a "$log" || rc=1
  [ -f "$build/bench-sdpa.csv" ] || cp "$sdpa" "$build/bench-sdpa.csv"
  echo | tee -a "$log"
  python3 ci/compare-attention-gpu.py "${runs[@]}" "$sdpa" 2>&1 | tee -a "$log" || rc=1
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
    sanitize) stage_sanitize || failed+=(sanitize) ;;
    bench) stage_bench || failed+=(bench) ;;
    hopper) stage_hopper || failed+=(hopper) ;;
    acceptance) stage_acceptance || failed+=(acceptance) ;;
    *) echo "gpu-check: unknown stage '$s' (deps build test sanitize bench hopper kernels acceptance)"; exit 2 ;;
  esac
  echo "gpu-check: stage $s took $((SECONDS - started)) s"
done
[ ${#failed[@]} -eq 0 ] || { echo "gpu-check: failed stages: ${failed[*]}"; exit 1; }
