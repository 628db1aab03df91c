#include "report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "config/run_config.hpp"
#include "core/phase_names.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

// A ring step split as the run's timeline records it, seconds.
struct RingWalkSplit {
  double compute = 0, transfer = 0, exposed = 0;
};

// The labels that make two points the same configuration; the device, comm and GPU may
// differ (a projection of a host run is made on a profile).
namespace lk = schema::label_key;

const char* const kConfigLabels[] = {
    lk::backend,  lk::ring_type,     lk::mode,           lk::world_size,        lk::seq_len,     lk::batch,
    lk::fwd_only, lk::causal,        lk::ulysses_degree, lk::ring_degree,       lk::window_size, lk::intra,
    lk::bwd_comm, lk::checkpointing, lk::grad_reduce,    lk::grad_reduce_dtype, lk::model,       lk::layers,
    lk::d_model,  lk::heads,         lk::kv_heads,       lk::head_dim};

bool model_mode_only(const char* label) {
  for (const char* l : lk::model_mode_only)
    if (std::string(l) == label) return true;
  return false;
}

std::string config_key(const PointResult& p) {
  // Files written before attention-mode points dropped the model labels still carry them.
  const auto mode = p.labels.find(lk::mode);
  const bool attention = mode != p.labels.end() && mode->second == to_string(Mode::attention);
  std::string key;
  for (const char* l : kConfigLabels) {
    if (attention && model_mode_only(l)) continue;
    const auto it = p.labels.find(l);
    key += std::string(l) + "=" + (it == p.labels.end() ? "" : it->second) + ";";
  }
  return key;
}

std::string value(const PointResult* p, const char* metric, double scale, int decimals) {
  if (!p) return "n/a";
  const auto it = p->metrics.find(metric);
  return it == p->metrics.end() ? "n/a" : format_number(it->second * scale, decimals);
}

std::string ratio(const PointResult& m, const PointResult* p, const char* metric) {
  if (!p) return "n/a";
  const auto a = m.metrics.find(metric), b = p->metrics.find(metric);
  if (a == m.metrics.end() || b == p->metrics.end() || b->second == 0) return "n/a";
  return format_number(a->second / b->second, 3);
}

std::string label(const PointResult& p, const char* key) {
  const auto it = p.labels.find(key);
  return it == p.labels.end() ? "n/a" : it->second;
}

const PointResult* twin_of(const PointResult& m, const std::vector<PointResult>& projected) {
  for (const PointResult& p : projected)
    if (p.skipped_reason.empty() && config_key(p) == config_key(m)) return &p;
  return nullptr;
}

// A phase's seconds per step on the slowest rank; NaN where the point has none.
double phase_per_step(const PointResult& p, const std::string& phase) {
  const auto it = p.phase_seconds.find(phase);
  if (it == p.phase_seconds.end() || it->second.empty() || p.iters <= 0) return NAN;
  return *std::max_element(it->second.begin(), it->second.end()) / p.iters;
}

// The mean ring step of a pass on the slowest rank, from the recorded timeline (forward:
// the forward walks, not a checkpointing recompute's); NaN where none was recorded.
RingWalkSplit measured_ring_step(const PointResult& p, WalkPass pass) {
  std::map<int, RingWalkSplit> sums;
  std::map<int, int> steps;
  for (const RingStep& s : p.ring_timeline.steps) {
    if (s.pass != pass) continue;
    RingWalkSplit& r = sums[s.rank];
    r.compute += s.compute_end - s.compute_start;
    if (!std::isnan(s.transfer_posted)) {
      r.transfer += s.transfer_done - s.transfer_posted;
      r.exposed += std::max(0.0, s.transfer_done - s.compute_end);
    }
    ++steps[s.rank];
  }
  RingWalkSplit slowest{NAN, NAN, NAN};
  for (const auto& [rank, r] : sums) {
    const double n = steps[rank];
    if (std::isnan(slowest.compute) || (r.compute + r.exposed) / n > slowest.compute + slowest.exposed)
      slowest = {r.compute / n, r.transfer / n, r.exposed / n};
  }
  return slowest;
}

