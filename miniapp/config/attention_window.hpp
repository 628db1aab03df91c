#pragma once
// attention.window: sliding-window attention, per layer (docs/algorithms.md, "Sliding
// windows"). A query at position p sees the keys at positions p − w < k ≤ p (causal; also
// k < p + w without the causal mask): w tokens, itself included, as Mistral's and
// Gemma's sliding windows count them. Documents and padding mask on top of it.
#include <cstdint>
#include <string>
#include <vector>

namespace minictx {

struct AttentionWindow {
  // kGlobal: the layer sees every key its mask allows.
  static constexpr int64_t kGlobal = 0;
  // The windows of layers 0, 1, ..., repeated over the layers; empty: every layer global.
  std::vector<int64_t> pattern;

  int64_t of_layer(int layer) const {
    return pattern.empty() ? kGlobal : pattern[size_t(layer) % pattern.size()];
  }
  bool none() const { return pattern.empty(); }
};

// The deck's spelling, which reads back to the same windows: "global", "128" or
// "{layers: [128, global]}".
std::string to_text(const AttentionWindow&);
// The windows `text` spells; InputError with `where` first when it is not one.
AttentionWindow window_from_text(const std::string& text, const std::string& where);

}  // namespace minictx
