#pragma once
#include <cmath>
#include <cstdint>

#include "core/rng.hpp"

namespace minictx {

// Which global tensor a generated value belongs to. Every global tensor is indexed
// row-major over its global shape with the *real* (unpadded) sequence length, so a
// value never depends on the world size, the layout or the padding.
namespace tensor_id {
inline constexpr uint64_t input_x = 1;      // model input            [B, S, d_model]
inline constexpr uint64_t loss_weight = 2;  // loss coefficients      [B, S, d_model]
inline constexpr uint64_t attn_q = 3;       // attention-mode inputs  [B, S, H, D]
inline constexpr uint64_t attn_k = 4;       //                        [B, S, Hkv, D]
inline constexpr uint64_t attn_v = 5;       //                        [B, S, Hkv, Dv]
inline constexpr uint64_t attn_do = 6;      //                        [B, S, H, Dv]
inline constexpr uint64_t labels = 7;       // LM head targets        [B, S] (model.vocab > 0)
inline constexpr uint64_t lm_head = 8;      // LM head weight         [d_model, vocab]
}  // namespace tensor_id

// Weights of one decoder layer, each [in, out] row-major (y = x W); gains are [d_model].
enum class Weight : int { g_attn = 0, wq, wk, wv, wo, g_mlp, w1, w3, w2, count };
inline constexpr const char* weight_name(Weight w) {
  constexpr const char* names[] = {"g_attn", "wq", "wk", "wv", "wo", "g_mlp", "w1", "w3", "w2"};
  return names[int(w)];
}
inline constexpr uint64_t weight_tensor_id(int layer, Weight w) {
  return 1000 + uint64_t(layer) * 16 + uint64_t(w);
}
inline constexpr bool is_gain(Weight w) { return w == Weight::g_attn || w == Weight::g_mlp; }

// Value of element `index` of a weight with `fan_in` rows: U(-1,1)/sqrt(fan_in) for
// matrices, 1 + 0.1·U(-1,1) for norm gains.
inline double weight_value(uint64_t seed, int layer, Weight w, int64_t fan_in, uint64_t index) {
  const double u = CounterRng(seed, weight_tensor_id(layer, w)).uniform(index);
  if (is_gain(w)) return 1.0 + 0.1 * u;
  return u / std::sqrt(double(fan_in));
}

// The attention sink logits of layer `layer` (attention.sinks; attention mode: layer 0),
// [H]: beside the layer's weights in the generator's numbering.
inline constexpr uint64_t sink_tensor_id(int layer) { return weight_tensor_id(layer, Weight::count); }

// The LM head's target of token `index` (b·S + s over the real tokens): uniform over
// [0, vocab).
inline int64_t label_value(uint64_t seed, uint64_t index, int64_t vocab) {
  const double u = (CounterRng(seed, tensor_id::labels).uniform(index) + 1.0) / 2.0;  // [0, 1)
  return u * double(vocab) < double(vocab - 1) ? int64_t(u * double(vocab)) : vocab - 1;
}

// The LM head's weight [d_model, vocab], element `index`: U(-1, 1)/sqrt(d_model), as the
// layers' matrices.
inline double lm_head_value(uint64_t seed, int64_t d_model, uint64_t index) {
  return CounterRng(seed, tensor_id::lm_head).uniform(index) / std::sqrt(double(d_model));
}

// Inputs, attention inputs and loss coefficients: U(-1, 1).
inline double data_value(uint64_t seed, uint64_t tensor, uint64_t index) {
  return CounterRng(seed, tensor).uniform(index);
}

// An input (model x; attention q, k, v, dO) at input scale `scale`, a power of two: at 1
// exactly data_value; otherwise scale · m/128, m the integer nearest 128·U(-1,1). Such a
// value has at most 8 significant bits, so bf16, fp16 and fp32 store it exactly and the
// fp64 reference sees the app's inputs: at a large scale a rounded input would move a
// logit by more than the error being measured.
inline double input_value(uint64_t seed, uint64_t tensor, uint64_t index, double scale) {
  const double u = data_value(seed, tensor, index);
  if (scale == 1.0) return u;
  return scale * std::round(128.0 * u) / 128.0;
}

// Sink logit of query head `head` of layer `layer`: U(-1, 1), a logit of the size of the
// attention's scores (q·k/sqrt(D) of unit-scale data), so that a sink takes a visible share
// of a row's probability.
inline double sink_value(uint64_t seed, int layer, int head) {
  return data_value(seed, sink_tensor_id(layer), uint64_t(head));
}

// Attention-mode keys at `directions` directions shared by the sequence
// (run.key_directions): element j of token pos's key (`width` elements a token, `seq`
// tokens a batch row) is that of token pos mod directions. A query's logits then take one
// value per direction, and its largest ties across every visible key of its best
// direction: at a large scale a row keeps tens of equal large logits, and its LSE is the
// max plus the log of their count, instead of one logit owning the row.
inline double shared_direction_key(uint64_t seed, uint64_t index, int64_t seq, int64_t width, int directions,
                                   double scale) {
  const uint64_t token = index / uint64_t(width), j = index % uint64_t(width);
  const uint64_t row = token / uint64_t(seq), pos = token % uint64_t(seq);
  return input_value(seed, tensor_id::attn_k,
                     (row * uint64_t(seq) + pos % uint64_t(directions)) * uint64_t(width) + j, scale);
}

// An attention-mode input (q, k, v, dO) of a problem of `seq` tokens with `width` elements
// a token: input_value, save the keys where they share `key_directions` > 0 directions.
inline double attention_input(uint64_t seed, uint64_t tensor, uint64_t index, double scale,
                              int key_directions, int64_t seq, int64_t width) {
  if (tensor != tensor_id::attn_k || key_directions == 0) return input_value(seed, tensor, index, scale);
  return shared_direction_key(seed, index, seq, width, key_directions, scale);
}

}  // namespace minictx
