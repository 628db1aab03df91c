#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "bench/kernel_bench.hpp"
#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "device/device.hpp"

namespace minictx {

// What `minictx bench --device cuda` measures: the attention kernels of an accelerator
// (forward, and forward+backward) over S × mask × head dim, each whole sequence one block,
// against a large GEMM of the same device and dtype taken in the same run: the ceiling
// the attention's tensor-core work is measured against (docs/nvidia.md, "The cuda device").
struct DeviceBenchOptions {
  std::vector<int64_t> seq_lens{4096, 16384, 32768, 65536};
  std::vector<int> head_dims{64, 128};
  std::vector<bool> causal{true, false};
  int heads = 16;  // query heads = kv heads, batch 1: the shapes of inputs/gpu-attention.yaml
  DType dtype = DType::bf16;
  AttentionKernels kernels = AttentionKernels::automatic;  // the flash kernel family
  int64_t calibration_side = 8192;                         // the square GEMM of the calibration
  // Each row: one untimed call, then the best of at least min_reps calls and until
  // min_seconds were spent.
  double min_seconds = 1.0;
  int min_reps = 3;
};

// Refuses (InputError), before anything is allocated, rows that would not fit in the
// device's memory.
void check_device_bench_memory(const DeviceBenchOptions& opt, const Comm& world, const Device& device);

// Every rank of `world` measures every row at once, each on its own device (each row the
// slowest rank's). Rows: the calibration (kind gemm_<dtype>, seq_len = its side), then per
// head dim, length and mask attn_fwd and attn_fwd_bwd, each with the calibration taken just
// before it; `progress` sees each row as soon as it is measured. Times are wall clock, the
// device idle at both ends (Device::synchronize).
KernelBenchResult run_device_bench(const DeviceBenchOptions& opt, Comm& world, Device& device,
                                   const std::function<void(const KernelBenchRow&)>& progress);

}  // namespace minictx
