#pragma once
// A count on the command line (ranks, ranks per node). CLI11's own range checks print
// their bounds as doubles (a 400-character line for PositiveNumber); this one says in one
// short line what it takes, and refuses what would not fit an int instead of wrapping.
#include <CLI/CLI.hpp>

namespace minictx {

// Takes the whole numbers from `least` to INT_MAX: "--ranks: must be a whole number from 1
// to 2147483647, got 0".
CLI::Validator whole_number_from(int least);

}  // namespace minictx
