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
// arithmetic on the table's values. [rows, width] blocks of rows dst_ld and src_ld
// elements apart: dst and src may be the same block, or dst one of another dtype (the
// rotation fused into the conversion), or of another tensor's columns (a packed q|k|v
// split, its gradient joined).
void rope_apply(Out dst, int64_t dst_ld, In src, int64_t src_ld, int64_t rows, int64_t width, int heads,
                const float2* table, int64_t seq, bool inverse, cudaStream_t);

// SwiGLU on gate_up = [a | u] ([rows, 2f]): m = silu(a) ∘ u ([rows, f]); the backward
// writes [da | du] into d_gate_up. The halves are read in place (swiglu_math.cuh).
void swiglu_fwd_packed(In gate_up, Out m, int64_t rows, int64_t f, cudaStream_t);
void swiglu_bwd_packed(In gate_up, In dm, Out d_gate_up, int64_t rows, int64_t f, cudaStream_t);

}  // namespace minictx::cuda
