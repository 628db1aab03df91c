// LoongTrain double ring (docs/algorithms.md, "LoongTrain double ring"): u × C = world,
// u = ulysses_degree consecutive ranks exchange heads, the C context ranks (strided by
// u) form C/w windows of w = window_size consecutive context ranks. Within a window
// K/V go round the inner ring; each window's K/V cross to the next window over the
// outer ring while a whole inner round computes. The ring backward (K, V, dK, dV
// travel), dK/dV crossing windows on their own communicator.
//
// Bytes per rank per step: the Ulysses exchange as in backends/usp/usp_backend.cpp,
// plus the ring engine's two-level formula (backends/engine/ring_engine.cpp) with
// W = C/w windows of w ranks and n = B·u·L·s·D (s = KV heads per rank after the
// exchange): inner 8·W·(w−1)·n + 4·W·(4w−2)·n, outer 8·(W−1)·n + 4·(4W−2)·n (none when
// W = 1; no inner traffic when w = 1). A window that fits a node keeps the inner ring
// intra-node; only the outer ring crosses nodes.
#include "backends/double_ring/double_ring_backend.hpp"

#include "backends/engine/buffer_estimate.hpp"
#include "backends/engine/head_exchange.hpp"
#include "backends/engine/ulysses_ring.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

constexpr const char* kWindowSize = "attention.window_size";
int window_size(const AttentionConfig& a) { return int(a.options.integer(kWindowSize)); }

// window_size 0: the context ranks of one node.
ParallelDegrees degrees(const RunConfig& cfg, const Topology& topology) {
  ParallelDegrees d = ulysses_by_ring(cfg.attention, topology);
  d.window = window_size(cfg.attention) > 0 ? window_size(cfg.attention)
                                            : std::max(1, node_ranks(topology) / d.ulysses);
  return d;
}

void validate(const RunConfig& cfg, const Topology& topology) {
  const int world = topology.world_size;
  const ParallelDegrees d = degrees(cfg, topology);
  const int u = d.ulysses, c = d.context, w = d.window;
  if (ring_degree(cfg.attention) == 0 && world % u != 0)
    input_error("attention.ulysses_degree " + std::to_string(u) + " does not divide the world size " +
                std::to_string(world) + " (backend double_ring)");
  if (u * c != world)
    input_error(
        "attention.backend double_ring needs ulysses_degree × ring_degree (the context size) = world "
        "size, but " +
        std::to_string(u) + " × " + std::to_string(c) + " ≠ " + std::to_string(world) + " ranks");
  if (c % w != 0)
    input_error("attention.window_size " + std::to_string(w) +
                (window_size(cfg.attention) > 0 ? "" : " (the context ranks of one node)") +
                " does not divide the context size " + std::to_string(c) + " (backend double_ring)");
  validate_head_split(cfg.model.heads, cfg.model.kv_heads, u,
                      "attention.ulysses_degree " + std::to_string(u));
}

std::unique_ptr<AttentionBackend> create(Comm& world, Device& device, const RunConfig& cfg) {
  return make_ulysses_ring(world, device, degrees(cfg, world.group_topology()), cfg, BackwardTraffic::kv);
}

int64_t buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  return ulysses_ring_bytes(cfg, topology, degrees(cfg, topology), BackwardTraffic::kv);
}

bool splits_heads(const AttentionConfig&) { return true; }

}  // namespace

BackendInfo double_ring_backend_info() {
  return {
      "double_ring",
      "LoongTrain 2D attention: Ulysses × a double ring (inner ring of window_size ranks, outer ring across "
      "windows)",
      {ring_type_key(), ulysses_degree_key(), ring_degree_key(),
       integer_key(kWindowSize, 0, 0, "context ranks in each inner ring; 0 = the context ranks of one node")},
      degrees,
      buffer_bytes,
      splits_heads,
      validate,
      create,
      ring_engine_traffic,
      /*query_prefix=*/true};
}

}  // namespace minictx
