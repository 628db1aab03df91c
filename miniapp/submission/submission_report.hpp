#pragma once
// `minictx report --submission FILES...`: the assessed submission (submission/assessment.hpp)
// as one document (docs/benchmark.md, "What a submission contains"): its status, the
// system, each class's launches with the median figure of merit and its spread, each
// class run with its recomputed figure and verification, what disagrees, the digests, the
// deviations from the class decks and the verification runs.
#include <string>
#include <vector>

#include "report/table.hpp"
#include "submission/assessment.hpp"

namespace minictx {

// Markdown, or CSV: one row per class run, with the system's columns.
std::string submission_report(const Submission& s, const std::vector<SubmissionFile>& files,
                              TableFormat format);

// The same assessment as JSON, for a program to gate on (docs/benchmark.md, "The report's JSON").
std::string submission_json(const Submission& s);

}  // namespace minictx
