#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "device/cuda/cuda_footprint.hpp"

// Position arrays kept on the device (run.layer_kernels: tuned): each distinct array is
// uploaded once, not copied from pageable memory at every call, and RoPE's rotations of
// an array (cos and sin of every position and pair, per head dim and theta) are computed
// once beside it. An array is found by its content, compared in full, so a changed array
// (another shard, positions that restart in each packed document) is a new entry and
// never an old one's values. Entries are never written after their upload, so kernels
// still reading one need no wait; the least recently used goes when kMaxEntries are held,
// its memory back to the caller's cache, which reuses it in stream order.
namespace minictx::cuda {

class PositionCache {
 public:
  // acquire(bytes) gives device memory, release(p, bytes) takes it back.
  PositionCache(cudaStream_t stream, std::function<void*(int64_t)> acquire,
                std::function<void(void*, int64_t)> release);
  ~PositionCache() { clear(); }
  PositionCache(const PositionCache&) = delete;
  PositionCache& operator=(const PositionCache&) = delete;

  // The device copy of host[0, n).
  const int64_t* positions(const int64_t* host, int64_t n);
  // (cos, sin) of each position of host[0, n) and rotation pair of head_dim at theta:
  // [n, head_dim / 2] (tuned_layer_kernels.hpp, rope_table).
  const float2* rope_table(const int64_t* host, int64_t n, int head_dim, double theta);
  // Gives every entry back (a new point starts from its own allocations).
  void clear();

  static constexpr size_t kMaxEntries = size_t(kPositionCacheEntries);

 private:
  struct Table {
    int head_dim;
    double theta;
    float2* device;
  };
  struct Entry {
    std::vector<int64_t> host;
    uint64_t digest = 0;
    int64_t* device = nullptr;
    std::vector<Table> tables;
    uint64_t last_use = 0;
  };
  Entry& entry(const int64_t* host, int64_t n);
  void release(Entry& e);

  cudaStream_t stream_;
  std::function<void*(int64_t)> acquire_;
  std::function<void(void*, int64_t)> release_;
  std::vector<Entry> entries_;
  uint64_t uses_ = 0;
};

}  // namespace minictx::cuda
