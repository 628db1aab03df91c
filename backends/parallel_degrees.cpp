#include "backends/parallel_degrees.hpp"

#include <algorithm>

namespace minictx {

ParallelDegrees parallel_degrees(const RunConfig& cfg, const Topology& topology) {
  const AttentionConfig& a = cfg.attention;
  const int world = topology.world_size;
  const int per_node = std::max(1, std::min(topology.ranks_per_node, world));
  const int u = std::max(1, a.ulysses_degree);
  const int context = a.ring_degree > 0 ? a.ring_degree : world / u;
  if (a.backend == "local") return {1, 1, 1};
  if (a.backend == "ulysses") return {world, 1, 1};
  if (a.backend == "usp") return {u, context, context};
  if (a.backend == "double_ring") return {u, context, a.window_size > 0 ? a.window_size : std::max(1, per_node / u)};
  if (a.backend == "burst") {
    if (a.intra == "ulysses") return {per_node, world / per_node, world / per_node};
    return {1, world, per_node};
  }
  return {1, world, world};  // ring, allgather
}

}  // namespace minictx
