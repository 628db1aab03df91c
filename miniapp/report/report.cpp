#include "report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

#include "config/run_config.hpp"
#include "core/error.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace mk = schema::metric_key;
namespace lk = schema::label_key;

const char* const kMissing = "n/a";

struct Column {
  std::string header;
  std::function<std::string(const PointResult&)> cell;
};

Column label(std::string header, std::string key) {
  return {std::move(header), [key = std::move(key)](const PointResult& p) {
            const auto it = p.labels.find(key);
            return it == p.labels.end() ? std::string(kMissing) : it->second;
          }};
}

// A boolean label in the seeds' spelling (True/False); anything unrecognised verbatim.
Column flag(std::string header, std::string key) {
  return {std::move(header), [key = std::move(key)](const PointResult& p) {
            const auto it = p.labels.find(key);
            if (it == p.labels.end()) return std::string(kMissing);
            const std::string& v = it->second;
            if (v == "true" || v == "True" || v == "1") return std::string("True");
            if (v == "false" || v == "False" || v == "0") return std::string("False");
            return v;
          }};
}

// A metric times `scale`, printed with `decimals` (see format_number).
Column metric(std::string header, std::string key, int decimals, double scale = 1.0) {
  return {std::move(header), [key = std::move(key), decimals, scale](const PointResult& p) {
            const auto it = p.metrics.find(key);
            return it == p.metrics.end() ? std::string(kMissing)
                                         : format_number(it->second * scale, decimals);
          }};
}

// A column minictx does not model: always "n/a", never a made-up value.
Column not_modelled(std::string header) {
  return {std::move(header), [](const PointResult&) { return std::string(kMissing); }};
}

// A metric as a whole number (counts such as NumParams), or "n/a".
Column count(std::string header, std::string key) {
  return {std::move(header), [key = std::move(key)](const PointResult& p) {
            const auto it = p.metrics.find(key);
            return it == p.metrics.end() ? std::string(kMissing) : std::to_string(std::llround(it->second));
          }};
}

std::string label_of(const PointResult& p, const std::string& key) {
  const auto it = p.labels.find(key);
  return it == p.labels.end() ? std::string(kMissing) : it->second;
}

// A numeric label (world size, batch, length); a damaged one is an Error naming it, which
// costs its point the row, not the table.
double number_label(const PointResult& p, const std::string& key) {
  const std::string text = label_of(p, key);
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x))
    fail("label " + key + " is '" + text + "', not a number");
  return x;
}

// A per-device metric summed over the world (world_size label), or "n/a".
Column whole_job(std::string header, std::string key, int decimals) {
  return {std::move(header), [key = std::move(key), decimals](const PointResult& p) {
            const auto it = p.metrics.find(key);
            const std::string world = label_of(p, lk::world_size);
            if (it == p.metrics.end() || world == kMissing) return std::string(kMissing);
            return format_number(it->second * number_label(p, lk::world_size), decimals);
          }};
}

constexpr double kPercent = 100.0;
// MFU and HFU name their FLOP convention wherever they print: MPT's formula counts the
// whole S² of attention (full mask); the causal count halves it (docs/user-guide.md, "Metrics").
constexpr const char* kMfuFullMask = "MFU (MPT, full mask)";
constexpr const char* kHfuFullMask = "HFU (MPT, full mask)";
constexpr double kPerMiB = 1.0 / (1024.0 * 1024.0);

