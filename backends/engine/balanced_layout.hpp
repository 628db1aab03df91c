#pragma once
// ring_type balanced: a layout that gives every ring rank the same attention work under a
// packing of documents (docs/algorithms.md, "Document load balance").
#include <cstdint>
#include <vector>

#include "backends/engine/sequence_layout.hpp"

namespace minictx {

// The sequence is padded and cut into outer × m chunks of equal length; the chunks,
// heaviest first (their queries' visible keys summed), go each to the outer part with the
// least work so far that holds fewer than m (longest-processing-time-first with equal
// counts). m is the smallest of 2, 4, ..., 64 whose busiest part does at most 1 % more
// than the mean, else the best of them, among those that pad the sequence by at most
// 1/16 of its length beyond what m = 2 pads. A causal sequence of one document gets
// m = 2, which is the zigzag layout. keys: visible_keys(), one per real position.
SequenceLayout balanced_layout(int64_t real_len, int outer, int inner, const std::vector<double>& keys);

// The chunks of `chunk_weights` dealt to `parts` parts, `per_part` each, by the rule above;
// each part's chunk indices ascending (exposed for tests).
std::vector<std::vector<int64_t>> deal_chunks(const std::vector<double>& chunk_weights, int parts,
                                              int64_t per_part);

}  // namespace minictx
