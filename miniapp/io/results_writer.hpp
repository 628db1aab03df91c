#pragma once
#include <hdf5.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/output_claim.hpp"
#include "io/output_file.hpp"
#include "io/results.hpp"

namespace minictx {

// What a writer does with a results file that exists already.
enum class OnExisting {
  refuse,   // InputError; the new file is created exclusively, so two jobs cannot share it
  replace,  // the old file stays whole until the first new point replaces it
  resume,   // its points are kept and the new ones appended
};

// The /provenance group, as every minictx HDF5 file carries it (results, bench, calibration).
void write_provenance(hid_t file, const Provenance& prov);

// Writes a results file (layout: outputs/README.md) so that a killed job loses no
// completed point and never leaves a corrupt file, at a cost per point that does not grow
// with the file. The file itself is always an ordinary HDF5 file, written whole: built in
// memory, written to a scratch file of this process (io/output_file.hpp), fsynced and
// renamed onto `path`. That happens when the writer starts, at finish(), and after a point
// that ran for at least as long as a rewrite is expected to take (the last one's time,
// scaled by the points since), so that h5py sees the points of a running job too and
// rewriting never costs more than the points themselves. Every other point is one line
// appended to the file's journal (io/results_journal.hpp) and synced (a skipped point with
// the next one that ran, or the next rewrite): a point is in the file or in the journal
// when add_point returns, and `report` and --resume read both. Each rewrite holds every
// point and removes the journal. The writer holds the file's OutputClaim for its life, and
// writes to `path` only while it is still the file this writer last put there (device and
// inode): a file replaced or deleted by someone else is left alone, this writer's points
// go to `path.<host>-<pid>.saved` and the write fails naming both. Serial HDF5: only one
// rank may own a writer.
class ResultsWriter {
 public:
  // As below, claiming `path` first (OutputInUse if another run holds it).
  ResultsWriter(const std::string& path, Provenance prov, OnExisting on_existing);
  // Writes the provenance-only file at once, so that a run dying before its first point
  // still leaves its provenance, except where that would replace an existing non-empty
  // file (OnExisting::replace): then nothing is written before the first point. Resume
  // loads the existing points, the journal's too (after them come the new ones; provenance
  // is this run's, with numbers["resumed_points"] = how many were kept), and writes them
  // all into the file; a file that cannot be read as minictx results is never resumed
  // from (Error). A path that exists but is not a regular file is refused (InputError)
  // whatever `on_existing` says, and so is a name too long for its scratch file in its
  // directory, and (unless replacing) a missing file whose journal exists (a killed run's
  // points, whose file was removed). `claim` is `path`'s.
  ResultsWriter(std::string path, Provenance prov, OnExisting on_existing, OutputClaim claim);

  const std::string& path() const { return path_; }
  // False while a replaced file still holds the old results (nothing committed yet).
  bool written() const { return written_; }
  const std::vector<PointResult>& points() const { return contents_.points; }  // with resumed
  bool has_point(const std::string& name) const;

  // The one place a point is written. Durably on disk when this returns (a skipped point:
  // in the file or the journal, and on disk with the next point that ran or the next
  // rewrite). Error (and nothing changes) if the name is taken or not a valid group name,
  // if iter_seconds is neither empty nor iters x ranks, or if the write fails.
  void add_point(const PointResult& p);
  // Rewrites the file with every point, if the journal holds any, and removes the
  // journal: a finished file is one ordinary HDF5 file. Error if that fails; the points
  // are then still in the file and its journal.
  void finish();

  // What the writer has done to the disk: whole-file rewrites, points appended to the
  // journal, and the bytes of both.
  struct Work {
    size_t rewrites = 0;
    size_t appends = 0;
    uint64_t bytes_written = 0;
  };
  const Work& work() const { return work_; }

 private:
  struct FileId {
    dev_t dev;
    ino_t ino;
    bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
  };
  using Clock = std::chrono::steady_clock;
  // `exclusive`: the first commit of OnExisting::refuse, which fails if `path` appeared.
  void commit(bool exclusive);
  // Appends the last of contents_.points to the journal.
  void append_last();
  bool rewrite_due() const;
  bool still_at_path() const;
  // The complete scratch file renamed to the .saved name, and the Error that says so.
  [[noreturn]] void save_beside(bool deleted);

  OutputClaim claim_;
  std::string path_;
  std::string scratch_;
  std::string journal_;
  std::string journal_id_;  // this writer's: its journal records and the file's root attribute
  ResultsFile contents_;
  std::optional<FileId> at_path_;  // what `path` should be now: none while it should be absent
  bool written_ = false;
  size_t journaled_ = 0;                         // points in the journal, not yet in the file
  size_t rewrite_points_ = 0;                    // points in the last rewrite
  double rewrite_seconds_ = 0;                   // how long it took
  Clock::time_point idle_since_ = Clock::now();  // the last write ended
  Work work_;
};

}  // namespace minictx
