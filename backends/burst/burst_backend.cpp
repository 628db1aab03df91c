// BurstAttention (ALGORITHMS.md, "BurstAttention"). N = ranks_per_node.
//   intra: ring     one context group of all ranks, windows of N (one node each): K/V go
//                   round the node, every N steps a block crosses to the next node on
//                   its own communicator, overlapping the whole intra-node round.
//   intra: ulysses  Ulysses all-to-all over the N ranks of a node, a plain Burst ring
//                   across the nodes, all-to-all back.
//   bwd_comm: q     the Burst backward: Q, dO, LSE, D and dQ travel; K, V, dK, dV stay.
//   bwd_comm: kv    the ring backward instead, for comparison.
// Bytes per rank per step are the ring engine's two-level formulas
// (backends/ring/ring_engine.cpp) with W = world/N windows of w = N ranks (intra: ring),
// or W = 1 window of the world/N nodes plus the Ulysses exchange of
// backends/usp/usp_backend.cpp with u = N (intra: ulysses).
#include "backends/burst/burst_backend.hpp"

#include "backends/parallel_degrees.hpp"
#include "backends/ulysses/head_exchange.hpp"
#include "backends/usp/ulysses_ring.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

void validate(const RunConfig& cfg, const Topology& topology) {
  const AttentionConfig& a = cfg.attention;
  const int world = topology.world_size, n = std::max(1, std::min(topology.ranks_per_node, world));
  if (world % n != 0)
    input_error("attention.backend burst with intra: " + a.intra + " needs whole nodes, but the world size " +
                std::to_string(world) + " is not a multiple of ranks_per_node " + std::to_string(n));
  if (a.ulysses_degree != 1 && (a.intra != "ulysses" || a.ulysses_degree != n))
    input_error("attention.backend burst takes its Ulysses degree from the topology (intra: ulysses → "
                "ranks_per_node " + std::to_string(n) + "), not ulysses_degree " + std::to_string(a.ulysses_degree));
  if (a.ring_degree != 0)
    input_error("attention.backend burst takes its ring from the topology; remove attention.ring_degree");
  if (a.window_size != 0)
    input_error("attention.backend burst rings within a node (topology.ranks_per_node); remove "
                "attention.window_size (double_ring takes it)");
  if (a.intra == "ulysses")
    validate_head_split(cfg.model.heads, cfg.model.kv_heads, n,
                        "attention.intra ulysses over ranks_per_node " + std::to_string(n));
}

std::unique_ptr<AttentionBackend> create(Comm& world, Device& device, const RunConfig& cfg) {
  const BackwardTraffic traffic = cfg.attention.bwd_comm == "kv" ? BackwardTraffic::kv : BackwardTraffic::q;
  return make_ulysses_ring(world, device, parallel_degrees(cfg, world.group_topology()), cfg, traffic);
}

}  // namespace

BackendInfo burst_backend_info() {
  return {"burst",
          "BurstAttention: ring forward, Q-side backward (Q, dO, LSE, D, dQ travel); intra ring (topology-aware "
          "double ring) or ulysses (heads within a node)",
          validate, create, /*query_prefix=*/true};
}

}  // namespace minictx
