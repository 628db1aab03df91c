#include "backends/engine/buffer_estimate.hpp"

#include <algorithm>

#include "core/saturating.hpp"

// Saturating throughout: a deck may ask for more than 2^63 bytes, and a guard whose
// product wraps would let it through to the allocator.
namespace minictx {

RankRows rank_rows(const RunConfig& cfg, const Topology& topology) {
  const int world = topology.world_size;
  const int64_t seq = cfg.sequence.length;
  const ModelShape& m = cfg.model;
  return {sat_mul(cfg.sequence.batch, seq / world + (seq % world != 0)),
          {sat_mul(m.heads, m.head_dim), sat_mul(m.kv_heads, m.head_dim), sat_mul(m.kv_heads, m.value_dim()),
           sat_mul(m.heads, m.value_dim())}};
}

int64_t head_exchange_bytes(const RankRows& r, DType wire) {
  // Three fp32 copies of the widths (the backward's head-sharded inputs and gradients) and
  // one exchange's send and receive buffers.
  const RowWidths& w = r.width;
  const int64_t widths = sat_mul(sat_add(sat_add(w.q, w.k), sat_add(w.v, w.o)), r.rows);
  return sat_add(sat_mul(12, widths), sat_mul(element_bytes(wire), widths));
}

int64_t ulysses_ring_bytes(const RunConfig& cfg, const Topology& topology, const ParallelDegrees& d,
                           BackwardTraffic traffic) {
  const RankRows r = rank_rows(cfg, topology);
  const int64_t kv_heads = std::max<int64_t>(1, cfg.model.kv_heads / d.ulysses);
  const RowWidths share{r.width.q / d.ulysses, sat_mul(kv_heads, cfg.model.head_dim),
                        sat_mul(kv_heads, cfg.model.value_dim()), r.width.o / d.ulysses};
  int64_t bytes = RingEngine::buffer_bytes(sat_mul(r.rows, d.ulysses), share, cfg.model.heads / d.ulysses,
                                           d.context / d.window, traffic, cfg.run.dtype);
  if (d.ulysses > 1) bytes = sat_add(bytes, head_exchange_bytes(r, cfg.run.dtype));
  return bytes;
}

}  // namespace minictx
