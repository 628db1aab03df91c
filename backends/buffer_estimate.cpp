#include "backends/buffer_estimate.hpp"

#include <algorithm>

#include "backends/parallel_degrees.hpp"
#include "backends/ring/ring_engine.hpp"
#include "core/saturating.hpp"

namespace minictx {

int64_t backend_buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  const AttentionConfig& a = cfg.attention;
  const int world = topology.world_size;
  // Saturating throughout: a deck may ask for more than 2^63 bytes.
  const int64_t batch = cfg.sequence.batch, seq = cfg.sequence.length;
  const int64_t rows = sat_mul(batch, seq / world + (seq % world != 0));
  const int64_t qw = sat_mul(cfg.model.heads, cfg.model.head_dim);
  const int64_t kvw = sat_mul(cfg.model.kv_heads, cfg.model.head_dim);
  const int64_t exchanged = sat_mul(8, sat_mul(sat_add(qw, kvw), rows));  // head-sharded inputs and gradients
  const ParallelDegrees d = parallel_degrees(cfg, topology);
  int64_t floats = 0;
  if (a.backend == "allgather") {
    floats = sat_mul(sat_mul(4, kvw), sat_mul(batch, seq));  // gathered K, V and the full-length dK, dV
  } else if (a.backend == "ulysses") {
    floats = exchanged;
  } else if (a.backend != "local") {
    const BackwardTraffic traffic =
        a.backend == "burst" && a.bwd_comm == "q" ? BackwardTraffic::q : BackwardTraffic::kv;
    // After a head exchange a rank holds u times the rows with 1/u of the heads (at
    // least one KV head: replicas), which is what the ring engine then works on.
    const int64_t kv_heads = std::max<int64_t>(1, cfg.model.kv_heads / d.ulysses);
    floats = RingEngine::buffer_floats(sat_mul(rows, d.ulysses), qw / d.ulysses, sat_mul(kv_heads, cfg.model.head_dim),
                                       cfg.model.heads / d.ulysses, d.context / d.window, traffic);
    if (d.ulysses > 1) floats = sat_add(floats, exchanged);
  }
  return sat_mul(floats, int64_t(sizeof(float)));
}

}  // namespace minictx
