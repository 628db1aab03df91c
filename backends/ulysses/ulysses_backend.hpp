#pragma once
#include "backends/backend.hpp"

namespace minictx {

// DeepSpeed-Ulysses: all-to-all from sequence to head shards over every rank, full
// attention on the whole sequence with H/P heads, all-to-all back.
BackendInfo ulysses_backend_info();

}  // namespace minictx
