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
#include "io/point_json.hpp"
#include "io/results_journal.hpp"
#include "io/results_reader.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

std::string existing_refusal(const std::string& path) {
  return "results file '" + path +
         "' already exists; pass overwrite (--force) to replace it, or choose another name";
}

// A point or phase name becomes one HDF5 link name.
void require_link_name(const std::string& name, const std::string& what) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    fail(what + " '" + name + "' cannot name an HDF5 group or dataset (empty, '.' or has '/')");
}

// Unique to this writer among every writer of the file, past and future.
std::string new_journal_id() {
  std::string host_pid = this_process();
  host_pid[host_pid.rfind(' ')] = '-';
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return host_pid + "-" + std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

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

// The phase scopes as a subgroup of the timeline, only where they were recorded.
void write_phases(hid_t timeline, const std::vector<PhaseRecord>& phases) {
  namespace rt = schema::ring_timeline;
  if (phases.empty()) return;
  h5::Handle group = h5::create_group(timeline, rt::phases);
  std::vector<int32_t> rank, iteration;
  std::vector<std::string> phase;
  std::vector<double> start, end;
  for (const PhaseRecord& p : phases) {
    rank.push_back(p.rank);
    iteration.push_back(p.iteration);
    phase.push_back(p.phase);
    start.push_back(p.start);
    end.push_back(p.end);
  }
  const std::vector<hsize_t> n{phases.size()};
  h5::write_int32s(group.get(), rt::rank, rank);
  h5::write_int32s(group.get(), rt::phase_iteration, iteration);
  h5::write_strings(group.get(), rt::phase, phase);
  h5::write_doubles(group.get(), rt::start, start, n);
  h5::write_doubles(group.get(), rt::end, end, n);
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
  write_phases(g, t.phases);
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

void write_contents(hid_t file, const ResultsFile& contents, const std::string& journal_id) {
  h5::write_attribute(file, "format", std::string(schema::kFormat));
  h5::write_attribute(file, "format_version", static_cast<int64_t>(schema::kFormatVersion));
  h5::write_attribute(file, "journal_id", journal_id);
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

ResultsWriter::ResultsWriter(const std::string& path, Provenance prov, OnExisting on_existing)
    : ResultsWriter(path, std::move(prov), on_existing, claim_of(path)) {}

ResultsWriter::ResultsWriter(std::string path, Provenance prov, OnExisting on_existing, OutputClaim claim)
    : claim_(std::move(claim)),
      path_(std::move(path)),
      scratch_(scratch_name(path_)),
      journal_(journal_path(path_)),
      journal_id_(new_journal_id()) {
  if (claim_.path() != path_) fail("results file " + path_ + ": written under the claim of " + claim_.path());
  for (const auto& entry : prov.numbers)
    if (prov.text.count(entry.first)) fail("provenance key '" + entry.first + "' is both text and a number");
  if (prov.text.count("hostnames") || prov.numbers.count("hostnames"))
    fail("provenance key 'hostnames' names its dataset");
  refuse_special_file(path_, "results file");
  require_room_for_scratch(path_);
  struct stat st;
  bool keep_old_file = false;
  if (::stat(path_.c_str(), &st) == 0) {
    at_path_ = FileId{st.st_dev, st.st_ino};
    switch (on_existing) {
      case OnExisting::refuse:
        input_error(existing_refusal(path_));
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
  } else if (on_existing != OnExisting::replace && ::lstat(journal_.c_str(), &st) == 0) {
    input_error(
        "results file " + path_ + " is gone, but its journal " + journal_ +
        " is there (points of a run whose file was removed); move the journal away or choose another name");
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
  for (const auto& entry : p.phase_seconds) {
    require_link_name(entry.first, "phase name");
    if (entry.first == schema::unit::attribute) fail("phase name 'unit' names the phases' unit");
  }
  // HDF5 refuses an attribute without a name; a journaled point must be one a rewrite can take.
  if (p.labels.count("") || p.metrics.count(""))
    fail("point '" + p.name + "': a label or metric has an empty name");
  if (!p.iter_seconds.empty() &&
      p.iter_seconds.size() != static_cast<size_t>(p.iters) * static_cast<size_t>(p.ranks))
    fail("point '" + p.name + "': iter_seconds has " + std::to_string(p.iter_seconds.size()) +
         " values, not iters x ranks = " + std::to_string(p.iters) + " x " + std::to_string(p.ranks));
  contents_.points.push_back(p);
  seal_point(contents_.points.back(), contents_.provenance);
  try {
    // A file replaced or deleted under the run: the rewrite finds out, and saves this run's points beside.
    if (rewrite_due() || !still_at_path())
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
  if (journaled_ == 0) return;
  try {
    commit(false);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; its " + std::to_string(contents_.points.size()) +
                " points are all in it and its journal " + journal_ +
                ", where report and --resume read them");
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

bool ResultsWriter::still_at_path() const {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return !at_path_;
  return at_path_ == FileId{st.st_dev, st.st_ino};
}

void ResultsWriter::append_last() {
  const PointResult& p = contents_.points.back();
  const std::string record = journal_record(journal_id_, point_json(p, int64_t(contents_.points.size() - 1)));
  const auto failed = [&](int err) {
    fail("results file '" + path_ + "': cannot record point '" + p.name + "' in its journal " + journal_ +
         ": " + std::strerror(err));
  };
  // The journal is made anew after each rewrite: whatever was at its name is unlinked, never written through.
  const bool first = journaled_ == 0;
  if (first) ::unlink(journal_.c_str());
  const int fd = ::open(journal_.c_str(),
                        O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (first ? O_CREAT | O_EXCL : 0), 0644);
  if (fd < 0) {
    if (errno != ENOENT) failed(errno);
    commit(false);  // the journal was deleted under the run: every point goes into the file
    return;
  }
  struct stat st;
  int err = ::fstat(fd, &st) == 0 ? 0 : errno;
  for (size_t done = 0; err == 0 && done < record.size();) {
    const ssize_t n = ::write(fd, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : ENOSPC;
    done += n > 0 ? size_t(n) : 0;
  }
  // A skipped point holds no measurement and is skipped again in no time by --resume, so it
  // is not synced on its own: the next point that ran, or the next rewrite, syncs it.
  if (err == 0 && p.skipped_reason.empty() && ::fdatasync(fd) != 0) err = errno;
  if (err != 0) {
    // Cut back to the last whole record, so the next one starts a line of its own.
    if (::ftruncate(fd, st.st_size) != 0) errno = 0;
    ::close(fd);
    failed(err);
  }
  if (::close(fd) != 0) failed(errno);
  if (first) sync_directory_of(journal_);
  ++journaled_;
  ++work_.appends;
  work_.bytes_written += record.size();
}

void ResultsWriter::commit(bool exclusive) {
  const Clock::time_point start = Clock::now();
  struct stat st;
  try {
    h5::QuietErrors quiet;
    write_scratch(scratch_,
                  h5::file_image([this](hid_t file) { write_contents(file, contents_, journal_id_); }));
    if (::stat(scratch_.c_str(), &st) != 0)
      fail(std::string("cannot stat its scratch file: ") + std::strerror(errno));
  } catch (const Error& e) {
    ::unlink(scratch_.c_str());
    throw Error("results file '" + path_ + "': " + e.what());
  }
  // The commit point: rename is atomic, so readers see the old file or the new one.
  if (exclusive) {
    publish_exclusive(scratch_, path_, existing_refusal(path_));
  } else {
    if (!still_at_path()) save_beside(::access(path_.c_str(), F_OK) != 0);
    publish_replace(scratch_, path_);
  }
  at_path_ = FileId{st.st_dev, st.st_ino};  // a rename or a link keeps the inode
  written_ = true;
  sync_directory_of(path_);  // makes the rename itself durable
  // Every point is in the file now; a journal there holds this writer's points, or an
  // earlier run's of the file this one replaced or resumed.
  ::unlink(journal_.c_str());
  journaled_ = 0;
  rewrite_points_ = contents_.points.size();
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
  sync_directory_of(saved);
  if (journaled_ > 0) ::unlink(journal_.c_str());  // its points are all in the saved file
  fail("results file " + path_ + " was " + (deleted ? "deleted" : "replaced") +
       " by someone else during this run; " +
       (deleted ? "nothing is written in its place" : "it is left as it is") + ", and this run's " +
       std::to_string(contents_.points.size()) + " points are saved in " + saved +
       " (rename it to continue it with --resume)");
}

}  // namespace minictx
