#pragma once
#include <cstdint>

#include "backends/engine/parallel_degrees.hpp"
#include "backends/engine/ring_engine.hpp"
#include "comm/comm.hpp"
#include "config/run_config.hpp"

namespace minictx {

// The pieces the backends' buffer_bytes share. A rank's rows: batch × the padded share
// of the sequence, and the widths of its tensors.
struct RankRows {
  int64_t rows = 0;
  RowWidths width;
};
RankRows rank_rows(const RunConfig& cfg, const Topology& topology);
// Head-sharded copies of the inputs and the gradients, on both sides of an all-to-all:
// fp32 copies, and the send and receive buffers of one exchange in the run's dtype.
int64_t head_exchange_bytes(const RankRows& r, DType wire);
// The ring engine on the share a head exchange over d.ulysses ranks leaves (u times the
// rows, 1/u of the heads, at least one KV head), plus that exchange when u > 1.
int64_t ulysses_ring_bytes(const RunConfig& cfg, const Topology& topology, const ParallelDegrees& d,
                           BackwardTraffic traffic);

}  // namespace minictx
