#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "device/cuda/attention_kernels.hpp"

// What the forward and backward flash kernels share: the mask and the search for the
// visible range of a block (positions increase with the row: device/device.hpp).
namespace minictx::cuda::flash {

constexpr int kWarp = 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;
constexpr int64_t kNoPosition = INT64_MAX;  // rows past the block's end: never visible

// Rows of a tile of at most `cap` rows with `left` rows remaining.
__device__ __forceinline__ int tile_rows(int64_t left, int cap) { return left < cap ? int(left) : cap; }

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

}  // namespace minictx::cuda::flash
