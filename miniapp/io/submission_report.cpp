#include "io/submission_report.hpp"

#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>

#include "config/benchmark.hpp"
#include "config/class_decks.hpp"
#include "config/deck.hpp"
#include "config/deck_diff.hpp"
#include "core/error.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace lk = schema::label_key;
namespace mk = schema::metric_key;

// What the report needs of a point's resolved deck. Read as YAML, not resolved again: a
// machine profile the run named need not exist where the report runs.
struct BenchmarkKeys {
  std::string class_name, role;
  std::string length, layers;
};

BenchmarkKeys benchmark_keys(const std::string& resolved_yaml) {
  const YAML::Node deck = YAML::Load(resolved_yaml);
  const auto text = [&](const char* section, const char* key) {
    const YAML::Node v = deck[section][key];
    return v && v.IsScalar() ? v.Scalar() : std::string();
  };
  return {text("benchmark", "class"), text("benchmark", "role"), text("sequence", "length"),
          text("model", "layers")};
}

// One run point of a class, measured or verifying, with where it came from.
struct ClassPoint {
  const SubmissionFile* file = nullptr;
  const PointResult* point = nullptr;
  BenchmarkKeys keys;
  std::string where() const { return file->path + ":" + point->name; }
};

struct Deviation {
  KeyDifference difference;
  RunRule rule;
};

// A class run's measurement with what the report found about it.
struct Assessed {
  ClassPoint run;
  std::vector<Deviation> deviations;
  std::string verification;  // "VALID (...)", "INVALID (...)" or "unverified: why"
  std::string compliance;    // "compliant", "non-compliant: keys", "unverified", "INVALID"
};

// The class deck as shipped, resolved (with `role`), or an error naming the class.
std::string class_deck_yaml(const std::string& name, const std::string& role) {
  for (const ClassDeck& d : class_decks()) {
    if (name != d.name) continue;
    Deck deck = Deck::from_string(d.text, "inputs/benchmark/" + name + ".yaml");
    deck.set("benchmark.role=" + role);
    const auto points = deck.expand();
    if (points.size() != 1) fail("class deck " + name + " sweeps; a class is one point");
    return points.front().resolved_yaml;
  }
  std::string known;
  for (const ClassDeck& d : class_decks()) known += (known.empty() ? "" : ", ") + std::string(d.name);
  input_error("class '" + name + "' is not one of this build's classes (" + known + ")");
}

std::string text_of(const Provenance& p, const char* key) {
  const auto it = p.text.find(key);
  return it == p.text.end() ? "not recorded" : it->second;
}

double number_of(const Provenance& p, const char* key) {
  const auto it = p.numbers.find(key);
  return it == p.numbers.end() ? -1 : it->second;
}

// The same program and build: a verification run checks these kernels, not others.
constexpr const char* build_keys[] = {"version",   "git_sha",    "git_dirty",   "compiler",
                                      "cxx_flags", "build_type", "mpi_version", "gpu_name"};

// Why `v` cannot verify `m`, or "" when it can: the same configuration but for the
// keys a verification run may change, the same ranks and ranks per node, the same build.
std::string mismatch(const ClassPoint& m, const ClassPoint& v) {
  for (const auto& d : all_differences(m.point->deck, v.point->deck, {}))
    if (!verification_may_differ(d.key))
      return d.key + " (this run " + d.old_value + ", the verification run " + d.new_value + ")";
  if (m.point->labels.at(lk::world_size) != v.point->labels.at(lk::world_size)) return "the world size";
  const Provenance &pm = m.file->results.provenance, &pv = v.file->results.provenance;
  if (number_of(pm, "ranks_per_node") != number_of(pv, "ranks_per_node")) return "the ranks per node";
  for (const char* key : build_keys)
    if (text_of(pm, key) != text_of(pv, key)) return std::string("the build's ") + key;
  return "";
}

