#include "config/run_config.hpp"

#include <iterator>

#include "core/saturating.hpp"

namespace minictx {

// The spellings are the deck's, so a printed value can be pasted back into a deck.
const char* to_string(Mode m) {
  switch (m) {
    case Mode::attention:
      return "attention";
    case Mode::model:
      return "model";
  }
  return "?";
}

const char* to_string(Checkpointing c) {
  switch (c) {
    case Checkpointing::none:
      return "none";
    case Checkpointing::full:
      return "full";
    case Checkpointing::selective:
      return "selective";
    case Checkpointing::selective_half:
      return "selective_half";
  }
  return "?";
}

const char* to_string(GradReduce g) {
  switch (g) {
    case GradReduce::overlap:
      return "overlap";
    case GradReduce::after_backward:
      return "after_backward";
  }
  return "?";
}

const char* to_string(DType t) {
  switch (t) {
    case DType::f32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "fp16";
  }
  return "?";
}

// A table in the enum's order, not a switch: only the device layer branches on a kind.
const char* to_string(DeviceKind d) {
  static constexpr const char* names[] = {"kokkos", "cuda"};
  static_assert(std::size(names) == enum_size(DeviceKind{}));
  const auto i = std::size_t(d);
  return i < std::size(names) ? names[i] : "?";
}

const char* to_string(CommKind c) {
  switch (c) {
    case CommKind::mpi:
      return "mpi";
    case CommKind::nccl:
      return "nccl";
  }
  return "?";
}

const char* to_string(Reference r) {
  switch (r) {
    case Reference::fp64:
      return "fp64";
    case Reference::single_device:
      return "single-device";
  }
  return "?";
}

const char* to_string(AttentionKernels k) {
  switch (k) {
    case AttentionKernels::automatic:
      return "auto";
    case AttentionKernels::sm80:
      return "sm80";
    case AttentionKernels::sm90:
      return "sm90";
    case AttentionKernels::sm80_documents:
      return "sm80-documents";
    case AttentionKernels::sm90_documents:
      return "sm90-documents";
    case AttentionKernels::sm90_onepass:
      return "sm90-onepass";
  }
  return "?";
}

const char* to_string(AttentionPartials p) {
  switch (p) {
    case AttentionPartials::fp32:
      return "fp32";
    case AttentionPartials::storage:
      return "storage";
    case AttentionPartials::accumulator:
      return "accumulator";
  }
  return "?";
}

const char* to_string(GradReduceDtype g) {
  switch (g) {
    case GradReduceDtype::fp32:
      return "fp32";
    case GradReduceDtype::storage:
      return "storage";
  }
  return "?";
}

const char* to_string(LayerKernels k) {
  switch (k) {
    case LayerKernels::standard:
      return "standard";
    case LayerKernels::tuned:
      return "tuned";
  }
  return "?";
}

double RunConfig::loss_scale() const {
  if (run.loss_scale != RunSettings::kDynamicLossScale) return run.loss_scale;
  return run.dtype == DType::f16 ? run.initial_loss_scale : 1.0;
}

bool RunConfig::dynamic_loss_scale() const {
  return run.loss_scale == RunSettings::kDynamicLossScale && run.dtype == DType::f16;
}

bool RunConfig::checks_gradients() const {
  return run.mode == Mode::model && !run.fwd_only &&
         (run.loss_scale != RunSettings::kDynamicLossScale || run.dtype == DType::f16);
}

DType RunConfig::grad_dtype() const {
  return run.grad_reduce_dtype == GradReduceDtype::fp32 ? DType::f32 : run.dtype;
}

bool MachineConfig::measures_peak() const { return profile == measure_profile; }

int64_t ModelShape::n_params(bool sinks) const {
  // Saturating: the memory guard reads this before any deck size is bounded.
  const int64_t d = d_model, q = sat_mul(heads, head_dim), k = sat_mul(kv_heads, head_dim),
                v = sat_mul(kv_heads, value_dim()), o = sat_mul(heads, value_dim());
  int64_t per_layer = sat_mul(2, d);                                   // the two RMSNorm gains
  per_layer = sat_add(per_layer, sat_mul(d, q));                       // wq
  per_layer = sat_add(per_layer, sat_mul(d, sat_add(k, v)));           // wk, wv (GQA: kv_heads)
  per_layer = sat_add(per_layer, sat_mul(o, d));                       // wo
  if (sinks) per_layer = sat_add(per_layer, heads);                    // the sink logits
  per_layer = sat_add(per_layer, sat_mul(3, sat_mul(d, ffn_hidden)));  // w1, w3, w2 (SwiGLU)
  return sat_add(sat_mul(layers, per_layer), sat_mul(d, vocab));       // the LM head
}

}  // namespace minictx
