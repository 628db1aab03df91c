#include <algorithm>

#include "device/cuda/cuda_footprint.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/mma_fragments.cuh"

// Which attention kernel serves a call, and the 16-bit operand copies the flash kernels read.
namespace minictx::cuda {
namespace {

template <bool kBf16>
__global__ void to_16bit_kernel(const float4* __restrict__ src, int64_t src_rows, int64_t begin, int64_t len,
                                int64_t width4, int64_t total4, uint2* dst) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total4;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % width4, r = (i / width4) % len, b = i / (width4 * len);
    const float4 x = src[(b * src_rows + begin + r) * width4 + c];
    dst[i] = uint2{mma::pack<kBf16>(x.x, x.y), mma::pack<kBf16>(x.z, x.w)};
  }
}

}  // namespace

bool flash_serves(int head_dim, Precision p, int sm_major, int shared_bytes_optin) {
  if (p == Precision::f32 || sm_major < 8 || !flash_head_dim(head_dim)) return false;
  return size_t(shared_bytes_optin) >=
         std::max(flash_fwd_sm80_shared_bytes(head_dim), flash_bwd_sm80_shared_bytes(head_dim));
}

bool flash_sm90_available(int sm_major, int sm_minor) {
#ifdef MINICTX_HAVE_SM90A
  return sm_major == 9 && sm_minor == 0;
#else
  (void)sm_major;
  (void)sm_minor;
  return false;
#endif
}

void to_16bit(const float* src, int batch, int64_t src_rows, int64_t begin, int64_t len, int64_t width,
              Precision p, void* dst, cudaStream_t stream) {
  const int64_t width4 = width / 4, total4 = int64_t(batch) * len * width4;
  if (total4 == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>((total4 + 255) / 256, 65535));
  auto* s = reinterpret_cast<const float4*>(src);
  auto* d = static_cast<uint2*>(dst);
  for_operand(p, [&](auto bf16) {
    to_16bit_kernel<decltype(bf16)::value>
        <<<blocks, 256, 0, stream>>>(s, src_rows, begin, len, width4, total4, d);
  });
}

}  // namespace minictx::cuda
