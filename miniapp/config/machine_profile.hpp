#pragma once
// The full machine profile `minictx project` needs: peaks, kernel efficiencies, memory
// and links, each group with the source of its figures. A run reads only the name and
// the peaks of the same file (config/machines.cpp); the rest sits under `projection:`.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace minictx {

// y(x) by linear interpolation in log2(x) between the points, constant beyond them.
struct EfficiencyCurve {
  std::vector<double> x;  // increasing
  std::vector<double> y;  // fractions of the peak, in (0, 1]
  double at(double v) const;
};

// Fraction of the peak one attention kernel call reaches, by the head dim, the call's
// length (√(query rows × key rows) of its block) and its mask: `causal` for a block
// under the causal mask's diagonal (a ring's diagonal block, every stripe block),
// `full` for one without a mask. Tables of head_dim.size() × length.size() values,
// row by row of head dim; bilinear in log2 of both, constant beyond the ends.
struct AttentionEfficiency {
  std::vector<double> head_dim;  // increasing
  std::vector<double> length;    // increasing
  std::vector<double> fwd_causal, fwd_full, bwd_causal, bwd_full;
  double at(bool backward, bool causal, double head_dim, double length) const;
};

struct LinkRate {
  double bandwidth_gb_s = 0;  // per direction, per device, 1 GB = 1e9 bytes
  double latency_us = 0;      // per message
  // Fraction of a transfer posted before a kernel that moves while the kernel runs; the
  // rest moves after it (MPI without asynchronous progress moves a large message only
  // inside MPI calls: 0).
  double overlap = 1;
  double seconds(double bytes) const {
    return bytes > 0 ? latency_us * 1e-6 + bytes / (bandwidth_gb_s * 1e9) : 0;
  }
};

struct ProjectionProfile {
  std::string file;                           // where it was read from
  std::string name;                           // device name of the reports
  std::map<std::string, double> peak_tflops;  // dense, by dtype spelling: fp32, bf16, fp16
  int gpus_per_node = 1;
  double memory_gib = 0;
  double hbm_gb_s = 0;
  // Element-wise kernels (model/elementwise_work.hpp) by name: their rate in bytes moved
  // per second where a calibration measured one; the others run at hbm_gb_s.
  std::map<std::string, double> elementwise_gb_s;
  LinkRate intra, inter;        // inter: per device, the node's NICs shared by its devices
  double call_overhead_us = 0;  // launch and synchronisation cost of one kernel call
  EfficiencyCurve gemm;         // x = (m·n·k)^(1/3) of one call
  AttentionEfficiency attention;
  std::map<std::string, std::string> sources;  // group -> citation, kept for the provenance
};

// Reads inputs/machines/NAME.yaml (found as the run finds profiles) or a path to a YAML
// file; InputError with the file and line when a group, a value or its source is missing.
ProjectionProfile load_projection_profile(const std::string& name_or_path,
                                          const std::filesystem::path& deck_dir);

}  // namespace minictx
