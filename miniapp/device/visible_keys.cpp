#include "device/visible_keys.hpp"

#include <algorithm>

namespace minictx {

KeyRange visible_keys(const AttnShape& s, int b, int64_t pos) {
  if (pos >= s.real_len) return {};
  KeyRange r{0, s.causal ? pos + 1 : s.real_len};
  if (s.documents) {
    const auto [first, end] = s.documents->keys(b, pos, s.causal);
    r = {first, end};
  }
  if (s.window > 0) {
    r.first = std::max(r.first, pos - s.window + 1);
    if (!s.causal) r.end = std::min(r.end, pos + s.window);
  }
  return r;
}

bool any_visible(const AttnShape& s, const int64_t* qpos, int64_t nq, const int64_t* kpos, int64_t nk) {
  const int rows = s.documents && !s.documents->rows_alike() ? s.batch : 1;  // else row 0 speaks for all
  for (int b = 0; b < rows; ++b)
    for (int64_t i = 0; i < nq; ++i) {
      const KeyRange r = visible_keys(s, b, qpos[i]);
      const int64_t* k = std::lower_bound(kpos, kpos + nk, r.first);
      if (k != kpos + nk && *k < r.end) return true;
    }
  return false;
}

}  // namespace minictx
