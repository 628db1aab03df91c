#pragma once
#include <cstdint>

#include "device/cuda/precision.hpp"

namespace minictx::cuda {

// The positions [start, end) of the packed document that holds a position; padding
// (positions >= real_len) is [real_len, real_len), in no document.
struct DocSpan {
  int64_t start, end;
};

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
  // Device, q_len and k_len positions. For the kernels that mask packed documents (the
  // *_documents launchers of flash_attention.hpp), each array is followed by the
  // document spans of its rows, [batch, len] DocSpans: no field is added, so that the
  // other kernels take exactly the arguments (and compile to the code) they did.
  const int64_t* q_pos;
  const int64_t* k_pos;
};

}  // namespace minictx::cuda
