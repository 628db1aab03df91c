#pragma once
#include <cstdint>

namespace minictx {

// Counter-based generator (Philox4x32-10): the value of element `index` of tensor
// `tensor` depends only on (seed, tensor, index), so any rank can make exactly its own
// shard of any global tensor, in any layout, without communication.
class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t tensor) : seed_(seed), tensor_(tensor) {}

  // Uniform in [-1, 1).
  double uniform(uint64_t index) const;

 private:
  uint64_t seed_;
  uint64_t tensor_;
};

}  // namespace minictx
