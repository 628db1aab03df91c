#include "project/calibration.hpp"

#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "io/hdf5_util.hpp"

namespace minictx {
namespace {

void apply_comm(ProjectionProfile& p, hid_t group, const std::string& path) {
  bool any = false;
  for (const auto& [name, link] : {std::pair{"intra", &p.intra}, std::pair{"inter", &p.inter}}) {
    const std::string lat = std::string(name) + "_latency_us", bw = std::string(name) + "_bandwidth_gb_s";
    if (!h5::has_attribute(group, lat)) continue;
    link->latency_us = h5::read_double_attribute(group, lat);
    link->bandwidth_gb_s = h5::read_double_attribute(group, bw);
    p.sources[std::string(name) + "_node"] = "measured: " + path;
    any = true;
  }
  if (!any) input_error("--calibration " + path + ": the comm bench measured no link");
}

void apply_kernels(ProjectionProfile& p, hid_t group, const std::string& path) {
  const double calibration = h5::read_double_attribute(group, "calibration_gflops");
  if (!(calibration > 0)) input_error("--calibration " + path + ": no GEMM calibration");
  for (const char* d : {"fp32", "bf16", "fp16"}) p.peak_tflops[d] = calibration / 1e3;
  p.sources["peaks"] = "measured: " + path + " (GEMM calibration)";
  p.gemm = {{1024}, {1.0}};
  p.sources["gemm_efficiency"] = "measured: " + path + " (the calibration GEMM, 1024^3)";
  const auto kind = h5::read_strings(group, "kind");
  const auto seq = h5::read_doubles(group, "seq_len"), dim = h5::read_doubles(group, "head_dim");
  const auto seconds = h5::read_doubles(group, "seconds"), gflops = h5::read_doubles(group, "gflops");
  const auto causal = h5::read_int8s(group, "causal");
  // Per head dim, the longest causal length: forward time and forward+backward time.
  std::map<int, std::pair<double, size_t>> fwd, both;
  for (size_t i = 0; i < kind.size(); ++i) {
    if (!causal[i] || (kind[i] != "attn_fwd" && kind[i] != "attn_fwd_bwd")) continue;
    auto& slot = kind[i] == "attn_fwd" ? fwd : both;
    const auto it = slot.find(int(dim[i]));
    if (it == slot.end() || seq[i] > it->second.first) slot[int(dim[i])] = {seq[i], i};
  }
  EfficiencyCurve f, b;
  double longest = 0;
  for (const auto& [d, at] : fwd) {
    const auto other = both.find(d);
    if (other == both.end() || other->second.first != at.first) continue;
    const size_t i = at.second, j = other->second.second;
    // F forward FLOPs in seconds[i]; the backward is 2.5 F in the rest of seconds[j].
    // When noise leaves no time for it (short rows on a loaded host), the forward+backward
    // row's own rate stands for the backward's.
    const double flops = gflops[i] * 1e9 * seconds[i];
    const double backward = seconds[j] - seconds[i];
    const double derived = backward > 0 ? 2.5 * flops / backward / 1e9 / calibration : 0;
    longest = std::max(longest, at.first);
    f.x.push_back(d);
    f.y.push_back(std::min(1.0, gflops[i] / calibration));
    b.x.push_back(d);
    b.y.push_back(std::min(1.0, derived > 0 && derived <= 1 ? derived : gflops[j] / calibration));
  }
  if (f.x.empty())
    input_error("--calibration " + path + ": no causal attn_fwd and attn_fwd_bwd rows of the same length");
  p.attention = {f.x, {longest}, f.y, f.y, b.y, b.y};
  p.sources["attention_efficiency"] = "measured: " + path + " (attn_fwd, attn_fwd_bwd rows)";
}

}  // namespace

void apply_calibration(ProjectionProfile& profile, const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) input_error("--calibration " + path + ": no such file");
  h5::Handle file = h5::open_file_readonly(path);
  const auto groups = h5::link_names(file.get());
  bool used = false;
  for (const auto& g : groups) {
    if (g == "comm") {
      h5::Handle c = h5::open_group(file.get(), "comm");
      apply_comm(profile, c.get(), path);
      used = true;
    } else if (g == "bench") {
      h5::Handle b = h5::open_group(file.get(), "bench");
      apply_kernels(profile, b.get(), path);
      used = true;
    }
  }
  if (!used) input_error("--calibration " + path + ": neither a `minictx bench` nor a `bench --comm` file");
}

}  // namespace minictx
