#include "bench/attn_problem.hpp"

#include <numeric>

#include "core/synthetic_data.hpp"

namespace minictx {
namespace {

constexpr uint64_t kSeed = 1234;

}  // namespace

Tensor generated_tensor(Device& device, std::vector<int64_t> shape, uint64_t id, DType dtype) {
  Tensor t = device.alloc(std::move(shape), dtype);
  std::vector<float> host(size_t(t.numel()));
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(data_value(kSeed, id, i));
  device.upload(t, host.data());
  return t;
}

RunConfig attention_bench_config(int64_t seq_len, int heads, int head_dim, bool causal, int block_q,
                                 int block_k) {
  RunConfig cfg;
  cfg.run.mode = Mode::attention;
  cfg.sequence.length = seq_len;
  cfg.model.heads = cfg.model.kv_heads = heads;
  cfg.model.head_dim = head_dim;
  cfg.attention.causal = causal;
  cfg.attention.block_q = block_q;
  cfg.attention.block_k = block_k;
  return cfg;
}

AttnProblem::AttnProblem(Device& device, const AttnShape& shape, int64_t seq_len, bool with_backward)
    : device_(device), shape_(shape), len_(seq_len), pos_(size_t(seq_len)) {
  std::iota(pos_.begin(), pos_.end(), int64_t(0));
  shape_.real_len = seq_len;  // no padding: every key is real (0 would mask them all)
  const int64_t width = int64_t(shape.heads) * shape.head_dim;
  // The operands in the dtype the device's kernels read, as a 16-bit run's activations
  // are stored: no per-call conversion in the timing.
  const DType operands = device.operand_dtype();
  q_ = generated_tensor(device, {seq_len, width}, tensor_id::attn_q, operands);
  k_ = generated_tensor(device, {seq_len, width}, tensor_id::attn_k, operands);
  v_ = generated_tensor(device, {seq_len, width}, tensor_id::attn_v, operands);
  o_ = device.alloc({seq_len, width});
  lse_ = device.alloc_lse(1, shape.heads, seq_len);
  if (!with_backward) return;
  dout_ = generated_tensor(device, {seq_len, width}, tensor_id::attn_do, operands);
  delta_ = device.alloc({1, shape.heads, seq_len});
  dq_ = device.alloc({seq_len, width});
  dk_ = device.alloc({seq_len, width});
  dv_ = device.alloc({seq_len, width});
}

void AttnProblem::forward() {
  device_.attn_init(o_, lse_);
  device_.attn_fwd(shape_, {block(q_), block(k_), block(v_), &o_, &lse_});
}

void AttnProblem::forward_backward() {
  forward();
  device_.attn_bwd_delta(shape_, o_, dout_, delta_);
  for (Tensor* t : {&dq_, &dk_, &dv_}) device_.fill(*t, 0.0f);
  device_.attn_bwd(shape_, {block(q_), block(k_), block(v_), &dout_, &lse_, &delta_, &dq_, &dk_, &dv_});
}

}  // namespace minictx
