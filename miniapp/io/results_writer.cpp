#include "io/results_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "core/file_kind.hpp"
#include "io/hdf5_util.hpp"
#include "io/point_digest.hpp"
#include "io/point_record.hpp"
#include "io/results_reader.hpp"
#include "io/results_schema.hpp"
#include "io/results_tail.hpp"

namespace minictx {
namespace {

[[noreturn]] void refuse_existing(const std::string& path) {
  input_error("results file '" + path +
              "' already exists; pass overwrite (--force) to replace it, or choose "
              "another name");
}

// Puts the complete file `scratch` at `path` unless `path` exists: of several jobs given
// one name, exactly one goes on, and no reader ever sees a partial file there. A hard
// link is that atomic exclusive create; where the file system has none, an empty file
// made with O_EXCL claims the name first.
void publish_exclusive(const std::string& scratch, const std::string& path) {
  if (::link(scratch.c_str(), path.c_str()) == 0) {
    ::unlink(scratch.c_str());
    return;
  }
  if (errno != EEXIST) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      ::close(fd);
      if (std::rename(scratch.c_str(), path.c_str()) == 0) return;
    }
    if (errno != EEXIST) {
      const int err = errno;
      std::remove(scratch.c_str());
      fail("cannot create results file '" + path + "': " + std::strerror(err));
    }
  }
  std::remove(scratch.c_str());
  refuse_existing(path);
}

// A point or phase name becomes one HDF5 link name.
void require_link_name(const std::string& name, const std::string& what) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    fail(what + " '" + name + "' cannot name an HDF5 group or dataset (empty, '.' or has '/')");
}

