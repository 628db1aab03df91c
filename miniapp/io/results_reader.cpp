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
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/single_line.hpp"
#include "io/hdf5_util.hpp"
#include "io/legacy_tail.hpp"
#include "io/point_json.hpp"
#include "io/results_journal.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

// A point's groups nest 2 deep (ring_timeline/outer); a deeper (or cyclic) file is not ours.
constexpr int kMaxGroupDepth = 3;

json attribute_json(hid_t obj, const std::string& name) {
  switch (h5::attribute_class(obj, name)) {
    case H5T_STRING:
      return h5::read_string_attribute(obj, name);
    case H5T_INTEGER:
      return h5::read_int_attribute(obj, name);
    case H5T_FLOAT:
      return json_number(h5::read_double_attribute(obj, name));
    default:
      fail("attribute '" + name + "' is neither a string nor a number");
  }
}

// A 1-D dataset as a list, a 2-D one as a list of rows.
json dataset_json(hid_t loc, const std::string& name) {
  std::vector<hsize_t> dims;
  json flat = json::array();
  switch (h5::dataset_class(loc, name)) {
    case H5T_STRING:
      flat = h5::read_strings(loc, name);
      dims = {flat.size()};
      break;
    case H5T_INTEGER:
      flat = h5::read_int64s(loc, name, &dims);
      break;
    case H5T_FLOAT:
      for (double v : h5::read_doubles(loc, name, &dims)) flat.push_back(json_number(v));
      break;
    default:
      fail("dataset '" + name + "' holds neither strings nor numbers");
  }
  if (dims.size() == 1) return flat;
  if (dims.size() != 2) fail("dataset '" + name + "' has " + std::to_string(dims.size()) + " dimensions");
  json rows = json::array();
  for (size_t at = 0; at < flat.size(); at += dims[1])
    rows.push_back(json(flat.begin() + long(at), flat.begin() + long(at + dims[1])));
  return rows;
}

// A group as point_json's form: its attributes and datasets by name, subgroups as objects.
json group_json(hid_t group, int depth) {
  json out = json::object();
  for (const std::string& name : h5::attribute_names(group)) out[name] = attribute_json(group, name);
  for (const std::string& name : h5::link_names(group)) {
    if (!h5::is_group(group, name)) {
      out[name] = dataset_json(group, name);
    } else {
      if (depth == kMaxGroupDepth) fail("group '" + name + "' is nested deeper than a point's groups");
      h5::Handle sub = h5::open_group(group, name);
      out[name] = group_json(sub.get(), depth + 1);
    }
  }
  return out;
}

int64_t check_format(hid_t f) {
  if (!h5::has_attribute(f, "format") || h5::attribute_class(f, "format") != H5T_STRING ||
      h5::read_string_attribute(f, "format") != schema::kFormat)
    fail(std::string("not a minictx results file (no root attribute format = \"") + schema::kFormat + "\")");
  const int64_t version = h5::read_int_attribute(f, "format_version");
  if (version < schema::kOldestReadableVersion || version > schema::kFormatVersion)
    fail("format_version " + std::to_string(version) + ", but this minictx reads versions " +
         std::to_string(schema::kOldestReadableVersion) + " to " + std::to_string(schema::kFormatVersion));
  return version;
}

// What the child read: the file's root and provenance, each point it read as JSON, why it
// could not read the others.
struct Probe {
  std::string head;  // the "file" line's JSON
  std::vector<json> points;
  std::map<std::string, std::string> unreadable;
};

// A file of a few points reads in well under a second, and 10,000 points (200 MB) in
// seconds; nor does reading need gigabytes.
constexpr unsigned kProbeSeconds = 30;
constexpr uint64_t kProbeBytesPerSecond = uint64_t(1) << 20;  // and one more second per MB
constexpr uint64_t kProbeExtraBytes = uint64_t(4) << 30;

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

unsigned probe_seconds(const std::string& path) {
  struct stat st;
  return kProbeSeconds +
         unsigned(::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) / kProbeBytesPerSecond : 0);
}

// Bounds the child: libhdf5 may crash, hang or grow without bound on damaged bytes.
void limit_child(unsigned seconds) {
  // The parent reports how the child ended in one line: the child says nothing itself,
  // and dies of its signals (MPI libraries install handlers that print backtraces).
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDERR_FILENO);
  alarm(seconds);
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
}

