#include "backends/engine/ring_blocks.hpp"

#include "core/error.hpp"

namespace minictx {

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
  }
  return {};
}

bool documents_meet(const AttnShape& s, const int64_t* qpos, RowRange q, const int64_t* kpos, RowRange k) {
  return !s.documents || s.documents->any_visible(qpos + q.begin, q.len, kpos + k.begin, k.len, s.causal);
}

}  // namespace minictx
