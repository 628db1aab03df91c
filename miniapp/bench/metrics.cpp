#include "bench/metrics.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>

#include "backends/engine/layout_work.hpp"
#include "core/phase_names.hpp"
#include "io/results_schema.hpp"
#include "model/flops.hpp"

namespace minictx {

namespace mk = schema::metric_key;

const std::vector<std::string>& phase_names() {
  static const std::vector<std::string> names(std::begin(phase::all), std::end(phase::all));
  return names;
}

namespace {

std::vector<double> gather_scalar(Comm& world, double value) {
  std::vector<double> all(size_t(world.size()));
  world.gather_doubles(&value, all.data(), 1);
  return all;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}
double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

std::map<std::string, double> derive_metrics(const RunConfig& cfg, const PointResult& p) {
  const int ranks = p.ranks;
  // A step lasts as long as its slowest rank.
  double step = 0;
  for (int i = 0; i < p.iters; ++i) {
    double slowest = 0;
    for (int r = 0; r < ranks; ++r)
      slowest = std::max(slowest, p.iter_seconds[size_t(i) * size_t(ranks) + size_t(r)]);
    step += slowest;
  }
  step /= std::max(p.iters, 1);
  return uniform_metrics(cfg, ranks, step, max_of(p.peak_memory_bytes),
                         mean(p.bytes_sent_intra) / std::max(p.iters, 1),
                         mean(p.bytes_sent_inter) / std::max(p.iters, 1));
}

std::map<std::string, double> uniform_metrics(const RunConfig& cfg, int ranks, double step,
                                              double peak_memory_bytes, double bytes_intra,
                                              double bytes_inter) {
  std::map<std::string, double> m;
  const StepFlops f = step_flops(cfg);
  const double tokens = double(cfg.sequence.batch) * double(cfg.sequence.length);
  const double peak = cfg.machine.peak_tflops * 1e12;
  m[mk::step_seconds] = step;
  m[mk::iters_per_s] = 1.0 / step;
  m[mk::latency_ms] = step * 1e3;
  m[mk::tokens_per_s] = tokens / step;
  m[mk::tokens_per_s_per_device] = tokens / step / ranks;
  m[mk::sequences_per_s] = cfg.sequence.batch / step;
  m[mk::model_tflop_per_step] = f.model / 1e12;
  m[mk::tflops_per_device] = f.model / step / ranks / 1e12;
  m[mk::tflops_per_device_causal] = f.model_causal / step / ranks / 1e12;
  if (peak > 0) {
    m[mk::peak_tflops_per_device] = cfg.machine.peak_tflops;
    m[mk::mfu] = f.model / step / ranks / peak;
    m[mk::hfu] = f.hardware / step / ranks / peak;
    m[mk::mfu_causal] = f.model_causal / step / ranks / peak;
    m[mk::hfu_causal] = f.hardware_causal / step / ranks / peak;
  }
  m[mk::peak_memory_mb] = peak_memory_bytes / (1 << 20);
  m[mk::bytes_sent_intra_per_device] = bytes_intra;
  m[mk::bytes_sent_inter_per_device] = bytes_inter;
  m[mk::world_size] = ranks;
  if (cfg.run.mode == Mode::model) m[mk::n_params] = double(cfg.model.n_params(cfg.attention.sinks));
  return m;
}

PointResult gather_point(const RunConfig& cfg, Comm& world, const RankMeasurements& mine) {
  PointResult p;
  p.iters = int(mine.iter_seconds.size());
  p.ranks = world.size();
  const size_t iters = size_t(p.iters), ranks = size_t(p.ranks);
  std::vector<double> by_rank(iters * ranks);
  world.gather_doubles(mine.iter_seconds.data(), by_rank.data(), p.iters);
  p.iter_seconds.resize(by_rank.size());
  for (size_t r = 0; r < ranks; ++r)
    for (size_t i = 0; i < iters; ++i) p.iter_seconds[i * ranks + r] = by_rank[r * iters + i];
  for (const auto& phase : phase_names()) {
    const auto it = mine.phase_seconds.find(phase);
    p.phase_seconds[phase] = gather_scalar(world, it == mine.phase_seconds.end() ? 0.0 : it->second);
  }
  p.peak_memory_bytes = gather_scalar(world, mine.peak_memory_bytes);
  p.bytes_sent_intra = gather_scalar(world, mine.bytes_sent_intra);
  p.bytes_sent_inter = gather_scalar(world, mine.bytes_sent_inter);
  p.metrics = derive_metrics(cfg, p);
  if (cfg.run.mode == Mode::model) {
    p.metrics[mk::loss] = mine.loss;
    p.metrics[mk::loss_scale] = mine.loss_scale;
    p.metrics[mk::overflow_steps] = mine.overflow_steps;
  }
  const auto tokens = gather_scalar(world, mine.real_tokens);
  p.metrics[mk::real_tokens_counted] = std::accumulate(tokens.begin(), tokens.end(), 0.0);
  const auto pairs = gather_scalar(world, mine.attention_pairs);
  p.metrics[mk::attention_pairs_max] = max_of(pairs);
  p.metrics[mk::attention_pairs_mean] = mean(pairs);
  p.metrics[mk::attention_imbalance] = imbalance(pairs);
  return p;
}

}  // namespace minictx
