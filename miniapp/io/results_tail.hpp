#pragma once
// The tail of a results file: points appended after its HDF5 part, so that recording a
// point writes that point only. HDF5 reads a file up to the end-of-file address in its
// superblock and ignores what follows; there each point is one record,
//   "MCTXPT01" | payload length (uint64 LE) | payload (io/point_record) | FNV-1a 64 of the payload (uint64
//   LE),
// appended and synced after the last. A record cut short (a job killed while writing it)
// or failing its checksum ends the tail. outputs/README.md, "Points appended after the
// HDF5 part".
#include <cstdint>
#include <string>
#include <vector>

namespace minictx {

// The bytes of one record holding `payload`.
std::string tail_record(const std::string& payload);

struct TailRecords {
  std::vector<std::string> payloads;  // in the order they were appended
  // The last record is incomplete: the one a job was appending when it was killed, which
  // it had not reported recorded.
  bool cut_short = false;
  std::string damage;  // why the tail ends before the file does otherwise, or ""
};

// The records of `path` from byte `start` (its HDF5 part's end-of-file address) on.
// Error if the file cannot be read.
TailRecords read_tail(const std::string& path, uint64_t start);

}  // namespace minictx
