#include "model/layer_stack.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/fault_seam.hpp"
#include "core/phase_names.hpp"
#include "device/sequence_slices.hpp"
#include "model/attention_step.hpp"
#include "model/shard_data.hpp"

namespace minictx {
namespace {

std::vector<int64_t> weight_shape(const ModelShape& m, Weight w) {
  const int64_t d = m.d_model, qd = int64_t(m.heads) * m.head_dim, kd = int64_t(m.kv_heads) * m.head_dim,
                vd = int64_t(m.kv_heads) * m.value_dim(), od = int64_t(m.heads) * m.value_dim();
  switch (w) {
    case Weight::g_attn:
    case Weight::g_mlp:
      return {d};
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
      return {d, m.ffn_hidden};
    case Weight::w2:
      return {m.ffn_hidden, d};
    case Weight::count:
      break;
  }
  return {};
}

}  // namespace

std::vector<Tensor*> LayerStack::LayerParams::grads() {
  std::vector<Tensor*> all;
  for (Tensor* g : {&qkv_grad, &gate_up_grad}) all.push_back(g);
  for (Tensor& g : grad) all.push_back(&g);
  all.push_back(&sinks_grad);
  all.erase(std::remove_if(all.begin(), all.end(), [](const Tensor* g) { return g->empty(); }), all.end());
  return all;
}

std::optional<LayerStack::PackedColumns> LayerStack::packed_columns(Weight w) const {
  if (cfg_.run.layer_kernels != LayerKernels::tuned) return std::nullopt;
  const ModelShape& m = cfg_.model;
  const int64_t qd = int64_t(m.heads) * m.head_dim, kd = int64_t(m.kv_heads) * m.head_dim,
                vd = int64_t(m.kv_heads) * m.value_dim();
  const PackedColumns qkv{&LayerParams::qkv, &LayerParams::qkv_grad, 0, qd + kd + vd};
  const PackedColumns gate_up{&LayerParams::gate_up, &LayerParams::gate_up_grad, 0, 2 * m.ffn_hidden};
  switch (w) {
    case Weight::wq:
      return qkv;
    case Weight::wk:
      return PackedColumns{qkv.weights, qkv.grads, qd, qkv.cols};
    case Weight::wv:
      return PackedColumns{qkv.weights, qkv.grads, qd + kd, qkv.cols};
    case Weight::w1:
      return gate_up;
    case Weight::w3:
      return PackedColumns{gate_up.weights, gate_up.grads, m.ffn_hidden, gate_up.cols};
    default:
      return std::nullopt;
  }
}

Tensor LayerStack::weight_grad(int layer, Weight w) const {
  const LayerParams& params = layers_[size_t(layer)];
  const auto packed = packed_columns(w);
  if (!packed) return params.grad[size_t(w)];
  const Tensor& grads = params.*packed->grads;
  const std::vector<int64_t> shape = weight_shape(cfg_.model, w);
  Tensor g = dev_.alloc(shape, grads.dtype());
  dev_.copy_rows(g, 0, shape[1], grads, packed->first, packed->cols, shape[0], shape[1]);
  return g;
}

LayerStack::LayerStack(const RunConfig& cfg, Device& device, Comm& comm, AttentionBackend& backend,
                       PhaseTimer& timer, RingTimeline* timeline)
    : cfg_(cfg),
      dev_(device),
      comm_(comm),
      grad_comm_(comm.split(0, comm.rank())),
      backend_(backend),
      timer_(timer),
      timeline_(timeline),
      store_(cfg.run.dtype),
      scaler_(cfg),
      grad_scale_(scaler_.scale()) {
  const ModelShape& m = cfg.model;
  const SequenceLayout& layout = backend.layout();
  for (int l = 0; l < m.layers; ++l) shapes_.push_back(attention_shape(cfg, layout, l));
  // RoPE positions: the global ones, or with packed documents each row's offset in its
  // document.
  positions_ = layout.positions(backend.part());
  if (shapes_[0].documents) positions_ = shapes_[0].documents->offsets(positions_);
  rows_ = int64_t(cfg.sequence.batch) * layout.local_len();
  first_half_ = layout.local_len() / 2;

  layers_.resize(size_t(m.layers));
  for (int l = 0; l < m.layers; ++l) {
    LayerParams& params = layers_[size_t(l)];
    for (size_t wi = 0; wi < kWeights; ++wi) {
      const Weight w = Weight(wi);
      auto shape = weight_shape(m, w);
      Tensor t = dev_.alloc(shape, store_);
      std::vector<float> host(size_t(t.numel()));
      for (size_t i = 0; i < host.size(); ++i) host[i] = float(weight_value(cfg.run.seed, l, w, shape[0], i));
      dev_.upload(t, host.data());
      const auto packed = packed_columns(w);
      if (!packed) {
        params.w[wi] = t;
        params.grad[wi] = dev_.zeros(shape, cfg.grad_dtype());
        continue;
      }
      Tensor& pack = params.*packed->weights;
      if (pack.empty()) {
        pack = dev_.alloc({m.d_model, packed->cols}, store_);
        params.*packed->grads = dev_.zeros({m.d_model, packed->cols}, cfg.grad_dtype());
      }
      dev_.copy_rows(pack, packed->first, packed->cols, t, 0, shape[1], shape[0], shape[1]);
    }
    if (cfg.attention.sinks) {
      params.sinks = make_sinks(dev_, cfg, l, store_);
      params.sinks_grad = dev_.zeros({int64_t(m.heads)}, cfg.grad_dtype());
    }
  }
  if (m.vocab > 0) {
    head_ = dev_.alloc({m.d_model, m.vocab}, store_);
    std::vector<float> host(size_t(head_.numel()));
    for (size_t i = 0; i < host.size(); ++i) host[i] = float(lm_head_value(cfg.run.seed, m.d_model, i));
    dev_.upload(head_, host.data());
    head_grad_ = dev_.zeros({m.d_model, m.vocab}, cfg.grad_dtype());
    const std::vector<int64_t> global = layout.positions(backend.part());
    for (int b = 0; b < cfg.sequence.batch; ++b)
      for (int64_t pos : global)
        labels_.push_back(pos < layout.real_len()
                              ? label_value(cfg.run.seed, uint64_t(b * layout.real_len() + pos), m.vocab)
                              : -1);
    if (fault_seam::fires(fault_seam::Stage::wrong_label))
      for (int64_t& label : labels_)
        if (label >= 0) {
          label = (label + 1) % m.vocab;
          break;
        }
  }
  x0_ = alloc_rows(m.d_model);
  fill_shard(dev_, x0_, layout, backend.part(), cfg.sequence.batch, cfg.run.seed, tensor_id::input_x,
             cfg.run.input_scale);
  dloss_dy_ = dev_.alloc({rows_, m.d_model});
  seed_backward();
  saved_.resize(size_t(m.layers));
}

// dL/dy is the loss coefficient over B·S real tokens, times the loss scale (the
// backward's seed); padded rows carry zero. With a head, each forward makes it.
void LayerStack::seed_backward() {
  if (!head_.empty()) return;
  const SequenceLayout& layout = backend_.layout();
  const double tokens = double(cfg_.sequence.batch) * double(layout.real_len());
  fill_shard(dev_, dloss_dy_, layout, backend_.part(), cfg_.sequence.batch, cfg_.run.seed,
             tensor_id::loss_weight, 1.0, scaler_.scale() / tokens);
}

Tensor LayerStack::alloc_rows(int64_t cols) { return dev_.alloc({rows_, cols}, store_); }

void LayerStack::forward_layer(int l, Activations& s, Tensor& y, Attention attention) {
  const ModelShape& m = cfg_.model;
  const LayerParams& params = layers_[size_t(l)];
  const auto& w = params.w;
  const int64_t od = int64_t(m.heads) * m.value_dim();
  s.h1 = alloc_rows(m.d_model);
  s.rstd1 = dev_.alloc({rows_});
  dev_.rmsnorm_fwd(s.x, w[size_t(Weight::g_attn)], m.rms_eps, s.h1, s.rstd1);
  project_qkv(params, s);
  if (attention == Attention::compute) {
    Tensor o = dev_.alloc({rows_, od});  // the backend merges into it in fp32
    s.lse = dev_.alloc_lse(cfg_.sequence.batch, m.heads, backend_.layout().local_len());
    {
      auto t = timer_.scope(phase::attention_fwd);
      backend_.forward(shapes_[size_t(l)], s.q, s.k, s.v, o, s.lse);
      merge_sinks(l, o, s.lse);
    }
    if (store_ == DType::f32) {
      s.o = o;
    } else {  // rounded once into the storage type
      s.o = alloc_rows(od);
      dev_.copy(s.o, o);
    }
    attention_query_rows_ += rows_;
  } else if (attention == Attention::first_half) {
    recompute_first_half(l, s);
  }
  s.x2 = alloc_rows(m.d_model);
  {
    auto t = timer_.scope(phase::gemm_fwd);
    dev_.gemm_add(false, false, 1.0f, s.o, w[size_t(Weight::wo)], s.x, s.x2);
  }
  s.h2 = alloc_rows(m.d_model);
  s.rstd2 = dev_.alloc({rows_});
  dev_.rmsnorm_fwd(s.x2, w[size_t(Weight::g_mlp)], m.rms_eps, s.h2, s.rstd2);
  project_mlp(params, s);
  y = alloc_rows(m.d_model);
  auto t = timer_.scope(phase::gemm_fwd);
  dev_.gemm_add(false, false, 1.0f, s.m, w[size_t(Weight::w2)], s.x2, y);
}

void LayerStack::project_qkv(const LayerParams& params, Activations& s) {
  const ModelShape& m = cfg_.model;
  const auto& w = params.w;
  const int64_t qd = int64_t(m.heads) * m.head_dim, kd = int64_t(m.kv_heads) * m.head_dim,
                vd = int64_t(m.kv_heads) * m.value_dim();
  s.q = alloc_rows(qd);
  s.k = alloc_rows(kd);
  s.v = alloc_rows(vd);
  if (params.qkv.empty()) {
    {
      auto t = timer_.scope(phase::gemm_fwd);
      dev_.gemm(false, false, 1.0f, s.h1, w[size_t(Weight::wq)], 0.0f, s.q);
      dev_.gemm(false, false, 1.0f, s.h1, w[size_t(Weight::wk)], 0.0f, s.k);
      dev_.gemm(false, false, 1.0f, s.h1, w[size_t(Weight::wv)], 0.0f, s.v);
    }
    dev_.rope(s.q, m.heads, positions_, m.rope_theta, false);
    dev_.rope(s.k, m.kv_heads, positions_, m.rope_theta, false);
    return;
  }
  // One GEMM, then q and k rotated out of its columns and v copied: the values of the
  // three GEMMs and the rotations in place (each rounded once into the storage type).
  const int64_t cols = qd + kd + vd;
  Tensor qkv = alloc_rows(cols);
  {
    auto t = timer_.scope(phase::gemm_fwd);
    dev_.gemm(false, false, 1.0f, s.h1, params.qkv, 0.0f, qkv);
  }
  dev_.rope_into(s.q, 0, qkv, 0, qd, m.heads, positions_, m.rope_theta, false);
  dev_.rope_into(s.k, 0, qkv, qd, kd, m.kv_heads, positions_, m.rope_theta, false);
  dev_.copy_rows(s.v, 0, vd, qkv, qd + kd, cols, rows_, vd);
}

void LayerStack::project_mlp(const LayerParams& params, Activations& s) {
  const int64_t f = cfg_.model.ffn_hidden;
  s.m = alloc_rows(f);
  if (params.gate_up.empty()) {
    s.a = alloc_rows(f);
    s.u = alloc_rows(f);
    {
      auto t = timer_.scope(phase::gemm_fwd);
      dev_.gemm(false, false, 1.0f, s.h2, params.w[size_t(Weight::w1)], 0.0f, s.a);
      dev_.gemm(false, false, 1.0f, s.h2, params.w[size_t(Weight::w3)], 0.0f, s.u);
    }
    dev_.swiglu_fwd(s.a, s.u, s.m);
    return;
  }
  s.gate_up = alloc_rows(2 * f);
  {
    auto t = timer_.scope(phase::gemm_fwd);
    dev_.gemm(false, false, 1.0f, s.h2, params.gate_up, 0.0f, s.gate_up);
  }
  dev_.swiglu_fwd_packed(s.gate_up, s.m);
}

// Under a causal mask the later half of the rows carries three quarters of the attention
// work, so it is the half kept.
LayerStack::Activations LayerStack::kept_for_recompute(const Activations& s) const {
  Activations kept;
  kept.x = s.x;
  const Checkpointing ckpt = cfg_.run.checkpointing;
  if (ckpt == Checkpointing::selective) {
    kept.o = s.o;
    kept.lse = s.lse;
  } else if (ckpt == Checkpointing::selective_half) {
    const int64_t b = cfg_.sequence.batch, h = cfg_.model.heads, lse_b = s.lse.dim(0),
                  later = backend_.layout().local_len() - first_half_;
    kept.o = slice_rows(dev_, s.o, b, first_half_, later, {b * later, matrix_cols(s.o)});
    kept.lse = slice_rows(dev_, s.lse, lse_b * h, first_half_, later, {lse_b, h, later});
  }
  return kept;
}

void LayerStack::merge_sinks(int l, Tensor& o, Tensor& lse) {
  // Once, into the merged result: never once per block (docs/algorithms.md, "Attention sinks").
  const Tensor& sinks = layers_[size_t(l)].sinks;
  if (sinks.numel() > 0) dev_.attn_sink_merge(shapes_[size_t(l)], sinks, o, lse);
}

void LayerStack::recompute_first_half(int l, Activations& s) {
  const int64_t b = cfg_.sequence.batch, h = cfg_.model.heads, len = backend_.layout().local_len();
  const int64_t n = first_half_, later = len - n;
  const int64_t od = int64_t(h) * cfg_.model.value_dim();
  Tensor o = alloc_rows(od);
  Tensor lse = dev_.alloc_lse(b, h, len);
  const int64_t lse_rows = lse.dim(0) * h;  // every plane's
  place_rows(dev_, o, b, n, later, s.o);
  place_rows(dev_, lse, lse_rows, n, later, s.lse);
  if (n > 0) {
    const Tensor q_first = slice_rows(dev_, s.q, b, 0, n, {b * n, matrix_cols(s.q)});
    Tensor o_first = dev_.alloc({b * n, od});
    Tensor lse_first = dev_.alloc_lse(b, h, n);
    {
      auto t = timer_.scope(phase::attention_fwd);
      backend_.forward_query_prefix(shapes_[size_t(l)], q_first, s.k, s.v, o_first, lse_first);
      merge_sinks(l, o_first, lse_first);
    }
    attention_query_rows_ += b * n;
    place_rows(dev_, o, b, 0, n, o_first);
    place_rows(dev_, lse, lse_rows, 0, n, lse_first);
  }
  s.o = o;
  s.lse = lse;
}

void LayerStack::backward_layer(int l, Activations& s, const Tensor& dy, Tensor& dx) {
  const ModelShape& m = cfg_.model;
  LayerParams& params = layers_[size_t(l)];
  auto& w = params.w;
  auto& g = params.grad;
  const int64_t qd = int64_t(m.heads) * m.head_dim, kd = int64_t(m.kv_heads) * m.head_dim,
                vd = int64_t(m.kv_heads) * m.value_dim(), od = int64_t(m.heads) * m.value_dim();
  // MLP block: y = x2 + swiglu(h2 w1, h2 w3) w2.
  Tensor dx2 = alloc_rows(m.d_model);
  dev_.copy(dx2, dy);
  Tensor dm = alloc_rows(m.ffn_hidden);
  {
    auto t = timer_.scope(phase::gemm_bwd);
    dev_.gemm(true, false, 1.0f, s.m, dy, 1.0f, g[size_t(Weight::w2)]);
    dev_.gemm(false, true, 1.0f, dy, w[size_t(Weight::w2)], 0.0f, dm);
  }
  const Tensor dh2 = mlp_input_grad(params, s, std::move(dm));
  dev_.rmsnorm_bwd(s.x2, w[size_t(Weight::g_mlp)], s.rstd2, dh2, dx2, g[size_t(Weight::g_mlp)]);
  // Attention block: x2 = x + attention(rope(h1 wq), rope(h1 wk), h1 wv) wo.
  Tensor dout = alloc_rows(od);
  {
    auto t = timer_.scope(phase::gemm_bwd);
    dev_.gemm(true, false, 1.0f, s.o, dx2, 1.0f, g[size_t(Weight::wo)]);
    dev_.gemm(false, true, 1.0f, dx2, w[size_t(Weight::wo)], 0.0f, dout);
  }
  // The backend accumulates the gradients in fp32.
  Tensor dq = dev_.alloc({rows_, qd}), dk = dev_.alloc({rows_, kd}), dv = dev_.alloc({rows_, vd});
  {
    auto t = timer_.scope(phase::attention_bwd);
    backend_.backward(shapes_[size_t(l)], s.q, s.k, s.v, s.o, s.lse, dout, dq, dk, dv);
    if (params.sinks.numel() > 0)
      dev_.attn_sink_grad(shapes_[size_t(l)], params.sinks, s.o, s.lse, dout, params.sinks_grad);
  }
  const Tensor dh1 = qkv_input_grad(params, s, std::move(dq), std::move(dk), std::move(dv));
  dx = dx2;
  dev_.rmsnorm_bwd(s.x, w[size_t(Weight::g_attn)], s.rstd1, dh1, dx, g[size_t(Weight::g_attn)]);
}

Tensor LayerStack::mlp_input_grad(LayerParams& params, const Activations& s, Tensor dm) {
  const int64_t f = cfg_.model.ffn_hidden;
  auto& w = params.w;
  auto& g = params.grad;
  Tensor dh2 = alloc_rows(cfg_.model.d_model);
  if (params.gate_up.empty()) {
    Tensor da = alloc_rows(f), du = alloc_rows(f);
    dev_.swiglu_bwd(s.a, s.u, dm, da, du);
    dm = Tensor();
    auto t = timer_.scope(phase::gemm_bwd);
    dev_.gemm(true, false, 1.0f, s.h2, da, 1.0f, g[size_t(Weight::w1)]);
    dev_.gemm(true, false, 1.0f, s.h2, du, 1.0f, g[size_t(Weight::w3)]);
    dev_.gemm(false, true, 1.0f, da, w[size_t(Weight::w1)], 0.0f, dh2);
    dev_.gemm(false, true, 1.0f, du, w[size_t(Weight::w3)], 1.0f, dh2);
    return dh2;
  }
  // [da | du] in one tensor: one GEMM for both weights' gradients, one for dh2 (a sum over
  // 2f in the GEMM's fp32 accumulator, not two products added in the storage type).
  Tensor d_gate_up = alloc_rows(2 * f);
  dev_.swiglu_bwd_packed(s.gate_up, dm, d_gate_up);
  dm = Tensor();
  auto t = timer_.scope(phase::gemm_bwd);
  dev_.gemm(true, false, 1.0f, s.h2, d_gate_up, 1.0f, params.gate_up_grad);
  dev_.gemm(false, true, 1.0f, d_gate_up, params.gate_up, 0.0f, dh2);
  return dh2;
}

Tensor LayerStack::qkv_input_grad(LayerParams& params, const Activations& s, Tensor dq, Tensor dk,
                                  Tensor dv) {
  const ModelShape& m = cfg_.model;
  auto& w = params.w;
  auto& g = params.grad;
  const int64_t qd = matrix_cols(dq), kd = matrix_cols(dk), vd = matrix_cols(dv);
  Tensor dh1 = alloc_rows(m.d_model);
  if (params.qkv.empty()) {
    dev_.rope(dq, m.heads, positions_, m.rope_theta, true);
    dev_.rope(dk, m.kv_heads, positions_, m.rope_theta, true);
    auto t = timer_.scope(phase::gemm_bwd);
    dev_.gemm(true, false, 1.0f, s.h1, dq, 1.0f, g[size_t(Weight::wq)]);
    dev_.gemm(true, false, 1.0f, s.h1, dk, 1.0f, g[size_t(Weight::wk)]);
    dev_.gemm(true, false, 1.0f, s.h1, dv, 1.0f, g[size_t(Weight::wv)]);
    dev_.gemm(false, true, 1.0f, dq, w[size_t(Weight::wq)], 0.0f, dh1);
    dev_.gemm(false, true, 1.0f, dk, w[size_t(Weight::wk)], 1.0f, dh1);
    dev_.gemm(false, true, 1.0f, dv, w[size_t(Weight::wv)], 1.0f, dh1);
    return dh1;
  }
  // The fp32 gradients joined into one [dq | dk | dv] in the storage type, RoPE's inverse
  // in the same pass, each rounded once and freed once joined; then one GEMM for the three
  // weights' gradients and one for dh1.
  const int64_t cols = qd + kd + vd;
  Tensor joined = alloc_rows(cols);
  dev_.rope_into(joined, 0, dq, 0, qd, m.heads, positions_, m.rope_theta, true);
  dq = Tensor();
  dev_.rope_into(joined, qd, dk, 0, kd, m.kv_heads, positions_, m.rope_theta, true);
  dk = Tensor();
  dev_.copy_rows(joined, qd + kd, cols, dv, 0, vd, rows_, vd);
  dv = Tensor();
  auto t = timer_.scope(phase::gemm_bwd);
  dev_.gemm(true, false, 1.0f, s.h1, joined, 1.0f, params.qkv_grad);
  dev_.gemm(false, true, 1.0f, joined, params.qkv, 0.0f, dh1);
  return dh1;
}

SumHandle LayerStack::start_grad_sum(int l) {
  return start_sum(layers_[size_t(l)].grads());  // the sinks' gradient with the weights'
}

SumHandle LayerStack::start_sum(const std::vector<Tensor*>& grads) {
  std::vector<ReduceBuffer> buffers;
  buffers.reserve(grads.size());
  for (Tensor* grad : grads) buffers.push_back({grad->raw(), grad->numel(), grad->dtype()});
  return grad_comm_->all_reduce_sum_start(buffers);
}

// Chunks of as many logits as y has elements (rows × d_model) unless run.loss_chunk says.
int64_t LayerStack::loss_chunk_rows() const {
  const ModelShape& m = cfg_.model;
  if (cfg_.run.loss_chunk > 0) return std::min(cfg_.run.loss_chunk, rows_);
  const int64_t chunks = std::max<int64_t>(1, (int64_t(m.vocab) + m.d_model - 1) / m.d_model);
  return (rows_ + chunks - 1) / chunks;
}

// Per chunk: logits z = y·W (fp32), then in place their gradient g·(softmax(z) − onehot),
// g = scale / (B·S); dL/dy = z'·Wᵀ and dW += yᵀ·z'.
double LayerStack::head_loss(bool with_backward) {
  const double tokens = double(cfg_.sequence.batch) * double(backend_.layout().real_len());
  const float grad = with_backward ? float(grad_scale_ / tokens) : 0.0f;
  const int64_t chunk = loss_chunk_rows();
  if (with_backward) dev_.fill(head_grad_, 0.0f);
  double loss = 0;
  for (int64_t begin = 0; begin < rows_; begin += chunk) {
    const int64_t n = std::min(chunk, rows_ - begin);
    const Tensor y = y_.rows(begin, n);
    Tensor logits = dev_.alloc({n, cfg_.model.vocab});
    {
      auto t = timer_.scope(phase::gemm_fwd);
      dev_.gemm(false, false, 1.0f, y, head_, 0.0f, logits);
    }
    loss += dev_.cross_entropy(logits, {labels_.begin() + begin, labels_.begin() + begin + n}, grad);
    if (!with_backward) continue;
    Tensor dy = dloss_dy_.rows(begin, n);
    auto t = timer_.scope(phase::gemm_bwd);
    dev_.gemm(false, true, 1.0f, logits, head_, 0.0f, dy);
    dev_.gemm(true, false, 1.0f, y, logits, 1.0f, head_grad_);
  }
  return loss / tokens;
}

double LayerStack::step(bool with_backward) {
  for (;;) {
    grad_scale_ = scaler_.scale();
    const double loss = forward(with_backward);
    if (!with_backward) return loss;
    const bool finite = backward();
    if (!scaler_.checks()) return loss;
    const bool stands = scaler_.accept(finite, loss);
    if (scaler_.scale() != grad_scale_) seed_backward();  // halved, or grown for the next step
    if (stands) return loss;
  }
}

double LayerStack::forward(bool with_backward) {
  const Checkpointing ckpt = cfg_.run.checkpointing;
  attention_query_rows_ = 0;
  Tensor x = x0_;
  double loss = 0;
  {
    auto t = timer_.scope(phase::forward);
    for (int l = 0; l < layers(); ++l) {
      Activations& s = saved_[size_t(l)];
      s = Activations{};
      s.x = x;
      label_walks(l, WalkPass::forward);
      forward_layer(l, s, x, Attention::compute);
      // Checkpointing drops what the backward can recompute.
      if (!with_backward)
        s = Activations{};
      else if (ckpt != Checkpointing::none)
        s = kept_for_recompute(s);
    }
    y_ = x;
    if (!head_.empty()) loss = head_loss(with_backward);
  }
  if (head_.empty()) loss = dev_.dot(dloss_dy_, y_) / grad_scale_;
  comm_.all_reduce_sum(&loss, 1);
  return loss;
}

bool LayerStack::backward() {
  const Checkpointing ckpt = cfg_.run.checkpointing;
  auto t = timer_.scope(phase::backward);
  for (auto& layer : layers_)
    for (Tensor* grad : layer.grads()) dev_.fill(*grad, 0.0f);
  const Attention recompute_attention = ckpt == Checkpointing::full        ? Attention::compute
                                        : ckpt == Checkpointing::selective ? Attention::kept
                                                                           : Attention::first_half;
  const bool overlap = cfg_.run.grad_reduce == GradReduce::overlap;
  std::vector<SumHandle> sums;
  // The head's gradient is whole since the forward: its sum moves under the whole backward.
  if (!head_.empty() && overlap) sums.push_back(start_sum({&head_grad_}));
  Tensor dy = dloss_dy_;
  for (int l = layers() - 1; l >= 0; --l) {
    Activations& s = saved_[size_t(l)];
    if (ckpt != Checkpointing::none) {
      auto r = timer_.scope(phase::recompute);
      label_walks(l, WalkPass::recompute);
      Tensor unused;
      forward_layer(l, s, unused, recompute_attention);
    }
    Tensor dx;
    label_walks(l, WalkPass::backward);
    backward_layer(l, s, dy, dx);
    s = Activations{};
    dy = dx;
    if (overlap) sums.push_back(start_grad_sum(l));
  }
  dx_ = dy;
  {
    // What the sums cost beyond the backward they overlapped: a group of one sums nothing,
    // and the phase stays in the results (at about zero) so that tables keep their columns.
    auto r = timer_.scope(phase::grad_allreduce);
    if (!overlap) {
      if (!head_.empty()) sums.push_back(start_sum({&head_grad_}));
      for (int l = layers() - 1; l >= 0; --l) sums.push_back(start_grad_sum(l));
    }
    for (SumHandle& h : sums) grad_comm_->wait_sum(h);
  }
  if (!scaler_.checks()) return true;
  auto c = timer_.scope(phase::grad_check);
  return gradients_finite();
}

// Inf or NaN in any weight gradient, and only that, makes the sum of their squares
// non-finite: dot accumulates in fp64, which no square of an fp32 value overflows. The
// gradients are summed over the group already, so every rank reaches the same answer
// without a message, as DDP's ranks do under GradScaler.
bool LayerStack::gradients_finite() {
  double squares = head_.empty() ? 0 : dev_.dot(head_grad_, head_grad_);
  for (auto& layer : layers_)
    for (Tensor* grad : layer.grads()) squares += dev_.dot(*grad, *grad);
  return std::isfinite(squares);
}

}  // namespace minictx
