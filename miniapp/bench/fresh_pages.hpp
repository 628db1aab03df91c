#pragma once
// Memory on pages mapped for it alone and returned to the system when it goes: what a
// run's per-call buffers are once the allocator has handed them back between calls. The
// benches time first touches and transfers on it.
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <string>

#include "core/error.hpp"

namespace minictx {

inline std::shared_ptr<float> map_fresh_pages(size_t bytes) {
  bytes = std::max<size_t>(bytes, sizeof(float));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("bench: cannot map " + std::to_string(bytes) + " bytes");
  return std::shared_ptr<float>(static_cast<float*>(p), [bytes](float* q) { munmap(q, bytes); });
}

}  // namespace minictx
