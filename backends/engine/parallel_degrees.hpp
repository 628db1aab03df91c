#pragma once
#include <algorithm>

#include "backends/engine/engine_keys.hpp"
#include "comm/comm.hpp"
#include "config/run_config.hpp"

namespace minictx {

// How a backend splits the ranks, resolved from the deck and the topology: the one place
// that turns defaults (ring_degree 0, window_size 0, burst's node-sized groups) into
// numbers, for the backends themselves and for the labels of a results file.
struct ParallelDegrees {
  int ulysses = 1;  // ranks exchanging heads (consecutive ranks)
  int context = 1;  // ranks of the ring (context) group
  int window = 1;   // ranks per inner ring of the context group; == context for one plain ring
};

// Ranks of one node, at least 1 and at most the world.
inline int node_ranks(const Topology& topology) {
  return std::max(1, std::min(topology.ranks_per_node, topology.world_size));
}

// attention.ulysses_degree × attention.ring_degree (0 = the rest of the world), one ring.
inline ParallelDegrees ulysses_by_ring(const AttentionConfig& a, const Topology& topology) {
  const int u = std::max(1, ulysses_degree(a));
  const int context = ring_degree(a) > 0 ? ring_degree(a) : topology.world_size / u;
  return {u, context, context};
}

}  // namespace minictx
