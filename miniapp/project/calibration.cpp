#include "project/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/file_kind.hpp"
#include "io/hdf5_util.hpp"

namespace minictx {
namespace {

// A figure the projection divides by or multiplies with: finite and positive (or, for a
// fraction, in [0, 1]), else one line naming the file and the figure.
double checked(double x, const std::string& path, const std::string& key, bool fraction = false) {
  const bool ok = std::isfinite(x) && (fraction ? x >= 0 && x <= 1 : x > 0);
  if (!ok)
    input_error("--calibration " + path + ": " + key + " is " + std::to_string(x) + "; it must be " +
                (fraction ? "a fraction in [0, 1]" : "a positive number"));
  return x;
}

void apply_comm(ProjectionProfile& p, hid_t group, const std::string& path) {
  bool any = false;
  for (const auto& [name, link] : {std::pair{"intra", &p.intra}, std::pair{"inter", &p.inter}}) {
    const std::string lat = std::string(name) + "_latency_us", bw = std::string(name) + "_bandwidth_gb_s";
    if (!h5::has_attribute(group, lat)) continue;
    link->latency_us = checked(h5::read_double_attribute(group, lat), path, "comm/" + lat);
    link->bandwidth_gb_s = checked(h5::read_double_attribute(group, bw), path, "comm/" + bw);
    // Files from before the overlap was measured keep the profile's.
    const std::string overlap = std::string(name) + "_overlap";
    if (h5::has_attribute(group, overlap))
      link->overlap = checked(h5::read_double_attribute(group, overlap), path, "comm/" + overlap, true);
    p.sources[std::string(name) + "_node"] = "measured: " + path;
    any = true;
  }
  if (!any) input_error("--calibration " + path + ": the comm bench measured no link");
}

// The rows of a `minictx bench` file (older files have no kernel or bytes columns).
struct BenchRows {
  std::vector<std::string> kind, kernel;
  std::vector<double> seq, dim, seconds, gflops, calibration, bytes;
  std::vector<int8_t> causal;

  BenchRows(hid_t group, const std::string& path) {
    kind = h5::read_strings(group, "kind");
    seq = h5::read_doubles(group, "seq_len");
    dim = h5::read_doubles(group, "head_dim");
    seconds = h5::read_doubles(group, "seconds");
    gflops = h5::read_doubles(group, "gflops");
    calibration = h5::read_doubles(group, "calibration_gflops");
    causal = h5::read_int8s(group, "causal");
    const auto names = h5::link_names(group);
    const bool has_kernel = std::find(names.begin(), names.end(), "kernel") != names.end();
    kernel = has_kernel ? h5::read_strings(group, "kernel") : std::vector<std::string>(kind.size());
    bytes = has_kernel ? h5::read_doubles(group, "bytes") : std::vector<double>(kind.size(), 0.0);
    if (kind.empty()) input_error("--calibration " + path + ": bench/kind has no rows");
    const std::pair<const char*, size_t> columns[] = {{"seq_len", seq.size()},
                                                      {"head_dim", dim.size()},
                                                      {"seconds", seconds.size()},
                                                      {"gflops", gflops.size()},
                                                      {"calibration_gflops", calibration.size()},
                                                      {"causal", causal.size()},
                                                      {"kernel", kernel.size()},
                                                      {"bytes", bytes.size()}};
    for (const auto& [name, n] : columns)
      if (n != kind.size())
        input_error("--calibration " + path + ": bench/" + name + " has " + std::to_string(n) +
                    " rows, bench/kind " + std::to_string(kind.size()) +
                    ": the columns must be equally long");
    for (size_t i = 0; i < kind.size(); ++i) {
      const std::string row = "bench row " + std::to_string(i) + " (" + kind[i] + ")";
      for (const double x : {seq[i], dim[i], seconds[i], gflops[i], calibration[i], bytes[i]})
        if (!std::isfinite(x) || x < 0)
          input_error("--calibration " + path + ": " + row + " has a negative or non-finite figure");
    }
  }
  size_t size() const { return kind.size(); }
};

// The attention tables from the attn_fwd and attn_fwd_bwd rows: per head dim, length and
// mask, the forward rate and the backward's (2.5 F in the forward+backward row's time
// beyond the forward's; that row's own rate when noise leaves the backward no time).
// Returns which masks were measured ("causal", "full", "both").
std::string attention_tables(AttentionEfficiency& e, const BenchRows& r, double peak,
                             const std::string& path) {
  std::set<double> dims, lens;
  std::set<bool> masks;
  std::map<std::tuple<bool, double, double>, size_t> fwd, both;  // (causal, D, S) -> row
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.kind[i] != "attn_fwd" && r.kind[i] != "attn_fwd_bwd") continue;
    (r.kind[i] == "attn_fwd" ? fwd : both)[{r.causal[i] != 0, r.dim[i], r.seq[i]}] = i;
    if (r.kind[i] == "attn_fwd") {
      dims.insert(r.dim[i]);
      lens.insert(r.seq[i]);
      masks.insert(r.causal[i] != 0);
    }
  }
  if (dims.empty()) input_error("--calibration " + path + ": no attn_fwd rows");
  e = AttentionEfficiency{{dims.begin(), dims.end()}, {lens.begin(), lens.end()}, {}, {}, {}, {}};
  for (bool causal : {true, false}) {
    // A mask the bench did not measure takes the other's rates.
    const bool mask = masks.count(causal) ? causal : !causal;
    std::vector<double>& f = causal ? e.fwd_causal : e.fwd_full;
    std::vector<double>& b = causal ? e.bwd_causal : e.bwd_full;
    for (double d : e.head_dim)
      for (double len : e.length) {
        const auto i = fwd.find({mask, d, len}), j = both.find({mask, d, len});
        if (i == fwd.end() || j == both.end())
          input_error("--calibration " + path + ": no attn_fwd and attn_fwd_bwd rows at D=" +
                      std::to_string(int(d)) + ", S=" + std::to_string(int64_t(len)) +
                      (mask ? " (causal)" : " (full)") + ": the tables need every head dim at every length");
        const std::string at = " at D=" + std::to_string(int(d)) + ", S=" + std::to_string(int64_t(len));
        const double rate_f = checked(r.gflops[i->second], path, "the attn_fwd rate" + at),
                     t_f = checked(r.seconds[i->second], path, "the attn_fwd time" + at),
                     t_fb = checked(r.seconds[j->second], path, "the attn_fwd_bwd time" + at);
        const double backward = t_fb - t_f;
        const double derived = backward > 0 ? 2.5 * rate_f * t_f / backward / peak : 0;
        f.push_back(std::min(1.0, rate_f / peak));
        b.push_back(std::min(1.0, derived > 0 && derived <= 1 ? derived : r.gflops[j->second] / peak));
      }
  }
  return masks.size() == 2 ? "both" : *masks.begin() ? "causal" : "full";
}

