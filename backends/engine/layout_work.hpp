#pragma once
// The attention work a layout gives each rank, counted as the (query, key) pairs the mask
// leaves: causality, padding and packed documents. The balanced layout evens it out and
// the results report it (docs/algorithms.md, "Document load balance").
#include <cstdint>
#include <vector>

#include "backends/engine/sequence_layout.hpp"
#include "config/run_config.hpp"

namespace minictx {

// keys[p]: how many keys the query at global position p sees, summed over the batch rows
// (each row's packing: sequence.documents), for p < the real length.
std::vector<double> visible_keys(const RunConfig& cfg);

// The pairs part `part` of `layout` computes per query head, its queries' visible keys
// summed. A part of an inner group (the ranks a Ulysses exchange joins) takes its share's
// queries for 1/inner of the heads: the share's pairs over inner.
double part_pairs(const SequenceLayout& layout, int part, const std::vector<double>& keys);
std::vector<double> pairs_per_part(const SequenceLayout& layout, const std::vector<double>& keys);

// The busiest part's pairs over the mean: 1 is perfect balance.
double imbalance(const std::vector<double>& pairs);

}  // namespace minictx
