#pragma once
// `run --resume`: a results file holds the points of one deck, run by one build on one
// world, or none at all.
#include <string>
#include <vector>

#include "config/deck.hpp"
#include "io/results.hpp"

namespace minictx {

// InputError, one line naming the first difference, unless the file `path` (read as
// `old`) may be continued by this run: the same build (version, git_sha, compiler,
// cxx_flags, build_type), world size and ranks per node in the provenance, and every
// stored point is the point of the same name in `points` with the same resolved deck
// (the output section aside: it says where results go, not what they are).
void check_resume(const std::string& path, const ResultsFile& old, const Provenance& now,
                  const std::vector<SweepPoint>& points);

}  // namespace minictx
