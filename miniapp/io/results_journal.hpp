#pragma once
// The journal of a results file, `FILE.journal`: the points a running writer recorded
// since it last wrote FILE whole, one JSON line each (outputs/README.md, "The journal"):
//   {"crc32":"<8 hex digits>","journal_id":"<the file's journal_id>","point":{...}}
// The CRC-32 (zlib's) covers every byte after the 20-byte prefix `{"crc32":"........",`,
// the closing newline included, so a line cut short by a kill fails it like a damaged one.
// Only records whose journal_id is that of FILE belong to it: a journal left beside a file
// that another run has since rewritten is never mixed into it.
#include <cstdint>
#include <string>
#include <vector>

#include "io/point_json.hpp"

namespace minictx {

std::string journal_path(const std::string& results_path);

// The line (newline included) that records `point` (point_json) in the journal `journal_id`.
std::string journal_record(const std::string& journal_id, const json& point);

struct JournalPoints {
  std::vector<json> points;             // in the order they were recorded
  std::vector<std::string> unreadable;  // one line per damaged record
};

// The points that `path` (a journal) records for `journal_id`; none if it does not exist.
// A last line without its newline is the record a killed writer had not finished (it had
// not reported the point recorded) and is left out silently; a damaged line is named and
// the lines after it still read. Each record is parsed within bounds: at most
// kMaxJournalRecordBytes, nested at most as deep as a point. Error if the journal is not a
// regular file or cannot be read.
JournalPoints read_journal(const std::string& path, const std::string& journal_id);

inline constexpr uint64_t kMaxJournalRecordBytes = uint64_t(1) << 30;

// CRC-32 as zlib and Python's zlib.crc32 compute it.
uint32_t crc32(const char* bytes, size_t n);

}  // namespace minictx
