#include "device/sequence_slices.hpp"

#include "core/error.hpp"

namespace minictx {
namespace {

// Floats per group of x and of the slice; fails unless both views agree on the width.
struct Strides {
  int64_t whole, part;
};

Strides strides(const Tensor& x, const Tensor& slice, int64_t groups, int64_t begin, int64_t len) {
  require(groups > 0 && x.numel() % groups == 0 && slice.numel() % groups == 0,
          "sequence slice: uneven groups");
  const Strides s{x.numel() / groups, slice.numel() / groups};
  require(len > 0 && s.part % len == 0, "sequence slice: the slice is not len rows per group");
  const int64_t width = s.part / len;
  require(s.whole % width == 0 && begin >= 0 && (begin + len) * width <= s.whole,
          "sequence slice: rows outside the tensor");
  return s;
}

}  // namespace

Tensor slice_rows(Device& dev, const Tensor& x, int64_t groups, int64_t begin, int64_t len,
                  std::vector<int64_t> shape) {
  Tensor slice = dev.alloc(std::move(shape), x.dtype());
  const Strides s = strides(x, slice, groups, begin, len);
  dev.copy_rows(slice, 0, s.part, x, begin * (s.part / len), s.whole, groups, s.part);
  return slice;
}

void place_rows(Device& dev, Tensor& x, int64_t groups, int64_t begin, int64_t len, const Tensor& slice) {
  const Strides s = strides(x, slice, groups, begin, len);
  dev.copy_rows(x, begin * (s.part / len), s.whole, slice, 0, s.part, groups, s.part);
}

}  // namespace minictx
