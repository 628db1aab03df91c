#pragma once
#include <vector>

#include "comm/comm.hpp"
#include "core/ring_timeline.hpp"
#include "io/results.hpp"

namespace minictx {

// Every rank's steps and outer transfers of `mine`'s last recording, complete on every rank
// (bookkeeping gathers: no byte is counted). A gather needs one record count for all ranks,
// and the records mean one timeline only if every rank ran the same walks, step for step
// and transfer for transfer: where they did not, rank 0 says so in one warning line and the
// result is empty (iteration −1).
// `phases` are this rank's phase scopes (rank field unset), gathered likewise: every rank
// must have closed as many scopes, of the same phases in the same iterations.
RingTimelineResult gather_ring_timeline(Comm& world, const RingTimeline& mine, int iteration,
                                        const std::vector<PhaseRecord>& phases);

}  // namespace minictx
