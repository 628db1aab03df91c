#include "bench/kernel_bench.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <numeric>

#include "bench/attn_problem.hpp"
#include "bench/bench_clock.hpp"
#include "bench/calibration.hpp"
#include "bench/lockstep.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/synthetic_data.hpp"
#include "io/results_schema.hpp"
#include "model/elementwise_work.hpp"
#include "model/flops.hpp"
#include "model/memory_estimate.hpp"

namespace minictx {

ModelShape KernelBenchOptions::llama_like_small_model() {
  // preset, layers, d_model, heads, kv_heads, head_dim, ffn_hidden, rms_eps, rope_theta
  return ModelShape{"custom", 2, 512, 4, 1, 128, 1792, 1e-5, 500000.0};
}

namespace {

double rss_peak_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) * 1024.0;  // Linux reports KiB
}

// Share of one core this thread got between construction and share(): CPU time over
// wall time, 1 when nothing else ran on its core. Rows with a low share were slowed by
// other load on the machine, which the calibration at the start may not have seen.
class CoreShare {
 public:
  CoreShare() : wall0_(bench_now(BenchClock::wall)), cpu0_(bench_now(BenchClock::cpu)) {}
  double share() const {
    return (bench_now(BenchClock::cpu) - cpu0_) / std::max(1e-9, bench_now(BenchClock::wall) - wall0_);
  }

 private:
  double wall0_, cpu0_;
};

// The point an attention row measures, for its FLOPs and its memory estimate.
RunConfig attention_config(const KernelBenchOptions& opt, int64_t seq_len, int head_dim, bool causal) {
  return attention_bench_config(seq_len, opt.heads, head_dim, causal, opt.block_q, opt.block_k);
}

RunConfig layer_config(const KernelBenchOptions& opt) {
  RunConfig cfg;
  cfg.run.mode = Mode::model;
  cfg.run.warmup = 1;
  cfg.run.iters = 2;
  cfg.model = opt.layer_model;
  cfg.sequence.length = opt.layer_seq_len;
  cfg.attention.block_q = opt.block_q;
  cfg.attention.block_k = opt.block_k;
  return cfg;
}

// One attention row: forward, or forward+backward, of one shape on a fresh problem.
KernelBenchRow attention_row(const KernelBenchOptions& opt, Lockstep& ranks, Device& device,
                             const std::string& kind, int64_t seq_len, int head_dim, bool causal) {
  const bool with_backward = kind != "attn_fwd";
  const RunConfig cfg = attention_config(opt, seq_len, head_dim, causal);
  AttnShape shape;
  shape.heads = shape.kv_heads = opt.heads;
  shape.head_dim = head_dim;
  shape.causal = causal;
  shape.real_len = seq_len;
  shape.block_q = opt.block_q;
  shape.block_k = opt.block_k;

  KernelBenchRow row;
  row.kind = kind;
  row.seq_len = seq_len;
  row.head_dim = head_dim;
  row.causal = causal;
  device.memory().reset_peak();
  {
    AttnProblem p(device, shape, seq_len, with_backward);
    const CoreShare share;
    row.seconds = ranks.best_seconds(opt.min_seconds, opt.clock,
                                     [&] { with_backward ? p.forward_backward() : p.forward(); });
    row.core_share = ranks.smallest(share.share());
  }
  const double flops = attention_fwd_flops(cfg) * (with_backward ? 3.5 : 1.0);
  row.gflops = flops / row.seconds / 1e9;
  row.peak_tracked_bytes = double(device.memory().peak());
  row.peak_rss_bytes = rss_peak_bytes();
  return row;
}

// The layer step, as `minictx run` measures it: FLOPs by the MPT formula (so its fraction
// of the calibration is the MFU), and once more with the attention term halved
// (causal-exact: what the causal kernel really computes).
std::vector<KernelBenchRow> layer_rows(const KernelBenchOptions& opt, Comm& world, Device& device,
                                       double calibration_gflops) {
  RunConfig cfg = layer_config(opt);
  cfg.machine.peak_tflops = calibration_gflops / 1e3;
  const CoreShare share;
  const PointResult p = run_point(cfg, world, device);
  KernelBenchRow row;
  row.kind = "layer_step";
  row.seq_len = opt.layer_seq_len;
  row.head_dim = opt.layer_model.head_dim;
  row.causal = cfg.attention.causal;
  row.core_share = share.share();
  // run_point times steps by the wall clock; on the CPU clock a step is its wall time
  // scaled by the core share over the whole run (setup included: an approximation).
  const double to_clock = opt.clock == BenchClock::cpu ? row.core_share : 1.0;
  row.seconds = p.metrics.at(schema::metric_key::latency_ms) / 1e3 * to_clock;
  row.gflops = p.metrics.at(schema::metric_key::tflops_per_device) * 1e3 / to_clock;
  row.peak_tracked_bytes = p.metrics.at(schema::metric_key::peak_memory_mb) * (1 << 20);
  row.peak_rss_bytes = rss_peak_bytes();
  KernelBenchRow exact = row;
  exact.kind = "layer_step_causal";
  exact.gflops = p.metrics.at(schema::metric_key::tflops_per_device_causal) * 1e3 / to_clock;
  return {row, exact};
}

