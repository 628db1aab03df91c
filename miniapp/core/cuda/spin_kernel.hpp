#pragma once
#include <cuda_runtime.h>

// A kernel that holds its stream for a given time, doing nothing: the stand-in for a slow
// or stuck kernel where the tests need one (the NCCL comm's stream ordering behind
// compute; the test seam's kernel that never ends, fault_seam::Stage::stall).
namespace minictx::cuda {

// One thread spins on the GPU's global timer for `seconds` (a negative value: for ever).
void spin(cudaStream_t stream, double seconds);

}  // namespace minictx::cuda
