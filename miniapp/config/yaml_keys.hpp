#pragma once
// yaml-cpp keeps both entries of a mapping that gives a key twice, and node[key] reads the
// first: the second would be silently ignored. Every YAML input minictx reads (decks,
// --set values, machine profiles) is checked here first.
#include <yaml-cpp/yaml.h>

#include <string>

namespace minictx {

// InputError "WHERE line L: a.b is given twice (lines K and L)" for the first mapping
// under `root` that gives a key twice; the key is dotted from the root.
void refuse_duplicate_keys(const YAML::Node& root, const std::string& where);

}  // namespace minictx
