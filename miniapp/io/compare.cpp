#include "io/compare.hpp"

#include <string>

#include "config/run_config.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

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

}  // namespace

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
    const PointResult* twin = nullptr;
    for (const PointResult& p : projected)
      if (p.skipped_reason.empty() && config_key(p) == config_key(m)) {
        twin = &p;
        break;
      }
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
