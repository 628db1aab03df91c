#include "io/results_reader.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "io/hdf5_util.hpp"
#include "io/point_record.hpp"
#include "io/results_schema.hpp"
#include "io/results_tail.hpp"

namespace minictx {
namespace {

void read_provenance(hid_t file, Provenance& prov) {
  h5::Handle group = h5::open_group(file, "provenance");
  for (const std::string& name : h5::attribute_names(group.get())) {
    // Strings are text, numbers are numbers: the attribute's type says which map.
    const H5T_class_t cls = h5::attribute_class(group.get(), name);
    if (cls == H5T_STRING)
      prov.text[name] = h5::read_string_attribute(group.get(), name);
    else if (cls == H5T_FLOAT || cls == H5T_INTEGER)
      prov.numbers[name] = h5::read_double_attribute(group.get(), name);
    else
      fail("provenance attribute '" + name + "' is neither a string nor a number");
  }
  prov.hostnames = h5::read_strings(group.get(), "hostnames");
}

bool has_link(hid_t group, const char* name) {
  const std::vector<std::string> links = h5::link_names(group);
  return std::find(links.begin(), links.end(), name) != links.end();
}

std::vector<VerifyRow> read_verification(hid_t point) {
  h5::Handle group = h5::open_group(point, "verification");
  const hid_t g = group.get();
  const std::vector<std::string> tensor = h5::read_strings(g, "tensor");
  const std::vector<int8_t> pass = h5::read_int8s(g, "pass");
  const size_t n = tensor.size();
  if (pass.size() != n) fail("the verification columns differ in length");
  std::vector<VerifyRow> rows(n);
  for (size_t i = 0; i < n; ++i) {
    rows[i].tensor = tensor[i];
    rows[i].pass = pass[i] != 0;
  }
  for (const VerifyColumn& c : verify_columns()) {
    if (c.added && !has_link(g, c.name)) continue;
    const std::vector<double> column = h5::read_doubles(g, c.name);
    if (column.size() != n) fail("the verification columns differ in length");
    for (size_t i = 0; i < n; ++i) rows[i].*c.member = column[i];
  }
  return rows;
}

// The columns ring steps and outer transfers share (results_writer.cpp), as records of
// their kind; `where` names the group in errors. The caller reads the rest.
template <class Record>
std::vector<Record> read_shared_columns(hid_t g, const std::string& where) {
  namespace rt = schema::ring_timeline;
  const std::vector<int32_t> rank = h5::read_int32s(g, rt::rank), layer = h5::read_int32s(g, rt::layer),
                             round = h5::read_int32s(g, rt::round);
  const std::vector<std::string> pass = h5::read_strings(g, rt::pass);
  const std::vector<double> transfer_posted = h5::read_doubles(g, rt::transfer_posted),
                            transfer_done = h5::read_doubles(g, rt::transfer_done);
  const size_t n = rank.size();
  for (size_t len : {layer.size(), round.size(), pass.size(), transfer_posted.size(), transfer_done.size()})
    if (len != n) fail("the " + where + " columns differ in length");
  std::vector<Record> records(n);
  for (size_t i = 0; i < n; ++i) {
    Record& r = records[i];
    if (!parse_enum(pass[i], r.pass)) fail(where + " pass '" + pass[i] + "' is not a pass");
    r.rank = rank[i];
    r.layer = layer[i];
    r.round = round[i];
    r.transfer_posted = transfer_posted[i];
    r.transfer_done = transfer_done[i];
  }
  return records;
}

// Files written before the subgroup existed read as no outer transfers.
std::vector<OuterTransfer> read_outer_transfers(hid_t timeline) {
  namespace rt = schema::ring_timeline;
  if (!has_link(timeline, rt::outer)) return {};
  h5::Handle group = h5::open_group(timeline, rt::outer);
  std::vector<OuterTransfer> outer = read_shared_columns<OuterTransfer>(group.get(), "ring_timeline/outer");
  const std::vector<std::string> carries = h5::read_strings(group.get(), rt::carries);
  if (carries.size() != outer.size()) fail("the ring_timeline/outer columns differ in length");
  for (size_t i = 0; i < outer.size(); ++i)
    if (!parse_enum(carries[i], outer[i].carries))
      fail("ring_timeline/outer carries '" + carries[i] + "' is neither block nor sums");
  return outer;
}

// Files written before the group existed (same format version) read as "not recorded".
RingTimelineResult read_ring_timeline(hid_t point) {
  namespace rt = schema::ring_timeline;
  RingTimelineResult t;
  if (!has_link(point, rt::group)) return t;
  h5::Handle group = h5::open_group(point, rt::group);
  const hid_t g = group.get();
  t.iteration = h5::read_int_attribute(g, rt::iteration);
  t.clock = h5::read_string_attribute(g, rt::clock);
  t.steps = read_shared_columns<RingStep>(g, "ring_timeline");
  const std::vector<int32_t> step = h5::read_int32s(g, rt::step), source = h5::read_int32s(g, rt::source);
  const std::vector<double> compute_start = h5::read_doubles(g, rt::compute_start),
                            compute_end = h5::read_doubles(g, rt::compute_end);
  for (size_t len : {step.size(), source.size(), compute_start.size(), compute_end.size()})
    if (len != t.steps.size()) fail("the ring_timeline columns differ in length");
  for (size_t i = 0; i < t.steps.size(); ++i) {
    RingStep& s = t.steps[i];
    s.step = step[i];
    s.source = source[i];
    s.compute_start = compute_start[i];
    s.compute_end = compute_end[i];
  }
  t.outer = read_outer_transfers(g);
  return t;
}

// Returns the point and its insertion index.
std::pair<int64_t, PointResult> read_point(hid_t points, const std::string& name) {
  h5::Handle group = h5::open_group(points, name);
  const hid_t g = group.get();
  PointResult p;
  p.name = name;
  const int64_t index = h5::read_int_attribute(g, "index");
  p.deck = h5::read_string_attribute(g, "deck");
  p.verdict = h5::read_string_attribute(g, "verdict");
  p.reference = h5::read_string_attribute(g, "reference");
  p.skipped_reason = h5::read_string_attribute(g, "skipped_reason");
  p.iters = static_cast<int>(h5::read_int_attribute(g, "iters"));
  p.ranks = static_cast<int>(h5::read_int_attribute(g, "ranks"));
  for (auto [name, digest] : {std::pair{"provenance_digest", &p.provenance_digest}, {"digest", &p.digest}})
    if (h5::has_attribute(g, name)) *digest = h5::read_string_attribute(g, name);
  {
    h5::Handle labels = h5::open_group(g, "labels");
    for (const std::string& key : h5::attribute_names(labels.get()))
      p.labels[key] = h5::read_string_attribute(labels.get(), key);
  }
  {
    h5::Handle metrics = h5::open_group(g, "metrics");
    for (const std::string& key : h5::attribute_names(metrics.get()))
      p.metrics[key] = h5::read_double_attribute(metrics.get(), key);
  }
  if (p.iters < 0 || p.ranks < 0) fail("iters or ranks is negative");
  std::vector<hsize_t> dims;
  p.iter_seconds = h5::read_doubles(g, "iter_seconds", &dims);
  if (dims.size() != 2) fail("iter_seconds is not 2-D");
  if (!p.iter_seconds.empty() && (dims[0] != hsize_t(p.iters) || dims[1] != hsize_t(p.ranks)))
    fail("iter_seconds is not iters x ranks");
  {
    h5::Handle phases = h5::open_group(g, "phase_seconds");
    for (const std::string& phase : h5::link_names(phases.get()))
      p.phase_seconds[phase] = h5::read_doubles(phases.get(), phase);
  }
  p.peak_memory_bytes = h5::read_doubles(g, "peak_memory_bytes");
  p.bytes_sent_intra = h5::read_doubles(g, "bytes_sent_intra");
  p.bytes_sent_inter = h5::read_doubles(g, "bytes_sent_inter");
  for (const auto* per_rank : {&p.peak_memory_bytes, &p.bytes_sent_intra, &p.bytes_sent_inter})
    if (!per_rank->empty() && per_rank->size() != size_t(p.ranks))
      fail("a per-rank dataset does not have ranks values");
  p.verification = read_verification(g);
  p.ring_timeline = read_ring_timeline(g);
  return {index, std::move(p)};
}

void check_format(hid_t f) {
  if (!h5::has_attribute(f, "format") || h5::attribute_class(f, "format") != H5T_STRING ||
      h5::read_string_attribute(f, "format") != schema::kFormat)
    fail(std::string("not a minictx results file (no root attribute format = \"") + schema::kFormat + "\")");
  const int64_t version = h5::read_int_attribute(f, "format_version");
  if (version < schema::kOldestReadableVersion || version > schema::kFormatVersion)
    fail("format_version " + std::to_string(version) + ", but this minictx reads versions " +
         std::to_string(schema::kOldestReadableVersion) + " to " + std::to_string(schema::kFormatVersion));
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\t', ' ');
  return text;
}

// What the child found: each point it read cleanly, why it could not read the others.
struct Probe {
  std::set<std::string> ok;
  std::map<std::string, std::string> unreadable;
};

constexpr unsigned kProbeSeconds = 30;                    // a results file reads in well under a second
constexpr uint64_t kProbeExtraBytes = uint64_t(4) << 30;  // nor needs gigabytes

void write_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(1);
    done += size_t(n);
  }
}

