#include "submission/assessment.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "config/class_decks.hpp"
#include "config/deck.hpp"
#include "core/error.hpp"
#include "io/results_schema.hpp"

namespace minictx {

const char* to_string(Status s) {
  switch (s) {
    case Status::compliant:
      return "compliant";
    case Status::unverified:
      return "unverified";
    case Status::non_compliant:
      return "non-compliant";
    case Status::inconsistent:
      return "inconsistent";
  }
  return "?";
}

int exit_code(Status s) {
  switch (s) {
    case Status::compliant:
      return 0;
    case Status::unverified:
      return 4;
    case Status::non_compliant:
      return 5;
    case Status::inconsistent:
      return 6;
  }
  return 6;
}

namespace {

namespace lk = schema::label_key;

// Raises `status` to `s` and says why.
void raise(Status& status, std::vector<std::string>& why, Status s, const std::string& reason) {
  status = std::max(status, s);
  why.push_back(reason);
}

std::string fields_of(const PointAudit& a) {
  std::vector<std::string> fields;
  for (const Finding& f : a.findings)
    if (std::find(fields.begin(), fields.end(), f.field) == fields.end()) fields.push_back(f.field);
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ", ") + f;
  return out;
}

bool projected(const SubmissionFile& f, const PointResult& p) {
  const auto label = p.labels.find(lk::projected);
  const auto prov = f.results.provenance.text.find("projected");
  return (label != p.labels.end() && label->second == "true") || p.verdict == "PROJECTED" ||
         (prov != f.results.provenance.text.end() && prov->second == "true");
}

// benchmark.class and benchmark.role of a recorded deck, read as YAML: "" when it has none.
std::pair<std::string, std::string> class_and_role(const std::string& deck) {
  const YAML::Node root = YAML::Load(deck);
  const YAML::Node c = root["benchmark"]["class"], r = root["benchmark"]["role"];
  return {c && c.IsScalar() ? c.Scalar() : "", r && r.IsScalar() ? r.Scalar() : "measurement"};
}

}  // namespace

std::optional<std::string> resolved_class_deck(const std::string& name, const std::string& role) {
  for (const ClassDeck& d : class_decks()) {
    if (name != d.name) continue;
    Deck deck = Deck::from_string(d.text, "inputs/benchmark/" + name + ".yaml");
    deck.set("benchmark.role=" + role);
    const auto points = deck.expand();
    if (points.size() != 1) fail("class deck " + name + " sweeps; a class is one point");
    return points.front().resolved_yaml;
  }
  return std::nullopt;
}

