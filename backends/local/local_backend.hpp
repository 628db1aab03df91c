#pragma once
#include "backends/backend.hpp"

namespace minictx {

// Whole-sequence attention on one rank: the single-device reference path.
BackendInfo local_backend_info();

}  // namespace minictx