// The child: reads the file as read_contents will, one line per step to `fd`:
// "try NAME", then "ok NAME" or "bad NAME<TAB>why"; "fail<TAB>why" for the whole file;
// "done" at the end. It never returns.
[[noreturn]] void probe_child(const std::string& path, const std::set<std::string>& skip, int fd) {
  // The parent reports how the child ended in one line: the child says nothing itself,
  // and dies of its signals (MPI libraries install handlers that print backtraces).
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDERR_FILENO);
  alarm(kProbeSeconds);
  long pages = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  if (pages > 0) {
    const rlim_t cap = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + kProbeExtraBytes;
    const rlimit limit{cap, cap};
    setrlimit(RLIMIT_AS, &limit);
  }
  try {
    h5::QuietErrors quiet;
    h5::Handle file = h5::open_file_readonly(path);
    check_format(file.get());
    Provenance prov;
    read_provenance(file.get(), prov);
    h5::Handle points = h5::open_group(file.get(), "points");
    for (const std::string& name : h5::link_names(points.get())) {
      if (skip.count(name)) continue;
      write_line(fd, "try " + name);
      try {
        read_point(points.get(), name);
        write_line(fd, "ok " + name);
      } catch (const std::exception& e) {
        write_line(fd, "bad " + name + "\t" + one_line(e.what()));
      }
    }
    write_line(fd, "done");
  } catch (const std::exception& e) {
    write_line(fd, "fail\t" + one_line(e.what()));
  }
  _exit(0);
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGALRM) return "reading it took more than " + std::to_string(kProbeSeconds) + " s";
    return std::string("libhdf5 crashed reading it (") + strsignal(sig) + ")";
  }
  return "the reader exited with status " + std::to_string(WEXITSTATUS(status));
}