namespace {

std::string text_of(const Provenance& p, const char* key) {
  const auto it = p.text.find(key);
  return it == p.text.end() ? "not recorded" : it->second;
}

double number_of(const Provenance& p, const char* key) {
  const auto it = p.numbers.find(key);
  return it == p.numbers.end() ? -1 : it->second;
}

// The same program and build: a verification run checks these kernels, not others.
constexpr const char* build_keys[] = {"version",    "git_sha",     "git_dirty", "compiler",     "cxx_flags",
                                      "build_type", "mpi_version", "gpu_name",  "binary_sha256"};

// Why `b` is not the configuration of `a` (keys `may_differ` aside), or "": the same
// deck, world size, ranks per node and build. A deck that does not resolve is no one's.
template <class MayDiffer>
std::string mismatch(const ClassPoint& a, const ClassPoint& b, MayDiffer may_differ) {
  if (!a.audit.config || !b.audit.config) return "a deck that does not resolve";
  for (const auto& d : all_differences(a.point->deck, b.point->deck, {}))
    if (!may_differ(d.key)) return d.key + " (" + d.old_value + " against " + d.new_value + ")";
  if (a.point->ranks != b.point->ranks) return "the world size";
  const Provenance &pa = a.file->results.provenance, &pb = b.file->results.provenance;
  if (number_of(pa, "ranks_per_node") != number_of(pb, "ranks_per_node")) return "the ranks per node";
  for (const char* key : build_keys)
    if (text_of(pa, key) != text_of(pb, key)) return std::string("the build's ") + key;
  return "";
}

bool outside_configuration(const std::string& key) {
  return key.rfind("output.", 0) == 0 || key.rfind("machine.", 0) == 0;
}

std::string describe_verification(const ClassPoint& v, const ClassPoint& m) {
  if (&v == &m) return "in the run, against " + v.point->reference;
  if (!v.audit.config) return "verification run " + v.where();
  const RunConfig& c = *v.audit.config;
  return "verification run " + v.where() + ", " + std::to_string(c.sequence.length) + " tokens, " +
         std::to_string(c.model.layers) + " layers, against " + v.point->reference;
}

bool verifies_fp64(const ClassPoint& v) {
  return v.audit.config && v.audit.config->run.reference == Reference::fp64 && v.point->reference == "fp64";
}

// The verification of a measurement: every verification run of its configuration (and
// its own, with run.verify), whatever their order. Any inconsistent one makes the run
// inconsistent, any INVALID one INVALID; a single-device one is a diagnostic only.
void join_verifications(AssessedRun& a, std::vector<AssessedVerification>& verifications) {
  const ClassPoint& m = a.run;
  std::vector<const ClassPoint*> joined;
  std::string closest;
  if (m.audit.config && m.audit.config->run.verify) joined.push_back(&m);
  for (AssessedVerification& v : verifications) {
    if (v.run.class_name != m.class_name) continue;
    const std::string why = mismatch(m, v.run, verification_may_differ);
    if (why.empty()) {
      joined.push_back(&v.run);
      v.verifies.push_back(m.where());
    } else if (closest.empty()) {
      closest = v.run.where() + " differs in " + why;
    }
  }
  const ClassPoint* valid = nullptr;
  const ClassPoint* single = nullptr;
  for (const ClassPoint* v : joined) {
    if (v != &m && !v->audit.findings.empty()) {
      a.verification = "inconsistent (" + describe_verification(*v, m) + ")";
      raise(a.status, a.why, Status::inconsistent,
            "its verification run " + v->where() + " is inconsistent: " + fields_of(v->audit));
      return;
    }
    if (v->audit.verdict == "INVALID") {
      a.verification = "INVALID (" + describe_verification(*v, m) + ")";
      raise(a.status, a.why, Status::non_compliant, "INVALID verification");
      return;
    }
    if (v->audit.verdict == "VALID" && verifies_fp64(*v) && !valid) valid = v;
    if (v->audit.verdict == "VALID" && !verifies_fp64(*v) && !single) single = v;
  }
  if (valid) {
    a.verification = "VALID (" + describe_verification(*valid, m) + ")";
    return;
  }
  a.verification = single ? "unverified: only " + describe_verification(*single, m) +
                                ", a diagnostic: only an fp64 verification counts"
                   : closest.empty() ? "unverified: no verification run of this configuration"
                                     : "unverified: " + closest;
  raise(a.status, a.why, Status::unverified, "no VALID fp64 verification of this configuration");
}

AssessedRun assess_run(const ClassPoint& m, std::vector<AssessedVerification>& verifications) {
  AssessedRun a;
  a.run = m;
  if (!m.audit.findings.empty())
    raise(a.status, a.why, Status::inconsistent, "recorded values disagree: " + fields_of(m.audit));
  const std::optional<std::string> reference = resolved_class_deck(m.class_name, "measurement");
  if (!m.audit.config) {
    // Inconsistent already: a deck that does not resolve has no deviations to list.
  } else if (!reference) {
    raise(a.status, a.why, Status::non_compliant, "class '" + m.class_name + "' is not one of this build's");
  } else {
    std::string forbidden;
    for (auto& d : all_differences(*reference, m.point->deck, {})) {
      const RunRule rule = run_rule(d.key);
      if (!rule.allowed) forbidden += (forbidden.empty() ? "" : ", ") + d.key;
      a.deviations.push_back({std::move(d), rule});
    }
    if (!forbidden.empty()) raise(a.status, a.why, Status::non_compliant, "not allowed: " + forbidden);
  }
  join_verifications(a, verifications);
  return a;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string configuration_of(const AssessedRun& r) {
  const PointResult& p = *r.run.point;
  const auto label = [&](const char* key) {
    const auto it = p.labels.find(key);
    return it == p.labels.end() ? std::string("?") : it->second;
  };
  return "backend=" + label(lk::backend) + ", devices=" + std::to_string(p.ranks) + ", ranks per node=" +
         std::to_string(int64_t(number_of(r.run.file->results.provenance, "ranks_per_node")));
}

// A class entry's figures over its launches and its status from theirs.
void summarise(ClassEntry& e, const std::vector<AssessedRun>& runs) {
  std::vector<double> foms;
  for (size_t i : e.launches) {
    const AssessedRun& r = runs[i];
    if (r.status != Status::compliant)
      raise(e.status, e.why, r.status, r.run.where() + " " + to_string(r.status));
    if (r.run.audit.fom > 0) foms.push_back(r.run.audit.fom);
  }
  for (const std::string& copy : e.copies)
    raise(e.status, e.why, Status::inconsistent,
          copy + " repeats another launch's times: not a launch of its own");
  if (int(e.launches.size()) < kRequiredLaunches)
    raise(e.status, e.why, Status::non_compliant,
          std::to_string(e.launches.size()) + (e.launches.size() == 1 ? " launch" : " launches") +
              "; the run rules ask for " + std::to_string(kRequiredLaunches));
  if (foms.empty()) return;
  e.median = median_of(foms);
  e.min = *std::min_element(foms.begin(), foms.end());
  e.max = *std::max_element(foms.begin(), foms.end());
  e.spread = (e.max - e.min) / e.median;
  e.spread_flagged = e.spread > kSpreadBound;
}

// Runs of one class in one configuration are one entry; a run whose times equal another's
// is a copy of that launch, not one more.
std::vector<ClassEntry> class_entries(const std::vector<AssessedRun>& runs) {
  std::vector<ClassEntry> entries;
  std::vector<size_t> first_of;  // a representative run of each entry
  for (size_t i = 0; i < runs.size(); ++i) {
    const AssessedRun& r = runs[i];
    size_t e = 0;
    while (e < entries.size() && !(runs[first_of[e]].run.class_name == r.run.class_name &&
                                   mismatch(runs[first_of[e]].run, r.run, outside_configuration).empty()))
      ++e;
    if (e == entries.size()) {
      ClassEntry entry;
      entry.class_name = r.run.class_name;
      entry.configuration = configuration_of(r);
      entries.push_back(std::move(entry));
      first_of.push_back(i);
    }
    ClassEntry& entry = entries[e];
    const auto same_times = [&](size_t j) {
      return runs[j].run.point->iter_seconds == r.run.point->iter_seconds;
    };
    const auto copy = std::find_if(entry.launches.begin(), entry.launches.end(), same_times);
    if (copy == entry.launches.end())
      entry.launches.push_back(i);
    else
      entry.copies.push_back(r.run.where() + " (times of " + runs[*copy].run.where() + ")");
  }
  for (ClassEntry& e : entries) summarise(e, runs);
  return entries;
}

// Every point of every file, in order of file path and point name.
std::vector<std::pair<const SubmissionFile*, const PointResult*>> sorted_points(
    const std::vector<SubmissionFile>& files) {
  std::vector<std::pair<const SubmissionFile*, const PointResult*>> points;
  for (const auto& f : files)
    for (const auto& p : f.results.points) points.emplace_back(&f, &p);
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->path, a.second->name) < std::tie(b.first->path, b.second->name);
  });
  return points;
}

}  // namespace