// The child: reads the file and writes it to `fd` as lines of a word and JSON: "file"
// {format_version, journal_id, end (of the HDF5 part), provenance}; per point "try" NAME,
// then "ok" POINT or "bad" [NAME, why]; "fail" why for the whole file; "done" at the end.
// It never returns.
[[noreturn]] void probe_child(const std::string& path, const std::set<std::string>& skip, int fd) {
  limit_child(probe_seconds(path));
  try {
    h5::QuietErrors quiet;
    h5::Handle file = h5::open_file_readonly(path);
    const hid_t f = file.get();
    const int64_t version = check_format(f);
    haddr_t end = 0;
    if (H5Fget_eoa(f, &end) < 0) h5::fail("get the end of the HDF5 part");
    h5::Handle provenance = h5::open_group(f, "provenance");
    const std::string journal_id =
        h5::has_attribute(f, "journal_id") ? h5::read_string_attribute(f, "journal_id") : "";
    write_line(fd, "file " + json_line({{"format_version", version},
                                        {"journal_id", journal_id},
                                        {"end", uint64_t(end)},
                                        {"provenance", group_json(provenance.get(), kMaxGroupDepth)}}));
    h5::Handle points = h5::open_group(f, "points");
    for (const std::string& name : h5::link_names(points.get())) {
      if (skip.count(name)) continue;
      write_line(fd, "try " + json_line(name));
      try {
        h5::Handle group = h5::open_group(points.get(), name);
        json point = group_json(group.get(), 1);
        point["name"] = name;
        write_line(fd, "ok " + json_line(point));
      } catch (const std::exception& e) {
        write_line(fd, "bad " + json_line({name, e.what()}));
      }
    }
    write_line(fd, "done");
  } catch (const std::exception& e) {
    write_line(fd, "fail " + json_line(e.what()));
  }
  _exit(0);
}

std::string how_it_ended(const std::string& path, int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGALRM) return "reading it took more than " + std::to_string(probe_seconds(path)) + " s";
    return std::string("libhdf5 crashed reading it (") + strsignal(sig) + ")";
  }
  return "the reader exited with status " + std::to_string(WEXITSTATUS(status));
}

// Runs the child once, skipping `skip`; what it wrote.
std::string run_child(const std::string& path, const std::set<std::string>& skip, int& status) {
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
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, size_t(n));
  }
  ::close(fds[0]);
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return text;
}

// Runs children until one reads to the end, each skipping the points that took an earlier
// one down (at most one child per point).
Probe probe(const std::string& path) {
  std::map<std::string, std::string> crashed;
  std::set<std::string> skip;
  for (;;) {
    int status = 0;
    const std::string text = run_child(path, skip, status);
    Probe result;
    std::string pending;  // the point the child was reading when it ended
    bool done = false;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const size_t space = line.find(' ');
      const std::string word = line.substr(0, space);
      const json j = space == std::string::npos ? json() : json::parse(line.substr(space + 1));
      if (word == "file") {
        result.head = line.substr(space + 1);
      } else if (word == "try") {
        pending = j.get<std::string>();
      } else if (word == "ok") {
        result.points.push_back(j);
        pending.clear();
      } else if (word == "bad") {
        result.unreadable[j[0].get<std::string>()] = single_line(j[1].get<std::string>());
        pending.clear();
      } else if (word == "fail") {
        fail(single_line(j.get<std::string>()));
      } else if (word == "done") {
        done = true;
      }
    }
    if (done) {
      result.unreadable.insert(crashed.begin(), crashed.end());
      return result;
    }
    if (pending.empty()) fail("cannot read the file: " + how_it_ended(path, status));
    crashed[pending] = how_it_ended(path, status);
    skip.insert(pending);
  }
}

using Indexed = std::vector<std::pair<int64_t, PointResult>>;

// Points kept outside the HDF5 part (the journal, or an older file's tail) join those in it;
// one whose name the file has already is the same point, recorded before the file was last
// written whole.
void add_outside_points(const std::vector<json>& points, const std::string& what, ResultsFile& contents,
                        Indexed& indexed) {
  std::set<std::string> names;
  for (const auto& entry : indexed) names.insert(entry.second.name);
  for (size_t i = 0; i < points.size(); ++i) {
    try {
      auto point = point_from_json(points[i]);
      if (names.insert(point.second.name).second) indexed.push_back(std::move(point));
    } catch (const Error& e) {
      contents.unreadable.push_back(what + " " + std::to_string(i + 1) +
                                    " unreadable: " + single_line(e.what()));
    }
  }
}

ResultsFile read_contents(const std::string& path, const Probe& probed) {
  const json head = json::parse(probed.head);
  ResultsFile contents;
  contents.provenance = provenance_from_json(head.at("provenance"));
  Indexed indexed;
  for (const json& point : probed.points) {
    try {
      indexed.push_back(point_from_json(point));
    } catch (const Error& e) {
      contents.unreadable.push_back(single_line(point.value("name", "?") + " unreadable: " + e.what()));
    }
  }
  for (const auto& [name, why] : probed.unreadable)
    contents.unreadable.push_back(single_line(name) + " unreadable: " + why);
  const int64_t version = head.at("format_version").get<int64_t>();
  const std::string journal_id = head.at("journal_id").get<std::string>();
  if (version == 2) {
    const LegacyTail tail = read_legacy_tail(path, head.at("end").get<uint64_t>());
    add_outside_points(tail.points, "appended point", contents, indexed);
    contents.unreadable.insert(contents.unreadable.end(), tail.unreadable.begin(), tail.unreadable.end());
  } else if (!journal_id.empty()) {
    const JournalPoints journal = read_journal(journal_path(path), journal_id);
    add_outside_points(journal.points, "journal record", contents, indexed);
    contents.unreadable.insert(contents.unreadable.end(), journal.unreadable.begin(),
                               journal.unreadable.end());
  }
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
    return read_contents(path, probe(path));
  } catch (const Error& e) {
    throw Error("results file '" + path + "': " + e.what());
  }
}

}  // namespace minictx
