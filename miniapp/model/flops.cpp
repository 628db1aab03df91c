#include "model/flops.hpp"

namespace minictx {

namespace {

// The pairs of one document of `len` tokens less than `window` apart (0: every pair).
double document_pairs(int64_t len, int64_t window) {
  const double n = double(len), w = double(window);
  return window == 0 || window >= len ? n * n : (2 * w - 1) * n - w * (w - 1);
}

// The attention FLOPs of a (query, key) pair, forward: q·kᵀ and p·v, 2·D + 2·Dv per head.
double flops_per_pair(const RunConfig& c) {
  return 2.0 * c.model.heads * (c.model.head_dim + c.model.value_dim());
}

}  // namespace

double attention_pairs(const RunConfig& c, int64_t window) {
  const auto rows = document_lengths(c.sequence.documents, c.sequence.length, c.sequence.batch);
  if (rows.empty()) return c.sequence.batch * document_pairs(c.sequence.length, window);
  double pairs = 0;
  for (const auto& row : rows)
    for (int64_t len : row) pairs += document_pairs(len, window);
  return pairs;
}

double step_attention_pairs(const RunConfig& c) {
  if (c.run.mode == Mode::attention) return attention_pairs(c, c.attention.window.of_layer(0));
  double pairs = 0;
  for (int l = 0; l < c.model.layers; ++l) pairs += attention_pairs(c, c.attention.window.of_layer(l));
  return pairs;
}

// Every batch row's lengths sum to S (the deck's checks), so the tokens are B·S.
DocumentWork document_work(const RunConfig& c) {
  const double tokens = c.sequence.batch * double(c.sequence.length);
  const double pairs = attention_pairs(c);
  return {pairs / (tokens * double(c.sequence.length)), pairs / tokens};
}

double attention_fwd_flops(const RunConfig& c) {
  const double f = flops_per_pair(c) * attention_pairs(c, c.attention.window.of_layer(0));
  return c.attention.causal ? f / 2 : f;
}

StepFlops step_flops(const RunConfig& c) {
  StepFlops f;
  const double s = double(c.sequence.length);
  const double fwd_attn = attention_fwd_flops(c);
  f.attention = c.run.fwd_only ? fwd_attn : 3.5 * fwd_attn;
  if (c.run.mode == Mode::attention) {
    f.model = f.hardware = f.model_causal = f.hardware_causal = f.attention;
    return f;
  }
  const double dense = 2.0 * double(c.model.n_params(c.attention.sinks)) * s * c.sequence.batch;
  // MPT's 2·2·d_model per pair assumes H·D = d_model for both products; with MLA heads
  // the p·v half scales by Dv/D.
  const double value_share = double(c.model.head_dim + c.model.value_dim()) / (2.0 * c.model.head_dim);
  const double attn = 2 * 2 * c.model.d_model * value_share * step_attention_pairs(c);
  const double attn_causal = c.attention.causal ? attn / 2 : attn;
  if (c.run.fwd_only) {
    f.model = f.hardware = dense + attn;
    f.model_causal = f.hardware_causal = dense + attn_causal;
    return f;
  }
  const Checkpointing ckpt = c.run.checkpointing;
  const double dense_mult = ckpt == Checkpointing::none ? 3 : 4;
  // The attention recompute: all of it (full), none (selective), or the first half of the
  // queries (selective_half): half the rows against all keys, a quarter of the causal
  // work when they see only the first half of the keys.
  const double recompute = ckpt == Checkpointing::full ? 1 : ckpt == Checkpointing::selective_half ? 0.5 : 0;
  const double recompute_causal =
      ckpt == Checkpointing::selective_half && c.attention.causal ? 0.25 : recompute;
  f.model = 3 * (dense + attn);
  f.model_causal = 3 * (dense + attn_causal);
  f.hardware = dense_mult * dense + (3 + recompute) * attn;
  f.hardware_causal = dense_mult * dense + (3 + recompute_causal) * attn_causal;
  return f;
}

}  // namespace minictx
