#pragma once
// A benchmark submission assessed by the run rules (docs/benchmark.md): each class
// measurement audited (submission/point_audit.hpp), compared with its class deck and joined
// to the fp64 verification runs of its configuration; its launches grouped by class and
// configuration, with the median figure of merit and its spread; one status for all.
#include <optional>
#include <string>
#include <vector>

#include "config/benchmark.hpp"
#include "config/deck_diff.hpp"
#include "io/results.hpp"
#include "submission/point_audit.hpp"

namespace minictx {

struct SubmissionFile {
  std::string path;
  ResultsFile results;
};

// In order of severity; the report's exit code is the worst one's (docs/benchmark.md).
enum class Status { compliant, unverified, non_compliant, inconsistent };
const char* to_string(Status s);
int exit_code(Status s);  // 0, 4, 5, 6

// The run rules' numbers: launches a class needs, and the spread (max − min over the
// median) of their figures of merit above which the report flags it.
inline constexpr int kRequiredLaunches = 3;
inline constexpr double kSpreadBound = 0.05;

// A point of a class run, measuring or verifying, with its audit.
struct ClassPoint {
  const SubmissionFile* file = nullptr;
  const PointResult* point = nullptr;
  std::string class_name, role;  // benchmark.class and .role of its recorded deck
  PointAudit audit;
  std::string where() const { return file->path + ":" + point->name; }
};

struct Deviation {
  KeyDifference difference;
  RunRule rule;
};

// A class measurement: its deviations from the class deck, its verification, its status.
struct AssessedRun {
  ClassPoint run;
  std::vector<Deviation> deviations;
  std::string verification;  // "VALID (verification run ...)", "INVALID (...)", "unverified: why", ...
  Status status = Status::compliant;
  std::vector<std::string> why;  // what makes the status (empty when compliant)
};

struct AssessedVerification {
  ClassPoint run;
  std::vector<std::string> verifies;  // the measurements it is joined to
  std::string note;                   // why it verifies nothing, when it does not
};

// The launches of one class in one configuration.
struct ClassEntry {
  std::string class_name;
  std::string configuration;        // "backend=usp, devices=8, ranks per node=4"
  std::vector<size_t> launches;     // indices of the independent launches among the runs
  std::vector<std::string> copies;  // runs that repeat another's times: not launches of their own
  double median = 0, min = 0, max = 0, spread = 0;  // of the launches' recomputed FOMs
  bool spread_flagged = false;
  Status status = Status::compliant;
  std::vector<std::string> why;
};

struct LeftOut {
  std::string where, why;
};

struct Submission {
  std::vector<AssessedRun> runs;
  std::vector<AssessedVerification> verifications;
  std::vector<ClassEntry> classes;
  std::vector<LeftOut> left_out;  // projected, skipped and non-class points
  Status status = Status::compliant;
  std::vector<std::string> why;
};

// A class deck as shipped (compiled in), resolved with benchmark.role `role`; none for a
// class this build does not have. inputs/benchmark/resolved/ holds the measurements'.
std::optional<std::string> resolved_class_deck(const std::string& name, const std::string& role);

// The files in any order give the same assessment: points are taken in order of path and name.
Submission assess_submission(const std::vector<SubmissionFile>& files);

}  // namespace minictx
