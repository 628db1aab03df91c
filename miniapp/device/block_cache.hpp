#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace minictx {

// Memory that tensors gave back, kept by size and handed to the next request of the same
// size, as PyTorch's caching allocator does: from its second step on, a run whose steps
// allocate the same shapes maps no new memory. On the host that spares the page faults
// of new pages, which glibc hands out or not depending on its own history (on a VM
// measured, a new page cost more than the kernels that fill it: docs/performance.md,
// "Projection against a 2-core host"); on CUDA, cudaFree's synchronisation of the whole device.
class BlockCache {
 public:
  enum class Memory { host, device };
  // `memory`: host blocks are poisoned for AddressSanitizer while kept, so that a use
  // after free is still caught although nothing is freed.
  BlockCache(std::function<void(void*)> free_block, Memory memory)
      : free_block_(std::move(free_block)), memory_(memory) {}
  ~BlockCache() { release_all(); }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A kept block of exactly `bytes`, or nullptr.
  void* take(int64_t bytes);
  // Keep `block` for reuse, unless the cache would then hold more than `limit` bytes: then
  // it is freed. The host device passes its peak in use, so what it holds at most doubles.
  void keep(void* block, int64_t bytes, int64_t limit);
  // Free every kept block.
  void release_all();
  int64_t bytes() const { return bytes_; }

 private:
  // Marks a kept host block unusable (AddressSanitizer builds), or usable again.
  void poison(void* block, int64_t bytes, bool kept) const;

  std::function<void(void*)> free_block_;
  Memory memory_;
  std::unordered_map<int64_t, std::vector<void*>> kept_;
  int64_t bytes_ = 0;
};

}  // namespace minictx
