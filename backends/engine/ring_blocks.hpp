#pragma once
#include <cstdint>
#include <vector>

#include "backends/engine/sequence_layout.hpp"
#include "device/device.hpp"

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

// Which rows of the block (the first q_len query rows of ring rank r's share, the first
// k_len key rows of ring rank j's) a ring step must compute, for shares laid out by
// `kind` (docs/algorithms.md, "Ring attention, three layouts"). With a causal mask q_len ==
// k_len: whole shares, or with stripe the same first rows of every share (themselves a
// stripe layout of a shorter sequence). The balanced layout's chunks follow no rule here: its
// blocks are whole, and documents_meet and the kernel's tiles skip what the mask hides.
// Only work is saved here: the kernel masks by
// global position, so the rules never decide correctness, only that no visible pair is
// left out.
ActiveRows active_rows(LayoutKind kind, bool causal, int r, int j, int64_t q_len, int64_t k_len);

// Whether a block's active rows (their global positions start at qpos and kpos) hold a
// pair that the packed documents leave visible; true without documents. A block of
// documents that never meet is skipped: no kernel call, and no gradient added.
bool documents_meet(const AttnShape&, const int64_t* qpos, RowRange q, const int64_t* kpos, RowRange k);

// What a ring step computes of the block of ring rank r's first q_len query rows against
// ring rank j's first k_len key rows (global positions qpos and kpos, each ascending):
// sub-blocks, each a query row range against a key row range; none when nothing in it is
// visible. For contiguous, zigzag and stripe the active rows when their documents meet.
// The balanced layout's shares are chunks of `chunk` rows from anywhere in the sequence, so
// each query chunk runs alone against the key rows its queries can see (one row range,
// since positions grow along both shares): a tiled kernel then meets no key of another
// chunk's documents.
std::vector<ActiveRows> block_parts(const AttnShape&, LayoutKind kind, int64_t chunk, int r, int j,
                                    const int64_t* qpos, int64_t q_len, const int64_t* kpos, int64_t k_len);

}  // namespace minictx
