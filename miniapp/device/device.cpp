#include "device/device.hpp"

#include <deque>

#include "core/error.hpp"

namespace minictx {

Tensor Device::zeros(std::vector<int64_t> shape) {
  Tensor t = alloc(std::move(shape));
  fill(t, 0.0f);
  return t;
}

GemmDims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c) {
  const int64_t m = trans_a ? matrix_cols(a) : matrix_rows(a);
  const int64_t k = trans_a ? matrix_rows(a) : matrix_cols(a);
  const int64_t kb = trans_b ? matrix_cols(b) : matrix_rows(b);
  const int64_t n = trans_b ? matrix_rows(b) : matrix_cols(b);
  require(k == kb && matrix_rows(c) == m && matrix_cols(c) == n, "gemm: operand shapes do not conform");
  return {m, n, k};
}

namespace {

// fp32 stand-ins for the 16-bit operands of one attention call, alive for the call.
// Whole tensors are widened, so block offsets and the rows of o, lse and the gradients
// still line up with them.
class Widened {
 public:
  explicit Widened(Device& dev) : dev_(dev) {}
  const Tensor* operator()(const Tensor* t) {
    if (t == nullptr || t->dtype() == DType::f32) return t;
    kept_.push_back(dev_.alloc(t->shape()));
    dev_.copy(kept_.back(), *t);
    return &kept_.back();
  }
  SeqBlock operator()(SeqBlock b) {
    b.tensor = (*this)(b.tensor);
    return b;
  }

 private:
  Device& dev_;
  std::deque<Tensor> kept_;  // stable addresses
};

}  // namespace

void Device::attn_fwd(const AttnShape& s, const AttnFwdBlock& blk) {
  Widened f32(*this);
  attn_fwd_f32(s, {f32(blk.q), f32(blk.k), f32(blk.v), blk.o, blk.lse});
}

void Device::attn_bwd(const AttnShape& s, const AttnBwdBlock& blk) {
  Widened f32(*this);
  attn_bwd_f32(
      s, {f32(blk.q), f32(blk.k), f32(blk.v), f32(blk.dout), blk.lse, blk.delta, blk.dq, blk.dk, blk.dv});
}

}  // namespace minictx
