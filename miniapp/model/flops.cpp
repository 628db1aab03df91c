#include "model/flops.hpp"

namespace minictx {

double attention_fwd_flops(const RunConfig& c) {
  const double s = double(c.sequence.length);
  const double f = 4.0 * c.sequence.batch * s * s * c.model.heads * c.model.head_dim;
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
  const double attn = double(c.model.layers) * 2 * 2 * c.model.d_model * s * s * c.sequence.batch;
  const double attn_causal = c.attention.causal ? attn / 2 : attn;
  if (c.run.fwd_only) {
    f.model = f.hardware = dense + attn;
    f.model_causal = f.hardware_causal = dense + attn_causal;
    return f;
  }
  const double dense_mult = c.run.checkpointing == Checkpointing::none ? 3 : 4;
  const double attn_mult = c.run.checkpointing == Checkpointing::full ? 4 : 3;
  f.model = 3 * (dense + attn);
  f.model_causal = 3 * (dense + attn_causal);
  f.hardware = dense_mult * dense + attn_mult * attn;
  f.hardware_causal = dense_mult * dense + attn_mult * attn_causal;
  return f;
}

}  // namespace minictx