std::string verification_of(const ClassPoint& m, const std::vector<ClassPoint>& verifications) {
  if (m.point->verdict == "VALID" || m.point->verdict == "INVALID")
    return m.point->verdict + " (in the run, against " + m.point->reference + ")";
  std::string closest;
  for (const ClassPoint& v : verifications) {
    if (v.keys.class_name != m.keys.class_name) continue;
    const std::string why = mismatch(m, v);
    if (why.empty())
      return v.point->verdict + " (verification run " + v.where() + ", " + v.keys.length + " tokens, " +
             v.keys.layers + " layers, against " + v.point->reference + ")";
    if (closest.empty()) closest = v.where() + " differs in " + why;
  }
  return "unverified: " +
         (closest.empty() ? std::string("no verification run of this configuration") : closest);
}

Assessed assess(const ClassPoint& m, const std::vector<ClassPoint>& verifications) {
  Assessed a;
  a.run = m;
  const std::string reference = class_deck_yaml(m.keys.class_name, "measurement");
  std::string forbidden;
  for (auto& d : all_differences(reference, m.point->deck, {})) {
    const RunRule rule = run_rule(d.key);
    if (!rule.allowed) forbidden += (forbidden.empty() ? "" : ", ") + d.key;
    a.deviations.push_back({std::move(d), rule});
  }
  a.verification = verification_of(m, verifications);
  if (!forbidden.empty())
    a.compliance = "non-compliant: " + forbidden;
  else if (a.verification.rfind("VALID", 0) == 0)
    a.compliance = "compliant";
  else if (a.verification.rfind("INVALID", 0) == 0)
    a.compliance = "INVALID";
  else
    a.compliance = "unverified";
  return a;
}

std::string fom(const PointResult& p) {
  const auto it = p.metrics.find(mk::tokens_per_s_per_device);
  return it == p.metrics.end() ? "n/a" : format_number(it->second, 1);
}

// The system rows: each key's values over the files, distinct ones joined by " / ".
struct SystemField {
  const char* key;
  const char* title;
};
constexpr SystemField system_fields[] = {
    {"cpu_model", "CPU"},
    {"cpu_cores", "CPU cores per node (online)"},
    {"os", "OS and kernel"},
    {"gpu_name", "GPU"},
    {"gpu_count", "GPUs visible per rank"},
    {"gpu_memory_mib", "GPU memory (MiB)"},
    {"gpu_driver", "GPU driver"},
    {"cuda_runtime", "CUDA runtime"},
    {"device_config", "device"},
    {"mpi_version", "MPI library"},
    {"compiler", "C++ compiler"},
    {"c_compiler", "C compiler"},
    {"cuda_compiler", "CUDA compiler"},
    {"cxx_flags", "C++ flags"},
    {"hdf5_version", "HDF5"},
    {"kokkos_version", "Kokkos"},
    {"version", "minictx version"},
    {"git_sha", "minictx git revision"},
    {"git_dirty", "tracked files differ from that revision"},
};

std::string distinct(const std::vector<SubmissionFile>& files, const char* key) {
  std::set<std::string> seen;
  std::string out;
  for (const auto& f : files) {
    const std::string v = text_of(f.results.provenance, key);
    if (seen.insert(v).second) out += (out.empty() ? "" : " / ") + v;
  }
  return out;
}

Table system_table(const std::vector<SubmissionFile>& files) {
  Table t;
  t.header = {"system", "as recorded"};
  std::set<std::string> hosts;
  for (const auto& f : files)
    hosts.insert(f.results.provenance.hostnames.begin(), f.results.provenance.hostnames.end());
  std::string host_list;
  for (const auto& h : hosts) host_list += (host_list.empty() ? "" : ", ") + h;
  t.rows.push_back({"hosts", std::to_string(hosts.size()) + ": " + host_list});
  for (const SystemField& f : system_fields) t.rows.push_back({f.title, distinct(files, f.key)});
  return t;
}

Table fom_table(const std::vector<Assessed>& runs) {
  Table t;
  t.header = {
      "class", "FOM: tokens/s per device", "devices", "nodes", "backend", "verification", "compliance",
      "run"};
  for (const auto& a : runs) {
    const auto& p = *a.run.point;
    t.rows.push_back(
        {a.run.keys.class_name, fom(p), p.labels.at(lk::world_size),
         std::to_string(static_cast<long long>(number_of(a.run.file->results.provenance, "nodes"))),
         p.labels.at(lk::backend), a.verification, a.compliance, a.run.where()});
  }
  return t;
}