Submission assess_submission(const std::vector<SubmissionFile>& files) {
  Submission s;
  std::vector<ClassPoint> measurements;
  for (const auto& f : files)
    for (const std::string& line : f.results.unreadable) {
      s.left_out.push_back({f.path, line});
      raise(s.status, s.why, Status::inconsistent, f.path + ": " + line);
    }
  for (const auto& [file, point] : sorted_points(files)) {
    const std::string where = file->path + ":" + point->name;
    if (!point->skipped_reason.empty()) {
      s.left_out.push_back({where, "skipped: " + point->skipped_reason});
      continue;
    }
    if (projected(*file, *point)) {
      s.left_out.push_back({where, "projected (minictx project), not measured"});
      continue;
    }
    std::pair<std::string, std::string> keys;
    try {
      keys = class_and_role(point->deck);
    } catch (const YAML::Exception& e) {
      s.left_out.push_back({where, "its deck does not parse"});
      raise(s.status, s.why, Status::inconsistent, where + ": its deck does not parse");
      continue;
    }
    if (keys.first.empty()) {
      s.left_out.push_back({where, "not a class run (no benchmark.class)"});
      continue;
    }
    ClassPoint c{file, point, keys.first, keys.second, audit_point(*point, file->results.provenance)};
    if (c.role == "verification")
      s.verifications.push_back({std::move(c), {}, ""});
    else
      measurements.push_back(std::move(c));
  }
  for (const ClassPoint& m : measurements) s.runs.push_back(assess_run(m, s.verifications));
  for (AssessedVerification& v : s.verifications) {
    if (!v.run.audit.findings.empty())
      raise(s.status, s.why, Status::inconsistent,
            v.run.where() + " is inconsistent: " + fields_of(v.run.audit));
    if (v.verifies.empty()) v.note = "joined to no measurement of its configuration";
  }
  s.classes = class_entries(s.runs);
  for (const ClassEntry& e : s.classes)
    if (e.status != Status::compliant)
      raise(s.status, s.why, e.status, e.class_name + " (" + e.configuration + ") " + to_string(e.status));
  if (s.classes.empty())
    raise(s.status, s.why, Status::non_compliant, "no class measurement among the files");
  return s;
}

}  // namespace minictx
