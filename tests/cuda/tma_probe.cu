// A single TMA tile load through tma_pipeline.cuh, for test_cuda_device: the copy the
// sm90 family's forward issues for each Q, K and V tile, waited for on its mbarrier, then read
// through wgmma::swizzled_offset, so that a wrong tensor map, box placement or swizzle
// shows up on its own, named, before the kernel built on it is tested.
#include <cuda_bf16.h>

#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/tma_pipeline.cuh"
#include "device/cuda/wgmma_fragments.cuh"
#include "tests/cuda/tma_probe.hpp"

namespace minictx::test {
namespace {

constexpr int kRows = 128, kThreads = 128;

template <int kD>
__global__ void probe_tma_kernel(const __grid_constant__ CUtensorMap map, int head, int row, int batch,
                                 float* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char shared[];
  unsigned char* tile = cuda::wgmma::aligned_tiles(shared);
  const uint32_t bar = cuda::mma::shared_address(tile + kRows * kD * 2);
  // A NaN in every element first, so that a zero the copy did not write shows as one.
  for (int i = int(threadIdx.x); i < kRows * kD; i += kThreads) reinterpret_cast<uint16_t*>(tile)[i] = 0xFFFF;
  if (threadIdx.x == 0) {
    cuda::tma::barrier_init(bar, 1);
    cuda::tma::fence_barrier_init();
  }
  cuda::wgmma::fence_shared_for_async();  // the NaNs land before the copy's writes
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::tma::arrive_expect_bytes(bar, kRows * kD * 2);
    cuda::tma::load_tile<kRows, kD>(cuda::mma::shared_address(tile), &map, bar, head, row, batch);
  }
  cuda::tma::wait_or_trap(bar, 0);
  for (int i = int(threadIdx.x); i < kRows * kD; i += kThreads)
    out[i] = __bfloat162float(
        *reinterpret_cast<const __nv_bfloat16*>(tile + cuda::wgmma::swizzled_offset<kRows>(i / kD, i % kD)));
#else
  __trap();
#endif
}

template <int kD>
cudaError_t launch(const void* src, int64_t batch, int64_t rows, int64_t heads, int head, int64_t row,
                   int batch_index, float* tile) {
  const size_t shared_bytes = 1024 + kRows * kD * 2 + 8;
  cudaError_t e = cudaFuncSetAttribute(probe_tma_kernel<kD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(shared_bytes));
  if (e != cudaSuccess) return e;
  const CUtensorMap map = cuda::tma::tile_map(src, true, batch, rows, heads, kD, kRows);
  probe_tma_kernel<kD><<<1, kThreads, shared_bytes>>>(map, head, int(row), batch_index, tile);
  e = cudaGetLastError();
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

}  // namespace

cudaError_t tma_probe(const void* src, int64_t batch, int64_t rows, int64_t heads, int d, int head,
                      int64_t row, int batch_index, float* tile) {
  return d == 64 ? launch<64>(src, batch, rows, heads, head, row, batch_index, tile)
                 : launch<128>(src, batch, rows, heads, head, row, batch_index, tile);
}

}  // namespace minictx::test
