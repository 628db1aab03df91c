#pragma once
#include <cstdint>

#include "device/cuda/precision.hpp"

namespace minictx::cuda {

// One (q block, k block) pair of a [B, L, heads, D] layout, as every attention kernel
// (SIMT and flash) takes it.
struct AttnArgs {
  int batch, heads, kv_heads, head_dim;
  bool causal;
  int64_t real_len;
  float scale;
  Precision precision;
  int64_t q_rows, k_rows;  // rows per batch of q and of k, v
  int64_t o_rows;          // rows per batch of o (forward) or of dout, dq (backward)
  int64_t dk_rows;         // rows per batch of dk, dv (backward)
  int64_t vec_len;         // per-(b, h) length of lse / delta
  int64_t q_begin, q_len, k_begin, k_len;
  const int64_t* q_pos;  // device, q_len positions
  const int64_t* k_pos;  // device, k_len positions
};

}  // namespace minictx::cuda
