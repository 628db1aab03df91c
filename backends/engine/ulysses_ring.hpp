#pragma once
#include <memory>

#include "backends/backend.hpp"
#include "backends/engine/parallel_degrees.hpp"
#include "backends/engine/ring_engine.hpp"

namespace minictx {

// Ulysses groups of d.ulysses ranks and a ring engine over the context group of
// d.context ranks in windows of d.window: USP, LoongTrain's 2D attention and
// BurstAttention are all this shape. Global rank = context_rank · u + ulysses_rank: Ulysses groups are
// consecutive ranks, the context group is strided. That is also the layout's part index (outer = context
// rank, inner = Ulysses rank), so after the head exchange a rank holds its context rank's whole outer share,
// the rows the ring engine expects. With u = 1 there is no exchange at all.
std::unique_ptr<AttentionBackend> make_ulysses_ring(Comm& world, Device& device, const ParallelDegrees& d,
                                                    const RunConfig& cfg, BackwardTraffic traffic);

}  // namespace minictx
