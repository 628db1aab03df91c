#pragma once
// `minictx report --submission FILES...`: one document for a benchmark submission
// (docs/benchmark.md): the system from the provenance, each class run's figure of merit,
// its verification and every deviation from the class deck, allowed or not by the run
// rules (config/benchmark.hpp).
#include <string>
#include <vector>

#include "io/results.hpp"
#include "io/table.hpp"

namespace minictx {

struct SubmissionFile {
  std::string path;
  ResultsFile results;
};

// Markdown: a document of four tables (system, figures of merit, deviations, verification
// runs). CSV: the figures of merit, one row per class run, with the system's columns.
std::string submission_report(const std::vector<SubmissionFile>& files, TableFormat format);

}  // namespace minictx
