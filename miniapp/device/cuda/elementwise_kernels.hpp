#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "device/cuda/precision.hpp"

// Launchers of the CUDA element-wise and row-wise kernels; semantics as the Device
// interface's (device/device.hpp), pointers in device memory, fp32 arithmetic.
namespace minictx::cuda {

// Tensors of any precision, converted (round to nearest even) into the destination's:
// dst[r·dst_ld + c] = src[r·src_ld + c] for r < rows, c < cols; p[i] = value; y += x.
void convert_rows(void* dst, Precision dst_type, int64_t dst_ld, const void* src, Precision src_type,
                  int64_t src_ld, int64_t rows, int64_t cols, cudaStream_t);
void fill_typed(void* p, Precision type, int64_t n, float value, cudaStream_t);
void add_typed(void* y, Precision y_type, const void* x, Precision x_type, int64_t n, cudaStream_t);
void add(float* y, const float* x, int64_t n, cudaStream_t);
// The model's kernels take tensors of any precision (In, Out: a device pointer and its
// element type), read them as fp32 and round what they write to the tensor's type.
// *result (device, zeroed by the caller) += Σ a·b in fp64.
void dot(In a, In b, int64_t n, double* result, cudaStream_t);
void rmsnorm_fwd(In x, In g, double eps, int64_t rows, int64_t cols, Out y, float* rstd, cudaStream_t);
void rmsnorm_bwd(In x, In g, const float* rstd, In dy, int64_t rows, int64_t cols, Out dx, Out dg,
                 cudaStream_t);
// rmsnorm_bwd's dx alone (the tuned layer kernels reduce dg in tuned_layer_kernels.hpp).
void rmsnorm_bwd_dx(In x, In g, const float* rstd, In dy, int64_t rows, int64_t cols, Out dx, cudaStream_t);
// positions: device array of `seq` positions, row r uses positions[r % seq].
void rope(Out x, int64_t rows, int64_t width, int heads, const int64_t* positions, int64_t seq, double theta,
          bool inverse, cudaStream_t);
void swiglu_fwd(In a, In u, Out m, int64_t n, cudaStream_t);
void swiglu_bwd(In a, In u, In dm, Out da, Out du, int64_t n, cudaStream_t);
// out[i] = x[i] in the 16-bit type of `p` (bf16 or fp16): GEMM operands.
void to_half(const float* x, void* out, int64_t n, Precision p, cudaStream_t);

}  // namespace minictx::cuda
