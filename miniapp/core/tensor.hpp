#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace minictx {

// A dense row-major fp32 array owned by a Device (host or device memory). Copies share
// the storage; the storage is released, and its bytes untracked, with the last copy.
class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<float> storage, std::vector<int64_t> shape);

  float* data() const { return storage_.get(); }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(size_t(i)); }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * int64_t(sizeof(float)); }
  bool empty() const { return numel_ == 0; }

 private:
  std::shared_ptr<float> storage_;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
};

// Current and peak bytes allocated through one Device.
class MemoryTracker {
 public:
  void add(int64_t bytes) {
    current_ += bytes;
    if (current_ > peak_) peak_ = current_;
  }
  void remove(int64_t bytes) { current_ -= bytes; }
  void reset_peak() { peak_ = current_; }
  int64_t current() const { return current_; }
  int64_t peak() const { return peak_; }

 private:
  int64_t current_ = 0;
  int64_t peak_ = 0;
};

}  // namespace minictx
