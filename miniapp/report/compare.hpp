#pragma once
#include <vector>

#include "io/results.hpp"
#include "report/table.hpp"

namespace minictx {

// `report --compare MEASURED.h5 PROJECTED.h5`: one row per measured point that has a
// projected twin with the same configuration labels (backend, layout, mode, sizes,
// checkpointing...): measured and projected step time, tokens/s per device, peak memory
// and bytes sent, each with the ratio measured/projected. A point without a twin prints
// "n/a" in the projected columns, never a guessed value.
Table compare_table(const std::vector<PointResult>& measured, const std::vector<PointResult>& projected);

// The same pairs phase by phase: per step on the slowest rank, each phase measured and
// projected, their difference and ratio; then the mean ring step of each pass (compute,
// transfer, exposed wait), measured from the point's ring timeline (run.ring_timeline) and
// projected by the walk model. The phase with the largest difference, other than the
// forward and backward that hold the others, is marked: where the two part.
Table compare_phases_table(const std::vector<PointResult>& measured,
                           const std::vector<PointResult>& projected);

}  // namespace minictx