Table build(const std::vector<PointResult>& points, const std::vector<Column>& columns) {
  Table table;
  for (const Column& c : columns) table.header.push_back(c.header);
  for (const PointResult& p : points) {
    std::vector<std::string> row;
    row.reserve(columns.size());
    try {
      for (const Column& c : columns) row.push_back(c.cell(p));
    } catch (const Error& e) {
      std::fprintf(stderr, "minictx: warning: %s: %s; the point is left out of the table\n", p.name.c_str(),
                   e.what());
      continue;
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

// The USP and double-ring seed tables differ only in the two layout columns. Their
// speed is the whole job's, as the seed's: its column is the attention's FLOPs (causal
// half, backward 2.5 ×) over the latency, for all devices together.
Table seed_attention_table(const std::vector<PointResult>& points, Column layout_a, Column layout_b) {
  return build(
      points,
      {label("ring type", lk::ring_type), label("seq_len", lk::seq_len), std::move(layout_a),
       std::move(layout_b), flag("fwd_only", lk::fwd_only), metric("throughput(iters/s)", mk::iters_per_s, 3),
       metric("latency(ms/iter)", mk::latency_ms, 3), metric("peak memory(MB/device)", mk::peak_memory_mb, 1),
       whole_job("speed(TFLOPS)", mk::tflops_per_device, 1)});
}

}  // namespace

Table summary_table(const std::vector<PointResult>& points) {
  const Column name{"point", [](const PointResult& p) { return p.name; }};
  const Column verdict{"verdict", [](const PointResult& p) {
                         if (!p.skipped_reason.empty()) return "skipped: " + p.skipped_reason;
                         return p.verdict.empty() ? std::string(kMissing) : p.verdict;
                       }};
  return build(
      points,
      {name, label("backend", lk::backend), label("ring_type", lk::ring_type), label("mode", lk::mode),
       label("world", lk::world_size), label("seq_len", lk::seq_len), label("batch", lk::batch),
       flag("fwd_only", lk::fwd_only), metric("iters/s", mk::iters_per_s, 3),
       metric("latency(ms)", mk::latency_ms, 3), metric("tokens/s", mk::tokens_per_s, 0),
       metric("tokens/s/device", mk::tokens_per_s_per_device, 0),
       metric("TFLOPS/device", mk::tflops_per_device, 2), metric(kMfuFullMask, mk::mfu, 2, kPercent),
       metric(kHfuFullMask, mk::hfu, 2, kPercent), metric("peak MB/device", mk::peak_memory_mb, 1),
       metric("sent MB/device/step (intra)", mk::bytes_sent_intra_per_device, 1, kPerMiB),
       metric("sent MB/device/step (inter)", mk::bytes_sent_inter_per_device, 1, kPerMiB), verdict});
}

Table usp_table(const std::vector<PointResult>& points) {
  return seed_attention_table(points, label("ulysses_degree", lk::ulysses_degree),
                              label("ring_degree", lk::ring_degree));
}

Table double_ring_table(const std::vector<PointResult>& points) {
  return seed_attention_table(points, label("context_size", lk::context_size),
                              label("window_size", lk::window_size));
}

Table mpt_table(const std::vector<PointResult>& points) {
  // One sequence-parallel group is one data-parallel replica stepping one micro batch:
  // no gradient accumulation, so the global batch is the micro batch.
  const Column one{"GradAccum", [](const PointResult&) { return std::string("1"); }};
  const Column global_tokens{"GlobalBatchSize (T)", [](const PointResult& p) {
                               const std::string b = label_of(p, lk::batch), s = label_of(p, lk::seq_len);
                               if (b == kMissing || s == kMissing) return std::string(kMissing);
                               return std::to_string(std::llround(number_label(p, lk::batch)) *
                                                     std::llround(number_label(p, lk::seq_len)));
                             }};
  const Column checkpointing{"Activation Checkpointing", [](const PointResult& p) {
                               std::string c = label_of(p, lk::checkpointing);
                               if (c == "none") return std::string("False");
                               if (c == "full") return std::string("True");
                               return c;
                             }};
  return build(points, {label("Model", lk::model),
                        label("SeqLen (T)", lk::seq_len),
                        label("# GPUs", lk::world_size),
                        label("GPU", lk::gpu),
                        metric(kMfuFullMask, mk::mfu, 2, kPercent),
                        metric(kHfuFullMask, mk::hfu, 2, kPercent),
                        metric("Model TFLOP", mk::tflops_per_device, 3),
                        label("MicroBatchSize", lk::batch),
                        one,
                        label("GlobalBatchSize", lk::batch),
                        metric("Throughput (S/s)", mk::sequences_per_s, 2),
                        metric("Throughput (T/s)", mk::tokens_per_s, 0),
                        metric("Throughput (T/s/GPU)", mk::tokens_per_s_per_device, 0),
                        global_tokens,
                        label("Precision", lk::dtype),
                        not_modelled("MP Mode"),
                        not_modelled("Sharding Strategy"),
                        checkpointing,
                        not_modelled("Activation CPUOffload"),
                        count("NumParams", mk::n_params)});
}

// The BurstAttention column set, named after the backend whose figures it reproduces.
constexpr const char* kBurstSet = "burst";

std::string point_variant(const PointResult& p) {
  std::string named = label_of(p, lk::variant);
  if (named != kMissing) return named;
  const std::string backend = label_of(p, lk::backend), ring = label_of(p, lk::ring_type);
  return ring == kMissing ? backend : backend + " (" + ring + ")";
}

// Tokens/s per device: the BurstAttention figures' tokens/s are per GPU. Their MFU counts the
// causal attention that is executed, half the square (7b at 2048k on 32 A100s: 100.1 tokens/s
// is about 50 %); MPT's formula counts the whole square, which would read over 100 % there.
Table burst_table(const std::vector<PointResult>& points) {
  // Settings in order of first appearance; inside a setting the variants sort by name,
  // which puts (A)..(D) first. The sort is stable: repeated measurements keep their order.
  std::map<std::string, size_t> setting_rank;
  auto setting = [](const PointResult& p) {
    return label_of(p, lk::model) + "|" + label_of(p, lk::seq_len) + "|" + label_of(p, lk::world_size);
  };
  for (const PointResult& p : points) setting_rank.emplace(setting(p), setting_rank.size());
  std::vector<PointResult> sorted = points;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const PointResult& a, const PointResult& b) {
    const size_t ra = setting_rank[setting(a)], rb = setting_rank[setting(b)];
    return ra != rb ? ra < rb : point_variant(a) < point_variant(b);
  });
  const Column variant{"Variant", point_variant};
  return build(sorted,
               {label("Model", lk::model), label("SeqLen (T)", lk::seq_len), label("# GPUs", lk::world_size),
                label("GPU", lk::gpu), variant, metric("MFU (causal)", mk::mfu_causal, 2, kPercent),
                metric("Tokens/s/GPU", mk::tokens_per_s_per_device, 1)});
}

