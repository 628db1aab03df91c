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
// blocks are whole, and block_parts and the kernel's tiles skip what the mask hides.
// Only work is saved here: the kernel masks by
// global position, so the rules never decide correctness, only that no visible pair is
// left out.
ActiveRows active_rows(LayoutKind kind, bool causal, int r, int j, int64_t q_len, int64_t k_len);

// Whether a block's active rows (their global positions start at qpos and kpos) hold a
// pair that the packed documents and the sliding window leave visible (visible_keys);
// true without either. A block they mask whole is skipped: no kernel call, and no
// gradient added.
bool block_visible(const AttnShape&, const int64_t* qpos, RowRange q, const int64_t* kpos, RowRange k);

// How many inner steps each ring rank's block travels on a plain ring under a sliding
// window (RingWalk::Hops): for block j, the last step s at which ring rank j + s has active
// rows that see some of its rows within the window. positions[j]: ring rank j's global
// positions; q_rows, k_rows: the rows of a share that take part as queries and as keys;
// q_side: the query side travels (the Burst backward), else the key side. The window,
// causality and padding decide; packed documents do not (a ring sends what they mask, as
// without a window). The engine and `minictx project` count the same hops.
std::vector<int> window_hops(const AttnShape&, LayoutKind kind,
                             const std::vector<std::vector<int64_t>>& positions, int64_t q_rows,
                             int64_t k_rows, bool q_side);

// What a ring step computes of the block of ring rank r's first q_len query rows against
// ring rank j's first k_len key rows (global positions qpos and kpos, each ascending):
// sub-blocks, each a query row range against a key row range; none when nothing in it is
// visible. For contiguous, zigzag and stripe the active rows when their documents and the
// window leave a pair visible (block_visible). The balanced layout's shares are chunks of
// `chunk` rows from anywhere in the sequence, so each query chunk runs alone against the
// key rows its queries can see within their documents and window (one row range, since
// positions grow along both shares): a tiled kernel then meets no key of another chunk's
// documents.
std::vector<ActiveRows> block_parts(const AttnShape&, LayoutKind kind, int64_t chunk, int r, int j,
                                    const int64_t* qpos, int64_t q_len, const int64_t* kpos, int64_t k_len);

}  // namespace minictx
