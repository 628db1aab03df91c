#pragma once
#include <string>

#include "io/results.hpp"

namespace minictx {

// Reads a whole results file (layout: outputs/README.md); points come back in the order
// they were added. Error with one line if the file is missing, is not a minictx results
// file, was written by a newer format version, or is malformed.
ResultsFile read_results(const std::string& path);

}  // namespace minictx