// Square sgemm of side n through the device's GEMM, best time: its rate against the
// calibration (the 1024 side, best of five) is the GEMM efficiency at that size.
KernelBenchRow gemm_row(const KernelBenchOptions& opt, Lockstep& ranks, Device& device, int64_t n) {
  device.memory().reset_peak();
  Tensor a = device.alloc({n, n}), b = device.alloc({n, n}), c = device.alloc({n, n});
  device.fill(a, 0.5f);
  device.fill(b, 0.25f);
  KernelBenchRow row;
  row.kind = "gemm";
  row.seq_len = n;
  const CoreShare share;
  row.seconds =
      ranks.best_seconds(opt.min_seconds, opt.clock, [&] { device.gemm(false, false, 1.0f, a, b, 0.0f, c); });
  row.core_share = ranks.smallest(share.share());
  row.gflops = 2.0 * double(n) * double(n) * double(n) / row.seconds / 1e9;
  row.peak_tracked_bytes = double(device.memory().peak());
  row.peak_rss_bytes = rss_peak_bytes();
  return row;
}

// Every element-wise kernel of the layer on the layer step's rows, at the width the layer
// first gives it (fill and add, which the layer does not call on rows, at d_model).
std::vector<KernelBenchRow> elementwise_rows(const KernelBenchOptions& opt, Lockstep& ranks, Device& device) {
  const ModelShape& m = opt.layer_model;
  const int64_t rows = opt.layer_seq_len;
  std::vector<ElementwiseCall> calls = layer_elementwise(m, double(rows), false);
  for (const ElementwiseCall& c : layer_elementwise(m, double(rows), true)) calls.push_back(c);
  std::vector<int64_t> positions(static_cast<size_t>(rows));
  std::iota(positions.begin(), positions.end(), int64_t(0));
  std::vector<KernelBenchRow> out;
  for (Elementwise k : elementwise_kernels()) {
    int64_t cols = m.d_model;
    for (const ElementwiseCall& c : calls)
      if (c.kernel == k) {
        cols = int64_t(c.cols);
        break;
      }
    device.memory().reset_peak();
    Tensor x = generated_tensor(device, {rows, cols}, tensor_id::input_x),
           y = generated_tensor(device, {rows, cols}, tensor_id::attn_q);
    Tensor z = generated_tensor(device, {rows, cols}, tensor_id::attn_k), w = device.alloc({rows, cols});
    Tensor v = device.alloc({rows, cols}), g = device.alloc({cols}), dg = device.alloc({cols});
    Tensor rstd = device.alloc({rows});
    device.fill(g, 1.0f);
    device.fill(dg, 0.0f);
    device.rmsnorm_fwd(x, g, 1e-5, w, rstd);
    const int heads = k == Elementwise::rope ? int(cols / m.head_dim) : 1;
    auto call = [&] {
      switch (k) {
        case Elementwise::rmsnorm_fwd:
          device.rmsnorm_fwd(x, g, 1e-5, w, rstd);
          break;
        case Elementwise::rmsnorm_bwd:
          device.rmsnorm_bwd(x, g, rstd, y, w, dg);
          break;
        case Elementwise::rope:
          device.rope(x, heads, positions, m.rope_theta, false);
          break;
        case Elementwise::swiglu_fwd:
          device.swiglu_fwd(x, y, w);
          break;
        case Elementwise::swiglu_bwd:
          device.swiglu_bwd(x, y, z, w, v);
          break;
        case Elementwise::copy:
          device.copy(w, x);
          break;
        case Elementwise::add:
          device.add(w, x);
          break;
        case Elementwise::fill:
          device.fill(w, 0.0f);
          break;
      }
    };
    KernelBenchRow row;
    row.kind = "elementwise";
    row.kernel = to_string(k);
    row.seq_len = rows;
    row.bytes = ElementwiseCall{k, double(rows), double(cols)}.bytes();
    const CoreShare share;
    row.seconds = ranks.best_seconds(opt.min_seconds, opt.clock, call);
    row.core_share = ranks.smallest(share.share());
    row.peak_tracked_bytes = double(device.memory().peak());
    row.peak_rss_bytes = rss_peak_bytes();
    out.push_back(row);
  }
  return out;
}

}  // namespace