void fsync_path(const std::string& path, int extra_flags) {
  const int fd = ::open(path.c_str(), O_RDONLY | extra_flags);
  if (fd < 0) fail("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL); the file itself is synced already.
  if (rc != 0 && !((extra_flags & O_DIRECTORY) && err == EINVAL))
    fail("cannot sync '" + path + "': " + std::strerror(err));
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void require_room_for_scratch(const std::string& path) {
  const std::string scratch = results_scratch_name(path);
  long limit = ::pathconf(directory_of(path).c_str(), _PC_NAME_MAX);
  if (limit <= 0) limit = 255;
  const size_t base = scratch.size() - (scratch.rfind('/') == std::string::npos ? 0 : scratch.rfind('/') + 1);
  if (base <= static_cast<size_t>(limit)) return;
  const size_t suffix = scratch.size() - path.size();
  input_error("results file " + path + ": the name is too long; its scratch file adds " +
              std::to_string(suffix) + " bytes (." + scratch.substr(path.size() + 1) +
              ") and names in its directory hold at most " + std::to_string(limit) +
              " bytes, so the file name may have " + std::to_string(static_cast<size_t>(limit) - suffix) +
              " at most");
}

namespace {

OutputClaim claim_of(const std::string& path) {
  refuse_special_file(path, "results file");  // a FIFO is refused by type before a lock file is made
  require_room_for_scratch(path);
  return OutputClaim(path);
}

void write_verification(hid_t point, const std::vector<VerifyRow>& rows) {
  // One 1-D dataset per column: each reads with one h5py line, no compound types.
  h5::Handle group = h5::create_group(point, "verification");
  std::vector<std::string> tensor;
  std::vector<int8_t> pass;
  for (const VerifyRow& r : rows) {
    tensor.push_back(r.tensor);
    pass.push_back(r.pass ? 1 : 0);
  }
  const std::vector<hsize_t> n{rows.size()};
  h5::write_strings(group.get(), "tensor", tensor);
  for (const VerifyColumn& c : verify_columns()) {
    std::vector<double> column;
    column.reserve(rows.size());
    for (const VerifyRow& r : rows) column.push_back(r.*c.member);
    h5::write_doubles(group.get(), c.name, column, n);
  }
  h5::write_int8s(group.get(), "pass", pass);
}

// The columns ring steps and outer transfers share: whose, which walk and round, and the
// transfer's times.
template <class Record>
void write_shared_columns(hid_t g, const std::vector<Record>& records) {
  namespace rt = schema::ring_timeline;
  std::vector<int32_t> rank, layer, round;
  std::vector<std::string> pass;
  std::vector<double> transfer_posted, transfer_done;
  for (const Record& r : records) {
    rank.push_back(r.rank);
    layer.push_back(r.layer);
    pass.emplace_back(to_string(r.pass));
    round.push_back(r.round);
    transfer_posted.push_back(r.transfer_posted);
    transfer_done.push_back(r.transfer_done);
  }
  const std::vector<hsize_t> n{records.size()};
  h5::write_int32s(g, rt::rank, rank);
  h5::write_int32s(g, rt::layer, layer);
  h5::write_strings(g, rt::pass, pass);
  h5::write_int32s(g, rt::round, round);
  h5::write_doubles(g, rt::transfer_posted, transfer_posted, n);
  h5::write_doubles(g, rt::transfer_done, transfer_done, n);
}

// The outer transfers as a subgroup of the timeline: its rows are not ring steps.
void write_outer_transfers(hid_t timeline, const std::vector<OuterTransfer>& outer) {
  namespace rt = schema::ring_timeline;
  h5::Handle group = h5::create_group(timeline, rt::outer);
  write_shared_columns(group.get(), outer);
  std::vector<std::string> carries;
  carries.reserve(outer.size());
  for (const OuterTransfer& o : outer) carries.emplace_back(to_string(o.carries));
  h5::write_strings(group.get(), rt::carries, carries);
}

void write_ring_timeline(hid_t point, const RingTimelineResult& t) {
  namespace rt = schema::ring_timeline;
  h5::Handle group = h5::create_group(point, rt::group);
  const hid_t g = group.get();
  h5::write_attribute(g, rt::iteration, t.iteration);
  h5::write_attribute(g, rt::clock, t.clock);
  write_shared_columns(g, t.steps);
  std::vector<int32_t> step, source;
  std::vector<double> compute_start, compute_end;
  for (const RingStep& s : t.steps) {
    step.push_back(s.step);
    source.push_back(s.source);
    compute_start.push_back(s.compute_start);
    compute_end.push_back(s.compute_end);
  }
  const std::vector<hsize_t> n{t.steps.size()};
  h5::write_int32s(g, rt::step, step);
  h5::write_int32s(g, rt::source, source);
  h5::write_doubles(g, rt::compute_start, compute_start, n);
  h5::write_doubles(g, rt::compute_end, compute_end, n);
  write_outer_transfers(g, t.outer);
}

// One per-rank measurement and what it counts (its `unit` attribute).
void write_measured(hid_t loc, const std::string& name, const std::vector<double>& values,
                    const std::vector<hsize_t>& dims, const char* unit) {
  h5::write_doubles(loc, name, values, dims);
  h5::write_attribute(h5::open_dataset(loc, name).get(), schema::unit::attribute, std::string(unit));
}

void write_point(hid_t points, const PointResult& p, int64_t index) {
  h5::Handle group = h5::create_group(points, p.name);
  const hid_t g = group.get();
  h5::write_attribute(g, "index", index);
  h5::write_attribute(g, "deck", p.deck);
  h5::write_attribute(g, "verdict", p.verdict);
  h5::write_attribute(g, "reference", p.reference);
  h5::write_attribute(g, "skipped_reason", p.skipped_reason);
  h5::write_attribute(g, "iters", static_cast<int64_t>(p.iters));
  h5::write_attribute(g, "ranks", static_cast<int64_t>(p.ranks));
  h5::write_attribute(g, "provenance_digest", p.provenance_digest);
  h5::write_attribute(g, "digest", p.digest);
  {
    h5::Handle labels = h5::create_group(g, "labels");
    for (const auto& [key, value] : p.labels) h5::write_attribute(labels.get(), key, value);
  }
  {
    h5::Handle metrics = h5::create_group(g, "metrics");
    for (const auto& [key, value] : p.metrics) h5::write_attribute(metrics.get(), key, value);
  }
  const hsize_t ranks = static_cast<hsize_t>(p.ranks);
  const hsize_t iters = p.iter_seconds.empty() ? 0 : static_cast<hsize_t>(p.iters);
  write_measured(g, "iter_seconds", p.iter_seconds, {iters, ranks}, schema::unit::seconds_each_iteration);
  {
    h5::Handle phases = h5::create_group(g, "phase_seconds");
    h5::write_attribute(phases.get(), schema::unit::attribute, std::string(schema::unit::seconds_summed));
    for (const auto& [phase, seconds] : p.phase_seconds)
      write_measured(phases.get(), phase, seconds, {seconds.size()}, schema::unit::seconds_summed);
  }
  write_measured(g, "peak_memory_bytes", p.peak_memory_bytes, {p.peak_memory_bytes.size()},
                 schema::unit::bytes_peak);
  write_measured(g, "bytes_sent_intra", p.bytes_sent_intra, {p.bytes_sent_intra.size()},
                 schema::unit::bytes_summed);
  write_measured(g, "bytes_sent_inter", p.bytes_sent_inter, {p.bytes_sent_inter.size()},
                 schema::unit::bytes_summed);
  write_verification(g, p.verification);
  write_ring_timeline(g, p.ring_timeline);
}

void write_contents(hid_t file, const ResultsFile& contents) {
  h5::write_attribute(file, "format", std::string(schema::kFormat));
  h5::write_attribute(file, "format_version", static_cast<int64_t>(schema::kFormatVersion));
  write_provenance(file, contents.provenance);
  h5::Handle points = h5::create_group(file, "points");
  for (size_t i = 0; i < contents.points.size(); ++i)
    write_point(points.get(), contents.points[i], static_cast<int64_t>(i));
}

}  // namespace

void write_provenance(hid_t file, const Provenance& prov) {
  h5::Handle group = h5::create_group(file, "provenance");
  for (const auto& [key, value] : prov.text) h5::write_attribute(group.get(), key, value);
  for (const auto& [key, value] : prov.numbers) h5::write_attribute(group.get(), key, value);
  h5::write_strings(group.get(), "hostnames", prov.hostnames);
}

std::string results_scratch_name(const std::string& path) {
  // Host and process make the name unique among jobs sharing a directory, even across
  // nodes of a shared file system.
  std::string host_pid = this_process();
  host_pid[host_pid.rfind(' ')] = '-';
  return path + "." + host_pid + ".partial";
}

ResultsWriter::ResultsWriter(const std::string& path, Provenance prov, OnExisting on_existing)
    : ResultsWriter(path, std::move(prov), on_existing, claim_of(path)) {}

ResultsWriter::ResultsWriter(std::string path, Provenance prov, OnExisting on_existing, OutputClaim claim)
    : claim_(std::move(claim)), path_(std::move(path)), scratch_(results_scratch_name(path_)) {
  if (claim_.path() != path_) fail("results file " + path_ + ": written under the claim of " + claim_.path());
  for (const auto& entry : prov.numbers)
    if (prov.text.count(entry.first)) fail("provenance key '" + entry.first + "' is both text and a number");
  refuse_special_file(path_, "results file");
  require_room_for_scratch(path_);
  struct stat st;
  bool keep_old_file = false;
  if (::stat(path_.c_str(), &st) == 0) {
    at_path_ = FileId{st.st_dev, st.st_ino};
    switch (on_existing) {
      case OnExisting::refuse:
        refuse_existing(path_);
      case OnExisting::replace:
        keep_old_file = st.st_size > 0;  // an empty file holds no results to keep
        break;
      case OnExisting::resume: {
        ResultsFile old = read_results(path_);
        // An unreadable point is not in the file as far as --resume goes: it runs again.
        for (const std::string& line : old.unreadable)
          std::fprintf(stderr, "minictx: warning: results file '%s': %s; it runs again\n", path_.c_str(),
                       line.c_str());
        contents_.points = std::move(old.points);
      }
        prov.numbers["resumed_points"] = static_cast<double>(contents_.points.size());
        break;
    }
  }
  contents_.provenance = std::move(prov);
  if (!keep_old_file) commit(on_existing == OnExisting::refuse);
  idle_since_ = Clock::now();
}

bool ResultsWriter::has_point(const std::string& name) const {
  return std::any_of(contents_.points.begin(), contents_.points.end(),
                     [&](const PointResult& p) { return p.name == name; });
}

void ResultsWriter::add_point(const PointResult& p) {
  require_link_name(p.name, "point name");
  if (has_point(p.name)) fail("results file '" + path_ + "' already has a point '" + p.name + "'");
  for (const auto& entry : p.phase_seconds) require_link_name(entry.first, "phase name");
  // HDF5 refuses an attribute without a name; an appended point must be one a rewrite can take.
  if (p.labels.count("") || p.metrics.count(""))
    fail("point '" + p.name + "': a label or metric has an empty name");
  if (!p.iter_seconds.empty() &&
      p.iter_seconds.size() != static_cast<size_t>(p.iters) * static_cast<size_t>(p.ranks))
    fail("point '" + p.name + "': iter_seconds has " + std::to_string(p.iter_seconds.size()) +
         " values, not iters x ranks = " + std::to_string(p.iters) + " x " + std::to_string(p.ranks));
  contents_.points.push_back(p);
  seal_point(contents_.points.back(), contents_.provenance);
  try {
    if (rewrite_due())
      commit(false);
    else
      append_last();
  } catch (...) {
    contents_.points.pop_back();  // points() keeps matching what is on disk
    throw;
  }
  idle_since_ = Clock::now();
}

void ResultsWriter::finish() {
  if (appended_ran_ == 0) return;
  try {
    commit(false);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; its " + std::to_string(contents_.points.size()) +
                " points are all in it, appended after its HDF5 part, where report and --resume read them");
  }
}

bool ResultsWriter::rewrite_due() const {
  // Until the first commit the file at `path` is someone's old results (OnExisting::replace).
  if (!written_) return true;
  const PointResult& p = contents_.points.back();
  if (!p.skipped_reason.empty()) return false;
  // The point's own time against a rewrite's: the last one's time, scaled by the points since.
  const double point_seconds = std::chrono::duration<double>(Clock::now() - idle_since_).count();
  const double expected =
      rewrite_seconds_ * double(contents_.points.size() + 1) / double(rewrite_points_ + 1);
  return point_seconds >= expected;
}

void ResultsWriter::append_last() {
  const std::string record =
      tail_record(encode_point(contents_.points.back(), int64_t(contents_.points.size() - 1)));
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || !(FileId{st.st_dev, st.st_ino} == at_path_)) {
    // Deleted or replaced by someone else: the rewrite finds out, and saves this run's points beside.
    if (fd >= 0) ::close(fd);
    commit(false);
    return;
  }
  size_t done = 0;
  int err = 0;
  while (done < record.size()) {
    const ssize_t n = ::pwrite(fd, record.data() + done, record.size() - done, off_t(end_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    done += size_t(n);
  }
  // A skipped point holds no measurement and is skipped again in no time by --resume, so it
  // is not synced on its own: the next point that ran, or the next rewrite, syncs it.
  const bool skipped = !contents_.points.back().skipped_reason.empty();
  if (err == 0 && !skipped && ::fdatasync(fd) != 0) err = errno;
  if (err != 0) {
    // Cut back to the last point, so the file reads as it did; a reader ignores a cut-short record anyway.
    if (::ftruncate(fd, off_t(end_)) != 0) errno = 0;
    ::close(fd);
    fail("results file '" + path_ + "': cannot append point '" + contents_.points.back().name +
         "': " + std::strerror(err));
  }
  if (::close(fd) != 0)
    fail("results file '" + path_ + "': cannot append point '" + contents_.points.back().name +
         "': " + std::strerror(errno));
  end_ += record.size();
  if (!skipped) ++appended_ran_;
  ++work_.appends;
  work_.bytes_written += record.size();
}

void ResultsWriter::commit(bool exclusive) {
  const std::string& partial = scratch_;
  const Clock::time_point start = Clock::now();
  struct stat st;
  try {
    h5::QuietErrors quiet;
    h5::write_file(partial, [this](hid_t file) { write_contents(file, contents_); });  // fsynced
    if (::stat(partial.c_str(), &st) != 0)
      fail(std::string("cannot stat its scratch file: ") + std::strerror(errno));
  } catch (const Error& e) {
    std::remove(partial.c_str());
    throw Error("results file '" + path_ + "': " + e.what());
  }
  // The commit point: rename is atomic, so readers see the old file or the new one.
  if (exclusive) {
    publish_exclusive(partial, path_);
  } else {
    struct stat now;
    const bool present = ::stat(path_.c_str(), &now) == 0;
    const std::optional<FileId> there =
        present ? std::optional<FileId>(FileId{now.st_dev, now.st_ino}) : std::nullopt;
    if (!(there == at_path_)) save_beside(!present);
    if (std::rename(partial.c_str(), path_.c_str()) != 0)
      fail("cannot rename '" + partial + "' onto '" + path_ + "': " + std::strerror(errno));
  }
  at_path_ = FileId{st.st_dev, st.st_ino};  // a rename or a link keeps the inode
  written_ = true;
  fsync_path(directory_of(path_), O_DIRECTORY);  // makes the rename itself durable
  end_ = uint64_t(st.st_size);
  rewrite_points_ = contents_.points.size();
  appended_ran_ = 0;
  rewrite_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
  ++work_.rewrites;
  work_.bytes_written += uint64_t(st.st_size);
}

void ResultsWriter::save_beside(bool deleted) {
  const std::string saved = scratch_.substr(0, scratch_.size() - std::string(".partial").size()) + ".saved";
  if (std::rename(scratch_.c_str(), saved.c_str()) != 0) {
    const int err = errno;
    std::remove(scratch_.c_str());
    fail("results file " + path_ + " was " + (deleted ? "deleted" : "replaced") +
         " by someone else during this run, and its points could not be saved beside it (" + saved +
         "): " + std::strerror(err));
  }
  fsync_path(directory_of(saved), O_DIRECTORY);
  fail("results file " + path_ + " was " + (deleted ? "deleted" : "replaced") +
       " by someone else during this run; " +
       (deleted ? "nothing is written in its place" : "it is left as it is") + ", and this run's " +
       std::to_string(contents_.points.size()) + " points are saved in " + saved +
       " (rename it to continue it with --resume)");
}

}  // namespace minictx
