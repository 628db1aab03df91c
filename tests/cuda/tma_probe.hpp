#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// One tile copied by Hopper's TMA (tests/cuda/tma_probe.cu) the way the sm90 family's
// forward loads Q, K and V, read back element by element through the swizzled layout
// the wgmma descriptors describe, so that test_cuda_device can check the tensor map,
// the box placement, the zero fill past the end and the barrier's byte count on their
// own.
namespace minictx::test {

// src: device bf16 [batch, rows, heads, d]; the tile of 128 rows from `row` of head `head`,
// batch `batch` lands in tile [128, d] (device fp32, row-major). d = 64 or 128.
// Synchronises.
cudaError_t tma_probe(const void* src, int64_t batch, int64_t rows, int64_t heads, int d, int head,
                      int64_t row, int batch_index, float* tile);

}  // namespace minictx::test
