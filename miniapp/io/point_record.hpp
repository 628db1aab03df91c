#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "io/results.hpp"

namespace minictx {

// One point as a YAML document, the payload of a record in a results file's tail
// (outputs/README.md, "Points appended after the HDF5 part"): the same names as its HDF5
// group, every string double-quoted, every number with the digits to read it back exactly,
// every column a flow list.
std::string encode_point(const PointResult& p, int64_t index);

// The point and its index; Error (one line) if the document is not such a point.
std::pair<int64_t, PointResult> decode_point(const std::string& yaml);

}  // namespace minictx
