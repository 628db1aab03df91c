#include "model/attention_step.hpp"

#include "core/phase_names.hpp"
#include "core/synthetic_data.hpp"
#include "model/shard_data.hpp"

namespace minictx {

AttnShape attention_shape(const RunConfig& cfg, const SequenceLayout& layout, int layer) {
  AttnShape s;
  s.batch = cfg.sequence.batch;
  s.heads = cfg.model.heads;
  s.kv_heads = cfg.model.kv_heads;
  s.head_dim = cfg.model.head_dim;
  s.head_dim_v = cfg.model.value_dim();
  s.window = cfg.attention.window.of_layer(layer);
  s.causal = cfg.attention.causal;
  s.real_len = layout.real_len();
  s.block_q = cfg.attention.block_q;
  s.block_k = cfg.attention.block_k;
  const auto lengths = document_lengths(cfg.sequence.documents, cfg.sequence.length, cfg.sequence.batch);
  if (!lengths.empty()) s.documents = std::make_shared<const DocumentBounds>(lengths, layout.real_len());
  return s;
}

Tensor make_sinks(Device& device, const RunConfig& cfg, int layer, DType dtype) {
  Tensor t = device.alloc({int64_t(cfg.model.heads)}, dtype);
  std::vector<float> host(size_t(cfg.model.heads));
  for (int h = 0; h < cfg.model.heads; ++h) host[size_t(h)] = float(sink_value(cfg.run.seed, layer, h));
  device.upload(t, host.data());
  return t;
}

AttentionStep::AttentionStep(const RunConfig& cfg, Device& device, AttentionBackend& backend,
                             PhaseTimer& timer, RingTimeline* timeline)
    : dev_(device), backend_(backend), timer_(timer), timeline_(timeline) {
  const SequenceLayout& layout = backend.layout();
  shape_ = attention_shape(cfg, layout, 0);
  const int64_t rows = int64_t(cfg.sequence.batch) * layout.local_len();
  const int64_t qd = int64_t(shape_.heads) * shape_.head_dim, kd = int64_t(shape_.kv_heads) * shape_.head_dim,
                vd = int64_t(shape_.kv_heads) * shape_.value_dim(),
                od = int64_t(shape_.heads) * shape_.value_dim();
  // The inputs of a 16-bit attention are 16-bit values: every backend gets the same
  // rounded ones (the fp64 reference too), whatever it then sends in which dtype.
  auto make = [&](int64_t width, uint64_t id) {
    Tensor t = dev_.alloc({rows, width});
    fill_shard(dev_, t, layout, backend.part(), cfg.sequence.batch, cfg.run.seed, id, cfg.run.input_scale,
               1.0, cfg.run.key_directions);
    dev_.round_to_precision(t);
    return t;
  };
  q_ = make(qd, tensor_id::attn_q);
  k_ = make(kd, tensor_id::attn_k);
  v_ = make(vd, tensor_id::attn_v);
  dout_ = make(od, tensor_id::attn_do);
  o_ = dev_.alloc({rows, od});
  lse_ = dev_.alloc_lse(shape_.batch, shape_.heads, layout.local_len());
  dq_ = dev_.alloc({rows, qd});
  dk_ = dev_.alloc({rows, kd});
  dv_ = dev_.alloc({rows, vd});
  if (cfg.attention.sinks) {
    sinks_ = make_sinks(dev_, cfg, 0, DType::f32);
    dsinks_ = dev_.alloc(sinks_.shape());
  }
}

void AttentionStep::step(bool with_backward) {
  {
    if (timeline_) timeline_->set_walk(0, WalkPass::forward);
    auto t = timer_.scope(phase::attention_fwd);
    backend_.forward(shape_, q_, k_, v_, o_, lse_);
    // Once, into the merged result: never once per block (docs/algorithms.md, "Attention sinks").
    if (sinks_.numel() > 0) dev_.attn_sink_merge(shape_, sinks_, o_, lse_);
    // A 16-bit attention writes 16-bit outputs (the LSE stays fp32), and its backward
    // reads that o: rounded once here, whatever the backend's sums were held in.
    dev_.round_to_precision(o_);
  }
  if (!with_backward) return;
  if (timeline_) timeline_->set_walk(0, WalkPass::backward);
  auto t = timer_.scope(phase::attention_bwd);
  backend_.backward(shape_, q_, k_, v_, o_, lse_, dout_, dq_, dk_, dv_);
  if (sinks_.numel() > 0) {
    dev_.fill(dsinks_, 0.0f);
    dev_.attn_sink_grad(shape_, sinks_, o_, lse_, dout_, dsinks_);
  }
  for (Tensor* grad : {&dq_, &dk_, &dv_}) dev_.round_to_precision(*grad);
}

}  // namespace minictx
