#pragma once
#include <functional>
#include <string>

#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "device/device.hpp"
#include "io/results.hpp"

namespace minictx {

// Warm-up and timed iterations of one configuration point on all ranks of `world`;
// returns the gathered timings, memory, bytes and metrics (complete on every rank).
// `between` runs on every rank before each warm-up and timed iteration, outside the timed
// region and the byte counts; it may throw to abandon the point (on every rank alike).
PointResult run_point(const RunConfig& cfg, Comm& world, Device& device,
                      const std::function<void()>& between = {});

}  // namespace minictx
