#pragma once
#include <cstdint>
#include <string>

#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "device/device.hpp"

namespace minictx {

// Per-rank memory estimate of a point (saturating at kSaturated, never negative), and its
// check against the device (InputError), made before anything is allocated.
int64_t estimate_memory_bytes(const RunConfig& cfg, const Topology& topology);
void check_memory_estimate(const RunConfig& cfg, const Comm& world, const Device& device);
// Why the point cannot run with `capacity_per_rank` bytes for each rank (tiles past the
// kernel's limit, or the estimate above it), or "" if it can.
std::string memory_refusal(const RunConfig& cfg, const Topology& topology, int64_t capacity_per_rank);
// The device's memory per rank: a node's memory shared by this job's ranks on the
// physical node (topology.ranks_here, never the emulated ranks_per_node), or a GPU's own.
int64_t capacity_per_rank(const Device& device, const Topology& topology);

}  // namespace minictx
