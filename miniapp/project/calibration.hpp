#pragma once
// `minictx project --calibration FILE.h5`: measured rates in place of a profile's
// datasheet figures. A `minictx bench --comm` file replaces the link rates it measured
// (intra, inter); a `minictx bench` file replaces the peak (the highest of its GEMM
// rates, for every dtype: the host computes in fp32), the GEMM efficiency by size (its
// gemm rows), the attention efficiency tables by head dim, length and mask (its attention
// rows) and the rates of the element-wise kernels (its elementwise rows): each kernel then
// runs at the rate the bench measured for it.
#include <string>

#include "config/machine_profile.hpp"

namespace minictx {

void apply_calibration(ProjectionProfile& profile, const std::string& path);

}  // namespace minictx
