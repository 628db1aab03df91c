#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace minictx {

// The documents packed into each batch row, by global position, as the attention kernels
// mask them: a query sees only keys of its own document (and causally, only those at or
// before it); padding (positions >= real_len) belongs to no document, so a padded query
// sees nothing and a padded key is seen by no query.
class DocumentBounds {
 public:
  // lengths[b]: the document lengths of batch row b, summing to real_len.
  DocumentBounds(const std::vector<std::vector<int64_t>>& lengths, int64_t real_len);

  int batch() const { return batch_; }
  int64_t real_len() const { return real_len_; }
  // The global positions [first, end) of the keys that the query at `pos` of row b sees;
  // empty for a padded query.
  std::pair<int64_t, int64_t> keys(int b, int64_t pos, bool causal) const;
  // The first position of the document holding `pos` in row b; -1 for padding.
  int64_t document_start(int b, int64_t pos) const;
  // Whether every batch row has the same packing.
  bool rows_alike() const { return rows_alike_; }
  // The RoPE positions of rows at global `positions`: each one's offset in its document,
  // [batch, positions.size()] (a padded row keeps its global position).
  std::vector<int64_t> offsets(const std::vector<int64_t>& positions) const;

 private:
  int batch_;
  int64_t real_len_;
  bool rows_alike_ = true;
  std::vector<int64_t> first_, end_;  // [batch, real_len]: the document holding each token
};

}  // namespace minictx
