#include "config/machine_profile.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "config/deck.hpp"
#include "config/yaml_keys.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;

namespace minictx {

namespace {

// Where v falls among the increasing xs: the two neighbours and the weight of the upper
// one, in log2(x); at either end both are the end point.
struct Bracket {
  size_t lo = 0, hi = 0;
  double t = 0;
};
Bracket bracket(const std::vector<double>& xs, double v) {
  if (v <= xs.front()) return {0, 0, 0};
  if (v >= xs.back()) return {xs.size() - 1, xs.size() - 1, 0};
  const size_t i = size_t(std::upper_bound(xs.begin(), xs.end(), v) - xs.begin());
  return {i - 1, i, (std::log2(v) - std::log2(xs[i - 1])) / (std::log2(xs[i]) - std::log2(xs[i - 1]))};
}

}  // namespace

double EfficiencyCurve::at(double v) const {
  const Bracket b = bracket(x, v);
  return y[b.lo] + b.t * (y[b.hi] - y[b.lo]);
}

double AttentionEfficiency::at(bool backward, bool causal, double d, double len) const {
  const std::vector<double>& table =
      backward ? (causal ? bwd_causal : bwd_full) : (causal ? fwd_causal : fwd_full);
  const Bracket i = bracket(head_dim, d), j = bracket(length, len);
  const size_t n = length.size();
  auto row = [&](size_t r) {
    return table[r * n + j.lo] + j.t * (table[r * n + j.hi] - table[r * n + j.lo]);
  };
  return row(i.lo) + i.t * (row(i.hi) - row(i.lo));
}

namespace {

class Reader {
 public:
  explicit Reader(const fs::path& file) : where_("machine profile " + file.string()) {
    try {
      root_ = YAML::LoadFile(file.string());
    } catch (const YAML::Exception& e) {
      input_error(where_ + ": invalid YAML: " + e.msg);
    }
    if (!root_.IsMap()) input_error(where_ + ": expected a mapping");
    refuse_duplicate_keys(root_, where_);
  }

  const YAML::Node& root() const { return root_; }
  std::string at(const YAML::Node& n) const { return where_ + " line " + std::to_string(n.Mark().line + 1); }

  // A group of the projection section: a mapping that names its source.
  YAML::Node group(const std::string& key, std::map<std::string, std::string>& sources) const {
    const YAML::Node p = root_["projection"];
    if (!p || !p.IsMap())
      input_error(where_ +
                  ": no 'projection:' section; `minictx project` needs a profile with links and "
                  "efficiencies (see inputs/machines/a100-80gb-hdr.yaml)");
    const YAML::Node g = p[key];
    if (!g || !g.IsMap()) input_error(at(p) + ": projection." + key + " is missing or not a mapping");
    const YAML::Node s = g["source"];
    if (!s || !s.IsScalar() || s.Scalar().empty())
      input_error(at(g) + ": projection." + key +
                  " has no 'source:' (every figure names where it comes from)");
    sources[key] = s.Scalar();
    return g;
  }

  double positive(const YAML::Node& g, const std::string& group, const std::string& key) const {
    const YAML::Node v = g[key];
    if (!v || !v.IsScalar()) input_error(at(g) + ": projection." + group + "." + key + " is missing");
    double x = 0;
    try {
      x = v.as<double>();
    } catch (const YAML::Exception&) {
      input_error(at(v) + ": projection." + group + "." + key + " must be a number, got '" + v.Scalar() +
                  "'");
    }
    if (!(x > 0) || !std::isfinite(x))
      input_error(at(v) + ": projection." + group + "." + key + " must be positive, got " + v.Scalar());
    return x;
  }

  // A count (devices per node): a whole number in [1, most].
  int count(const YAML::Node& g, const std::string& group, const std::string& key, int most) const {
    const double x = positive(g, group, key);
    if (x != std::floor(x) || x > most)
      input_error(at(g[key]) + ": projection." + group + "." + key + " must be a whole number from 1 to " +
                  std::to_string(most) + ", got " + g[key].Scalar());
    return int(x);
  }

  // A fraction in [0, 1].
  double fraction(const YAML::Node& g, const std::string& group, const std::string& key) const {
    const YAML::Node v = g[key];
    if (!v || !v.IsScalar()) input_error(at(g) + ": projection." + group + "." + key + " is missing");
    double x = -1;
    try {
      x = v.as<double>();
    } catch (const YAML::Exception&) {
      input_error(at(v) + ": projection." + group + "." + key + " must be a number, got '" + v.Scalar() +
                  "'");
    }
    if (!(x >= 0 && x <= 1))
      input_error(at(v) + ": projection." + group + "." + key + " must be a fraction in [0, 1], got " +
                  v.Scalar());
    return x;
  }

  std::vector<double> list(const YAML::Node& g, const std::string& group, const std::string& key) const {
    const YAML::Node v = g[key];
    if (!v || !v.IsSequence() || v.size() == 0)
      input_error(at(g) + ": projection." + group + "." + key + " must be a non-empty list of numbers");
    std::vector<double> out;
    for (const auto& e : v) {
      double x = 0;
      try {
        x = e.as<double>();
      } catch (const YAML::Exception&) {
        input_error(at(e) + ": projection." + group + "." + key + " must hold numbers, got '" + e.Scalar() +
                    "'");
      }
      if (!(x > 0)) input_error(at(e) + ": projection." + group + "." + key + " values must be positive");
      out.push_back(x);
    }
    return out;
  }

