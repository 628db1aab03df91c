#pragma once
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

ParallelDegrees parallel_degrees(const RunConfig& cfg, const Topology& topology);

}  // namespace minictx
