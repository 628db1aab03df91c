#pragma once
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/ring_timeline.hpp"

namespace minictx {

// Where a run came from: written once per file as attributes of /provenance.
struct Provenance {
  std::map<std::string, std::string> text;  // version, git_sha, compiler, cxx_flags, mpi_version,
                                            // kokkos_version, kokkos_config, date, command_line,
                                            // deck (resolved YAML), slurm/pbs variables...
  std::map<std::string, double> numbers;    // world_size, ranks_per_node, nodes
  std::vector<std::string> hostnames;       // one per rank
};

// One row of a verification table.
struct VerifyRow {
  std::string tensor;
  double max_abs_err = 0;
  double max_rel_err = 0;  // max |x - ref| / max |ref|
  double rmse = 0;
  double tolerance = 0;  // bound on max_rel_err
  bool pass = false;
  double rms_rel_err = NAN;  // rms(x - ref) / rms(ref)
  // A 16-bit run against the single-device run of the same dtype (NaN where none ran): the
  // error distribution adds, apart from the error of 16 bits.
  double single_max_rel_err = NAN;
  double single_rms_rel_err = NAN;
};

// The verification table's numeric columns by their names in a results file; `added`
// ones are absent from files written before they existed, and read as NaN.
struct VerifyColumn {
  const char* name;
  double VerifyRow::*member;
  bool added;
};
inline const std::vector<VerifyColumn>& verify_columns() {
  static const std::vector<VerifyColumn> columns = {
      {"max_abs_err", &VerifyRow::max_abs_err, false},
      {"max_rel_err", &VerifyRow::max_rel_err, false},
      {"rmse", &VerifyRow::rmse, false},
      {"tolerance", &VerifyRow::tolerance, false},
      {"rms_rel_err", &VerifyRow::rms_rel_err, true},
      {"single_max_rel_err", &VerifyRow::single_max_rel_err, true},
      {"single_rms_rel_err", &VerifyRow::single_rms_rel_err, true},
  };
  return columns;
}

// One phase scope of one rank in one timed iteration: what PhaseTimer added to the phase.
struct PhaseRecord {
  int rank = 0;
  int iteration = 0;  // the timed iteration, from 0
  std::string phase;
  double start = 0, end = 0;  // seconds after the start of that iteration on the rank's clock
};

// Every rank's ring steps and outer-ring transfers in one timed iteration, and its phases
// in every timed iteration (run.ring_timeline).
struct RingTimelineResult {
  int64_t iteration = -1;            // the timed iteration recorded, from 0; -1: none
  std::string clock;                 // what the times were taken on; "" when none
  std::vector<RingStep> steps;       // rank by rank, each rank's in the order it ran them
  std::vector<OuterTransfer> outer;  // rank by rank, each rank's in the order they completed
  // Rank by rank, each rank's by iteration and, within one, in the order the scopes closed
  // (an inner phase before the one around it); empty in files from before they were kept.
  std::vector<PhaseRecord> phases;
};

// Everything measured at one configuration point: one HDF5 group.
struct PointResult {
  std::string name;                           // group name, e.g. "point_0000"
  std::string deck;                           // resolved deck of this point (YAML)
  std::map<std::string, std::string> labels;  // backend, ring_type, mode, dtype, ... (strings)
  std::map<std::string, double> metrics;      // iters_per_s, latency_ms, tokens_per_s, mfu, ...
  int iters = 0;
  int ranks = 0;
  std::vector<double> iter_seconds;                          // [iters * ranks], row-major (iter, rank)
  std::map<std::string, std::vector<double>> phase_seconds;  // phase -> [ranks], summed over iters
  std::vector<double> peak_memory_bytes;                     // [ranks]
  std::vector<double> bytes_sent_intra;                      // [ranks], over the timed iterations
  std::vector<double> bytes_sent_inter;                      // [ranks]
  std::string verdict;                                       // VALID | INVALID | UNVERIFIED
  std::string reference;                                     // fp64 | single-device | "" when unverified
  std::vector<VerifyRow> verification;
  RingTimelineResult ring_timeline;  // empty unless asked for, and for backends without a ring
  std::string skipped_reason;        // non-empty: the point did not run, and why
  // SHA-256 of the provenance the point was written under, and of the point bound to it
  // (io/point_digest.hpp): set by the writer; empty in files written before digests.
  std::string provenance_digest;
  std::string digest;
};

struct ResultsFile {
  Provenance provenance;
  std::vector<PointResult> points;
  // One line per point that could not be read ("point_0003 unreadable: ..."); the other
  // points are still in `points`.
  std::vector<std::string> unreadable;
};

}  // namespace minictx
