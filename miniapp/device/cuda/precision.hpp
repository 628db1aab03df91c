#pragma once

namespace minictx::cuda {

// The run's dtype as the CUDA kernels see it (device/cuda/precision.cuh rounds to it).
enum class Precision : int { f32 = 0, bf16 = 1, f16 = 2 };

}  // namespace minictx::cuda
