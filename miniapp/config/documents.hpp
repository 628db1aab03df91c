#pragma once
// sequence.documents: the lengths of the documents packed into each batch row's sequence
// (docs/user-guide.md, "Packed documents"). A query attends only to keys of its own
// document, and RoPE positions restart at each document.
#include <cstdint>
#include <string>
#include <vector>

namespace minictx {

struct DocumentPacking {
  // Given lengths: one list that every batch row shares, or (per_row) one list per row.
  std::vector<std::vector<int64_t>> lengths;
  bool per_row = false;
  // Generated lengths: each batch row draws lengths in [min_length, max_length] from
  // `seed` until it is full; its last document takes what is left. Uniformly where
  // pareto_alpha is 0; else from a Pareto distribution of that exponent cut at max_length,
  // P(length > x) ∝ x^-alpha: many short documents and a few long ones, as corpora have.
  int64_t min_length = 0, max_length = 0;
  double pareto_alpha = 0;
  uint64_t seed = 0;

  bool none() const { return lengths.empty() && max_length == 0; }
  bool generated() const { return max_length > 0; }
};

// The deck's spelling, which reads back to the same packing: "none", "[100, 1, 57]",
// "{rows: [[100, 58], [158]]}", "{uniform: [8, 64], seed: 3}" or
// "{pareto: [8, 4096], alpha: 1.2, seed: 3}".
std::string to_text(const DocumentPacking&);
// The packing `text` spells; InputError with `where` first when it is not one.
DocumentPacking packing_from_text(const std::string& text, const std::string& where);

// Each batch row's document lengths, in order (empty: no documents). The given lengths
// are returned as they are: the deck's checks compare their sums with the length.
std::vector<std::vector<int64_t>> document_lengths(const DocumentPacking&, int64_t length, int batch);

}  // namespace minictx
