#include "comm/cuda/pinned_staging.hpp"

#include <cuda_runtime.h>

#include "core/cuda/cuda_check.hpp"

namespace minictx {

PinnedStaging::Loan& PinnedStaging::Loan::operator=(Loan&& o) noexcept {
  if (this != &o) {
    if (pool_ != nullptr) pool_->give_back(data_);
    pool_ = o.pool_;
    data_ = o.data_;
    o.pool_ = nullptr;
    o.data_ = nullptr;
  }
  return *this;
}

PinnedStaging::Loan::~Loan() {
  if (pool_ != nullptr) pool_->give_back(data_);
}

PinnedStaging::~PinnedStaging() {
  for (const Block& b : blocks_) cudaFreeHost(b.data);  // no error to report from a destructor
}

PinnedStaging::Loan PinnedStaging::borrow(size_t bytes) {
  if (bytes == 0) return {};
  Block* best = nullptr;
  for (Block& b : blocks_)
    if (!b.lent && b.bytes >= bytes && (best == nullptr || b.bytes < best->bytes)) best = &b;
  if (best == nullptr) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    blocks_.push_back({static_cast<unsigned char*>(p), bytes, false});
    best = &blocks_.back();
  }
  best->lent = true;
  return {this, best->data};
}

void PinnedStaging::give_back(unsigned char* data) {
  for (Block& b : blocks_)
    if (b.data == data) {
      b.lent = false;
      return;
    }
}

}  // namespace minictx
