#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "device/cuda/precision.hpp"

// The run's storage dtype as the kernels see it: operands are rounded to it when they
// are loaded (the values a bf16/fp16 tensor would hold), arithmetic stays fp32.
namespace minictx::cuda {

__device__ __forceinline__ float round_to(float x, Precision p) {
  if (p == Precision::bf16) return __bfloat162float(__float2bfloat16(x));
  if (p == Precision::f16) return __half2float(__float2half(x));
  return x;
}

}  // namespace minictx::cuda