  EfficiencyCurve curve(const YAML::Node& g, const std::string& group, const std::string& x_key,
                        const std::string& y_key) const {
    EfficiencyCurve c{list(g, group, x_key), list(g, group, y_key)};
    if (c.x.size() != c.y.size())
      input_error(at(g) + ": projection." + group + "." + x_key + " and ." + y_key + " differ in length");
    for (size_t i = 1; i < c.x.size(); ++i)
      if (c.x[i] <= c.x[i - 1]) input_error(at(g) + ": projection." + group + "." + x_key + " must increase");
    for (double y : c.y)
      if (y > 1)
        input_error(at(g) + ": projection." + group + "." + y_key + " are fractions of the peak (<= 1)");
    return c;
  }

 private:
  std::string where_;
  YAML::Node root_;
};

fs::path find_profile(const std::string& name_or_path, const fs::path& deck_dir) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos || fs::path(name_or_path).extension() == ".yaml";
  auto regular = [&](const fs::path& p) { return profile_file_exists(p, "--machine " + name_or_path); };
  if (is_path) {
    if (!regular(name_or_path)) input_error("--machine " + name_or_path + ": no such file");
    return name_or_path;
  }
  std::string searched;
  for (const auto& d : machine_profile_dirs(deck_dir)) {
    if (regular(d / (name_or_path + ".yaml"))) return d / (name_or_path + ".yaml");
    searched += (searched.empty() ? "" : ", ") + d.string();
  }
  input_error("--machine " + name_or_path +
              ": profile not found (available: " + list_machine_profiles(machine_profile_dirs(deck_dir)) +
              "; searched: " + (searched.empty() ? "no profile directory exists" : searched) + ")");
}

}  // namespace

ProjectionProfile load_projection_profile(const std::string& name_or_path, const fs::path& deck_dir) {
  const fs::path file = find_profile(name_or_path, deck_dir);
  const Reader r(file);
  ProjectionProfile p;
  p.file = file.string();
  const YAML::Node name = r.root()["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty()) input_error(r.at(r.root()) + ": 'name' is missing");
  p.name = name.Scalar();
  const YAML::Node peaks = r.root()["peak_tflops"];
  if (!peaks || !peaks.IsMap()) input_error(r.at(r.root()) + ": 'peak_tflops' is missing");
  for (const auto& kv : peaks) {
    const std::string dtype = kv.first.Scalar();
    double x = 0;
    try {
      x = kv.second.as<double>();
    } catch (const YAML::Exception&) {
      input_error(r.at(kv.second) + ": peak_tflops." + dtype + " must be a number, got '" +
                  (kv.second.IsScalar() ? kv.second.Scalar() : std::string("a list or mapping")) + "'");
    }
    if (!(x > 0) || !std::isfinite(x))
      input_error(r.at(kv.second) + ": peak_tflops." + dtype + " must be positive, got " +
                  kv.second.Scalar());
    p.peak_tflops[dtype] = x;
  }
  r.group("peaks", p.sources);

  const YAML::Node nodes = r.group("node", p.sources);
  constexpr int kMostDevicesPerNode = 1 << 16;
  p.gpus_per_node = r.count(nodes, "node", "devices", kMostDevicesPerNode);
  const YAML::Node mem = r.group("memory", p.sources);
  p.memory_gib = r.positive(mem, "memory", "capacity_gib");
  p.hbm_gb_s = r.positive(mem, "memory", "bandwidth_gb_s");
  for (const auto& [key, link] : {std::pair{"intra_node", &p.intra}, std::pair{"inter_node", &p.inter}}) {
    const YAML::Node g = r.group(key, p.sources);
    *link = {r.positive(g, key, "bandwidth_gb_s"), r.positive(g, key, "latency_us"),
             r.fraction(g, key, "overlap")};
  }
  const YAML::Node call = r.group("call_overhead", p.sources);
  p.call_overhead_us = r.positive(call, "call_overhead", "us");
  const YAML::Node gemm = r.group("gemm_efficiency", p.sources);
  p.gemm = r.curve(gemm, "gemm_efficiency", "size", "efficiency");
  // The head dim's figures at lengths that saturate the kernel, without a mask, times
  // the factors of the block's length, by mask.
  const YAML::Node attn = r.group("attention_efficiency", p.sources);
  const EfficiencyCurve fwd = r.curve(attn, "attention_efficiency", "head_dim", "forward");
  const EfficiencyCurve bwd = r.curve(attn, "attention_efficiency", "head_dim", "backward");
  const YAML::Node size = r.group("attention_block_size", p.sources);
  const EfficiencyCurve causal = r.curve(size, "attention_block_size", "length", "causal");
  const EfficiencyCurve full = r.curve(size, "attention_block_size", "length", "full");
  p.attention.head_dim = fwd.x;
  p.attention.length = causal.x;
  for (size_t i = 0; i < fwd.x.size(); ++i)
    for (size_t j = 0; j < causal.x.size(); ++j) {
      p.attention.fwd_causal.push_back(fwd.y[i] * causal.y[j]);
      p.attention.fwd_full.push_back(fwd.y[i] * full.y[j]);
      p.attention.bwd_causal.push_back(bwd.y[i] * causal.y[j]);
      p.attention.bwd_full.push_back(bwd.y[i] * full.y[j]);
    }
  return p;
}

}  // namespace minictx
