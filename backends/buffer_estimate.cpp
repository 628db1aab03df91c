#include "backends/buffer_estimate.hpp"

#include "backends/parallel_degrees.hpp"
#include "backends/ring/ring_engine.hpp"

namespace minictx {

int64_t backend_buffer_bytes(const RunConfig& cfg, const Topology& topology) {
  const AttentionConfig& a = cfg.attention;
  const int world = topology.world_size;
  const int64_t batch = cfg.sequence.batch, seq = cfg.sequence.length;
  const int64_t rows = batch * ((seq + world - 1) / world);
  const int64_t qw = int64_t(cfg.model.heads) * cfg.model.head_dim;
  const int64_t kvw = int64_t(cfg.model.kv_heads) * cfg.model.head_dim;
  const ParallelDegrees d = parallel_degrees(cfg, topology);
  int64_t floats = 0;
  if (a.backend == "allgather") {
    floats = 4 * kvw * batch * seq;  // gathered K, V and the full-length dK, dV
  } else if (a.backend == "ulysses") {
    floats = 8 * (qw + kvw) * rows;  // head-sharded copies of the inputs and the gradients
  } else if (a.backend != "local") {
    const BackwardTraffic traffic =
        a.backend == "burst" && a.bwd_comm == "q" ? BackwardTraffic::q : BackwardTraffic::kv;
    // After a head exchange a rank holds u times the rows with 1/u of the heads (at
    // least one KV head: replicas), which is what the ring engine then works on.
    const int64_t kv_heads = std::max<int64_t>(1, cfg.model.kv_heads / d.ulysses);
    floats = RingEngine::buffer_floats(rows * d.ulysses, qw / d.ulysses, kv_heads * cfg.model.head_dim,
                                       cfg.model.heads / d.ulysses, d.context / d.window, traffic);
    if (d.ulysses > 1) floats += 8 * (qw + kvw) * rows;
  }
  return floats * int64_t(sizeof(float));
}

}  // namespace minictx
