#pragma once
#include "backends/backend.hpp"

namespace minictx {

// LoongTrain's 2D attention: Ulysses over ulysses_degree consecutive ranks, and a
// double ring over the context group (windows of window_size context ranks joined by
// an outer ring).
BackendInfo double_ring_backend_info();

}  // namespace minictx
