#pragma once
#include <memory>

#include "backends/backend.hpp"
#include "backends/ring/ring_engine.hpp"

namespace minictx {

// How a world of ranks splits into head-parallel (Ulysses) groups and a ring-parallel
// context group: USP, LoongTrain's 2D attention and BurstAttention are all this shape.
struct UlyssesRingPlan {
  int ulysses = 1;  // u: consecutive ranks exchanging heads (one node, fast all-to-all)
  int window = 0;   // ranks per inner ring of the context group (world/u: one plain ring)
  BackwardTraffic traffic = BackwardTraffic::kv;
};

// Global rank = context_rank · u + ulysses_rank: Ulysses groups are consecutive ranks,
// the context group is strided. That is also the layout's part index (outer = context
// rank, inner = Ulysses rank), so after the head exchange a rank holds its context
// rank's whole outer share, the rows the ring engine expects. With u = 1 there is no
// exchange at all.
std::unique_ptr<AttentionBackend> make_ulysses_ring(Comm& world, Device& device, const RunConfig& cfg,
                                                    const UlyssesRingPlan& plan);

}  // namespace minictx