// Runs children until one reads to the end, each skipping the points that took an earlier
// one down (at most one child per point).
Probe probe(const std::string& path) {
  Probe result;
  std::set<std::string> skip;
  for (;;) {
    int fds[2];
    if (::pipe(fds) != 0) fail(std::string("cannot make a pipe: ") + std::strerror(errno));
    std::fflush(nullptr);  // the child must not flush our buffered output a second time
    const pid_t child = ::fork();
    if (child < 0) fail(std::string("cannot fork a reader: ") + std::strerror(errno));
    if (child == 0) {
      ::close(fds[0]);
      probe_child(path, skip, fds[1]);
    }
    ::close(fds[1]);
    std::string text;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, size_t(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    std::string pending;  // the point the child was reading when it ended
    bool done = false;
    size_t begin = 0;
    for (size_t end = text.find('\n'); end != std::string::npos;
         begin = end + 1, end = text.find('\n', begin)) {
      const std::string line = text.substr(begin, end - begin);
      const size_t tab = line.find('\t');
      if (line.rfind("try ", 0) == 0) {
        pending = line.substr(4);
      } else if (line.rfind("ok ", 0) == 0) {
        result.ok.insert(line.substr(3));
        pending.clear();
      } else if (line.rfind("bad ", 0) == 0 && tab != std::string::npos) {
        result.unreadable[line.substr(4, tab - 4)] = line.substr(tab + 1);
        pending.clear();
      } else if (line.rfind("fail\t", 0) == 0) {
        fail(line.substr(5));
      } else if (line == "done") {
        done = true;
      }
    }
    if (done) return result;
    if (pending.empty()) fail("cannot read the file: " + how_it_ended(status));
    result.unreadable[pending] = how_it_ended(status);
    skip.insert(pending);
  }
}

// The points appended after the HDF5 part (io/results_tail.hpp) join those in it; a record
// that cannot be read, or names a point the file has already, is reported and left out.
void read_tail_points(const std::string& path, hid_t file, ResultsFile& contents,
                      std::vector<std::pair<int64_t, PointResult>>& indexed) {
  haddr_t end = 0;
  if (H5Fget_eoa(file, &end) < 0) h5::fail("get the end of the HDF5 part");
  const TailRecords tail = read_tail(path, end);
  std::set<std::string> names;
  for (const auto& entry : indexed) names.insert(entry.second.name);
  for (size_t i = 0; i < tail.payloads.size(); ++i) {
    try {
      auto point = decode_point(tail.payloads[i]);
      if (!names.insert(point.second.name).second) fail("the file has a point of that name already");
      indexed.push_back(std::move(point));
    } catch (const Error& e) {
      contents.unreadable.push_back("appended point " + std::to_string(i + 1) +
                                    " unreadable: " + one_line(e.what()));
    }
  }
  if (!tail.damage.empty()) contents.unreadable.push_back("appended points unreadable from " + tail.damage);
}

ResultsFile read_contents(const std::string& path, const Probe& probed) {
  h5::Handle file = h5::open_file_readonly(path);
  const hid_t f = file.get();
  check_format(f);
  ResultsFile contents;
  read_provenance(f, contents.provenance);
  h5::Handle points = h5::open_group(f, "points");
  std::vector<std::pair<int64_t, PointResult>> indexed;
  for (const std::string& name : h5::link_names(points.get())) {
    const auto bad = probed.unreadable.find(name);
    if (bad != probed.unreadable.end()) {
      contents.unreadable.push_back(name + " unreadable: " + bad->second);
    } else if (probed.ok.count(name)) {
      try {
        indexed.push_back(read_point(points.get(), name));
      } catch (const std::exception& e) {
        contents.unreadable.push_back(name + " unreadable: " + one_line(e.what()));
      }
    }
  }
  read_tail_points(path, f, contents, indexed);
  std::stable_sort(indexed.begin(), indexed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& entry : indexed) contents.points.push_back(std::move(entry.second));
  return contents;
}

}  // namespace

ResultsFile read_results(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail("results file '" + path + "' not found");
  try {
    const Probe probed = probe(path);
    h5::QuietErrors quiet;
    return read_contents(path, probed);
  } catch (const Error& e) {
    throw Error("results file '" + path + "': " + e.what());
  }
}

}  // namespace minictx
