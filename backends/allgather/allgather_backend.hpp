#pragma once
#include "backends/backend.hpp"

namespace minictx {

// All-gather K/V (Llama-3 / TransformerEngine "all_gather"): every rank gathers the
// whole K and V and attends its own queries to them; dK/dV are reduce-scattered.
BackendInfo allgather_backend_info();

}  // namespace minictx