namespace {

// The worst of one error column over the verification rows whose tensor name starts with
// `prefix` ("outputs/", "grads/"): "nan" if a row's output was NaN or Inf; "n/a" without
// such rows (a point verify did not check) or where a row's column was not measured (NaN
// beside a finite max_rel_err: no single-device run, or a file older than the column).
Column worst_error(std::string header, const std::string& prefix, double VerifyRow::*member) {
  return {std::move(header), [prefix, member](const PointResult& p) {
            double worst = -1;
            for (const VerifyRow& r : p.verification) {
              if (r.tensor.rfind(prefix, 0) != 0) continue;
              const double x = r.*member;
              if (std::isnan(x) && !std::isnan(r.max_rel_err)) return std::string(kMissing);
              worst = std::isnan(x) || std::isnan(worst) ? NAN : std::max(worst, x);
            }
            return worst == -1 ? std::string(kMissing) : format_number(worst, 2);
          }};
}

}  // namespace

Table errors_table(const std::vector<PointResult>& points) {
  return build(points, {label("world", lk::world_size),
                        label("backend", lk::backend),
                        label("ring_type", lk::ring_type),
                        label("mode", lk::mode),
                        label("dtype", lk::dtype),
                        label("partials", lk::partials),
                        label("grad sums", lk::grad_reduce_dtype),
                        label("layers", lk::layers),
                        label("documents", lk::documents),
                        worst_error("out max rel", "outputs/", &VerifyRow::max_rel_err),
                        worst_error("out rms rel", "outputs/", &VerifyRow::rms_rel_err),
                        worst_error("grad max rel", "grads/", &VerifyRow::max_rel_err),
                        worst_error("grad rms rel", "grads/", &VerifyRow::rms_rel_err),
                        worst_error("out rms rel vs 1 device", "outputs/", &VerifyRow::single_rms_rel_err),
                        worst_error("grad rms rel vs 1 device", "grads/", &VerifyRow::single_rms_rel_err),
                        {"verdict", [](const PointResult& p) { return p.verdict; }}});
}

// The attention work per rank against the step time: how evenly a layout spreads packed
// documents (docs/algorithms.md, "Document load balance").
Table balance_table(const std::vector<PointResult>& points) {
  return build(points, {label("world", lk::world_size),
                        label("backend", lk::backend),
                        label("ring_type", lk::ring_type),
                        label("seq_len", lk::seq_len),
                        label("batch", lk::batch),
                        label("documents", lk::documents),
                        metric("pairs/device (max)", mk::attention_pairs_max, 0),
                        metric("pairs/device (mean)", mk::attention_pairs_mean, 0),
                        metric("imbalance (max/mean)", mk::attention_imbalance, 3),
                        metric("latency(ms)", mk::latency_ms, 3),
                        {"verdict", [](const PointResult& p) { return p.verdict; }}});
}

const std::vector<ColumnSet>& column_sets() {
  static const std::vector<ColumnSet> sets = {
      {"summary", "every point: backend, layout, throughput, MFU, memory, bytes sent, verdict",
       summary_table},
      {"usp", "the USP seed table (ulysses_degree × ring_degree)", usp_table},
      {"double_ring", "the LoongTrain double-ring seed table (context_size, window_size)", double_ring_table},
      {"mpt", "the MPT (llm-foundry) benchmark table", mpt_table},
      {kBurstSet, "the BurstAttention figures, variants (A)..(D)", burst_table},
      {"errors",
       "verify's errors against fp64 (and a 16-bit run's against one device), worst output and gradient",
       errors_table},
      {"balance", "the attention pairs per rank, their imbalance (max/mean) and the step time",
       balance_table},
  };
  return sets;
}

Table make_table(const std::string& name, const std::vector<PointResult>& points) {
  std::string choices;
  for (const ColumnSet& set : column_sets()) {
    if (name == set.name) return set.build(points);
    choices += (choices.empty() ? "" : ", ") + std::string(set.name);
  }
  input_error("unknown table '" + name + "' (choose " + choices + ")");
}

}  // namespace minictx
