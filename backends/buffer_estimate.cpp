#include "backends/buffer_estimate.hpp"

#include <algorithm>

#include "backends/backend.hpp"

namespace minictx {

int64_t backend_buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  return find_backend(cfg.attention.backend).buffer_floats(cfg, topology) * int64_t(sizeof(float));
}

RankRows rank_rows(const RunConfig& cfg, const Topology& topology) {
  const int world = topology.world_size;
  const int64_t seq = cfg.sequence.length;
  return {cfg.sequence.batch * ((seq + world - 1) / world), int64_t(cfg.model.heads) * cfg.model.head_dim,
          int64_t(cfg.model.kv_heads) * cfg.model.head_dim};
}

int64_t head_exchange_floats(const RankRows& r) { return 8 * (r.q_width + r.kv_width) * r.rows; }

int64_t ulysses_ring_floats(const RunConfig& cfg, const Topology& topology, const ParallelDegrees& d,
                            BackwardTraffic traffic) {
  const RankRows r = rank_rows(cfg, topology);
  const int64_t kv_heads = std::max<int64_t>(1, cfg.model.kv_heads / d.ulysses);
  int64_t floats = RingEngine::buffer_floats(r.rows * d.ulysses, r.q_width / d.ulysses, kv_heads * cfg.model.head_dim,
                                             cfg.model.heads / d.ulysses, d.context / d.window, traffic);
  if (d.ulysses > 1) floats += head_exchange_floats(r);
  return floats;
}

}  // namespace minictx
