#include "device/document_bounds.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace minictx {

DocumentBounds::DocumentBounds(const std::vector<std::vector<int64_t>>& lengths, int64_t real_len)
    : batch_(int(lengths.size())), real_len_(real_len) {
  first_.resize(size_t(batch_) * size_t(real_len));
  end_.resize(first_.size());
  for (int b = 0; b < batch_; ++b) {
    int64_t start = 0;
    for (int64_t len : lengths[size_t(b)]) {
      require(len > 0 && start + len <= real_len, "document bounds: the lengths must fill the sequence");
      for (int64_t p = start; p < start + len; ++p) {
        first_[size_t(b * real_len + p)] = start;
        end_[size_t(b * real_len + p)] = start + len;
      }
      start += len;
    }
    require(start == real_len, "document bounds: the lengths must fill the sequence");
  }
  // Each row against the one before it.
  rows_alike_ = std::equal(first_.begin() + real_len, first_.end(), first_.begin());
}

std::pair<int64_t, int64_t> DocumentBounds::keys(int b, int64_t pos, bool causal) const {
  if (pos >= real_len_) return {0, 0};
  const size_t at = size_t(b * real_len_ + pos);
  return {first_[at], causal ? pos + 1 : end_[at]};
}

int64_t DocumentBounds::document_start(int b, int64_t pos) const {
  return pos < real_len_ ? first_[size_t(b * real_len_ + pos)] : -1;
}

std::vector<int64_t> DocumentBounds::offsets(const std::vector<int64_t>& positions) const {
  std::vector<int64_t> out;
  out.reserve(size_t(batch_) * positions.size());
  for (int b = 0; b < batch_; ++b)
    for (int64_t p : positions) out.push_back(p < real_len_ ? p - first_[size_t(b * real_len_ + p)] : p);
  return out;
}

}  // namespace minictx
