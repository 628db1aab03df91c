#pragma once
// A point as JSON: the one form in which every representation of a results file is read
// (outputs/README.md, "The journal"). A point's HDF5 group converts to it member for
// member (attributes and datasets by name, a 2-D dataset as a list of rows, subgroups as
// objects, dataset attributes left out), a journal record holds it as written, and the
// appended records of older files convert to it; one decoder turns each into a PointResult.
// A float that is not finite is the string "NaN", "Infinity" or "-Infinity" (JSON has no
// such numbers; Python's float() and numpy read these strings).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "io/results.hpp"

namespace minictx {

using json = nlohmann::json;

// A float as the JSON above holds it.
json json_number(double v);

// The point with its `name` and `index`, as its HDF5 group reads (units aside).
json point_json(const PointResult& p, int64_t index);

// The point and its index; Error (one line) if `j` is not such a point: a member missing
// or of the wrong type, columns of different lengths, shapes that do not match iters and
// ranks, a time that is negative or not finite.
std::pair<int64_t, PointResult> point_from_json(const json& j);

// The /provenance group as JSON: its attributes, and `hostnames`.
Provenance provenance_from_json(const json& j);

// One line of JSON text (invalid UTF-8 replaced, so any string dumps).
std::string json_line(const json& j);

// Parses one document of at most `max_depth` nested lists and objects; Error (one line)
// otherwise. Parsing takes time and memory in proportion to the text.
json parse_json(const std::string& text, int max_depth);

}  // namespace minictx
