#pragma once
#include <cstdint>
#include <vector>

#include "device/device.hpp"

namespace minictx {

// Rows along the sequence of every batch: a tensor viewed as [groups, run, width] (a
// [B·L, W] activation: groups = B, run = L; a [B, H, L] LSE: groups = B·H, width 1).
// slice_rows returns rows [begin, begin + len) of every group as a new tensor of `shape`
// (whose size fixes the width) of x's dtype; place_rows writes such a slice back over those rows.
Tensor slice_rows(Device&, const Tensor& x, int64_t groups, int64_t begin, int64_t len,
                  std::vector<int64_t> shape);
void place_rows(Device&, Tensor& x, int64_t groups, int64_t begin, int64_t len, const Tensor& slice);

}  // namespace minictx
