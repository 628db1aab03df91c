#pragma once
#include "backends/backend.hpp"

namespace minictx {

// BurstAttention: ring forward with the LSE merge, and a backward in which the Q side
// (Q, dO, LSE, D) and dQ travel while K, V, dK, dV stay; topology-aware inside a node
// (intra: ring, a double ring) or head-parallel inside a node (intra: ulysses).
BackendInfo burst_backend_info();

}  // namespace minictx
