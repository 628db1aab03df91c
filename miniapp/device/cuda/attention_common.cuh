#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device/cuda/attention_args.hpp"

// What every attention kernel (SIMT and flash) shares: the mask by global position, the
// overflow-free LSE merge, and the search for a block's visible range (positions
// increase with the row: device/device.hpp).
namespace minictx::cuda::attn {

constexpr int kWarp = 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;
constexpr int64_t kNoPosition = INT64_MAX;  // rows past the block's end: never visible

// Rows of a tile of at most `cap` rows with `left` rows remaining.
__device__ __forceinline__ int tile_rows(int64_t left, int cap) { return left < cap ? int(left) : cap; }

__device__ __forceinline__ float log_sigmoid(float x) {
  return x > 0 ? -log1pf(expf(-x)) : x - log1pf(expf(x));
}

// The overflow-free LSE merge of (o_b, lse_b) into (o, lse), lse_b finite:
// o ← o − σ(lse_b − lse)(o − o_b), lse ← log(e^lse + e^lse_b); an empty row takes o_b.
__device__ __forceinline__ float merge_weight(float lse, float lse_b) {
  return 1.0f / (1.0f + expf(lse - lse_b));
}
__device__ __forceinline__ float merged(float o, float o_b, float lse, float w) {
  return lse == -INFINITY ? o_b : o - w * (o - o_b);
}
__device__ __forceinline__ float merged_lse(float lse, float lse_b) {
  const float m = lse - log_sigmoid(lse - lse_b);  // evaluated, then selected: no branch
  return lse == -INFINITY ? lse_b : m;
}

__device__ __forceinline__ bool visible(const AttnArgs& a, int64_t key_pos, int64_t query_pos) {
  return key_pos < a.real_len && (!a.causal || key_pos <= query_pos);
}

// First index i in [0, n) with pos[i] >= value (n when none): pos is increasing.
__device__ __forceinline__ int64_t lower_bound(const int64_t* pos, int64_t n, int64_t value) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (pos[mid] < value)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Keys [0, end) can be visible to a query at position ≤ last_query: later keys are padding
// or, causally, in the future of every query of the tile.
__device__ __forceinline__ int64_t visible_keys_end(const AttnArgs& a, int64_t last_query) {
  const int64_t limit = a.causal && last_query < a.real_len ? last_query + 1 : a.real_len;
  return lower_bound(a.k_pos, a.k_len, limit);
}

}  // namespace minictx::cuda::attn
