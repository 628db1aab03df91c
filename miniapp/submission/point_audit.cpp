#include "submission/point_audit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "bench/labels.hpp"
#include "bench/metrics.hpp"
#include "config/deck.hpp"
#include "config/deck_diff.hpp"
#include "config/device_catalog.hpp"
#include "core/error.hpp"
#include "driver/verification.hpp"
#include "io/point_digest.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace mk = schema::metric_key;
namespace lk = schema::label_key;

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", v);
  return text;
}

bool agrees(double recorded, double recomputed) {
  if (std::isnan(recorded) || std::isnan(recomputed)) return false;
  return std::fabs(recorded - recomputed) <=
         kRecomputeTolerance * std::max(std::fabs(recorded), std::fabs(recomputed));
}

class Findings {
 public:
  explicit Findings(std::vector<Finding>& out) : out_(out) {}
  void add(const std::string& field, const std::string& detail) { out_.push_back({field, detail}); }
  bool empty() const { return out_.empty(); }

 private:
  std::vector<Finding>& out_;
};

void check_digests(const PointResult& p, const Provenance& prov, Findings& f) {
  if (p.digest.empty() || p.provenance_digest.empty()) {
    f.add("digest", "none recorded (a file from a minictx without digests, or the digest removed)");
    return;
  }
  if (point_digest(p, p.provenance_digest) != p.digest)
    f.add("digest", "the point's datasets or attributes changed after it was written");
  if (provenance_digest(prov) != p.provenance_digest)
    f.add("provenance_digest", "the file's provenance is not the one the point was written under");
}

// A recorded deck resolved again. Its machine profile is replaced: the profile the run
// named need not exist where the report runs, and machine.* sets only the MFU's peak.
std::vector<SweepPoint> resolve_again(const std::string& yaml, const std::string& name) {
  Deck deck = Deck::from_string(yaml, name);
  deck.set(std::string("machine.profile=") + MachineConfig::measure_profile);
  return deck.expand();
}

// Whether the point's deck is one that the deck as given (provenance/deck) expands to.
void check_against_given(const PointResult& p, const Provenance& prov, Findings& f) {
  const auto given = prov.text.find("deck");
  if (given == prov.text.end() || given->second.empty()) {
    f.add("provenance/deck", "the deck as given is not recorded");
    return;
  }
  std::vector<SweepPoint> points;
  try {
    points = resolve_again(given->second, "as given (provenance/deck)");
  } catch (const Error& e) {
    f.add("provenance/deck", std::string("does not resolve: ") + e.what());
    return;
  }
  std::string first;
  for (const SweepPoint& g : points) {
    const auto differences = all_differences(g.resolved_yaml, p.deck, {"machine"});
    if (differences.empty()) return;
    if (first.empty())
      first = differences.front().key + " is " + differences.front().old_value + " there and " +
              differences.front().new_value + " here";
  }
  f.add("deck", "not what the deck as given (provenance/deck) resolves to: " + first);
}

std::optional<RunConfig> check_deck(const PointResult& p, const Provenance& prov, Findings& f) {
  try {
    const std::vector<SweepPoint> points = resolve_again(p.deck, "recorded (points/" + p.name + "/deck)");
    if (points.size() != 1) {
      f.add("deck", "sweeps; a point's resolved deck is one configuration");
      return std::nullopt;
    }
    for (const auto& d : all_differences(p.deck, points.front().resolved_yaml, {"machine"}))
      f.add("deck", d.key + " is " + d.old_value + " as recorded and resolves to " + d.new_value);
    check_against_given(p, prov, f);
    return points.front().config;
  } catch (const Error& e) {
    f.add("deck", std::string("does not resolve: ") + e.what());
    return std::nullopt;
  }
}

double provenance_number(const Provenance& prov, const char* key) {
  const auto it = prov.numbers.find(key);
  return it == prov.numbers.end() ? NAN : it->second;
}

int ranks_per_node(const Provenance& prov, const RunConfig& cfg) {
  const double recorded = provenance_number(prov, "ranks_per_node");
  if (recorded >= 1) return int(recorded);
  return cfg.topology.ranks_per_node > 0 ? cfg.topology.ranks_per_node : 1;
}

