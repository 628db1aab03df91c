#pragma once
#include <cuda_runtime.h>

// One warpgroup product on Hopper's wgmma (verify/tests/wgmma_probe.cu), in each operand
// form the wgmma forward kernel uses, so that test_cuda_device can check the descriptor
// and swizzle conventions on their own.
namespace minictx::test {

enum class WgmmaForm {
  shared_k_major,      // d [64, n] = x [64, 128] · y [n, 128]ᵀ, both from shared memory (S = QKᵀ)
  registers_mn_major,  // d [64, n] = x [64, 128] (registers) · y [128, n] (shared, transposed: O += PV)
};

// x, y: device bf16, row-major; d: device fp32 [64, n]; n = 32 (shared_k_major only), 64 or
// 128. Synchronises.
cudaError_t wgmma_probe(WgmmaForm, int n, const void* x, const void* y, float* d);

}  // namespace minictx::test
