#pragma once
#include <cstdint>

#include "comm/comm.hpp"
#include "config/run_config.hpp"

namespace minictx {

// Bytes the deck's attention backend allocates per rank beyond q, k, v, o and their
// gradients (ring buffers, head-exchanged copies, gathered K/V), for the memory estimate
// that refuses a run before it allocates.
int64_t backend_buffer_bytes(const RunConfig& cfg, const Topology& topology);

}  // namespace minictx
