#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_clock.hpp"
#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "device/device.hpp"

namespace minictx {

// What `minictx bench` measures: the single-core GEMM calibration, the attention block
// kernels over a grid of shapes, their memory at long S, and one layer-stack step.
struct KernelBenchOptions {
  std::vector<int64_t> seq_lens{1024, 2048, 4096, 8192, 16384};
  std::vector<int> head_dims{64, 128};
  std::vector<bool> causal{true, false};
  int heads = 1;  // query heads = kv heads; the kernel's FLOP rate does not depend on it
  int block_q = AttentionConfig{}.block_q;
  int block_k = AttentionConfig{}.block_k;
  // Memory rows (measured first): causal forward+backward at head dim 64, one per length.
  std::vector<int64_t> memory_seq_lens{4096, 16384, 65536};
  // The layer step: a llama-shaped small model (Llama 3 proportions: GQA 4:1, head dim
  // 128, FFN 3.5 × d_model), model mode, causal, no checkpointing.
  ModelShape layer_model = llama_like_small_model();
  int64_t layer_seq_len = 4096;
  // Square sgemm rows (side n): the GEMM efficiency against size, as a fraction of the
  // calibration.
  std::vector<int64_t> gemm_sizes{128, 256, 512, 1024, 2048};
  // A shape is repeated until this much time has been spent on it (best time kept).
  double min_seconds = 1.0;
  // Every time, the calibration's included, on this clock.
  BenchClock clock = BenchClock::wall;

  static ModelShape llama_like_small_model();
};

// One measured row. `kind` is sgemm (the calibration) | gemm (the size rows) | attn_fwd |
// attn_fwd_bwd | attn_memory | elementwise (one kernel of the layer, `kernel`, on the layer
// step's rows: seq_len = rows, `bytes` as the projection counts them) | layer_step |
// layer_step_causal (the same step, its attention FLOPs halved: causal-exact MFU).
struct KernelBenchRow {
  std::string kind;
  std::string kernel;  // elementwise rows: the kernel (model/elementwise_work.hpp)
  double bytes = 0;    // elementwise rows: bytes read and written per call
  int64_t seq_len = 0;
  int head_dim = 0;
  bool causal = false;
  double seconds = 0;             // best time of one call (one step for layer_step)
  double gflops = 0;              // by the FLOP conventions of docs/user-guide.md, "Metrics"
  double calibration_gflops = 0;  // the calibration taken just before this row
  double fraction = 0;            // gflops / calibration_gflops
  double peak_tracked_bytes = 0;  // device tracker's peak during the row
  double peak_rss_bytes = 0;      // process high-water mark after the row
  double core_share = 0;          // CPU time / wall time over the row: 1 = the core was ours
};

struct KernelBenchResult {
  int ranks = 1;                        // measuring at once
  double calibration_gflops = 0;        // measure_gemm_tflops, as `machine.profile: measure`
  double calibration_after_gflops = 0;  // the same at the end (each row also has its own)
  std::vector<KernelBenchRow> rows;
};

// Refuses (InputError) options whose rows would not fit in the device's memory, before
// anything is allocated: the memory rows, the attention rows and the layer step.
void check_kernel_bench_memory(const KernelBenchOptions& opt, const Comm& world, const Device& device);

// Runs every measurement on every rank of `world` at once (each row the slowest rank's;
// one rank: a bench of one core); `progress` sees each row as soon as it is measured.
KernelBenchResult run_kernel_bench(const KernelBenchOptions& opt, Comm& world, Device& device,
                                   const std::function<void(const KernelBenchRow&)>& progress);

}  // namespace minictx
