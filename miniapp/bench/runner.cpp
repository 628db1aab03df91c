#include "bench/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "backends/backend.hpp"
#include "backends/buffer_estimate.hpp"
#include "bench/metrics.hpp"
#include "core/error.hpp"
#include "core/phase_timer.hpp"
#include "model/attention_step.hpp"
#include "model/layer_stack.hpp"

namespace minictx {

int64_t estimate_memory_bytes(const RunConfig& c, const Topology& topology) {
  const int world = topology.world_size;
  const ModelShape& m = c.model;
  const double rows = double(c.sequence.batch) * std::ceil(double(c.sequence.length) / world);
  const double qd = double(m.heads) * m.head_dim, kvd = double(m.kv_heads) * m.head_dim;
  const double per_layer = rows * (5.0 * m.d_model + 2 * qd + 2 * kvd + 3.0 * m.ffn_hidden) * 4;
  double bytes = 0;
  if (c.run.mode == Mode::model) {
    const Checkpointing ckpt = c.run.checkpointing;
    const double kept = c.run.fwd_only ? 1 : ckpt == Checkpointing::none ? m.layers : 1;
    // Selective checkpointing keeps every layer's attention output and LSE, or half of them.
    const double attention_kept = c.run.fwd_only                            ? 0
                                  : ckpt == Checkpointing::selective      ? 1
                                  : ckpt == Checkpointing::selective_half ? 0.5
                                                                          : 0;
    bytes = 2.0 * double(m.n_params()) * 4 + per_layer * (kept + 1) + rows * m.d_model * 4 * (m.layers + 3) +
            attention_kept * m.layers * rows * (qd + m.heads) * 4;
  } else {
    bytes = rows * (6 * qd + 6 * kvd) * 4;
  }
  return int64_t(bytes) + backend_buffer_bytes(c, topology);
}

void check_memory_estimate(const RunConfig& cfg, const Comm& world, const Device& device) {
  const int64_t estimate = estimate_memory_bytes(cfg, world.topology());
  const int64_t capacity = device.capacity_bytes() / world.topology().ranks_per_node;
  if (estimate > capacity)
    input_error("memory estimate " + std::to_string(estimate >> 20) + " MiB per rank exceeds the " +
                std::to_string(capacity >> 20) + " MiB this device offers each of its ranks");
}

PointResult run_point(const RunConfig& cfg, Comm& world, Device& device, const std::function<void()>& between) {
  validate_backend(cfg, world.group_topology());
  device.memory().reset_peak();
  PhaseTimer timer;
  timer.set_fence([&device] { device.synchronize(); });
  auto backend = find_backend(cfg.attention.backend).create(world, device, cfg);
  std::unique_ptr<LayerStack> model;
  std::unique_ptr<AttentionStep> attention;
  const bool with_backward = !cfg.run.fwd_only;
  double loss = 0;
  auto step = [&] {
    if (model) loss = model->step(with_backward);
    else attention->step(with_backward);
  };
  if (cfg.run.mode == Mode::model) model = std::make_unique<LayerStack>(cfg, device, world, *backend, timer);
  else attention = std::make_unique<AttentionStep>(cfg, device, *backend, timer);

  auto check = [&] {
    if (between) between();
  };
  for (int i = 0; i < cfg.run.warmup; ++i) {
    check();
    step();
  }
  timer.clear();
  world.bytes().reset();
  std::vector<double> mine(size_t(cfg.run.iters));
  for (int i = 0; i < cfg.run.iters; ++i) {
    check();
    world.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    device.synchronize();  // an asynchronous device's step ends when its queue drains
    mine[size_t(i)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const ByteCounter sent = world.bytes();

  RankMeasurements m;
  m.iter_seconds = mine;
  m.phase_seconds = timer.seconds();
  m.peak_memory_bytes = double(device.memory().peak());
  m.bytes_sent_intra = sent.intra;
  m.bytes_sent_inter = sent.inter;
  m.loss = loss;
  m.real_tokens = double(backend->layout().real_tokens(backend->part())) * cfg.sequence.batch;
  return gather_point(cfg, world, m);
}

}  // namespace minictx
