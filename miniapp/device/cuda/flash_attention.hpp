#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "device/cuda/attention_kernels.hpp"

// Tensor-core flash attention (FlashAttention-2's partitioning on mma.sync m16n8k16, sm_80
// and later) for bf16/fp16 operands and head dims 64 and 128. Same block contract as the
// SIMT kernels of attention_kernels.hpp (global-position causal mask at any offset,
// padding keys, GQA, merge into the running O/LSE, backward from the final O/LSE), but the
// operands q, k, v, dout are compact 16-bit copies: [B, q_len, heads, D] and
// [B, k_len, kv_heads, D], rows starting at the block's first row. o, lse, dq, dk, dv,
// delta stay the fp32 tensors of AttnArgs.
namespace minictx::cuda {

// Tiles of each kernel: query rows × key rows per thread block. A forward warp owns 32
// query rows (two m-tiles share each K/V fragment), a backward warp 16 keys (dK/dV pass)
// or 16 queries (dQ pass): fwd_q / 32, bwd_k / 16 and dq_q / 16 are the warps of a block.
// Chosen on an H100 (docs/performance.md, "One GPU against its GEMM limit"; every tile: docs/nvidia.md,
// "Tiles").
struct FlashTiles {
  int fwd_q, fwd_k;  // forward: a block owns fwd_q queries and walks key tiles of fwd_k
  int bwd_q, bwd_k;  // dK/dV: a block owns bwd_k keys and walks query tiles of bwd_q
  int dq_q, dq_k;    // dQ: a block owns dq_q queries and walks key tiles of dq_k
};
constexpr FlashTiles kFlashTilesD64{128, 64, 64, 128, 64, 64};
constexpr FlashTiles kFlashTilesD128{128, 32, 32, 128, 64, 32};

// Whether the flash kernels serve this head dim and precision on a GPU of this compute
// capability and opt-in shared memory per block; otherwise the SIMT kernels do.
bool flash_serves(int head_dim, Precision, int sm_major, int shared_bytes_optin);
FlashTiles flash_tiles(int head_dim);
// Dynamic shared memory per block of each kernel for a served head dim.
size_t flash_fwd_shared_bytes(int head_dim);
size_t flash_bwd_shared_bytes(int head_dim);

void flash_fwd(const AttnArgs&, const void* q, const void* k, const void* v, float* o, float* lse,
               cudaStream_t);
void flash_bwd(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
               const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t);

// Calls f(head dim, bf16) with the call's served head dim (64 or 128) and operand type as
// compile-time constants (std::integral_constant), for launchers templated on both.
template <class F>
void for_flash_shape(const AttnArgs& a, F&& f) {
  using D64 = std::integral_constant<int, 64>;
  using D128 = std::integral_constant<int, 128>;
  const bool bf16 = a.precision == Precision::bf16;
  if (a.head_dim == 64) {
    if (bf16)
      f(D64{}, std::true_type{});
    else
      f(D64{}, std::false_type{});
  } else {
    if (bf16)
      f(D128{}, std::true_type{});
    else
      f(D128{}, std::false_type{});
  }
}

// Whether Hopper's kernels (flash_fwd_tma.cu, flash_bwd_wgmma.cu) can run here: the build
// holds sm_90a code (CUDA architecture 90a) and the GPU is compute capability 9.0.
bool flash_wgmma_available(int sm_major, int sm_minor);
// The TMA-fed forward on warpgroup MMA, and its tiles (the other passes' are flash_tiles').
FlashTiles flash_fwd_tma_tiles(int head_dim);
void flash_fwd_tma(const AttnArgs&, const void* q, const void* k, const void* v, float* o, float* lse,
                   cudaStream_t);
// The backward on warpgroup MMA (a dK/dV pass, then a dQ pass), and its tiles.
FlashTiles flash_bwd_wgmma_tiles(int head_dim);
void flash_bwd_wgmma(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
                     const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t);

// dst[b, r, :] = src[b, begin + r, :] for r < len, rounded to 16 bits (bf16 or fp16):
// src has src_rows rows of `width` floats per batch, dst len rows.
void to_16bit(const float* src, int batch, int64_t src_rows, int64_t begin, int64_t len, int64_t width,
              Precision, void* dst, cudaStream_t);

}  // namespace minictx::cuda
