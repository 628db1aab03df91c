#pragma once
#include <map>
#include <string>

#include "config/run_config.hpp"

namespace minictx {

// The labels a results point carries (what the report tables group and print by).
std::map<std::string, std::string> point_labels(const RunConfig& cfg, int world);

}  // namespace minictx
