#pragma once
#include <cstdint>
#include <vector>

#include "config/run_config.hpp"
#include "device/device.hpp"

namespace minictx {

// A tensor of `shape` and `dtype` on `device` holding the counter-based generator's
// U(-1, 1) values of tensor `id` (core/synthetic_data.hpp), rounded to a 16-bit dtype:
// random, non-zero benchmark inputs.
Tensor generated_tensor(Device& device, std::vector<int64_t> shape, uint64_t id, DType dtype = DType::f32);

// The attention-mode point a bench row measures (one rank, batch 1, heads = kv heads), for
// its FLOPs (model/flops.hpp) and its memory estimate (model/memory_estimate.hpp).
RunConfig attention_bench_config(int64_t seq_len, int heads, int head_dim, bool causal, int block_q,
                                 int block_k);

// One attention block over a whole sequence of S tokens (batch 1), through the Device
// interface: the tensors of the forward and, when asked, of the backward. The host and
// the cuda benches time the same calls.
class AttnProblem {
 public:
  AttnProblem(Device& device, const AttnShape& shape, int64_t seq_len, bool with_backward);

  // The mask is the shape's; the inputs stay, so one problem serves both masks.
  void set_causal(bool causal) { shape_.causal = causal; }
  void forward();
  void forward_backward();  // forward, then the delta and the backward

 private:
  SeqBlock block(const Tensor& t) const { return {&t, 0, len_, pos_.data()}; }

  Device& device_;
  AttnShape shape_;
  int64_t len_;
  std::vector<int64_t> pos_;
  Tensor q_, k_, v_, o_, lse_, dout_, delta_, dq_, dk_, dv_;
};

}  // namespace minictx
