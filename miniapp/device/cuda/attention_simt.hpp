#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "device/cuda/attention_args.hpp"
#include "device/cuda/precision.hpp"

// Launchers of the SIMT CUDA attention block kernels (flash-style: q/k tiles in shared
// memory, online softmax, fp32 FMA accumulation, never an S×S matrix): the simple
// reference path, serving fp32 and the head dims the tensor-core kernels of
// flash_attention.hpp do not (up to kMaxHeadDim, tile_sizes.hpp); and the row passes
// every path shares (delta, the LSE merge). Pointers are device memory; the semantics are
// the Device interface's (device/device.hpp).
namespace minictx::cuda {

void attn_fwd(const AttnArgs&, const float* q, const float* k, const float* v, float* o, float* lse,
              cudaStream_t);
void attn_bwd(const AttnArgs&, const float* q, const float* k, const float* v, const float* dout,
              const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t);
// delta[b, h, i] = Σ_c o·dout over the head's columns; rows = per-batch rows of o; o and
// dout of any dtype.
void attn_bwd_delta(int batch, int heads, int head_dim, int64_t rows, In o, In dout, float* delta,
                    cudaStream_t);
void lse_merge(int batch, int heads, int head_dim, int64_t rows, float* o, float* lse, const float* o_b,
               const float* lse_b, cudaStream_t);

}  // namespace minictx::cuda
