// Single warpgroup products through wgmma_fragments.cuh, for test_cuda_device: each of the
// two operand forms the Hopper forward kernel uses, on small integer matrices (exact in
// bf16 and fp32), so that a wrong descriptor or swizzle convention shows up on its own,
// named, before the attention kernel built on it is tested.
#include <cuda_bf16.h>

#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/wgmma_fragments.cuh"
#include "tests/wgmma_probe.hpp"

namespace minictx::test {
namespace {

constexpr int kM = 64, kThreads = 128;

// Writes the warpgroup's m64nN accumulator as a row-major [64, N] matrix.
template <int kN>
__device__ void store_accumulator(const float (&d)[kN / 8][4], float* out) {
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, group = lane / 4, tig = lane % 4;
  for (int n = 0; n < kN / 8; ++n)
    for (int e = 0; e < 4; ++e)
      out[(warp * 16 + group + (e / 2) * 8) * kN + n * 8 + 2 * tig + e % 2] = d[n][e];
}

// Waits for the warpgroup's products and writes the accumulator out.
template <int kN>
__device__ void finish(float (&d)[kN / 8][4], float* out) {
  cuda::wgmma::commit();
  cuda::wgmma::wait<0>();
  cuda::wgmma::fence_operands(d);
  store_accumulator<kN>(d, out);
}

// Copies a row-major [rows, cols] bf16 matrix into the swizzled layout at `tile`.
template <int kRows>
__device__ void store_swizzled(unsigned char* tile, const __nv_bfloat16* m, int cols) {
  for (int i = int(threadIdx.x); i < kRows * cols; i += kThreads)
    *reinterpret_cast<__nv_bfloat16*>(tile + cuda::wgmma::swizzled_offset<kRows>(i / cols, i % cols)) = m[i];
}

// D [64, kN] = A [64, kK] · B [kN, kK]ᵀ, both operands K-major in shared memory.
template <int kN, int kK>
__global__ void probe_ss_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d_out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char shared[];
  unsigned char* tiles = cuda::wgmma::aligned_tiles(shared);
  unsigned char* bs = tiles + kM * kK * 2;
  store_swizzled<kM>(tiles, a, kK);
  store_swizzled<kN>(bs, b, kK);
  cuda::wgmma::fence_shared_for_async();
  __syncthreads();
  float d[kN / 8][4] = {};
  cuda::wgmma::fence_operands(d);
  cuda::wgmma::fence();
  for (int kc = 0; kc < kK / 16; ++kc) {
    const uint64_t da = cuda::wgmma::descriptor(
        cuda::mma::shared_address(tiles + cuda::wgmma::swizzled_offset<kM>(0, kc * 16)), 16, 1024);
    const uint64_t db = cuda::wgmma::descriptor(
        cuda::mma::shared_address(bs + cuda::wgmma::swizzled_offset<kN>(0, kc * 16)), 16, 1024);
    cuda::wgmma::mma_ss<kN, true>(d, da, db);
  }
  finish<kN>(d, d_out);
#else
  __trap();
#endif
}

// D [64, kN] = P [64, kK] (registers) · V [kK, kN] (MN-major in shared memory).
template <int kN, int kK>
__global__ void probe_rs_kernel(const __nv_bfloat16* p, const __nv_bfloat16* v, float* d_out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char shared[];
  unsigned char* vs = cuda::wgmma::aligned_tiles(shared);
  store_swizzled<kK>(vs, v, kN);
  cuda::wgmma::fence_shared_for_async();
  __syncthreads();
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, group = lane / 4, tig = lane % 4;
  // The mma.sync A fragment of rows 16·warp.. and columns 16·kc..: (group, 2t), (group + 8,
  // 2t), (group, 2t + 8), (group + 8, 2t + 8), each with its right neighbour.
  uint32_t a[kK / 16][4];
  for (int kc = 0; kc < kK / 16; ++kc)
    for (int r = 0; r < 4; ++r) {
      const int row = warp * 16 + group + (r % 2) * 8, col = kc * 16 + 2 * tig + (r / 2) * 8;
      a[kc][r] =
          cuda::mma::pack<true>(__bfloat162float(p[row * kK + col]), __bfloat162float(p[row * kK + col + 1]));
    }
  float d[kN / 8][4] = {};
  cuda::wgmma::fence_operands(d);
  cuda::wgmma::fence();
  for (int kc = 0; kc < kK / 16; ++kc) {
    const uint64_t db = cuda::wgmma::descriptor(
        cuda::mma::shared_address(vs + cuda::wgmma::swizzled_offset<kK>(kc * 16, 0)), kK * 128, 1024);
    cuda::wgmma::mma_rs<kN, true>(d, a[kc], db);
  }
  finish<kN>(d, d_out);
#else
  __trap();
#endif
}

template <class Kernel>
cudaError_t launch(Kernel kernel, size_t shared_bytes, const void* x, const void* y, float* d) {
  cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes));
  if (e != cudaSuccess) return e;
  kernel<<<1, kThreads, shared_bytes>>>(static_cast<const __nv_bfloat16*>(x),
                                        static_cast<const __nv_bfloat16*>(y), d);
  e = cudaGetLastError();
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

}  // namespace

cudaError_t wgmma_probe(WgmmaForm form, int n, const void* x, const void* y, float* d) {
  constexpr int kK = 128;  // two slabs of 64 columns: crosses a slab boundary
  if (form == WgmmaForm::shared_k_major) {
    if (n == 32) return launch(probe_ss_kernel<32, kK>, 1024 + (kM + 32) * kK * 2, x, y, d);
    return n == 64 ? launch(probe_ss_kernel<64, kK>, 1024 + (kM + 64) * kK * 2, x, y, d)
                   : launch(probe_ss_kernel<128, kK>, 1024 + (kM + 128) * kK * 2, x, y, d);
  }
  return n == 64 ? launch(probe_rs_kernel<64, kK>, 1024 + kK * 64 * 2, x, y, d)
                 : launch(probe_rs_kernel<128, kK>, 1024 + kK * 128 * 2, x, y, d);
}

}  // namespace minictx::test
