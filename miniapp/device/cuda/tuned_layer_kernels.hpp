#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "device/cuda/precision.hpp"

// The tuned layer kernels (run.layer_kernels: tuned; docs/nvidia.md, "Layer kernels"):
// launchers with the semantics of their standard twins in elementwise_kernels.hpp,
// pointers in device memory, fp32 arithmetic.
namespace minictx::cuda {

// RMSNorm's gain gradient dg[j] += Σ_r dy[r, j] · x[r, j] · rstd[r] in two stages: blocks
// of column tiles × row chunks write fp32 partial sums to `partials`, then one pass adds
// each column's partials in chunk order. No atomics: the same inputs give the same bits.
// `partials` holds rmsnorm_dgamma_chunks(rows) × cols floats.
int64_t rmsnorm_dgamma_chunks(int64_t rows);
void rmsnorm_dgamma(In x, const float* rstd, In dy, int64_t rows, int64_t cols, float* partials, Out dg,
                    cudaStream_t);

// RoPE's rotations of `seq` positions for a head dim: table[p · (head_dim/2) + i] =
// (cos, sin) of positions[p] · theta^(−2i/head_dim), computed in fp64 and stored in fp32.
void rope_table(float2* table, const int64_t* positions, int64_t seq, int head_dim, double theta,
                cudaStream_t);
// dst = src rotated by the table (row r at position r % seq), back where inverse: fp32
// arithmetic on the table's values. dst and src may be the same tensor, or dst a tensor of
// another dtype (the rotation fused into the conversion); [rows, width] both.
void rope_apply(Out dst, In src, int64_t rows, int64_t width, int heads, const float2* table, int64_t seq,
                bool inverse, cudaStream_t);

}  // namespace minictx::cuda
