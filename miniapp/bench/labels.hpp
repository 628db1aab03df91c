#pragma once
#include <map>
#include <string>

#include "comm/comm.hpp"
#include "config/run_config.hpp"

namespace minictx {

// The group name of the i-th point of a sweep: "point_0003".
std::string point_name(std::size_t i);

// The labels a results point carries (what the report tables group and print by); the
// parallel degrees as the backend resolves them on this topology.
std::map<std::string, std::string> point_labels(const RunConfig& cfg, const Topology& topology);

}  // namespace minictx