// iters, ranks and the per-rank datasets against the configuration; false when the
// times cannot be used to recompute anything.
bool check_shape(const PointResult& p, const Provenance& prov, const RunConfig& cfg, Findings& f) {
  bool usable = true;
  if (p.iters != cfg.run.iters)
    f.add("iters",
          "recorded " + std::to_string(p.iters) + ", the deck's run.iters " + std::to_string(cfg.run.iters));
  if (cfg.topology.world_size > 0 && p.ranks != cfg.topology.world_size)
    f.add("ranks", "recorded " + std::to_string(p.ranks) + ", the deck's topology.world_size " +
                       std::to_string(cfg.topology.world_size));
  if (provenance_number(prov, "world_size") != p.ranks)
    f.add("provenance/world_size", "recorded " + number(provenance_number(prov, "world_size")) +
                                       ", the point's ranks " + std::to_string(p.ranks));
  const int per_node = ranks_per_node(prov, cfg);
  const int64_t whole_nodes = (int64_t(p.ranks) + per_node - 1) / per_node;
  const auto nodes = double(whole_nodes);
  if (provenance_number(prov, "nodes") != nodes)
    f.add("provenance/nodes", "recorded " + number(provenance_number(prov, "nodes")) + ", " +
                                  std::to_string(p.ranks) + " ranks at " + std::to_string(per_node) +
                                  " per node make " + number(nodes));
  if (!prov.hostnames.empty() && prov.hostnames.size() != size_t(p.ranks))
    f.add("provenance/hostnames",
          std::to_string(prov.hostnames.size()) + " names for " + std::to_string(p.ranks) + " ranks");
  if (p.iters < 1 || p.ranks < 1 || p.iter_seconds.size() != size_t(p.iters) * size_t(p.ranks)) {
    f.add("iter_seconds", "holds " + std::to_string(p.iter_seconds.size()) + " times, not iters x ranks = " +
                              std::to_string(p.iters) + " x " + std::to_string(p.ranks));
    usable = false;
  } else if (std::any_of(p.iter_seconds.begin(), p.iter_seconds.end(),
                         [](double s) { return !(std::isfinite(s) && s > 0); })) {
    f.add("iter_seconds", "holds a time that is not a positive number");
    usable = false;
  }
  const std::pair<const char*, const std::vector<double>*> per_rank[] = {
      {"peak_memory_bytes", &p.peak_memory_bytes},
      {"bytes_sent_intra", &p.bytes_sent_intra},
      {"bytes_sent_inter", &p.bytes_sent_inter}};
  for (const auto& [name, values] : per_rank)
    if (values->size() != size_t(p.ranks)) {
      f.add(name, std::to_string(values->size()) + " values for " + std::to_string(p.ranks) + " ranks");
      usable = false;
    }
  for (const std::string& phase : phase_names()) {
    const auto it = p.phase_seconds.find(phase);
    if (it == p.phase_seconds.end() || it->second.size() != size_t(p.ranks))
      f.add("phase_seconds/" + phase, "not one value per rank");
  }
  for (const auto& entry : p.phase_seconds)
    if (std::find(phase_names().begin(), phase_names().end(), entry.first) == phase_names().end())
      f.add("phase_seconds/" + entry.first, "not a phase a run records");
  return usable;
}

// The device the provenance names is the deck's, and only a GPU run names a GPU.
void check_device(const Provenance& prov, const RunConfig& cfg, Findings& f) {
  const auto device = prov.text.find("device");
  const std::string deck_device = to_string(cfg.run.device);
  if (device == prov.text.end() || device->second != deck_device)
    f.add("provenance/device", "recorded '" + (device == prov.text.end() ? "" : device->second) +
                                   "', the deck's run.device " + deck_device);
  if (!device_facts(cfg.run.device).gpu)
    for (const auto& [key, value] : prov.text)
      if (key.rfind("gpu_", 0) == 0)
        f.add("provenance/" + key, "a GPU recorded for a run on device " + deck_device);
}

