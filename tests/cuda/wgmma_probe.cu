// Single warpgroup products through wgmma_fragments.cuh, for test_cuda_device: each of the
// operand forms the Hopper kernels use, through their descriptor helpers, at the
// shapes they use, in bf16 and fp16, on small integer matrices (exact in 16 bits and
// fp32), so that a wrong descriptor or swizzle convention shows up on its own, named,
// before the attention kernel built on it is tested.
#include <type_traits>

#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/wgmma_fragments.cuh"
#include "tests/cuda/wgmma_probe.hpp"

namespace minictx::test {
namespace {

constexpr int kM = 64, kThreads = 128;

template <bool kBf16>
using Operand = typename cuda::mma::Operand<kBf16>::type;

// Writes the warpgroup's m64nN accumulator as the first N columns of a row-major matrix
// of `stride` columns.
template <int kN>
__device__ void store_accumulator(const float (&d)[kN / 8][4], float* out, int stride) {
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, group = lane / 4, tig = lane % 4;
  for (int n = 0; n < kN / 8; ++n)
    for (int e = 0; e < 4; ++e)
      out[(warp * 16 + group + (e / 2) * 8) * stride + n * 8 + 2 * tig + e % 2] = d[n][e];
}

// Waits for the warpgroup's products and writes the accumulator out.
template <int kN>
__device__ void finish(float (&d)[kN / 8][4], float* out, int stride = kN) {
  cuda::wgmma::commit();
  cuda::wgmma::wait<0>();
  cuda::wgmma::fence_operands(d);
  store_accumulator<kN>(d, out, stride);
}

// Copies a row-major [rows, cols] 16-bit matrix into the swizzled layout at `tile`.
template <int kRows, class T>
__device__ void store_swizzled(unsigned char* tile, const T* m, int cols) {
  for (int i = int(threadIdx.x); i < kRows * cols; i += kThreads)
    *reinterpret_cast<T*>(tile + cuda::wgmma::swizzled_offset<kRows>(i / cols, i % cols)) = m[i];
}

// D [64, kN] = A [64, kK] · B [kN, kK]ᵀ, both operands K-major in shared memory, through
// the kernels' descriptors (wgmma::k_major).
template <int kN, int kK, bool kBf16>
__global__ void probe_ss_kernel(const Operand<kBf16>* a, const Operand<kBf16>* b, float* d_out) {
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
  for (int kc = 0; kc < kK / 16; ++kc)
    cuda::wgmma::mma_ss<kN, kBf16>(d, cuda::wgmma::k_major<kM>(cuda::mma::shared_address(tiles), kc),
                                   cuda::wgmma::k_major<kN>(cuda::mma::shared_address(bs), kc));
  finish<kN>(d, d_out);
#else
  __trap();
#endif
}

// D [64, kN] = P [64, kK] (registers) · V [kK, kN] (MN-major in shared memory, through
// the kernels' descriptor, wgmma::mn_major).
template <int kN, int kK, bool kBf16>
__global__ void probe_rs_kernel(const Operand<kBf16>* p, const Operand<kBf16>* v, float* d_out) {
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
      a[kc][r] = cuda::mma::pack<kBf16>(float(p[row * kK + col]), float(p[row * kK + col + 1]));
    }
  float d[kN / 8][4] = {};
  cuda::wgmma::fence_operands(d);
  cuda::wgmma::fence();
  for (int kc = 0; kc < kK / 16; ++kc)
    cuda::wgmma::mma_rs<kN, kBf16>(d, a[kc], cuda::wgmma::mn_major<kK>(cuda::mma::shared_address(vs), kc));
  finish<kN>(d, d_out);
#else
  __trap();
#endif
}

// D [64, kN] = A [64, kK] (K-major) · B [kK, kN] (MN-major), both in shared memory, as two
// products of kN / 2 columns, each B descriptor starting at its half's first column of
// the tile (wgmma::mn_major with a column offset), as the one-pass backward's dQ shares.
template <int kN, int kK, bool kBf16>
__global__ void probe_ss_halves_kernel(const Operand<kBf16>* a, const Operand<kBf16>* b, float* d_out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kHalf = kN / 2;
  extern __shared__ unsigned char shared[];
  unsigned char* tiles = cuda::wgmma::aligned_tiles(shared);
  unsigned char* bs = tiles + kM * kK * 2;
  store_swizzled<kM>(tiles, a, kK);
  store_swizzled<kK>(bs, b, kN);
  cuda::wgmma::fence_shared_for_async();
  __syncthreads();
  for (int half = 0; half < 2; ++half) {
    const uint32_t columns =
        cuda::mma::shared_address(bs) + uint32_t(cuda::wgmma::swizzled_offset<kK>(0, half * kHalf));
    float d[kHalf / 8][4] = {};
    cuda::wgmma::fence_operands(d);
    cuda::wgmma::fence();
    for (int kc = 0; kc < kK / 16; ++kc)
      cuda::wgmma::mma_ss<kHalf, kBf16, true>(d,
                                              cuda::wgmma::k_major<kM>(cuda::mma::shared_address(tiles), kc),
                                              cuda::wgmma::mn_major<kK>(columns, kc));
    finish<kHalf>(d, d_out + half * kHalf, kN);
  }
#else
  __trap();
#endif
}

template <class T>
cudaError_t launch(void (*kernel)(const T*, const T*, float*), size_t shared_bytes, const void* x,
                   const void* y, float* d) {
  cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes));
  if (e != cudaSuccess) return e;
  kernel<<<1, kThreads, shared_bytes>>>(static_cast<const T*>(x), static_cast<const T*>(y), d);
  e = cudaGetLastError();
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

// f(v as a compile-time constant) where v is one of kValues; cudaErrorInvalidValue otherwise.
template <int... kValues, class F>
cudaError_t with_one_of(int v, F&& f) {
  cudaError_t e = cudaErrorInvalidValue;
  (void)((v == kValues && (e = f(std::integral_constant<int, kValues>{}), true)) || ...);
  return e;
}

template <bool kBf16>
cudaError_t probe(WgmmaForm form, int n, int k, const void* x, const void* y, float* d) {
  if (form == WgmmaForm::shared_mn_major_halves)
    return with_one_of<64, 128>(n, [&](auto kn) {
      return with_one_of<128>(k, [&](auto kk) {
        constexpr int kN = decltype(kn)::value, kK = decltype(kk)::value;
        return launch(probe_ss_halves_kernel<kN, kK, kBf16>, 1024 + (kM + kN) * kK * 2, x, y, d);
      });
    });
  if (form == WgmmaForm::shared_k_major)
    return with_one_of<32, 64, 128>(n, [&](auto kn) {
      return with_one_of<64, 128>(k, [&](auto kk) {
        constexpr int kN = decltype(kn)::value, kK = decltype(kk)::value;
        return launch(probe_ss_kernel<kN, kK, kBf16>, 1024 + (kM + kN) * kK * 2, x, y, d);
      });
    });
  return with_one_of<64, 128>(n, [&](auto kn) {
    return with_one_of<32, 64, 128>(k, [&](auto kk) {
      constexpr int kN = decltype(kn)::value, kK = decltype(kk)::value;
      return launch(probe_rs_kernel<kN, kK, kBf16>, 1024 + kK * kN * 2, x, y, d);
    });
  });
}

}  // namespace

cudaError_t wgmma_probe(WgmmaForm form, bool bf16, int n, int k, const void* x, const void* y, float* d) {
  return bf16 ? probe<true>(form, n, k, x, y, d) : probe<false>(form, n, k, x, y, d);
}

}  // namespace minictx::test
