#pragma once
#include "backends/backend.hpp"

namespace minictx {

// Unified sequence parallelism: Ulysses all-to-all inside groups of ulysses_degree
// consecutive ranks, ring attention across the strided ring groups, all-to-all back.
BackendInfo usp_backend_info();

}  // namespace minictx