void check_labels(const PointResult& p, const Provenance& prov, const RunConfig& cfg, Findings& f) {
  std::map<std::string, std::string> expected;
  try {
    expected = point_labels(cfg, Topology{p.ranks, ranks_per_node(prov, cfg)});
  } catch (const Error& e) {
    f.add("labels", std::string("cannot be derived from the deck: ") + e.what());
    return;
  }
  expected.erase(lk::gpu);  // the machine profile's name: machine.* is the submitter's
  for (const auto& [key, value] : expected) {
    const auto it = p.labels.find(key);
    if (it == p.labels.end())
      f.add(std::string("labels/") + key, "missing; the deck gives " + value);
    else if (it->second != value)
      f.add(std::string("labels/") + key, "recorded " + it->second + ", the deck gives " + value);
  }
  for (const auto& entry : p.labels)
    if (!expected.count(entry.first) && entry.first != lk::gpu)
      f.add("labels/" + entry.first, "not a label of this configuration");
}

// Every metric derive_metrics makes, from iter_seconds, the per-rank datasets and the
// deck; the peak behind MFU is the recorded one (machine.* is the submitter's).
double check_metrics(const PointResult& p, RunConfig cfg, Findings& f) {
  const auto peak = p.metrics.find(mk::peak_tflops_per_device);
  cfg.machine.peak_tflops = peak == p.metrics.end() ? 0 : peak->second;
  const std::map<std::string, double> expected = derive_metrics(cfg, p);
  for (const auto& [key, value] : expected) {
    const auto it = p.metrics.find(key);
    if (it == p.metrics.end())
      f.add("metrics/" + key, "missing; recomputed " + number(value));
    else if (!agrees(it->second, value))
      f.add("metrics/" + key, "recorded " + number(it->second) + ", recomputed " + number(value));
  }
  return expected.at(mk::tokens_per_s_per_device);
}

// The verdict from the errors: every tensor the configuration compares, each within the
// tolerance its dtype fixes.
std::string check_verification(const PointResult& p, const RunConfig& cfg, Findings& f) {
  if (!cfg.run.verify) {
    if (p.verdict != "UNVERIFIED") f.add("verdict", "recorded " + p.verdict + " without run.verify");
    if (!p.reference.empty() || !p.verification.empty())
      f.add("verification", "a reference or errors recorded without run.verify");
    return "UNVERIFIED";
  }
  if (p.reference != to_string(cfg.run.reference))
    f.add("reference",
          "recorded '" + p.reference + "', the deck's run.reference " + to_string(cfg.run.reference));
  std::vector<std::string> tensors;
  for (const VerifyRow& r : p.verification) tensors.push_back(r.tensor);
  const std::vector<std::string> expected = verification_tensor_names(cfg);
  bool valid = tensors == expected;
  if (!valid)
    f.add("verification/tensor", std::to_string(tensors.size()) +
                                     " tensors recorded; the configuration compares " +
                                     std::to_string(expected.size()) + ", from " + expected.front());
  std::map<std::string, std::pair<int, std::string>> wrong;  // field -> rows, the first one
  auto note = [&](const char* field, const std::string& what) {
    auto& w = wrong[field];
    if (w.first++ == 0) w.second = what;
  };
  for (const VerifyRow& r : p.verification) {
    const double tolerance = row_tolerance(cfg, r.tensor);
    if (r.tolerance != tolerance)
      note("verification/tolerance",
           r.tensor + ": recorded " + number(r.tolerance) + ", its row's " + number(tolerance));
    const bool pass = std::isfinite(r.max_rel_err) && r.max_rel_err <= tolerance;
    if (r.pass != pass)
      note("verification/pass", r.tensor + ": recorded " + (r.pass ? "1" : "0") + " for max_rel_err " +
                                    number(r.max_rel_err) + " against " + number(tolerance));
    valid = valid && pass;
  }
  for (const auto& [field, w] : wrong)
    f.add(field, std::to_string(w.first) + " rows disagree (" + w.second + ")");
  std::string verdict = valid ? "VALID" : "INVALID";
  if (p.verdict != verdict) f.add("verdict", "recorded " + p.verdict + ", re-derived " + verdict);
  return verdict;
}

}  // namespace

PointAudit audit_point(const PointResult& p, const Provenance& prov) {
  PointAudit a;
  Findings f(a.findings);
  check_digests(p, prov, f);
  a.config = check_deck(p, prov, f);
  if (!a.config) return a;
  const RunConfig& cfg = *a.config;
  const bool usable = check_shape(p, prov, cfg, f);
  check_labels(p, prov, cfg, f);
  check_device(prov, cfg, f);
  if (usable) a.fom = check_metrics(p, cfg, f);
  a.verdict = check_verification(p, cfg, f);
  return a;
}

}  // namespace minictx
