#pragma once
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "backends/backend.hpp"
#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "core/phase_timer.hpp"
#include "core/ring_timeline.hpp"
#include "core/synthetic_data.hpp"
#include "device/device.hpp"
#include "model/loss_scaler.hpp"

namespace minictx {

// The Llama-style decoder stack on this rank's tokens:
//   x → RMSNorm → QKV → RoPE → attention (the backend) → out-proj → +x
//     → RMSNorm → SwiGLU MLP → + ; loss = (1/(B·S)) Σ c ∘ y over real tokens, scaled by
//     the run's loss scale for the backward; or, with an LM head (model.vocab), the mean
//     over the real tokens of the cross-entropy of the logits y · W_head against generated
//     labels, computed in chunks of rows whose logits turn into their gradient at once, so
//     that the rows' logits never exist together (the forward then also makes dL/dy and
//     the head's weight gradient: nothing of it is left for the backward).
// Weights and the activations are stored in the run's dtype (16 bits in a bf16/fp16
// run, as a 16-bit training step keeps them); RMSNorm's 1/rms, the LSE and the
// attention's accumulators (its output as the backend merges it, dq, dk, dv) stay fp32.
// The weight gradients are accumulated and summed in RunConfig::grad_dtype(): fp32
// buffers the weight-gradient GEMMs add into (Megatron's main_grad), or the run's dtype.
// Weights are replicated; their gradients are summed over the sequence-parallel group,
// one grouped sum per layer (a bucket, as PyTorch DDP and Megatron bucket theirs) on a
// communicator of their own, started as soon as the layer's backward is done
// (run.grad_reduce: overlap) or after the whole backward (after_backward). Where the
// loss is scaled, the summed gradients are checked for Inf and NaN after each backward
// and an overflowing step is handled as LossScaler says.
class LayerStack {
 public:
  // timeline (may be null): told which layer and pass each attention call's ring walks serve.
  LayerStack(const RunConfig& cfg, Device& device, Comm& comm, AttentionBackend& backend, PhaseTimer& timer,
             RingTimeline* timeline = nullptr);

  // One training step: forward, then backward unless fwd_only, run again at a halved loss
  // scale while its gradients overflow (LossScaler). Returns the global loss.
  double step(bool with_backward);

