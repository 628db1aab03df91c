#include "backends/engine/ring_blocks.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "device/visible_keys.hpp"

namespace minictx {
namespace {

// The positions [lo, hi) that hold every key the queries at qpos[0, n) (ascending) see in
// some batch row; empty for padding, which sits at the end and sees nothing. Document
// starts, window starts and the keys' ends grow with the query's position: the first
// query's start and the last real query's end bound them all.
std::pair<int64_t, int64_t> key_span(const AttnShape& s, const int64_t* qpos, int64_t n) {
  const int64_t real = std::lower_bound(qpos, qpos + n, s.real_len) - qpos;
  if (real == 0) return {0, 0};
  const int64_t first = qpos[0], last = qpos[real - 1];
  int64_t lo = 0, hi = s.causal ? last + 1 : s.real_len;
  if (s.documents) {
    lo = first;
    hi = 0;
    for (int b = 0; b < s.batch; ++b) {
      lo = std::min(lo, s.documents->keys(b, first, s.causal).first);
      hi = std::max(hi, s.documents->keys(b, last, s.causal).second);
    }
  }
  if (s.window > 0) {
    lo = std::max(lo, first - s.window + 1);
    hi = std::min(hi, s.causal ? last + 1 : last + s.window);
  }
  return {lo, hi};
}

}  // namespace

ActiveRows active_rows(LayoutKind kind, bool causal, int r, int j, int64_t q_len, int64_t k_len) {
  if (!causal) return {{0, q_len}, {0, k_len}};
  require(q_len == k_len, "active_rows: a causal block needs as many query rows as key rows");
  const int64_t share_len = q_len;
  const RowRange all{0, share_len};
  if (j == r) return {all, all};
  switch (kind) {
    case LayoutKind::contiguous:  // earlier shares are wholly visible, later ones not at all
      if (j < r) return {all, all};
      return {};
    case LayoutKind::zigzag: {
      // Chunks r and 2P−1−r against j and 2P−1−j: for j < r both query chunks see the
      // first key chunk only; for j > r only the second query chunk sees anything, all of it.
      const int64_t half = share_len / 2;
      if (j < r) return {all, {0, half}};
      return {{half, half}, all};
    }
    case LayoutKind::stripe:
      // Row i sits at i·P + r. For j < r key row m is visible when m ≤ i (the mask's
      // diagonal); for j > r when m < i, so query row 0 and the last key row drop out.
      if (j < r) return {all, all};
      return {{1, share_len - 1}, {0, share_len - 1}};
    case LayoutKind::balanced:  // chunks from anywhere: the kernel's tiles skip what the mask hides
      return {all, all};
  }
  return {};
}

namespace {

// Whether a query of qpos[0, nq) sees a key of kpos[0, nk) (both ascending) within the
// window, by causality and padding alone: one merge-like pass, each query against the
// nearest keys at or before it (and after it, without the causal mask).
bool window_meets(const AttnShape& s, const int64_t* qpos, int64_t nq, const int64_t* kpos, int64_t nk) {
  int64_t k = 0;  // the first key after the query
  for (int64_t i = 0; i < nq && qpos[i] < s.real_len; ++i) {
    while (k < nk && kpos[k] <= qpos[i]) ++k;
    if (k > 0 && qpos[i] - kpos[k - 1] < s.window) return true;
    if (!s.causal && k < nk && kpos[k] < s.real_len && kpos[k] - qpos[i] < s.window) return true;
  }
  return false;
}

}  // namespace

std::vector<int> window_hops(const AttnShape& s, LayoutKind kind,
                             const std::vector<std::vector<int64_t>>& positions, int64_t q_rows,
                             int64_t k_rows, bool q_side) {
  const int ranks = int(positions.size());
  std::vector<int> hops(size_t(ranks), 0);
  for (int j = 0; j < ranks; ++j)
    for (int step = ranks - 1; step > 0; --step) {  // the farthest first: most blocks stop early
      const int holder = (j + step) % ranks;
      const int queries = q_side ? j : holder, keys = q_side ? holder : j;
      const ActiveRows a = active_rows(kind, s.causal, queries, keys, q_rows, k_rows);
      if (!a.empty() && window_meets(s, positions[size_t(queries)].data() + a.q.begin, a.q.len,
                                     positions[size_t(keys)].data() + a.k.begin, a.k.len)) {
        hops[size_t(j)] = step;
        break;
      }
    }
  return hops;
}

bool block_visible(const AttnShape& s, const int64_t* qpos, RowRange q, const int64_t* kpos, RowRange k) {
  if (!s.documents && s.window == 0) return true;  // active_rows has left only visible blocks
  return any_visible(s, qpos + q.begin, q.len, kpos + k.begin, k.len);
}

std::vector<ActiveRows> block_parts(const AttnShape& s, LayoutKind kind, int64_t chunk, int r, int j,
                                    const int64_t* qpos, int64_t q_len, const int64_t* kpos, int64_t k_len) {
  std::vector<ActiveRows> parts;
  auto keep = [&](const ActiveRows& a) {
    if (!a.empty() && block_visible(s, qpos, a.q, kpos, a.k)) parts.push_back(a);
  };
  if (kind != LayoutKind::balanced) {
    keep(active_rows(kind, s.causal, r, j, q_len, k_len));
    return parts;
  }
  require(chunk > 0, "block_parts: the balanced layout's chunks have a length");
  for (int64_t begin = 0; begin < q_len; begin += chunk) {
    const int64_t n = std::min(chunk, q_len - begin);
    const auto [lo, hi] = key_span(s, qpos + begin, n);
    const int64_t k_first = std::lower_bound(kpos, kpos + k_len, lo) - kpos;
    const int64_t k_end = std::lower_bound(kpos, kpos + k_len, hi) - kpos;
    keep({{begin, n}, {k_first, std::max<int64_t>(k_end - k_first, 0)}});
  }
  return parts;
}

}  // namespace minictx
