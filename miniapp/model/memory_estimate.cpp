#include "model/memory_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backends/engine/buffer_estimate.hpp"
#include "backends/registry.hpp"
#include "core/error.hpp"
#include "core/saturating.hpp"
#include "device/device_footprint.hpp"

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
  // Widths of q (dq), k (dk), v (dv) and the attention output o (dO).
  const real qd = real(m.heads) * m.head_dim, kd = real(m.kv_heads) * m.head_dim,
             vd = real(m.kv_heads) * m.value_dim(), od = real(m.heads) * m.value_dim();
  // Weights and the activations are stored in the run's dtype, the weight gradients in
  // theirs (fp32 main gradients or the run's dtype); the LSE, 1/rms and the attention's
  // accumulators are fp32.
  const real e = real(element_bytes(c.run.dtype));
  const real grad_e = real(element_bytes(c.grad_dtype()));
  const real per_layer = rows * (5.0L * m.d_model + qd + od + kd + vd + 3.0L * m.ffn_hidden) * e;
  real bytes = 0;
  if (c.run.mode == Mode::model) {
    const Checkpointing ckpt = c.run.checkpointing;
    const real kept = c.run.fwd_only ? 1 : ckpt == Checkpointing::none ? m.layers : 1;
    // Selective checkpointing keeps every layer's attention output and LSE, or half of them.
    const real attention_kept = c.run.fwd_only                          ? 0
                                : ckpt == Checkpointing::selective      ? 1
                                : ckpt == Checkpointing::selective_half ? 0.5L
                                                                        : 0;
    bytes = real(m.n_params(c.attention.sinks)) * (e + grad_e) + per_layer * (kept + 1) +
            rows * m.d_model * e * (m.layers + 3.0L) +
            attention_kept * m.layers * rows * (od * e + m.heads * 4.0L * lse_planes(c.run.device));
    // 16-bit storage keeps fp32 accumulators for the attention (o; dq, dk, dv).
    if (e < 4) bytes += rows * std::max(od, qd + kd + vd) * 4;
    // The tuned set's packed projection: one GEMM's q|k|v beside the q, k and v split from
    // it, and in the backward their joined gradient beside the fp32 ones.
    if (c.run.layer_kernels == LayerKernels::tuned) bytes += rows * (qd + kd + vd) * e;
    // The LM head (its weight and gradient are in n_params): one chunk of fp32 logits, as
    // many as the output has elements unless run.loss_chunk says; the host's fp32 kernels
    // widen a 16-bit head for each of its GEMMs.
    if (m.vocab > 0) {
      const real chunk = c.run.loss_chunk > 0 ? std::min<real>(real(c.run.loss_chunk), rows)
                                              : std::ceil(rows / std::ceil(real(m.vocab) / m.d_model));
      bytes += chunk * m.vocab * 4 + (e < 4 ? real(m.vocab) * m.d_model * 4 : 0);
    }
  } else {
    bytes = rows * 3 * (qd + od + kd + vd) * 4;
  }
  // Storage partials compute each attention block apart from the sums: fp32 o (dq, dk,
  // dv in the backward) and a copy in the run's dtype to round each through.
  if (e < 4 && c.attention.partials != AttentionPartials::fp32)
    bytes += rows * std::max(od, qd + kd + vd) * (4 + e);
  bytes += tile_scratch_floats(c) * 4 + real(backend_buffer_bytes(c, topology));
  bytes += device_footprint_bytes(c.run.device, c, rows);
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

}  // namespace minictx
