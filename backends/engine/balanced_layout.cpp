#include "backends/engine/balanced_layout.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <string>
#include <tuple>

#include "backends/engine/layout_work.hpp"
#include "core/error.hpp"
#include "core/saturating.hpp"

namespace minictx {
namespace {

// Chunks per part tried, and the imbalance that ends the search: more chunks balance
// finer but cut a rank's rows into more pieces, which a tiled kernel pays for.
constexpr int64_t kMaxChunksPerPart = 64;
constexpr double kGoodEnough = 1.01;

int64_t padded_for(int64_t real_len, int64_t unit) {
  const std::optional<int64_t> padded = checked_mul(real_len / unit + (real_len % unit != 0), unit);
  if (!padded)
    input_error("sequence.length " + std::to_string(real_len) + " padded to a multiple of " +
                std::to_string(unit) + " tokens exceeds " + std::to_string(kSaturated));
  return *padded;
}

}  // namespace

std::vector<std::vector<int64_t>> deal_chunks(const std::vector<double>& weights, int parts,
                                              int64_t per_part) {
  require(int64_t(weights.size()) == int64_t(parts) * per_part,
          "deal_chunks: parts × per_part chunks expected");
  std::vector<int64_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return weights[size_t(a)] > weights[size_t(b)]; });
  // The parts with room, least loaded first (then the lowest index).
  using Part = std::tuple<double, int>;
  std::priority_queue<Part, std::vector<Part>, std::greater<Part>> open;
  for (int p = 0; p < parts; ++p) open.emplace(0.0, p);
  std::vector<std::vector<int64_t>> dealt(static_cast<size_t>(parts));
  for (const int64_t c : order) {
    const auto [load, p] = open.top();
    open.pop();
    dealt[size_t(p)].push_back(c);
    if (int64_t(dealt[size_t(p)].size()) < per_part) open.emplace(load + weights[size_t(c)], p);
  }
  for (auto& d : dealt) std::sort(d.begin(), d.end());
  return dealt;
}

SequenceLayout balanced_layout(int64_t real_len, int outer, int inner, const std::vector<double>& keys) {
  require(int64_t(keys.size()) == real_len, "balanced layout: one key count per real position");
  std::vector<double> before(keys.size() + 1, 0.0);  // before[p]: the keys of positions < p
  std::partial_sum(keys.begin(), keys.end(), before.begin() + 1);
  auto keys_below = [&](int64_t p) { return before[size_t(std::min(p, real_len))]; };
  const int64_t least_padded = padded_for(real_len, 2 * int64_t(outer) * inner);
  SequenceLayout best;
  double best_imbalance = 0;
  for (int64_t m = 2; m <= kMaxChunksPerPart; m *= 2) {
    const int64_t padded = padded_for(real_len, m * outer * inner);
    if (m > 2 && padded - least_padded > real_len / 16) break;  // the padding only grows with m
    const int64_t chunk = padded / (m * outer);
    std::vector<double> weights(size_t(m * outer));
    for (size_t c = 0; c < weights.size(); ++c)
      weights[c] = keys_below(int64_t(c + 1) * chunk) - keys_below(int64_t(c) * chunk);
    SequenceLayout layout(real_len, outer, inner, chunk, deal_chunks(weights, outer, m));
    const double measured = imbalance(pairs_per_part(layout, keys));
    if (m == 2 || measured < best_imbalance) {
      best = std::move(layout);
      best_imbalance = measured;
    }
    if (best_imbalance <= kGoodEnough) break;
  }
  return best;
}

}  // namespace minictx
