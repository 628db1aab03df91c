#include "core/tensor.hpp"

#include "core/error.hpp"

namespace minictx {

Tensor::Tensor(std::shared_ptr<float> storage, std::vector<int64_t> shape)
    : storage_(std::move(storage)), shape_(std::move(shape)), numel_(1) {
  for (int64_t d : shape_) {
    require(d >= 0, "tensor with a negative dimension");
    numel_ *= d;
  }
}

}  // namespace minictx
