#pragma once
#include <cstdint>

#include "backends/sequence_layout.hpp"

namespace minictx {

// Rows [begin, begin + len) of one ring rank's share.
struct RowRange {
  int64_t begin = 0;
  int64_t len = 0;
};

// The part of a ring step's block that can hold a visible (query, key) pair: the query
// rows of this rank against the key rows of the source. Empty ranges: skip the block.
struct ActiveRows {
  RowRange q, k;
  bool empty() const { return q.len == 0 || k.len == 0; }
};

// Which rows of the block (queries of ring rank r, keys of ring rank j) a ring step must
// compute, for shares of `share_len` rows laid out by `kind` (ALGORITHMS.md, "Ring
// attention, three layouts"). Only work is saved here: the kernel masks by global
// position, so the rules never decide correctness, only that no visible pair is left out.
ActiveRows active_rows(LayoutKind kind, bool causal, int r, int j, int64_t share_len);

}  // namespace minictx
