#pragma once
#include <cstdint>
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace minictx::cuda {

// The run's dtype as the CUDA kernels see it (device/cuda/precision.cuh rounds to it).
enum class Precision : int { f32 = 0, bf16 = 1, f16 = 2 };

#ifdef __CUDACC__
// An element of a tensor of the given type, read and written as fp32.
__device__ __forceinline__ float load_element(const void* p, Precision t, int64_t i) {
  if (t == Precision::bf16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  if (t == Precision::f16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
__device__ __forceinline__ void store_element(void* p, Precision t, int64_t i, float v) {
  if (t == Precision::bf16)
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
  else if (t == Precision::f16)
    static_cast<__half*>(p)[i] = __float2half(v);
  else
    static_cast<float*>(p)[i] = v;
}
#endif

// A tensor's device pointer and element type, as the kernels that take any dtype get it:
// they read elements as fp32 and round what they write to the tensor's type.
struct In {
  const void* p;
  Precision t;
#ifdef __CUDACC__
  __device__ float operator[](int64_t i) const { return load_element(p, t, i); }
#endif
};
struct Out {
  void* p;
  Precision t;
#ifdef __CUDACC__
  __device__ float operator[](int64_t i) const { return load_element(p, t, i); }
  __device__ void set(int64_t i, float v) const { store_element(p, t, i, v); }
#endif
};

}  // namespace minictx::cuda
