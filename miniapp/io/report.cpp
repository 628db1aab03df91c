#include "io/report.hpp"

#include <functional>

#include "core/error.hpp"

namespace minictx {
namespace {

const char* const kMissing = "n/a";

struct Column {
  std::string header;
  std::function<std::string(const PointResult&)> cell;
};

Column label(std::string header, std::string key) {
  return {std::move(header), [key](const PointResult& p) {
            const auto it = p.labels.find(key);
            return it == p.labels.end() ? std::string(kMissing) : it->second;
          }};
}

// A boolean label in the seeds' spelling (True/False); anything unrecognised verbatim.
Column flag(std::string header, std::string key) {
  return {std::move(header), [key](const PointResult& p) {
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
  return {std::move(header), [key, decimals, scale](const PointResult& p) {
            const auto it = p.metrics.find(key);
            return it == p.metrics.end() ? std::string(kMissing)
                                         : format_number(it->second * scale, decimals);
          }};
}

constexpr double kPercent = 100.0;
constexpr double kPerMiB = 1.0 / (1024.0 * 1024.0);

Table build(const std::vector<PointResult>& points, const std::vector<Column>& columns) {
  Table table;
  for (const Column& c : columns) table.header.push_back(c.header);
  for (const PointResult& p : points) {
    std::vector<std::string> row;
    for (const Column& c : columns) row.push_back(c.cell(p));
    table.rows.push_back(std::move(row));
  }
  return table;
}

// The USP and double-ring seed tables differ only in the two layout columns.
Table seed_attention_table(const std::vector<PointResult>& points, Column layout_a,
                           Column layout_b) {
  return build(points, {label("ring type", "ring_type"), label("seq_len", "seq_len"),
                        std::move(layout_a), std::move(layout_b), flag("fwd_only", "fwd_only"),
                        metric("throughput(iters/s)", "iters_per_s", 3),
                        metric("latency(ms/iter)", "latency_ms", 3),
                        metric("peak memory(MB/device)", "peak_memory_mb", 1),
                        metric("speed(TFLOPS)", "tflops_per_device", 1)});
}

}  // namespace

Table summary_table(const std::vector<PointResult>& points) {
  const Column name{"point", [](const PointResult& p) { return p.name; }};
  const Column verdict{"verdict", [](const PointResult& p) {
                         if (!p.skipped_reason.empty()) return "skipped: " + p.skipped_reason;
                         return p.verdict.empty() ? std::string(kMissing) : p.verdict;
                       }};
  return build(points,
               {name, label("backend", "backend"), label("ring_type", "ring_type"),
                label("mode", "mode"), label("world", "world_size"), label("seq_len", "seq_len"),
                label("batch", "batch"), flag("fwd_only", "fwd_only"),
                metric("iters/s", "iters_per_s", 3), metric("latency(ms)", "latency_ms", 3),
                metric("tokens/s", "tokens_per_s", 0),
                metric("tokens/s/device", "tokens_per_s_per_device", 0),
                metric("TFLOPS/device", "tflops_per_device", 2),
                metric("MFU", "mfu", 2, kPercent), metric("HFU", "hfu", 2, kPercent),
                metric("peak MB/device", "peak_memory_mb", 1),
                metric("sent MB/device (intra)", "bytes_sent_intra_per_device", 1, kPerMiB),
                metric("sent MB/device (inter)", "bytes_sent_inter_per_device", 1, kPerMiB),
                verdict});
}

Table usp_table(const std::vector<PointResult>& points) {
  return seed_attention_table(points, label("ulysses_degree", "ulysses_degree"),
                              label("ring_degree", "ring_degree"));
}

Table double_ring_table(const std::vector<PointResult>& points) {
  return seed_attention_table(points, label("context_size", "context_size"),
                              label("window_size", "window_size"));
}

std::vector<std::string> table_names() { return {"summary", "usp", "double_ring"}; }

Table make_table(const std::string& name, const std::vector<PointResult>& points) {
  if (name == "summary") return summary_table(points);
  if (name == "usp") return usp_table(points);
  if (name == "double_ring") return double_ring_table(points);
  std::string choices;
  for (const std::string& n : table_names()) choices += (choices.empty() ? "" : ", ") + n;
  input_error("unknown table '" + name + "' (choose " + choices + ")");
}

}  // namespace minictx