Table deviation_table(const std::vector<Assessed>& runs) {
  Table t;
  t.header = {"class", "run", "key", "class deck", "this run", "allowed", "rule"};
  for (const auto& a : runs)
    for (const auto& d : a.deviations)
      t.rows.push_back({a.run.keys.class_name, a.run.where(), d.difference.key, d.difference.old_value,
                        d.difference.new_value, d.rule.allowed ? "allowed" : "NOT ALLOWED", d.rule.why});
  return t;
}

Table verification_table(const std::vector<ClassPoint>& verifications) {
  Table t;
  t.header = {"class", "run", "tokens", "layers", "devices", "backend", "verdict", "reference"};
  for (const auto& v : verifications)
    t.rows.push_back({v.keys.class_name, v.where(), v.keys.length, v.keys.layers,
                      v.point->labels.at(lk::world_size), v.point->labels.at(lk::backend), v.point->verdict,
                      v.point->reference});
  return t;
}

Table csv_table(const std::vector<Assessed>& runs) {
  Table t = fom_table(runs);
  t.header.push_back("not allowed");
  t.header.push_back("allowed deviations");
  for (const SystemField& f : system_fields) t.header.emplace_back(f.key);
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string allowed, not_allowed;
    for (const auto& d : runs[i].deviations) {
      std::string& list = d.rule.allowed ? allowed : not_allowed;
      list += (list.empty() ? "" : " ") + d.difference.key + "=" + d.difference.new_value;
    }
    t.rows[i].push_back(not_allowed);
    t.rows[i].push_back(allowed);
    for (const SystemField& f : system_fields)
      t.rows[i].push_back(text_of(runs[i].run.file->results.provenance, f.key));
  }
  return t;
}

}  // namespace

std::string submission_report(const std::vector<SubmissionFile>& files, TableFormat format) {
  std::vector<ClassPoint> measurements, verifications;
  std::vector<std::string> not_class;
  for (const auto& f : files)
    for (const auto& p : f.results.points) {
      if (!p.skipped_reason.empty()) continue;
      const ClassPoint c{&f, &p, benchmark_keys(p.deck)};
      for (const char* key : {lk::world_size, lk::backend})  // what every table of a class run shows
        if (!c.keys.class_name.empty() && !p.labels.count(key))
          input_error(c.where() + ": a class run without its '" + key +
                      "' label; the file is not as minictx wrote it");
      if (c.keys.class_name.empty())
        not_class.push_back(c.where());
      else
        (c.keys.role == "verification" ? verifications : measurements).push_back(c);
    }
  std::vector<Assessed> runs;
  runs.reserve(measurements.size());
  for (const auto& m : measurements) runs.push_back(assess(m, verifications));
  if (format == TableFormat::csv) return render(csv_table(runs), format);

  std::ostringstream s;
  s << "# minictx benchmark submission\n\n## System\n\n"
    << render(system_table(files), format)
    << "\n## Figures of merit\n\nFOM: tokens per second per device of a full training step (forward and "
       "backward of "
       "the layer stack), the class's model and sequence. A FOM counts only with a VALID verification of the "
       "same "
       "configuration (docs/benchmark.md).\n\n"
    << render(fom_table(runs), format) << "\n## Deviations from the class decks\n\n";
  const Table deviations = deviation_table(runs);
  if (deviations.rows.empty())
    s << "None: every class run is its class deck as shipped.\n";
  else
    s << render(deviations, format);
  s << "\n## Verification runs\n\n";
  if (verifications.empty())
    s << "None.\n";
  else
    s << render(verification_table(verifications), format);
  if (!not_class.empty()) {
    s << "\nNot class runs (no benchmark.class), left out:";
    for (const auto& w : not_class) s << " " << w;
    s << "\n";
  }
  return s.str();
}

}  // namespace minictx
