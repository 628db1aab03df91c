#include "bench/device_bench.hpp"

#include "bench/attn_problem.hpp"
#include "bench/calibration.hpp"
#include "bench/lockstep.hpp"
#include "core/error.hpp"
#include "model/flops.hpp"
#include "model/memory_estimate.hpp"

namespace minictx {
namespace {

// The attention rows go through the Device interface, which offers synchronize() but no
// events: each call is timed on the host clock from an idle device to an idle device. For
// calls of a millisecond and more the launch and synchronisation overhead (microseconds)
// is within the noise of an event timing.
template <class Op>
double device_best_seconds(const DeviceBenchOptions& opt, Lockstep& ranks, Device& device, const Op& op) {
  op();  // warm-up: the kernels' first launch, cuBLASLt's choice of algorithm, buffers
  device.synchronize();
  return ranks.best_seconds(
      opt.min_seconds, BenchClock::wall,
      [&] {
        op();
        device.synchronize();
      },
      [&] { device.synchronize(); }, opt.min_reps);
}

AttnShape attention_shape(const DeviceBenchOptions& opt, int head_dim) {
  AttnShape shape;
  shape.heads = shape.kv_heads = opt.heads;
  shape.head_dim = head_dim;
  return shape;
}

}  // namespace

void check_device_bench_memory(const DeviceBenchOptions& opt, const Comm& world, const Device& device) {
  const Topology& topology = world.topology();
  const std::string calibration = square_gemm_refusal(opt.calibration_side, element_bytes(opt.dtype),
                                                      capacity_per_rank(device, topology));
  if (!calibration.empty())
    input_error("--calibration-size " + std::to_string(opt.calibration_side) + ": " + calibration);
  const AttnShape tiles;  // the estimate's tiles; the device chooses its own
  for (int d : opt.head_dims)
    for (int64_t s : opt.seq_lens) {
      const RunConfig cfg = attention_bench_config(s, opt.heads, d, true, tiles.block_q, tiles.block_k);
      const std::string refusal = memory_refusal(cfg, topology, capacity_per_rank(device, topology));
      if (!refusal.empty())
        input_error("bench row at S=" + std::to_string(s) + ", D=" + std::to_string(d) + ": " + refusal);
    }
}

KernelBenchResult run_device_bench(const DeviceBenchOptions& opt, Comm& world, Device& device,
                                   const std::function<void(const KernelBenchRow&)>& progress) {
  device.configure({opt.dtype, opt.kernels, AttentionPartials::fp32});
  Lockstep ranks(world);
  // A GPU is not shared with other processes the way a core is: one calibration at the
  // start is every row's reference, the one at the end shows whether clocks drifted.
  auto calibrate = [&] {
    return ranks.calibration_gflops(device, BenchClock::wall, int(opt.calibration_side), 10);
  };
  KernelBenchResult r;
  r.ranks = world.size();
  device.memory().reset_peak();
  r.calibration_gflops = calibrate();
  auto add = [&](KernelBenchRow row) {
    row.calibration_gflops = r.calibration_gflops;
    row.fraction = row.gflops / r.calibration_gflops;
    // core_share and peak_rss_bytes stay 0: the host thread only waits on the device.
    r.rows.push_back(row);
    progress(row);
  };
  KernelBenchRow calibration;
  calibration.kind = std::string("gemm_") + to_string(opt.dtype);
  calibration.seq_len = opt.calibration_side;
  calibration.gflops = r.calibration_gflops;
  const double side = double(opt.calibration_side);
  calibration.seconds = 2.0 * side * side * side / (r.calibration_gflops * 1e9);
  calibration.peak_tracked_bytes = double(device.memory().peak());
  add(calibration);

  for (int d : opt.head_dims)
    for (int64_t s : opt.seq_lens) {
      device.memory().reset_peak();
      // One problem per shape (its random inputs take longer to make than to time).
      AttnProblem p(device, attention_shape(opt, d), s, true);
      for (bool causal : opt.causal)
        for (const char* kind : {"attn_fwd", "attn_fwd_bwd"}) {
          const bool backward = kind == std::string("attn_fwd_bwd");
          p.set_causal(causal);
          KernelBenchRow row;
          row.kind = kind;
          row.seq_len = s;
          row.head_dim = d;
          row.causal = causal;
          row.seconds =
              device_best_seconds(opt, ranks, device, [&] { backward ? p.forward_backward() : p.forward(); });
          const RunConfig cfg = attention_bench_config(s, opt.heads, d, causal, 0, 0);
          row.gflops = attention_fwd_flops(cfg) * (backward ? 3.5 : 1.0) / row.seconds / 1e9;
          row.peak_tracked_bytes = double(device.memory().peak());
          add(row);
        }
    }
  r.calibration_after_gflops = calibrate();
  return r;
}

}  // namespace minictx
