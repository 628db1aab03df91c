#pragma once
#include <cuda_runtime.h>

// One warpgroup product on Hopper's wgmma (tests/cuda/wgmma_probe.cu), in each operand
// form the Hopper kernels use, so that test_cuda_device can check the descriptor and
// swizzle conventions on their own.
namespace minictx::test {

enum class WgmmaForm {
  shared_k_major,      // d [64, n] = x [64, k] · y [n, k]ᵀ, both from shared memory (S = QKᵀ)
  registers_mn_major,  // d [64, n] = x [64, k] (registers) · y [k, n] (shared, transposed: O += PV)
  // d [64, n] = x [64, k] (shared, K-major) · y [k, n] (shared, transposed), as two
  // products of n / 2 columns, each reading its half of y's tile from its first column
  // (the one-pass backward's dQ = dS K, a consumer's half of the head dim each).
  shared_mn_major_halves,
};

// x, y: device 16-bit (bf16 or fp16), row-major; d: device fp32 [64, n]. shared_k_major:
// n = 32, 64 or 128 and k = 64 or 128 (the head dims); registers_mn_major: n = 64 or 128
// and k = 32, 64 or 128; shared_mn_major_halves: n = 64 or 128 (the head dims) and k = 128
// (the block's keys). Other sizes: cudaErrorInvalidValue. Synchronises.
cudaError_t wgmma_probe(WgmmaForm, bool bf16, int n, int k, const void* x, const void* y, float* d);

}  // namespace minictx::test
