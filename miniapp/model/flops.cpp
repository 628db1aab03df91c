#include "model/flops.hpp"

namespace minictx {

double attention_pairs(const RunConfig& c) {
  const double s = double(c.sequence.length);
  const auto rows = document_lengths(c.sequence.documents, c.sequence.length, c.sequence.batch);
  if (rows.empty()) return c.sequence.batch * s * s;
  double pairs = 0;
  for (const auto& row : rows)
    for (int64_t len : row) pairs += double(len) * double(len);
  return pairs;
}

// Every batch row's lengths sum to S (the deck's checks), so the tokens are B·S.
DocumentWork document_work(const RunConfig& c) {
  const double tokens = c.sequence.batch * double(c.sequence.length);
  const double pairs = attention_pairs(c);
  return {pairs / (tokens * double(c.sequence.length)), pairs / tokens};
}

double attention_fwd_flops(const RunConfig& c) {
  const double f = 4.0 * attention_pairs(c) * c.model.heads * c.model.head_dim;
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
  const double dense = 2.0 * double(c.model.n_params()) * s * c.sequence.batch;
  const double attn = double(c.model.layers) * 2 * 2 * c.model.d_model * attention_pairs(c);
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
