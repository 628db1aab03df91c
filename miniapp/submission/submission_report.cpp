#include "submission/submission_report.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>

#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace lk = schema::label_key;

// A cell of the system table holds a short value; a long one is cut, naming the key that
// holds it whole in the files' /provenance.
constexpr size_t kCellWidth = 72;

std::string cut(const std::string& text, const std::string& key) {
  if (text.size() <= kCellWidth) return text;
  return text.substr(0, kCellWidth - 3) + "... (whole: provenance/" + key + ")";
}

std::string recorded(const Provenance& p, const std::string& key) {
  const auto it = p.text.find(key);
  return it == p.text.end() ? "" : it->second;
}

double recorded_number(const Provenance& p, const char* key) {
  const auto it = p.numbers.find(key);
  return it == p.numbers.end() ? -1 : it->second;
}

std::string collapse_spaces(std::string s) {
  std::replace(s.begin(), s.end(), '\t', ' ');
  std::string out;
  for (char c : s)
    if (!(c == ' ' && (out.empty() || out.back() == ' '))) out += c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// "MPICH 4.0.2", "Open MPI v4.1.4": the library's first line up to its first comma,
// without the word "Version:".
std::string mpi_short(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  line = line.substr(0, line.find(','));
  const size_t version = line.find("Version:");
  if (version != std::string::npos) line.erase(version, 8);
  return collapse_spaces(line);
}

std::string gib(const std::string& mib) {
  if (mib.empty()) return "";
  std::ostringstream s;
  s.precision(1);
  s << std::fixed << std::stod(mib) / 1024 << " GiB";
  return s.str();
}

// "8 ports, 400 Gb/sec (4X NDR) InfiniBand": the rates and link layers of the RDMA ports.
std::string interconnect(const Provenance& p) {
  const std::string ports = recorded(p, "rdma_ports");
  if (ports.empty()) return "no RDMA port listed (/sys/class/infiniband)";
  std::set<std::string> kinds;
  size_t count = 0;
  for (size_t begin = 0; begin < ports.size();) {
    size_t end = ports.find("; ", begin);
    if (end == std::string::npos) end = ports.size();
    const std::string port = ports.substr(begin, end - begin);
    kinds.insert(port.substr(std::min(port.find(' '), port.size())));
    ++count;
    begin = end + 2;
  }
  std::string out = std::to_string(count) + (count == 1 ? " port," : " ports,");
  for (const auto& k : kinds) out += (&k == &*kinds.begin() ? "" : ";") + k;
  return out;
}

// The variables that chose the network, as the job set them.
std::string network_settings(const Provenance& p) {
  std::string out;
  for (const char* name : {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_NET", "UCX_NET_DEVICES", "UCX_TLS",
                           "FI_PROVIDER", "OMPI_MCA_btl", "OMPI_MCA_pml"}) {
    const std::string v = recorded(p, std::string("env.") + name);
    if (!v.empty()) out += (out.empty() ? "" : " ") + std::string(name) + "=" + v;
  }
  return out.empty() ? "none set" : out;
}

std::string hosts(const std::vector<SubmissionFile>& files) {
  std::set<std::string> names;
  for (const auto& f : files)
    names.insert(f.results.provenance.hostnames.begin(), f.results.provenance.hostnames.end());
  std::string list;
  size_t shown = 0;
  for (const auto& h : names)
    if (shown++ < 4) list += (list.empty() ? "" : ", ") + h;
  if (names.size() > 4) list += ", ... (provenance/hostnames)";
  return std::to_string(names.size()) + (names.empty() ? "" : ": " + list);
}

struct SystemRow {
  const char* title;
  std::string key;  // the provenance key a cut value names
  std::function<std::string(const Provenance&)> value;
};

std::vector<SystemRow> system_rows() {
  const auto key = [](const char* k) { return [k](const Provenance& p) { return recorded(p, k); }; };
  return {
      {"nodes x ranks per node", "nodes",
       [](const Provenance& p) {
         return std::to_string(int64_t(recorded_number(p, "nodes"))) + " x " +
                std::to_string(int64_t(recorded_number(p, "ranks_per_node")));
       }},
      {"GPU", "gpu_name",
       [](const Provenance& p) {
         const std::string gpu = recorded(p, "gpu_name");
         return gpu.empty() ? "none (device " + recorded(p, "device") + ")" : gpu;
       }},
      {"GPUs per node (one rank each)", "ranks_per_node",
       [](const Provenance& p) {
         return recorded(p, "gpu_name").empty()
                    ? std::string("none")
                    : std::to_string(int64_t(recorded_number(p, "ranks_per_node")));
       }},
      {"GPU memory", "gpu_memory_mib",
       [](const Provenance& p) { return gib(recorded(p, "gpu_memory_mib")); }},
      {"node memory", "node_memory_mib",
       [](const Provenance& p) { return gib(recorded(p, "node_memory_mib")); }},
      {"interconnect (RDMA ports)", "rdma_ports", interconnect},
      {"network settings", "env.*", network_settings},
      {"NCCL", "nccl_version",
       [](const Provenance& p) {
         const std::string v = recorded(p, "nccl_version");
         return v.empty() ? std::string("not in this build") : v;
       }},
      {"MPI", "mpi_version", [](const Provenance& p) { return mpi_short(recorded(p, "mpi_version")); }},
      {"GPU driver / CUDA runtime", "gpu_driver",
       [](const Provenance& p) {
         const std::string d = recorded(p, "gpu_driver");
         return d.empty() ? std::string("none") : d + " / " + recorded(p, "cuda_runtime");
       }},
      {"CPU", "cpu_model",
       [](const Provenance& p) {
         return recorded(p, "cpu_model") + ", " + recorded(p, "cpu_cores") + " cores online";
       }},
      {"OS and kernel", "os", key("os")},
      {"C++ compiler and flags", "cxx_flags",
       [](const Provenance& p) {
         return recorded(p, "compiler") + ", " + collapse_spaces(recorded(p, "cxx_flags"));
       }},
      {"HDF5 / Kokkos", "hdf5_version",
       [](const Provenance& p) {
         return recorded(p, "hdf5_version") + " / " + recorded(p, "kokkos_version");
       }},
      {"minictx", "git_sha",
       [](const Provenance& p) {
         return recorded(p, "version") + " (" + recorded(p, "git_sha") + ")" +
                (recorded(p, "git_dirty") == "true" ? ", tracked files differ from it" : "");
       }},
      {"binary SHA-256", "binary_sha256", key("binary_sha256")},
  };
}

// Each row's values over the files, distinct ones joined by " / " (past three: a count).
Table system_table(const std::vector<SubmissionFile>& files) {
  Table t;
  t.header = {"system", "as recorded"};
  t.rows.push_back({"hosts", hosts(files)});
  for (const SystemRow& row : system_rows()) {
    std::vector<std::string> values;
    for (const auto& f : files) {
      const std::string v = cut(row.value(f.results.provenance), row.key);
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    std::string cell;
    if (values.size() > 3) {
      cell = std::to_string(values.size()) + " different values (provenance/" + row.key + ")";
    } else {
      for (const auto& v : values) cell += (cell.empty() ? "" : " / ") + v;
    }
    t.rows.push_back({row.title, cell});
  }
  return t;
}

std::string status_text(Status status, const std::vector<std::string>& why) {
  std::string out = to_string(status);
  if (status == Status::compliant) return out;
  std::string reasons;
  for (const auto& w : why) reasons += (reasons.empty() ? "" : "; ") + w;
  return out + ": " + reasons;
}

std::string bound_text() { return std::to_string(std::lround(100 * kSpreadBound)) + " %"; }

std::string fom_text(double fom) { return fom > 0 ? format_number(fom, 1) : "n/a"; }

Table class_table(const Submission& s) {
  Table t;
  t.header = {"class", "configuration", "launches", "FOM median", "min", "max", "spread", "status"};
  for (const ClassEntry& e : s.classes) {
    std::string spread = e.median > 0 ? format_number(100 * e.spread, 1) + " %" : "n/a";
    if (e.spread_flagged) spread += " FLAGGED (above " + bound_text() + ")";
    t.rows.push_back({e.class_name, e.configuration, std::to_string(e.launches.size()), fom_text(e.median),
                      fom_text(e.min), fom_text(e.max), spread, status_text(e.status, e.why)});
  }
  return t;
}

std::string label(const PointResult& p, const char* key) {
  const auto it = p.labels.find(key);
  return it == p.labels.end() ? "n/a" : it->second;
}

Table run_table(const Submission& s) {
  Table t;
  t.header = {"class", "FOM: tokens/s per device", "devices", "nodes", "backend", "verification", "status",
              "run"};
  for (const AssessedRun& a : s.runs) {
    const PointResult& p = *a.run.point;
    t.rows.push_back({a.run.class_name, fom_text(a.run.audit.fom), std::to_string(p.ranks),
                      std::to_string(int64_t(recorded_number(a.run.file->results.provenance, "nodes"))),
                      label(p, lk::backend), a.verification, status_text(a.status, a.why), a.run.where()});
  }
  return t;
}

Table findings_table(const Submission& s) {
  Table t;
  t.header = {"run", "field", "what disagrees"};
  const auto add = [&](const ClassPoint& c) {
    for (const Finding& f : c.audit.findings) t.rows.push_back({c.where(), f.field, f.detail});
  };
  for (const AssessedRun& a : s.runs) add(a.run);
  for (const AssessedVerification& v : s.verifications) add(v.run);
  return t;
}

std::string digest_state(const ClassPoint& c) {
  for (const Finding& f : c.audit.findings)
    if (f.field == "digest" || f.field == "provenance_digest") return "DOES NOT MATCH (" + f.field + ")";
  return "matches";
}

Table digest_table(const Submission& s) {
  Table t;
  t.header = {"run",  "point digest (SHA-256)", "provenance digest", "binary SHA-256", "deck file SHA-256",
              "check"};
  const auto add = [&](const ClassPoint& c) {
    const Provenance& p = c.file->results.provenance;
    const std::string deck = recorded(p, "deck_sha256");
    t.rows.push_back({c.where(), c.point->digest.empty() ? "none" : c.point->digest,
                      c.point->provenance_digest.empty() ? "none" : c.point->provenance_digest,
                      recorded(p, "binary_sha256"), deck.empty() ? "none" : deck, digest_state(c)});
  };
  for (const AssessedRun& a : s.runs) add(a.run);
  for (const AssessedVerification& v : s.verifications) add(v.run);
  return t;
}

Table deviation_table(const Submission& s) {
  Table t;
  t.header = {"class", "run", "key", "class deck", "this run", "allowed", "rule"};
  for (const auto& a : s.runs)
    for (const auto& d : a.deviations)
      t.rows.push_back({a.run.class_name, a.run.where(), d.difference.key, d.difference.old_value,
                        d.difference.new_value, d.rule.allowed ? "allowed" : "NOT ALLOWED", d.rule.why});
  return t;
}

Table verification_table(const Submission& s) {
  Table t;
  t.header = {"class",     "run",     "tokens", "layers", "devices", "backend", "verdict (re-derived)",
              "reference", "verifies"};
  for (const auto& v : s.verifications) {
    const PointResult& p = *v.run.point;
    std::string verifies;
    for (const auto& m : v.verifies) verifies += (verifies.empty() ? "" : ", ") + m;
    const std::string verdict = v.run.audit.findings.empty() ? v.run.audit.verdict : "inconsistent";
    t.rows.push_back({v.run.class_name, v.run.where(), label(p, lk::seq_len), label(p, lk::layers),
                      std::to_string(p.ranks), label(p, lk::backend), verdict, p.reference,
                      verifies.empty() ? v.note : verifies});
  }
  return t;
}

Table csv_table(const Submission& s) {
  Table t = run_table(s);
  t.header.insert(t.header.end(), {"not allowed", "allowed deviations", "digest"});
  const std::vector<SystemRow> rows = system_rows();
  for (const SystemRow& r : rows) t.header.emplace_back(r.title);
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const AssessedRun& a = s.runs[i];
    std::string allowed, not_allowed;
    for (const auto& d : a.deviations) {
      std::string& list = d.rule.allowed ? allowed : not_allowed;
      list += (list.empty() ? "" : " ") + d.difference.key + "=" + d.difference.new_value;
    }
    t.rows[i].insert(t.rows[i].end(), {not_allowed, allowed, digest_state(a.run)});
    for (const SystemRow& r : rows) t.rows[i].push_back(r.value(a.run.file->results.provenance));
  }
  return t;
}

constexpr const char* kDigestMeaning =
    "Each point carries a SHA-256 digest of its datasets and attributes bound to the digest of its file's "
    "provenance (which holds the SHA-256 of the binary and of the deck file), made when the point was "
    "written. "
    "A digest that matches proves the point and its provenance are as the writer left them: no edit, no "
    "damage. "
    "It does not prove that the writer was an unmodified minictx, nor that the times were measured: anyone "
    "can "
    "compute a SHA-256 over edited values. Re-running the verification (and a launch) with the recorded "
    "binary "
    "is what proves a figure (docs/benchmark.md, \"A centre's spot-check\").";

void section(std::ostringstream& s, const char* title, const Table& t, TableFormat format, const char* none) {
  s << "\n## " << title << "\n\n";
  if (t.rows.empty())
    s << none << "\n";
  else
    s << render(t, format);
}

}  // namespace

