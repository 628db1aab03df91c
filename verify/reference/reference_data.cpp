// Global inputs and weights, element by element from the shared counter-based generator.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "reference/reference.hpp"

namespace minictx::reference {
namespace {

std::vector<double> generate(uint64_t seed, uint64_t tensor, size_t n, double scale) {
  std::vector<double> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = input_value(seed, tensor, i, scale);
  return t;
}

// [rows, cols] of a weight; a gain is one row of d_model.
std::pair<int64_t, int64_t> weight_shape(const Problem& p, Weight w) {
  const int64_t d = p.d_model, qd = int64_t(p.heads) * p.head_dim, kd = int64_t(p.kv_heads) * p.head_dim,
                vd = int64_t(p.kv_heads) * p.value_dim(), od = int64_t(p.heads) * p.value_dim(),
                f = p.ffn_hidden;
  switch (w) {
    case Weight::wq:
      return {d, qd};
    case Weight::wk:
      return {d, kd};
    case Weight::wv:
      return {d, vd};
    case Weight::wo:
      return {od, d};
    case Weight::w1:
    case Weight::w3:
      return {d, f};
    case Weight::w2:
      return {f, d};
    default:
      return {1, d};  // gains
  }
}

}  // namespace

double stored_in(DType dtype, double x) {
  if (dtype == DType::f32) return x;
  const double narrow = double(float(x));  // the run uploads fp32, then rounds that
  if (narrow == 0 || !std::isfinite(narrow)) return narrow;
  // |x| = m·2^e with 0.5 ≤ m < 1: `bits` significant bits are a spacing of 2^(e − bits),
  // and below the smallest normal (e < min_e) the subnormals keep that of 2^min_e.
  const bool bf16 = dtype == DType::bf16;
  const int bits = bf16 ? 8 : 11, min_e = bf16 ? -125 : -13;
  const double largest = bf16 ? std::ldexp(2.0 - std::ldexp(1.0, 1 - bits), 127) : 65504.0;
  int e = 0;
  (void)std::frexp(narrow, &e);
  const int spacing = std::max(e, min_e) - bits;
  const double r = std::ldexp(std::nearbyint(std::ldexp(narrow, -spacing)), spacing);  // ties to even
  return std::abs(r) > largest ? std::copysign(std::numeric_limits<double>::infinity(), r) : r;
}

AttentionInputs attention_inputs(const Problem& p) {
  const size_t rows = size_t(p.batch) * p.seq_len;
  auto gen = [&](uint64_t tensor, int heads, int dim) {
    std::vector<double> t(rows * heads * dim);
    for (size_t i = 0; i < t.size(); ++i)
      t[i] = stored_in(p.inputs_dtype, attention_input(p.seed, tensor, i, p.input_scale, p.key_directions,
                                                       p.seq_len, int64_t(heads) * dim));
    return t;
  };
  return {gen(tensor_id::attn_q, p.heads, p.head_dim), gen(tensor_id::attn_k, p.kv_heads, p.head_dim),
          gen(tensor_id::attn_v, p.kv_heads, p.value_dim()), gen(tensor_id::attn_do, p.heads, p.value_dim())};
}

std::vector<double> make_input(const Problem& p) {
  return generate(p.seed, tensor_id::input_x, size_t(p.batch) * p.seq_len * p.d_model, p.input_scale);
}

std::vector<double> make_loss_weights(const Problem& p) {
  return generate(p.seed, tensor_id::loss_weight, size_t(p.batch) * p.seq_len * p.d_model, 1.0);
}

std::vector<double> make_head(const Problem& p) {
  std::vector<double> head(size_t(p.d_model) * size_t(p.vocab));
  for (size_t i = 0; i < head.size(); ++i) head[i] = lm_head_value(p.seed, p.d_model, i);
  return head;
}

std::vector<int64_t> make_labels(const Problem& p) {
  std::vector<int64_t> labels(size_t(p.batch) * size_t(p.seq_len));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = label_value(p.seed, i, p.vocab);
  return labels;
}

Weights make_weights(const Problem& p) {
  Weights weights(p.layers, std::vector<std::vector<double>>(int(Weight::count)));
  for (int l = 0; l < p.layers; ++l) {
    for (int wi = 0; wi < int(Weight::count); ++wi) {
      const Weight w = Weight(wi);
      const auto [rows, cols] = weight_shape(p, w);
      // Gains ignore fan_in; the convention is to pass d_model.
      const int64_t fan_in = is_gain(w) ? p.d_model : rows;
      auto& t = weights[l][wi];
      t.resize(size_t(rows * cols));
      for (size_t i = 0; i < t.size(); ++i) t[i] = weight_value(p.seed, l, w, fan_in, i);
    }
  }
  return weights;
}

}  // namespace minictx::reference
