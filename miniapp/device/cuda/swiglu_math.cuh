#pragma once

// SwiGLU's arithmetic for one element, shared by the standard kernels (separate a and u)
// and the tuned ones (a and u side by side in one GEMM's output), so that both compute
// the same fp32 values.
namespace minictx::cuda {

__device__ __forceinline__ float sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }

// m = silu(a) · u.
__device__ __forceinline__ float swiglu(float a, float u) { return a * sigmoid(a) * u; }

// dm's share of da and du.
__device__ __forceinline__ void swiglu_grad(float a, float u, float dm, float& da, float& du) {
  const float sig = sigmoid(a);
  du = dm * a * sig;
  da = dm * u * sig * (1.0f + a * (1.0f - sig));
}

}  // namespace minictx::cuda
