#pragma once
#include <cstdint>

// What the CUDA device holds beside a run's tensors, in plain C++, so host code (the
// memory estimate) can size a CUDA run without the CUDA headers.
namespace minictx::cuda {

// The head dims whose bf16/fp16 attention the tensor-core flash kernels serve (on sm_80
// and later); other head dims and fp32 take the SIMT kernels.
constexpr int kFlashHeadDims[] = {64, 128};

constexpr bool flash_head_dim(int head_dim) {
  for (int d : kFlashHeadDims)
    if (d == head_dim) return true;
  return false;
}

// cuBLASLt's workspace, allocated once per device.
constexpr int64_t kGemmWorkspaceBytes = int64_t(32) << 20;

// The tuned layer kernels: RMSNorm's gain gradient sums at most this many row chunks'
// fp32 partials per column (tuned_layer_kernels.hpp), and the position cache holds at
// most this many arrays, each with RoPE's table beside it (position_cache.hpp).
constexpr int64_t kDgammaMaxChunks = 256;
constexpr int64_t kPositionCacheEntries = 64;

}  // namespace minictx::cuda
