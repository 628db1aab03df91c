#pragma once
#include <vector>

#include "io/results.hpp"
#include "io/table.hpp"

namespace minictx {

// `report --compare MEASURED.h5 PROJECTED.h5`: one row per measured point that has a
// projected twin with the same configuration labels (backend, layout, mode, sizes,
// checkpointing...): measured and projected step time, tokens/s per device, peak memory
// and bytes sent, each with the ratio measured/projected. A point without a twin prints
// "n/a" in the projected columns, never a guessed value.
Table compare_table(const std::vector<PointResult>& measured, const std::vector<PointResult>& projected);

}  // namespace minictx
