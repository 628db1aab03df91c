#include "backends/engine/layout_work.hpp"

#include <algorithm>
#include <numeric>

#include "config/documents.hpp"

namespace minictx {

std::vector<double> visible_keys(const RunConfig& cfg) {
  const int64_t len = cfg.sequence.length;
  const bool causal = cfg.attention.causal;
  std::vector<double> keys(static_cast<size_t>(len), 0.0);
  std::vector<std::vector<int64_t>> rows = document_lengths(cfg.sequence.documents, len, cfg.sequence.batch);
  if (rows.empty()) rows.assign(size_t(cfg.sequence.batch), {len});  // one document per sequence
  for (const auto& row : rows) {
    int64_t start = 0;
    for (const int64_t n : row) {
      for (int64_t i = 0; i < n; ++i) keys[size_t(start + i)] += double(causal ? i + 1 : n);
      start += n;
    }
  }
  return keys;
}

double part_pairs(const SequenceLayout& layout, int part, const std::vector<double>& keys) {
  double share = 0;
  for (int64_t pos : layout.outer_positions(part / layout.inner()))
    if (pos < int64_t(keys.size())) share += keys[size_t(pos)];
  return share / layout.inner();
}

std::vector<double> pairs_per_part(const SequenceLayout& layout, const std::vector<double>& keys) {
  std::vector<double> pairs(size_t(layout.parts()));
  for (int p = 0; p < layout.parts(); ++p) pairs[size_t(p)] = part_pairs(layout, p, keys);
  return pairs;
}

double imbalance(const std::vector<double>& pairs) {
  const double total = std::accumulate(pairs.begin(), pairs.end(), 0.0);
  if (pairs.empty() || total <= 0) return 1;
  return *std::max_element(pairs.begin(), pairs.end()) / (total / double(pairs.size()));
}

}  // namespace minictx
