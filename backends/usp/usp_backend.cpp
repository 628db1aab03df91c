// USP = Ulysses degree u × ring degree r. Bytes sent per rank per training step
// (forward + backward), fp32, with B batch, L = padded local rows per sequence, D head
// dim, H query heads, s = Hkv/u KV heads per rank after the exchange (1 when u > Hkv),
// Λ fp32 planes of the LSE (Device::lse_planes: 2 on the host device, 1 on cuda):
//   Ulysses all-to-alls (the ulysses backend's formula with P = u; intra-node when a
//   node holds whole Ulysses groups):
//     forward   4·B·L·(u−1)·[(2H/u + 2s)·D + Λ·H/u]
//     backward  4·B·L·(u−1)·[(4H/u + 4s)·D + Λ·H/u]
//   ring engine over r ranks on the exchanged share (its formula with n = B·u·L·s·D
//   elements; nothing when r = 1):
//     forward   8·(r−1)·n
//     backward  (16r−8)·n
//   step        4·B·L·(u−1)·[(6H/u + 6s)·D + 2Λ·H/u] + (24r−16)·n
// In bf16/fp16 every term takes 2 bytes an element but the LSE's H/u terms.
#include "backends/usp/usp_backend.hpp"

#include "backends/engine/buffer_estimate.hpp"
#include "backends/engine/head_exchange.hpp"
#include "backends/engine/ulysses_ring.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

ParallelDegrees degrees(const RunConfig& cfg, const Topology& topology) {
  return ulysses_by_ring(cfg.attention, topology);
}

void validate(const RunConfig& cfg, const Topology& topology) {
  const int world = topology.world_size;
  const ParallelDegrees d = degrees(cfg, topology);
  const int u = d.ulysses, r = d.context;
  if (ring_degree(cfg.attention) == 0 && world % u != 0)
    input_error("attention.ulysses_degree " + std::to_string(u) + " does not divide the world size " +
                std::to_string(world) + " (backend usp)");
  if (u * r != world)
    input_error("attention.backend usp needs ulysses_degree × ring_degree = world size, but " +
                std::to_string(u) + " × " + std::to_string(r) + " ≠ " + std::to_string(world) + " ranks");
  validate_head_split(cfg.model.heads, cfg.model.kv_heads, u,
                      "attention.ulysses_degree " + std::to_string(u));
}

std::unique_ptr<AttentionBackend> create(Comm& world, Device& device, const RunConfig& cfg) {
  const ParallelDegrees d = degrees(cfg, world.group_topology());
  return make_ulysses_ring(world, device, d, cfg, BackwardTraffic::kv);
}

int64_t buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  return ulysses_ring_bytes(cfg, topology, degrees(cfg, topology), BackwardTraffic::kv);
}

bool splits_heads(const AttentionConfig&) { return true; }

}  // namespace

BackendInfo usp_backend_info() {
  return {"usp",
          "Ulysses all-to-all within ulysses_degree ranks × ring attention across ring_degree rings (USP)",
          {ring_type_key(), ulysses_degree_key(), ring_degree_key()},
          degrees,
          buffer_bytes,
          splits_heads,
          validate,
          create,
          ring_engine_traffic,
          /*query_prefix=*/true};
}

}  // namespace minictx
