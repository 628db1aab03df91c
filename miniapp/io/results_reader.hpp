#pragma once
#include <string>

#include "io/results.hpp"

namespace minictx {

// Reads a results file read-only (layout: outputs/README.md), with the points its journal
// holds (io/results_journal.hpp) or, in a format-version-2 file, those appended after its
// HDF5 part (io/legacy_tail.hpp); points come back in the order they were added. Error with
// one line if the file is missing, is not a minictx results file, was written by another
// format version, or its root or provenance is unreadable. A point that cannot be read
// (wrong shapes or sizes, damaged bytes) is left out and named in `unreadable`, so the good
// points still print and resume.
//
// libhdf5 may crash, hang or grow without bound on damaged bytes. So a forked child reads
// the HDF5 part, under a time and memory limit, and sends each point as JSON (point_json's
// form); a point that took the child down is reported as unreadable, and the next child
// skips it. Every representation is then decoded by the one point_from_json.
ResultsFile read_results(const std::string& path);

}  // namespace minictx