void apply_kernels(ProjectionProfile& p, hid_t group, const std::string& path) {
  const BenchRows r(group, path);
  const double calibration = h5::read_double_attribute(group, "calibration_gflops");
  if (!(calibration > 0) || !std::isfinite(calibration))
    input_error("--calibration " + path + ": no GEMM calibration");
  // The peak is the highest GEMM rate the file holds (the calibration at the start, before
  // each row, at the end, the size rows): every efficiency is a measured rate over it, so
  // each kernel runs at the rate the bench measured for it, whatever the peak.
  double peak = std::max(calibration, checked(h5::read_double_attribute(group, "calibration_after_gflops"),
                                              path, "bench/calibration_after_gflops"));
  for (size_t i = 0; i < r.size(); ++i) {
    peak = std::max(peak, r.calibration[i]);
    if (r.kind[i] == "gemm") peak = std::max(peak, r.gflops[i]);
  }
  for (const char* d : {"fp32", "bf16", "fp16"}) p.peak_tflops[d] = peak / 1e3;
  p.sources["peaks"] = "measured: " + path + " (the highest of its GEMM rates)";

  EfficiencyCurve gemm;
  for (size_t i = 0; i < r.size(); ++i)
    if (r.kind[i] == "gemm") {
      gemm.x.push_back(r.seq[i]);
      gemm.y.push_back(r.gflops[i] / peak);
    }
  if (gemm.x.empty()) {
    p.gemm = {{1024}, {calibration / peak}};
    p.sources["gemm_efficiency"] = "measured: " + path + " (the calibration GEMM, 1024^3, at every size)";
  } else {
    p.gemm = gemm;
    p.sources["gemm_efficiency"] = "measured: " + path + " (gemm rows, square sides)";
  }

  const std::string masks = attention_tables(p.attention, r, peak, path);
  p.sources["attention_efficiency"] = "measured: " + path + " (attn_fwd, attn_fwd_bwd rows)";
  p.sources["attention_block_size"] =
      "measured: " + path + " (attention rows at every length" +
      (masks == "both" ? ", both masks)" : ", " + masks + " only: the other mask at its rates)");

  bool elementwise = false;
  for (size_t i = 0; i < r.size(); ++i)
    if (r.kind[i] == "elementwise" && r.seconds[i] > 0) {
      p.elementwise_gb_s[r.kernel[i]] = r.bytes[i] / r.seconds[i] / 1e9;
      elementwise = true;
    }
  if (elementwise) p.sources["memory"] += "; element-wise kernels measured: " + path + " (elementwise rows)";
}

void apply_file(ProjectionProfile& profile, const std::string& path) {
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

}  // namespace

void apply_calibration(ProjectionProfile& profile, const std::string& path) {
  require_regular_file(path, "--calibration");  // a FIFO would block the read
  h5::QuietErrors quiet;                        // one line naming the file, not HDF5's error stack
  try {
    apply_file(profile, path);
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    input_error("--calibration " + path + ": not a readable `minictx bench` file: " + e.what());
  }
}

}  // namespace minictx
