#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "device/cuda/attention_args.hpp"
#include "device/cuda/precision.hpp"
#include "device/cuda/tile_sizes.hpp"

// The tensor-core flash attention kernels for bf16/fp16 operands and head dims 64 and 128,
// one family per architecture (kernel_families.hpp picks): sm80 (FlashAttention-2's
// partitioning on mma.sync m16n8k16, sm_80 and later) and sm90 (the TMA-fed forward and
// the backward on warpgroup MMA, sm_90a). Same block contract as the SIMT kernels of
// attention_simt.hpp (global-position causal mask at any offset, padding keys, GQA, merge
// into the running O/LSE, backward from the final O/LSE), but the operands q, k, v, dout
// are compact 16-bit copies: [B, q_len, heads, D] and [B, k_len, kv_heads, D], rows
// starting at the block's first row. o, lse, dq, dk, dv, delta stay the fp32 tensors of
// AttnArgs. Tiles: tile_sizes.hpp.
namespace minictx::cuda {

// Whether the flash kernels serve this head dim and precision on a GPU of this compute
// capability and opt-in shared memory per block; otherwise the SIMT kernels do.
bool flash_serves(int head_dim, Precision, int sm_major, int shared_bytes_optin);
// Dynamic shared memory per block of the sm80 kernels for a served head dim.
size_t flash_fwd_sm80_shared_bytes(int head_dim);
size_t flash_bwd_sm80_shared_bytes(int head_dim);

void flash_fwd_sm80(const AttnArgs&, const void* q, const void* k, const void* v, float* o, float* lse,
                    cudaStream_t);
void flash_bwd_sm80(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
                    const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t);
// The *_documents launchers: the same kernels masking packed documents themselves (their
// kDocs instantiations), from the document spans after the position arrays (AttnArgs):
// a block walks only the tiles of its rows' documents. Opt-in; not yet run on a GPU.
void flash_fwd_sm80_documents(const AttnArgs&, const void* q, const void* k, const void* v, float* o,
                              float* lse, cudaStream_t);
void flash_bwd_sm80_documents(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
                              const float* lse, const float* delta, float* dq, float* dk, float* dv,
                              cudaStream_t);

// Whether the sm90 kernels (flash_fwd_sm90.cu, flash_bwd_sm90.cu) can run here: the build
// holds sm_90a code (CUDA architecture 90a) and the GPU is compute capability 9.0.
bool flash_sm90_available(int sm_major, int sm_minor);
void flash_fwd_sm90(const AttnArgs&, const void* q, const void* k, const void* v, float* o, float* lse,
                    cudaStream_t);
// A dK/dV pass, then a dQ pass.
void flash_bwd_sm90(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
                    const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t);
// The backward in one kernel (flash_bwd_sm90_onepass.cu): dQ formed beside dK and dV and
// added to dq by bulk reduce-adds, no second pass. Opt-in; not yet run on a GPU.
void flash_bwd_sm90_onepass(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
                            const float* lse, const float* delta, float* dq, float* dk, float* dv,
                            cudaStream_t);
void flash_fwd_sm90_documents(const AttnArgs&, const void* q, const void* k, const void* v, float* o,
                              float* lse, cudaStream_t);
void flash_bwd_sm90_documents(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
                              const float* lse, const float* delta, float* dq, float* dk, float* dv,
                              cudaStream_t);

// The launchers' one dispatch idiom: f is called with the run-time choice as a
// compile-time constant (std::integral_constant), for launchers templated on it.
// for_head_dim: the served head dim (64 or 128); for_operand: whether the 16-bit
// operands are bf16 (else fp16); for_flash_shape: both, for a call's AttnArgs.
template <class F>
decltype(auto) for_head_dim(int head_dim, F&& f) {
  if (head_dim == 64) return f(std::integral_constant<int, 64>{});
  return f(std::integral_constant<int, 128>{});
}
template <class F>
decltype(auto) for_operand(Precision p, F&& f) {
  if (p == Precision::bf16) return f(std::true_type{});
  return f(std::false_type{});
}
template <class F>
void for_flash_shape(const AttnArgs& a, F&& f) {
  for_head_dim(a.head_dim, [&](auto d) { for_operand(a.precision, [&](auto bf16) { f(d, bf16); }); });
}

// dst[b, r, :] = src[b, begin + r, :] for r < len, rounded to 16 bits (bf16 or fp16):
// src has src_rows rows of `width` floats per batch, dst len rows.
void to_16bit(const float* src, int batch, int64_t src_rows, int64_t begin, int64_t len, int64_t width,
              Precision, void* dst, cudaStream_t);

}  // namespace minictx::cuda