std::string submission_report(const Submission& sub, const std::vector<SubmissionFile>& files,
                              TableFormat format) {
  if (format == TableFormat::csv) return render(csv_table(sub), format);
  std::ostringstream s;
  s << "# minictx benchmark submission\n\nStatus: **" << status_text(sub.status, sub.why) << "** (exit "
    << exit_code(sub.status) << ")\n\n## System\n\n"
    << render(system_table(files), format)
    << "\n## Classes\n\nEach class's independent launches of one configuration (the run rules ask for "
    << kRequiredLaunches
    << "): the median, least and greatest figure of merit, recomputed from each launch's "
       "per-iteration times, and the spread (greatest - least) / median, flagged above "
    << bound_text() << ".\n\n";
  s << (sub.classes.empty() ? "None.\n" : render(class_table(sub), format));
  s << "\n## Class runs\n\nFOM: tokens per second per device of a full training step (forward and backward "
       "of "
       "the layer stack), recomputed from iter_seconds and the resolved deck's shape. A FOM counts only with "
       "a "
       "VALID fp64 verification of the same configuration (docs/benchmark.md).\n\n"
    << (sub.runs.empty() ? "None.\n" : render(run_table(sub), format));
  section(s, "What disagrees", findings_table(sub), format,
          "Nothing: every recorded figure, label, verdict and digest agrees with its recomputation.");
  s << "\n## Digests\n\n" << kDigestMeaning << "\n\n";
  s << (sub.runs.empty() && sub.verifications.empty() ? "None.\n" : render(digest_table(sub), format));
  section(s, "Deviations from the class decks", deviation_table(sub), format,
          "None: every class run is its class deck as shipped.");
  section(s, "Verification runs", verification_table(sub), format, "None.");
  if (!sub.left_out.empty()) {
    s << "\n## Left out\n\n";
    for (const LeftOut& l : sub.left_out) s << "- " << l.where << ": " << l.why << "\n";
  }
  return s.str();
}

}  // namespace minictx
