#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace minictx {

// How the global sequence is dealt to the ranks of a sequence-parallel group.
//   contiguous: part r holds tokens [r·L, (r+1)·L)
//   zigzag:     2P chunks of L/2; part r holds chunks r and 2P−1−r (causal load balance)
//   stripe:     token t sits on part t mod P
//   balanced:   the padded sequence cut into chunks of equal length, each part holding as
//               many, chosen to balance the (query, key) pairs the mask leaves each part
//               (balanced_layout.hpp); a part's chunks in increasing order
// A layout may be nested (USP): `outer` parts each take a share of the sequence by the
// kind above, and each share is split contiguously into `inner` pieces; part index =
// outer_index · inner + inner_index. The sequence is padded at its end to a length every
// part can hold equally; padded tokens sit at positions >= real_len and are masked.
enum class LayoutKind { contiguous, zigzag, stripe, balanced };

class SequenceLayout {
 public:
  SequenceLayout() = default;
  // contiguous, zigzag or stripe.
  SequenceLayout(LayoutKind kind, int64_t real_len, int outer, int inner = 1);
  // balanced: outer part o holds chunks[o] (ascending indices of chunk_len-token chunks of
  // the padded sequence), every part as many; chunk_len a multiple of inner.
  SequenceLayout(int64_t real_len, int outer, int inner, int64_t chunk_len,
                 std::vector<std::vector<int64_t>> chunks);

  LayoutKind kind() const { return kind_; }
  int parts() const { return outer_ * inner_; }
  int inner() const { return inner_; }  // parts per outer share
  // balanced: the length of its chunks (an outer share is whole chunks); 0 for the others.
  int64_t chunk_len() const { return chunk_len_; }
  int64_t real_len() const { return real_len_; }
  int64_t padded_len() const { return padded_len_; }
  int64_t local_len() const { return padded_len_ / parts(); }
  // Length of an outer part's share (what an inner group gathers).
  int64_t outer_len() const { return padded_len_ / outer_; }

  int64_t global_position(int part, int64_t local_row) const;
  std::vector<int64_t> positions(int part) const;
  // Global positions of an outer part's whole share, in order.
  std::vector<int64_t> outer_positions(int outer_index) const;
  // Real (unpadded) tokens held by a part.
  int64_t real_tokens(int part) const;

 private:
  int64_t outer_position(int outer_index, int64_t row) const;

  LayoutKind kind_ = LayoutKind::contiguous;
  int64_t real_len_ = 0;
  int64_t padded_len_ = 0;
  int outer_ = 1;
  int inner_ = 1;
  int64_t chunk_len_ = 0;                     // balanced only
  std::vector<std::vector<int64_t>> chunks_;  // balanced only: [outer part] → its chunks
};

}  // namespace minictx
