#pragma once
// Points appended after the HDF5 part of a format-version-2 file: minictx wrote them so
// until the journal replaced them, and reads them still (outputs/README.md, "Files of
// format version 2"). HDF5 reads a file up to the end-of-file address in its superblock
// and ignores what follows; there each point is one record,
//   "MCTXPT01" | payload length (uint64 LE) | payload | FNV-1a 64 of the payload (uint64 LE),
// the payload one YAML mapping with the names of the point's group. A record cut short (a
// job killed while writing it) or failing its checksum ends the tail.
#include <cstdint>
#include <string>
#include <vector>

#include "io/point_json.hpp"

namespace minictx {

struct LegacyTail {
  std::vector<json> points;             // each record as JSON (point_json's form)
  std::vector<std::string> unreadable;  // one line per record that is not a point, or the damage
};

// The records of `path` from byte `start` (its HDF5 part's end-of-file address) on. Each
// YAML payload is read within bounds: no anchors or aliases (minictx never wrote them, and
// each alias could stand for a list of any length), at most as deep as a point, at most one
// value per byte. Error if the file cannot be read.
LegacyTail read_legacy_tail(const std::string& path, uint64_t start);

}  // namespace minictx
