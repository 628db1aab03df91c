#pragma once
#include <string>

#include "io/results.hpp"

namespace minictx {

// Reads a results file read-only (layout: outputs/README.md); points come back in the
// order they were added. Error with one line if the file is missing, is not a minictx
// results file, was written by another format version, or its root or provenance is
// unreadable. A point that cannot be read (wrong shapes or sizes, damaged bytes) is left
// out and named in `unreadable`, so the good points still print and resume.
//
// libhdf5 may crash, hang or grow without bound on damaged bytes. So a forked child reads
// the file first, under a time and memory limit, and reports point by point; the caller
// then reads only what the child read cleanly, and a point that took the child down is
// reported as unreadable.
ResultsFile read_results(const std::string& path);

}  // namespace minictx
