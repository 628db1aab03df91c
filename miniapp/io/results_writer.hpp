#pragma once
#include <string>
#include <vector>

#include "io/results.hpp"

namespace minictx {

// Writes a results file (layout: outputs/README.md) so that a killed job leaves every
// completed point readable and never a corrupt file. Every change rewrites the whole file
// as `path + ".partial"`, fsyncs it and renames it onto `path`, so `path` is always a
// complete file. Serial HDF5: only one rank may own a writer.
class ResultsWriter {
 public:
  // Writes the provenance-only file at once, so that a run dying before its first point
  // still leaves its provenance. If `path` exists: with `resume`, its points are loaded
  // and kept (after them come the new ones; provenance is this run's, with
  // numbers["resumed_points"] = how many were kept); else with `overwrite` it is
  // replaced; else InputError. A file that cannot be read as minictx results is never
  // resumed from or replaced by a resume (Error).
  ResultsWriter(std::string path, Provenance prov, bool overwrite, bool resume = false);

  const std::string& path() const { return path_; }
  const std::vector<PointResult>& points() const { return contents_.points; }  // with resumed
  bool has_point(const std::string& name) const;

  // Durably on disk when this returns. Error (and nothing changes) if the name is taken or
  // not a valid group name, if iter_seconds is neither empty nor iters x ranks, or if the
  // write fails.
  void add_point(const PointResult& p);

 private:
  void commit() const;

  std::string path_;
  ResultsFile contents_;
};

}  // namespace minictx
