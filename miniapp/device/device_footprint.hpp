#pragma once
#include "config/run_config.hpp"

namespace minictx {

// Bytes a device of `kind` holds for a point beside the tensors every device keeps: the
// copies its kernels make of their operands and its workspaces, for `rows` sequence rows
// per rank. Known for every kind, built into this binary or not, so that `minictx
// project` and a dry run size a deck for a device this build lacks
// (model/memory_estimate.hpp).
long double device_footprint_bytes(DeviceKind kind, const RunConfig& cfg, long double rows);

// The fp32 planes of a device kind's attention LSE (Device::lse_planes): what a row's LSE
// takes in memory and on the wire, 4 bytes a plane.
int lse_planes(DeviceKind kind);

}  // namespace minictx
