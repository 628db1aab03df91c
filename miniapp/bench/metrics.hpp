#pragma once
#include <map>
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "io/results.hpp"

namespace minictx {

// What one rank measured over the timed iterations.
struct RankMeasurements {
  std::vector<double> iter_seconds;
  std::map<std::string, double> phase_seconds;
  double peak_memory_bytes = 0;
  double bytes_sent_intra = 0;
  double bytes_sent_inter = 0;
  double loss = 0;
  double real_tokens = 0;      // tokens of this rank that are not padding, over the batch
  double attention_pairs = 0;  // its attention's (query, key) pairs per head (layout_work.hpp)
  // Model mode: the last step's loss scale, and the steps run again after an overflow
  // (warm-up included): the same on every rank (LossScaler).
  double loss_scale = 0;
  double overflow_steps = 0;
};

// The phases every step reports (zero where a mode has none).
const std::vector<std::string>& phase_names();

// Gathers every rank's measurements and derives the metrics of docs/user-guide.md, "Metrics";
// the result is complete on every rank.
PointResult gather_point(const RunConfig& cfg, Comm& world, const RankMeasurements& mine);

// The metrics from gathered per-rank data (exposed for tests).
std::map<std::string, double> derive_metrics(const RunConfig& cfg, const PointResult& gathered);

// The same metrics where every one of `ranks` ranks has the same figures (a projection):
// the step's seconds, peak memory and bytes sent per step.
std::map<std::string, double> uniform_metrics(const RunConfig& cfg, int ranks, double step_seconds,
                                              double peak_memory_bytes, double bytes_intra,
                                              double bytes_inter);

}  // namespace minictx