void check_kernel_bench_memory(const KernelBenchOptions& opt, const Comm& world, const Device& device) {
  std::vector<RunConfig> rows{layer_config(opt)};
  for (int64_t s : opt.memory_seq_lens) rows.push_back(attention_config(opt, s, 64, true));
  for (int d : opt.head_dims)
    for (int64_t s : opt.seq_lens) rows.push_back(attention_config(opt, s, d, true));
  const Topology& topology = world.topology();
  for (const RunConfig& cfg : rows) {
    const std::string refusal = memory_refusal(cfg, topology, capacity_per_rank(device, topology));
    if (!refusal.empty())
      input_error("bench row at S=" + std::to_string(cfg.sequence.length) +
                  ", D=" + std::to_string(cfg.model.head_dim) + ": " + refusal);
  }
  for (int64_t n : opt.gemm_sizes) {
    const std::string refusal = square_gemm_refusal(n, 4, capacity_per_rank(device, topology));
    if (!refusal.empty()) input_error("bench GEMM row at n=" + std::to_string(n) + ": " + refusal);
  }
}

KernelBenchResult run_kernel_bench(const KernelBenchOptions& opt, Comm& world, Device& device,
                                   const std::function<void(const KernelBenchRow&)>& progress) {
  Lockstep ranks(world);
  auto calibrate = [&] { return ranks.calibration_gflops(device, opt.clock); };
  // Every row is compared with a calibration taken just before it: on a shared machine
  // the load changes during a run, and a row and its calibration then see the same load.
  auto add = [&](KernelBenchResult& r, KernelBenchRow row, double calibration_gflops) {
    row.calibration_gflops = calibration_gflops;
    row.fraction = row.gflops / calibration_gflops;
    r.rows.push_back(row);
    progress(row);
  };
  KernelBenchResult r;
  r.ranks = world.size();
  device.memory().reset_peak();
  const CoreShare share;
  r.calibration_gflops = calibrate();
  KernelBenchRow calibration;
  calibration.core_share = share.share();
  calibration.peak_tracked_bytes = double(device.memory().peak());
  calibration.peak_rss_bytes = rss_peak_bytes();
  calibration.kind = "sgemm";
  calibration.seq_len = 1024;  // the side of the square GEMM
  calibration.gflops = r.calibration_gflops;
  calibration.seconds = 2.0 * 1024.0 * 1024.0 * 1024.0 / (r.calibration_gflops * 1e9);
  add(r, calibration, r.calibration_gflops);
  // First and by increasing length, so the process high-water mark after each memory row
  // is that row's own.
  std::vector<int64_t> memory_lens = opt.memory_seq_lens;
  std::sort(memory_lens.begin(), memory_lens.end());
  for (int64_t s : memory_lens) {
    const double cal = calibrate();
    KernelBenchRow row = attention_row(opt, ranks, device, "attn_fwd_bwd", s, 64, true);
    row.kind = "attn_memory";
    add(r, row, cal);
  }
  for (const char* kind : {"attn_fwd", "attn_fwd_bwd"})
    for (int d : opt.head_dims)
      for (bool causal : opt.causal)
        for (int64_t s : opt.seq_lens) {
          const double cal = calibrate();
          add(r, attention_row(opt, ranks, device, kind, s, d, causal), cal);
        }
  for (int64_t n : opt.gemm_sizes) {
    const double cal = calibrate();
    add(r, gemm_row(opt, ranks, device, n), cal);
  }
  for (const KernelBenchRow& row : elementwise_rows(opt, ranks, device)) add(r, row, r.calibration_gflops);
  // The layer step: a one-rank run on every rank at once, the slowest rank's.
  const double cal = calibrate();
  std::unique_ptr<Comm> self = world.split(world.rank(), 0);
  world.barrier();
  for (KernelBenchRow row : layer_rows(opt, *self, device, cal)) {
    row.seconds = ranks.largest(row.seconds);
    row.gflops = ranks.smallest(row.gflops);
    row.core_share = ranks.smallest(row.core_share);
    add(r, row, cal);
  }
  r.calibration_after_gflops = calibrate();
  return r;
}

}  // namespace minictx
