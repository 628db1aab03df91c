#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.hpp"

namespace minictx {

// A dense row-major array owned by a Device (host or device memory), of fp32 unless made
// otherwise: 16-bit tensors hold what travels between ranks and what the layer stack
// stores in a bf16/fp16 run. Copies share the storage; the storage is released, and its
// bytes untracked, with the last copy.
class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<void> storage, std::vector<int64_t> shape, DType dtype = DType::f32);

  // The elements of an fp32 tensor; the fp32 kernels take only those (fails otherwise).
  float* data() const;
  void* raw() const { return storage_.get(); }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(size_t(i)); }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * element_bytes(dtype_); }
  bool empty() const { return numel_ == 0; }
  // Rows [begin, begin + count) of the [rows, last dim] view, sharing this storage.
  Tensor rows(int64_t begin, int64_t count) const;

 private:
  std::shared_ptr<void> storage_;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::f32;
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
