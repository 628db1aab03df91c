#pragma once
#include "backends/backend.hpp"

namespace minictx {

// Ring attention over all ranks, in the basic (contiguous), zigzag or stripe layout.
BackendInfo ring_backend_info();

}  // namespace minictx