  const Tensor& output() const { return y_; }
  // The gradients of the scaled loss: grad_scale() (the last step's loss scale) times dL/d·,
  // as a training step leaves them for its optimiser to unscale.
  const Tensor& input_grad() const { return dx_; }
  // Layer `layer`'s gradient of w, shaped as w: the tensor itself, or a copy of its columns
  // where the tuned set packs it beside others.
  Tensor weight_grad(int layer, Weight w) const;
  // With attention.sinks, layer l's sink logits [H] and their gradient (as weight_grad's);
  // empty tensors without.
  const Tensor& sinks(int layer) const { return layers_[size_t(layer)].sinks; }
  const Tensor& sinks_grad(int layer) const { return layers_[size_t(layer)].sinks_grad; }
  const Tensor& head_grad() const { return head_grad_; }  // [d_model, vocab]; empty without a head
  double grad_scale() const { return grad_scale_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  int layers() const { return int(layers_.size()); }
  // Query rows (this rank's, over all layers) the distributed attention forward ran over
  // in the last step, recompute included: checkpointing's cost in attention.
  int64_t attention_query_rows() const { return attention_query_rows_; }

 private:
  static constexpr size_t kWeights = size_t(Weight::count);
  struct LayerParams {
    std::array<Tensor, kWeights> w;  // by Weight; empty where packed
    std::array<Tensor, kWeights> grad;
    // run.layer_kernels tuned: the weights one GEMM serves side by side, wq|wk|wv
    // ([d, qd + kd + vd]) and w1|w3 ([d, 2f]), their gradients likewise; empty otherwise.
    Tensor qkv, qkv_grad, gate_up, gate_up_grad;
    Tensor sinks, sinks_grad;  // attention.sinks; empty without
    // Every gradient of the layer: what its sum over the group and the overflow check cover.
    std::vector<Tensor*> grads();
  };
  // What the backward of one layer needs.
  struct Activations {
    Tensor x, h1, rstd1, q, k, v, o, lse, x2, h2, rstd2, a, u, m;
    Tensor gate_up;  // a|u in one tensor where packed (a and u then empty)
  };
  // Where a packed weight sits: its pack (tensor and gradient) and its columns in it.
  struct PackedColumns {
    Tensor LayerParams::*weights;
    Tensor LayerParams::*grads;
    int64_t first, cols;  // the weight's first column; the pack's columns
  };

  // Where forward_layer's attention output comes from: the backend, what checkpointing
  // kept (selective), or the backend for the first half of the rows joined to the kept
  // second half (selective_half).
  enum class Attention { compute, kept, first_half };

  // [rows, cols] in the storage type.
  Tensor alloc_rows(int64_t cols);
  // Whether w is packed beside others (the tuned set), and where.
  std::optional<PackedColumns> packed_columns(Weight w) const;
  // Forward of layer l from acts.x; fills acts.
  void forward_layer(int l, Activations& acts, Tensor& y, Attention attention);
  // acts.q, k (rotated) and v from acts.h1; acts.m (with a and u, or gate_up) from acts.h2.
  void project_qkv(const LayerParams& params, Activations& acts);
  void project_mlp(const LayerParams& params, Activations& acts);
  // The MLP's dL/dh2 from dL/dm (freed once used), adding to w1's and w3's gradients.
  Tensor mlp_input_grad(LayerParams& params, const Activations& acts, Tensor dm);
  // The attention block's dL/dh1 from the attention's fp32 dq, dk and dv (each freed once
  // used), adding to wq's, wk's and wv's gradients.
  Tensor qkv_input_grad(LayerParams& params, const Activations& acts, Tensor dq, Tensor dk, Tensor dv);
  // Checkpointing: what of a layer's activations the backward's recompute starts from.
  Activations kept_for_recompute(const Activations& acts) const;
  // selective_half: acts.o/lse hold the kept later rows; recompute layer l's first half.
  void recompute_first_half(int l, Activations& acts);
  // attention.sinks: layer l's sinks joined to its merged attention output (o, lse).
  void merge_sinks(int l, Tensor& o, Tensor& lse);
  void backward_layer(int l, Activations& acts, const Tensor& dy, Tensor& dx);
  // Starts the sum of layer l's weight gradients over the group.
  SumHandle start_grad_sum(int l);
  // The forward of every layer; returns the global loss.
  double forward(bool with_backward);
  // The backward of every layer and the gradient sums; returns whether the summed weight
  // gradients are finite (checked only where the scaler checks).
  bool backward();
  bool gradients_finite();
  // dL/dy at the scaler's present scale: the loss coefficients over B·S real tokens.
  void seed_backward();
  // The LM head's loss summed over this rank's real tokens, chunk by chunk; with the
  // backward, dL/dy (at the present scale) into dloss_dy_ and the head's weight gradient.
  double head_loss(bool with_backward);
  // Rows of one chunk of the head's logits (run.loss_chunk, or automatic).
  int64_t loss_chunk_rows() const;
  // Starts the sum over the group of the gradients in `grads`.
  SumHandle start_sum(const std::vector<Tensor*>& grads);
  // Names the ring walks of the attention calls that follow for the timeline.
  void label_walks(int l, WalkPass pass) {
    if (timeline_) timeline_->set_walk(l, pass);
  }

  const RunConfig& cfg_;
  Device& dev_;
  Comm& comm_;
  // The gradient sums' own communicator: on NCCL its stream then carries nothing but
  // them, so a started sum never delays a ring transfer of the layers below.
  std::unique_ptr<Comm> grad_comm_;
  AttentionBackend& backend_;
  PhaseTimer& timer_;
  RingTimeline* timeline_;
  std::vector<AttnShape> shapes_;  // per layer: their sliding windows differ
  DType store_;                    // the storage type of weights and activations
  LossScaler scaler_;
  double grad_scale_;  // the scale of the last step's loss (the scaler's may have grown since)
  std::vector<int64_t> positions_;
  int64_t rows_ = 0;        // B · local length
  int64_t first_half_ = 0;  // local rows per batch whose attention selective_half recomputes
  std::vector<LayerParams> layers_;
  std::vector<Activations> saved_;
  // dloss_dy_: dL/dy of the last layer's output at the present scale, which seeds the backward.
  Tensor x0_, dloss_dy_, y_, dx_;
  // The LM head (model.vocab > 0): its weight [d_model, vocab], its gradient, and each
  // local row's label (−1 for padding).
  Tensor head_, head_grad_;
  std::vector<int64_t> labels_;
  int64_t attention_query_rows_ = 0;
};

}  // namespace minictx
