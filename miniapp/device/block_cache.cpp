#include "device/block_cache.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define MINICTX_POISON_KEPT_BLOCKS 1
#endif

namespace minictx {

void BlockCache::poison(void* block, int64_t bytes, bool kept) const {
  if (memory_ != Memory::host) return;
#ifdef MINICTX_POISON_KEPT_BLOCKS
  if (kept)
    ASAN_POISON_MEMORY_REGION(block, size_t(bytes));
  else
    ASAN_UNPOISON_MEMORY_REGION(block, size_t(bytes));
#else
  (void)block;
  (void)bytes;
  (void)kept;
#endif
}

void* BlockCache::take(int64_t bytes) {
  const auto it = kept_.find(bytes);
  if (it == kept_.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  bytes_ -= bytes;
  poison(block, bytes, false);
  return block;
}

void BlockCache::keep(void* block, int64_t bytes, int64_t limit) {
  if (bytes_ + bytes > limit) {
    free_block_(block);
    return;
  }
  poison(block, bytes, true);
  kept_[bytes].push_back(block);
  bytes_ += bytes;
}

void BlockCache::release_all() {
  for (auto& [size, blocks] : kept_)
    for (void* block : blocks) {
      poison(block, size, false);
      free_block_(block);
    }
  kept_.clear();
  bytes_ = 0;
}

}  // namespace minictx
