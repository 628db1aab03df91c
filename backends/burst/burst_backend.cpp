// BurstAttention (docs/algorithms.md, "BurstAttention"). N = ranks_per_node.
//   intra: ring     one context group of all ranks, windows of N (one node each): K/V go
//                   round the node, every N steps a block crosses to the next node on
//                   its own communicator, overlapping the whole intra-node round.
//   intra: ulysses  Ulysses all-to-all over the N ranks of a node, a plain Burst ring
//                   across the nodes, all-to-all back.
//   bwd_comm: q     the Burst backward: Q, dO, LSE, D and dQ travel; K, V, dK, dV stay.
//   bwd_comm: kv    the ring backward instead, for comparison.
// Bytes per rank per step are the ring engine's two-level formulas
// (backends/engine/ring_engine.cpp) with W = world/N windows of w = N ranks (intra: ring),
// or W = 1 window of the world/N nodes plus the Ulysses exchange of
// backends/usp/usp_backend.cpp with u = N (intra: ulysses).
#include "backends/burst/burst_backend.hpp"

#include "backends/engine/buffer_estimate.hpp"
#include "backends/engine/head_exchange.hpp"
#include "backends/engine/ulysses_ring.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

// burst's own keys: the intra-node scheme and what travels in the backward.
constexpr const char* kIntra = "attention.intra";
constexpr const char* kBwdComm = "attention.bwd_comm";
bool intra_ulysses(const AttentionConfig& a) { return a.options.choice(kIntra) == "ulysses"; }

// The BurstAttention paper's legend for this configuration, as its figures name variants
// (A)-(D): the intra-node scheme and, in model mode, the checkpointing.
std::string paper_variant(const RunConfig& c) {
  const bool double_ring = !intra_ulysses(c.attention);
  std::string name = std::string("BurstAttention w. ") + (double_ring ? "DoubleRing" : "Ulysses(intra node)");
  if (c.run.mode != Mode::model) return name;  // attention mode: no layer to recompute
  switch (c.run.checkpointing) {
    case Checkpointing::full:
      return (double_ring ? "(A) " : "(B) ") + name + " w/o Selective Checkpointing";
    case Checkpointing::selective:
      return (double_ring ? "(C) " : "(D) ") + name;
    case Checkpointing::selective_half:
      return name + " w. seq-wise Selective Checkpointing";
    default:
      return name + " (checkpointing: " + to_string(c.run.checkpointing) + ")";
  }
}

void validate(const RunConfig& cfg, const Topology& topology) {
  const AttentionConfig& a = cfg.attention;
  const int world = topology.world_size, n = node_ranks(topology);
  if (world % n != 0)
    input_error("attention.backend burst with intra: " + a.options.choice(kIntra) +
                " needs whole nodes, but the world size " + std::to_string(world) +
                " is not a multiple of ranks_per_node " + std::to_string(n));
  const int u = ulysses_degree(a);
  if (u != 1 && (!intra_ulysses(a) || u != n))
    input_error(
        "attention.backend burst takes its Ulysses degree from the topology (intra: ulysses → "
        "ranks_per_node " +
        std::to_string(n) + "), not ulysses_degree " + std::to_string(u));
  if (intra_ulysses(a))
    validate_head_split(cfg.model.heads, cfg.model.kv_heads, n,
                        "attention.intra ulysses over ranks_per_node " + std::to_string(n));
}

BackwardTraffic traffic(const AttentionConfig& a) {
  return a.options.choice(kBwdComm) == "kv" ? BackwardTraffic::kv : BackwardTraffic::q;
}

// Windows of a node's ranks (intra: ring), or Ulysses over a node and one ring of nodes.
ParallelDegrees degrees(const RunConfig& cfg, const Topology& topology) {
  const int world = topology.world_size, n = node_ranks(topology);
  if (intra_ulysses(cfg.attention)) return {n, world / n, world / n};
  return {1, world, n};
}

std::unique_ptr<AttentionBackend> create(Comm& world, Device& device, const RunConfig& cfg) {
  return make_ulysses_ring(world, device, degrees(cfg, world.group_topology()), cfg, traffic(cfg.attention));
}

int64_t buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  return ulysses_ring_bytes(cfg, topology, degrees(cfg, topology), traffic(cfg.attention));
}

bool splits_heads(const AttentionConfig& a) { return intra_ulysses(a); }

TrafficShape traffic_shape_of(const AttentionConfig& a) {
  TrafficShape shape = ring_engine_traffic(a);
  shape.query_side_backward = traffic(a) == BackwardTraffic::q;
  return shape;
}

}  // namespace

BackendInfo burst_backend_info() {
  return {
      "burst",
      "BurstAttention: ring forward, Q-side backward (Q, dO, LSE, D, dQ travel); intra ring (topology-aware "
      "double ring) or ulysses (heads within a node)",
      // ulysses_degree only as ranks_per_node with intra: ulysses (validate).
      {ring_type_key(),
       choice_key(kIntra, {"ring", "ulysses"},
                  "the intra-node scheme: a double ring of one window per node, or Ulysses over a node"),
       choice_key(kBwdComm, {"q", "kv"},
                  "the backward's communication: q (the BurstAttention backward) or kv (ring attention's)"),
       ulysses_degree_key()},
      degrees,
      buffer_bytes,
      splits_heads,
      validate,
      create,
      traffic_shape_of,
      /*query_prefix=*/true,
      paper_variant};
}

}  // namespace minictx