RingWalkSplit projected_ring_step(const PointResult& p, WalkPass pass) {
  const auto metric = [&](const char* what) {
    const auto it = p.metrics.find(schema::projected_ring_step_metric(to_string(pass), what));
    return it == p.metrics.end() ? NAN : it->second;
  };
  return {metric("compute"), metric("transfer"), metric("exposed")};
}

std::string ms(double seconds) { return std::isnan(seconds) ? "n/a" : format_number(seconds * 1e3, 3); }

std::vector<std::string> phase_row(const std::string& point, const std::string& what, double m, double p) {
  const bool both = !std::isnan(m) && !std::isnan(p);
  return {point,
          what,
          ms(m),
          ms(p),
          both ? format_number((m - p) * 1e3, 3) : "n/a",
          both && p > 0 ? format_number(m / p, 3) : "n/a",
          ""};
}

}  // namespace

Table compare_phases_table(const std::vector<PointResult>& measured,
                           const std::vector<PointResult>& projected) {
  Table t;
  t.header = {"point",        "phase (per step)",        "measured ms",
              "projected ms", "measured - projected ms", "measured/projected",
              "parts most"};
  for (const PointResult& m : measured) {
    const PointResult* twin = m.skipped_reason.empty() ? twin_of(m, projected) : nullptr;
    if (!twin) continue;
    size_t widest = 0;
    double gap = -1;
    for (const char* phase : phase::all) {
      const double a = phase_per_step(m, phase), b = phase_per_step(*twin, phase);
      if (!(a > 0) && !(b > 0)) continue;  // neither ran it (NaN, or the zero a table keeps)
      t.rows.push_back(phase_row(m.name, phase, a, b));
      const bool holds_others = std::string(phase) == phase::forward || std::string(phase) == phase::backward;
      if (!holds_others && !std::isnan(a - b) && std::fabs(a - b) > gap) {
        gap = std::fabs(a - b);
        widest = t.rows.size() - 1;
      }
    }
    if (gap >= 0) t.rows[widest].back() = "<-";
    for (WalkPass pass : {WalkPass::forward, WalkPass::backward}) {
      const RingWalkSplit a = measured_ring_step(m, pass), b = projected_ring_step(*twin, pass);
      if (std::isnan(b.compute)) continue;  // no walk in this pass
      const std::string ring = std::string("ring step, ") + to_string(pass) + ": ";
      t.rows.push_back(phase_row(m.name, ring + "compute", a.compute, b.compute));
      t.rows.push_back(phase_row(m.name, ring + "transfer", a.transfer, b.transfer));
      t.rows.push_back(phase_row(m.name, ring + "exposed wait", a.exposed, b.exposed));
    }
  }
  return t;
}

Table compare_table(const std::vector<PointResult>& measured, const std::vector<PointResult>& projected) {
  Table t;
  t.header = {"point",
              "backend",
              "ring_type",
              "mode",
              "seq_len",
              "fwd_only",
              "ckpt",
              "measured ms",
              "projected ms",
              "measured/projected",
              "tokens/s/device ratio",
              "peak MB ratio",
              "sent MB ratio (intra)",
              "sent MB ratio (inter)",
              "bound"};
  for (const PointResult& m : measured) {
    if (!m.skipped_reason.empty()) continue;
    const PointResult* twin = twin_of(m, projected);
    t.rows.push_back({m.name, label(m, "backend"), label(m, "ring_type"), label(m, "mode"),
                      label(m, "seq_len"), label(m, "fwd_only"), label(m, "checkpointing"),
                      value(&m, "latency_ms", 1, 3), value(twin, "latency_ms", 1, 3),
                      ratio(m, twin, "latency_ms"), ratio(m, twin, "tokens_per_s_per_device"),
                      ratio(m, twin, "peak_memory_mb"), ratio(m, twin, "bytes_sent_intra_per_device"),
                      ratio(m, twin, "bytes_sent_inter_per_device"), twin ? label(*twin, lk::bound) : "n/a"});
  }
  return t;
}

}  // namespace minictx
