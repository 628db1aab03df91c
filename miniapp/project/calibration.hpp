#pragma once
// `minictx project --calibration FILE.h5`: measured rates in place of a profile's
// datasheet figures. A `minictx bench --comm` file replaces the link rates it measured
// (intra, inter); a `minictx bench` file replaces the peak (its GEMM calibration, for
// every dtype: the host computes in fp32), the GEMM efficiency (1 at the calibration
// size) and the attention efficiencies by head dim (the longest measured length of each).
#include <string>

#include "config/machine_profile.hpp"

namespace minictx {

void apply_calibration(ProjectionProfile& profile, const std::string& path);

}  // namespace minictx
