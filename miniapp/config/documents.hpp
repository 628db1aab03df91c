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
  // Generated lengths: each batch row draws lengths uniformly in [uniform_min,
  // uniform_max] from `seed` until it is full; its last document takes what is left.
  int64_t uniform_min = 0, uniform_max = 0;
  uint64_t seed = 0;

  bool none() const { return lengths.empty() && uniform_max == 0; }
  bool generated() const { return uniform_max > 0; }
};

// The deck's spelling, which reads back to the same packing: "none", "[100, 1, 57]",
// "{rows: [[100, 58], [158]]}" or "{uniform: [8, 64], seed: 3}".
std::string to_text(const DocumentPacking&);
// The packing `text` spells; InputError with `where` first when it is not one.
DocumentPacking packing_from_text(const std::string& text, const std::string& where);

// Each batch row's document lengths, in order (empty: no documents). The given lengths
// are returned as they are: the deck's checks compare their sums with the length.
std::vector<std::vector<int64_t>> document_lengths(const DocumentPacking&, int64_t length, int batch);

}  // namespace minictx
