#pragma once
#include "backends/backend.hpp"
#include "config/run_config.hpp"
#include "core/phase_timer.hpp"
#include "core/ring_timeline.hpp"
#include "device/device.hpp"

namespace minictx {

// Attention mode: the attention op alone on generated q, k, v and upstream gradient dO
// (like the USP tables): forward, and backward unless fwd_only. In a 16-bit run the
// inputs and o, dq, dk, dv hold 16-bit values (in fp32 tensors), as a 16-bit attention's
// would.
class AttentionStep {
 public:
  // timeline (may be null): told that the forward and backward walks are layer 0's.
  AttentionStep(const RunConfig& cfg, Device& device, AttentionBackend& backend, PhaseTimer& timer,
                RingTimeline* timeline = nullptr);
  void step(bool with_backward);

  const Tensor& o() const { return o_; }
  const Tensor& lse() const { return lse_; }
  const Tensor& dq() const { return dq_; }
  const Tensor& dk() const { return dk_; }
  const Tensor& dv() const { return dv_; }
  // With attention.sinks, the sink logits [H] and this rank's share of their gradient
  // (its rows' terms; the whole gradient is the sum over the ranks); empty without.
  const Tensor& sinks() const { return sinks_; }
  const Tensor& dsinks() const { return dsinks_; }

 private:
  Device& dev_;
  AttentionBackend& backend_;
  PhaseTimer& timer_;
  RingTimeline* timeline_;
  AttnShape shape_;
  Tensor q_, k_, v_, dout_, o_, lse_, dq_, dk_, dv_, sinks_, dsinks_;
};

// The shape of layer `layer`'s attention calls (its sliding window; attention mode: layer 0).
AttnShape attention_shape(const RunConfig& cfg, const SequenceLayout& layout, int layer);

// The sink logits [H] of layer `layer`, fp32 or in `dtype` (a model's weights).
Tensor make_sinks(Device& device, const RunConfig& cfg, int layer, DType dtype);

}  // namespace minictx
