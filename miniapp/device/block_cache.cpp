#include "device/block_cache.hpp"

namespace minictx {

void* BlockCache::take(int64_t bytes) {
  const auto it = kept_.find(bytes);
  if (it == kept_.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  bytes_ -= bytes;
  return block;
}

void BlockCache::keep(void* block, int64_t bytes, int64_t limit) {
  if (bytes_ + bytes > limit) {
    free_block_(block);
    return;
  }
  kept_[bytes].push_back(block);
  bytes_ += bytes;
}

void BlockCache::release_all() {
  for (auto& [size, blocks] : kept_)
    for (void* block : blocks) free_block_(block);
  kept_.clear();
  bytes_ = 0;
}

}  // namespace minictx
