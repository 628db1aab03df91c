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

float* Tensor::data() const {
  if (dtype_ != DType::f32) fail("an fp32 operation on a 16-bit tensor");
  return static_cast<float*>(storage_.get());
}

}  // namespace minictx
