#include "core/tensor.hpp"

#include "core/error.hpp"

namespace minictx {

Tensor::Tensor(std::shared_ptr<void> storage, std::vector<int64_t> shape, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), numel_(1), dtype_(dtype) {
  for (int64_t d : shape_) {
    require(d >= 0, "tensor with a negative dimension");
    numel_ *= d;
  }
}

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  const int64_t cols = shape_.empty() ? 1 : shape_.back();
  require(begin >= 0 && count >= 0 && (begin + count) * cols <= numel_, "rows outside the tensor");
  const int64_t offset = begin * cols * element_bytes(dtype_);
  return Tensor(std::shared_ptr<void>(storage_, static_cast<char*>(storage_.get()) + offset), {count, cols},
                dtype_);
}

float* Tensor::data() const {
  if (dtype_ != DType::f32) fail("an fp32 operation on a 16-bit tensor");
  return static_cast<float*>(storage_.get());
}

}  // namespace minictx
