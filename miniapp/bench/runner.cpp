#include "bench/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include "backends/backend.hpp"
#include "backends/engine/buffer_estimate.hpp"
#include "bench/metrics.hpp"
#include "bench/ring_timeline_gather.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"
#include "core/phase_timer.hpp"
#include "core/saturating.hpp"
#include "device/cuda/cuda_footprint.hpp"
#include "model/attention_step.hpp"
#include "model/layer_stack.hpp"

namespace minictx {

namespace {

// The host kernel's tiles are clamped to the block they cover (at most the whole
// sequence); a tile past kMaxTile rows would not fit any cache and only asks for scratch.
constexpr int kMaxTile = 65536;

// Floats of the attention kernel's per-call scratch: scores and their gradient (bq × bk),
// the output accumulator (bq × D) and three row vectors.
long double tile_scratch_floats(const RunConfig& c) {
  const long double bq = std::min<int64_t>(c.attention.block_q, c.sequence.length);
  const long double bk = std::min<int64_t>(c.attention.block_k, c.sequence.length);
  return 2 * bq * bk + bq * c.model.head_dim + 3 * bq;
}

std::string mib(int64_t bytes) {
  return bytes == kSaturated ? "more than 8 EiB" : std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

int64_t estimate_memory_bytes(const RunConfig& c, const Topology& topology) {
  // In long double (exact integers to 2^64) and saturated at the end: a deck's sizes may
  // multiply past 2^63, which int64 arithmetic would wrap to a figure that fits.
  using real = long double;
  const int world = topology.world_size;
  const ModelShape& m = c.model;
  const real rows = real(c.sequence.batch) * std::ceil(real(c.sequence.length) / world);
  const real qd = real(m.heads) * m.head_dim, kvd = real(m.kv_heads) * m.head_dim;
  // Weights, their gradients and the activations are stored in the run's dtype; the
  // LSE, 1/rms and the attention's accumulators are fp32.
  const real e = real(element_bytes(c.run.dtype));
  const real per_layer = rows * (5.0L * m.d_model + 2 * qd + 2 * kvd + 3.0L * m.ffn_hidden) * e;
  real bytes = 0;
  if (c.run.mode == Mode::model) {
    const Checkpointing ckpt = c.run.checkpointing;
    const real kept = c.run.fwd_only ? 1 : ckpt == Checkpointing::none ? m.layers : 1;
    // Selective checkpointing keeps every layer's attention output and LSE, or half of them.
    const real attention_kept = c.run.fwd_only                          ? 0
                                : ckpt == Checkpointing::selective      ? 1
                                : ckpt == Checkpointing::selective_half ? 0.5L
                                                                        : 0;
    bytes = 2.0L * real(m.n_params()) * e + per_layer * (kept + 1) +
            rows * m.d_model * e * (m.layers + 3.0L) +
            attention_kept * m.layers * rows * (qd * e + m.heads * 4.0L);
    // 16-bit storage keeps fp32 accumulators for the attention (o; dq, dk, dv). The host
    // device also widens the operands of each call into fp32 copies, SwiGLU's backward
    // the largest (five of them). The CUDA device reads 16-bit tensors in place, but
    // keeps 16-bit copies of the fp32 GEMM operands (dq and dk/dv in the backward; two
    // buffers) and copies the attention's q, k, v and dO for a call: widened to fp32 for
    // the SIMT kernels, row blocks in 16 bits for the flash kernels.
    if (e < 4) bytes += rows * (qd + 2 * kvd) * 4;
    if (e < 4 && c.run.device == DeviceKind::kokkos) bytes += 5.0L * rows * m.ffn_hidden * 4;
    if (e < 4 && c.run.device == DeviceKind::cuda)
      bytes += 2 * rows * qd * e + rows * (2 * qd + 2 * kvd) * (cuda::flash_head_dim(m.head_dim) ? e : 4);
  } else {
    bytes = rows * (6 * qd + 6 * kvd) * 4;
  }
  bytes += tile_scratch_floats(c) * 4 + real(backend_buffer_bytes(c, topology));
  if (c.run.device == DeviceKind::cuda) bytes += real(cuda::kGemmWorkspaceBytes);
  return saturate(bytes);
}

std::string memory_refusal(const RunConfig& cfg, const Topology& topology, int64_t capacity_per_rank) {
  for (const auto& [key, tile] : {std::pair{"attention.block_q", cfg.attention.block_q},
                                  std::pair{"attention.block_k", cfg.attention.block_k}})
    if (tile > kMaxTile)
      return std::string(key) + " = " + std::to_string(tile) + " exceeds " + std::to_string(kMaxTile) +
             ", the largest tile the attention kernel takes";
  const int64_t estimate = estimate_memory_bytes(cfg, topology);
  if (estimate <= capacity_per_rank) return "";
  return "memory estimate " + mib(estimate) + " per rank exceeds the " + mib(capacity_per_rank) +
         " this device offers each of its ranks";
}

int64_t capacity_per_rank(const Device& device, const Topology& topology) {
  const int64_t capacity = device.capacity_bytes();
  return device.capacity_shared_by_node() ? capacity / std::max(1, topology.ranks_here) : capacity;
}

void check_memory_estimate(const RunConfig& cfg, const Comm& world, const Device& device) {
  const std::string refusal =
      memory_refusal(cfg, world.topology(), capacity_per_rank(device, world.topology()));
  if (!refusal.empty()) input_error(refusal);
}

PointResult run_point(const RunConfig& cfg, Comm& world, Device& device,
                      const std::function<void()>& between) {
  validate_backend(cfg, world.group_topology());
  device.release_cached_memory();
  device.memory().reset_peak();
  PhaseTimer timer(device.step_clock());
  auto backend = find_backend(cfg.attention.backend).create(world, device, cfg);
  RingTimeline timeline(device.step_clock());
  if (cfg.run.ring_timeline) backend->set_ring_timeline(&timeline);
  std::unique_ptr<LayerStack> model;
  std::unique_ptr<AttentionStep> attention;
  const bool with_backward = !cfg.run.fwd_only;
  double loss = 0;
  watchdog::configure(cfg.run.watchdog_seconds);
  auto step = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    if (model)
      loss = model->step(with_backward);
    else
      attention->step(with_backward);
    watchdog::step_completed(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  if (cfg.run.mode == Mode::model)
    model = std::make_unique<LayerStack>(cfg, device, world, *backend, timer, &timeline);
  else
    attention = std::make_unique<AttentionStep>(cfg, device, *backend, timer, &timeline);

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
  const int recorded = cfg.run.ring_timeline ? cfg.run.iters - 1 : -1;  // the last timed iteration
  for (int i = 0; i < cfg.run.iters; ++i) {
    check();
    world.barrier();
    if (i == recorded) timeline.start();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    device.synchronize();  // an asynchronous device's step ends when its queue drains
    mine[size_t(i)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    timer.settle();
    if (i == recorded) timeline.stop();
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
  PointResult result = gather_point(cfg, world, m);
  if (cfg.run.ring_timeline) result.ring_timeline = gather_ring_timeline(world, timeline, recorded);
  return result;
}

}  // namespace minictx
