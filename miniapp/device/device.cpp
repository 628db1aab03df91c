#include "device/device.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>

#include "core/error.hpp"
#include "device/document_blocks.hpp"

namespace minictx {

Tensor Device::zeros(std::vector<int64_t> shape, DType dtype) {
  Tensor t = alloc(std::move(shape), dtype);
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

void require_column_blocks(const Tensor& dst, int64_t dst_col, const Tensor& x, int64_t x_col,
                           int64_t width) {
  require(matrix_rows(dst) == matrix_rows(x) && dst_col >= 0 && x_col >= 0 && width >= 0 &&
              dst_col + width <= matrix_cols(dst) && x_col + width <= matrix_cols(x),
          "rope_into: the column blocks are not within the tensors");
}

namespace {

// One operand of an fp32 kernel: the tensor itself when it is fp32, else an fp32 copy,
// widened from it when the kernel reads it; store() rounds a written copy back into it.
class AsF32 {
 public:
  AsF32(Device& dev, const Tensor& t, bool read = true) : dev_(dev), tensor_(t) {
    if (t.dtype() == DType::f32) {
      f32_ = t;
      return;
    }
    f32_ = dev.alloc(t.shape());
    if (read) dev.copy(f32_, t);
  }
  Tensor& operator*() { return f32_; }
  void store() {
    if (tensor_.dtype() != DType::f32) dev_.copy(tensor_, f32_);
  }

 private:
  Device& dev_;
  Tensor tensor_;  // shares the caller's storage
  Tensor f32_;
};

// gate_up's halves a and u, [rows, f] each: columns [0, f) and [f, 2f).
std::array<Tensor, 2> gate_and_up(Device& dev, const Tensor& gate_up, int64_t f) {
  const int64_t rows = matrix_rows(gate_up);
  require(matrix_cols(gate_up) == 2 * f, "swiglu: gate_up is not [rows, 2f]");
  std::array<Tensor, 2> halves{dev.alloc({rows, f}, gate_up.dtype()), dev.alloc({rows, f}, gate_up.dtype())};
  for (int half = 0; half < 2; ++half)
    dev.copy_rows(halves[size_t(half)], 0, f, gate_up, half * f, 2 * f, rows, f);
  return halves;
}

// fp32 stand-ins for the 16-bit operands of one attention call, alive for the call.
// Whole tensors are widened, so block offsets and the rows of o, lse and the gradients
// still line up with them.
class Widened {
 public:
  explicit Widened(Device& dev) : dev_(dev) {}
  const Tensor* operator()(const Tensor* t) {
    if (t == nullptr || t->dtype() == DType::f32) return t;
    return &*kept_.emplace_back(dev_, *t);
  }
  SeqBlock operator()(SeqBlock b) {
    b.tensor = (*this)(b.tensor);
    return b;
  }

 private:
  Device& dev_;
  std::deque<AsF32> kept_;  // stable addresses
};

std::vector<float> host_copy(Device& dev, const Tensor& t) {
  std::vector<float> v(size_t(t.numel()));
  dev.download(t, v.data());
  return v;
}

// Row `at`'s LSE from a host copy of an LSE tensor: its fp32 plane plus, where the device
// keeps one (Device::lse_planes), the second plane `plane` values on.
double lse_of_row(const std::vector<float>& rows, int64_t plane, size_t at) {
  const bool two = int64_t(rows.size()) > plane;
  return double(rows[at]) + (two ? double(rows[size_t(plane) + at]) : 0.0);
}

}  // namespace

void Device::upload(Tensor& dst, const float* host) {
  AsF32 dst32(*this, dst, false);
  upload_f32(*dst32, host);
  dst32.store();
}

void Device::download(const Tensor& src, float* host) {
  AsF32 src32(*this, src);
  download_f32(*src32, host);
}

double Device::dot(const Tensor& a, const Tensor& b) {
  if (reads_16bit()) return dot_kernel(a, b);
  AsF32 a32(*this, a), b32(*this, b);
  return dot_kernel(*a32, *b32);
}

void Device::gemm(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, float beta,
                  Tensor& c) {
  if (reads_16bit()) return gemm_kernel(trans_a, trans_b, alpha, a, b, beta, c);
  AsF32 a32(*this, a), b32(*this, b), c32(*this, c, beta != 0.0f);
  gemm_kernel(trans_a, trans_b, alpha, *a32, *b32, beta, *c32);
  c32.store();
}

void Device::gemm_add(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
                      const Tensor& c, Tensor& d) {
  copy(d, c);
  gemm(trans_a, trans_b, alpha, a, b, 1.0f, d);
}

void Device::rmsnorm_fwd(const Tensor& x, const Tensor& g, double eps, Tensor& y, Tensor& rstd) {
  if (reads_16bit()) return rmsnorm_fwd_kernel(x, g, eps, y, rstd);
  AsF32 x32(*this, x), g32(*this, g), y32(*this, y, false), rstd32(*this, rstd, false);
  rmsnorm_fwd_kernel(*x32, *g32, eps, *y32, *rstd32);
  y32.store();
  rstd32.store();
}

void Device::rmsnorm_bwd(const Tensor& x, const Tensor& g, const Tensor& rstd, const Tensor& dy, Tensor& dx,
                         Tensor& dg) {
  if (reads_16bit()) return rmsnorm_bwd_kernel(x, g, rstd, dy, dx, dg);
  AsF32 x32(*this, x), g32(*this, g), rstd32(*this, rstd), dy32(*this, dy), dx32(*this, dx), dg32(*this, dg);
  rmsnorm_bwd_kernel(*x32, *g32, *rstd32, *dy32, *dx32, *dg32);
  dx32.store();
  dg32.store();
}

void Device::rope(Tensor& x, int heads, const std::vector<int64_t>& positions, double theta, bool inverse) {
  if (reads_16bit()) return rope_kernel(x, heads, positions, theta, inverse);
  AsF32 x32(*this, x);
  rope_kernel(*x32, heads, positions, theta, inverse);
  x32.store();
}

void Device::rope_into(Tensor& dst, int64_t dst_col, const Tensor& x, int64_t x_col, int64_t width, int heads,
                       const std::vector<int64_t>& positions, double theta, bool inverse) {
  require_column_blocks(dst, dst_col, x, x_col, width);
  const int64_t rows = matrix_rows(x);
  Tensor rotated = alloc({rows, width});  // fp32, so that the result is rounded once
  copy_rows(rotated, 0, width, x, x_col, matrix_cols(x), rows, width);
  rope(rotated, heads, positions, theta, inverse);
  copy_rows(dst, dst_col, matrix_cols(dst), rotated, 0, width, rows, width);
}

double Device::cross_entropy(Tensor& logits, const std::vector<int64_t>& labels, float grad_scale) {
  require(logits.dtype() == DType::f32 && int64_t(labels.size()) == matrix_rows(logits),
          "cross_entropy: fp32 logits and one label per row");
  return cross_entropy_kernel(logits, labels, grad_scale);
}

double Device::cross_entropy_kernel(Tensor&, const std::vector<int64_t>&, float) {
  fail("the " + name() + " device has no cross-entropy kernel (model.vocab)");
}

void Device::swiglu_fwd(const Tensor& a, const Tensor& u, Tensor& m) {
  if (reads_16bit()) return swiglu_fwd_kernel(a, u, m);
  AsF32 a32(*this, a), u32(*this, u), m32(*this, m, false);
  swiglu_fwd_kernel(*a32, *u32, *m32);
  m32.store();
}

void Device::swiglu_bwd(const Tensor& a, const Tensor& u, const Tensor& dm, Tensor& da, Tensor& du) {
  if (reads_16bit()) return swiglu_bwd_kernel(a, u, dm, da, du);
  AsF32 a32(*this, a), u32(*this, u), dm32(*this, dm), da32(*this, da, false), du32(*this, du, false);
  swiglu_bwd_kernel(*a32, *u32, *dm32, *da32, *du32);
  da32.store();
  du32.store();
}

void Device::swiglu_fwd_packed(const Tensor& gate_up, Tensor& m) {
  const auto [a, u] = gate_and_up(*this, gate_up, matrix_cols(m));
  swiglu_fwd(a, u, m);
}

void Device::swiglu_bwd_packed(const Tensor& gate_up, const Tensor& dm, Tensor& d_gate_up) {
  const int64_t rows = matrix_rows(dm), f = matrix_cols(dm);
  const auto [a, u] = gate_and_up(*this, gate_up, f);
  require(matrix_rows(d_gate_up) == rows && matrix_cols(d_gate_up) == 2 * f,
          "swiglu: d_gate_up is not [rows, 2f]");
  Tensor da = alloc({rows, f}, d_gate_up.dtype()), du = alloc({rows, f}, d_gate_up.dtype());
  swiglu_bwd(a, u, dm, da, du);
  copy_rows(d_gate_up, 0, 2 * f, da, 0, f, rows, f);
  copy_rows(d_gate_up, f, 2 * f, du, 0, f, rows, f);
}

void Device::attn_bwd_delta(const AttnShape& s, const Tensor& o, const Tensor& dout, Tensor& delta) {
  if (reads_16bit()) return attn_bwd_delta_kernel(s, o, dout, delta);
  AsF32 o32(*this, o), dout32(*this, dout), delta32(*this, delta, false);
  attn_bwd_delta_kernel(s, *o32, *dout32, *delta32);
  delta32.store();
}

void Device::attn_fwd_block(const AttnShape& s, const AttnFwdBlock& blk) {
  Widened f32(*this);
  attn_fwd_f32(s, {f32(blk.q), f32(blk.k), f32(blk.v), blk.o, blk.lse});
}

void Device::attn_bwd_block(const AttnShape& s, const AttnBwdBlock& blk) {
  Widened f32(*this);
  attn_bwd_f32(
      s, {f32(blk.q), f32(blk.k), f32(blk.v), f32(blk.dout), blk.lse, blk.delta, blk.dq, blk.dk, blk.dv});
}

void Device::attn_sink_merge(const AttnShape& s, const Tensor& sinks, Tensor& o, Tensor& lse) {
  const std::vector<float> sink = host_copy(*this, sinks);
  std::vector<float> out = host_copy(*this, o), rows = host_copy(*this, lse);
  const int64_t dv = s.value_dim(), heads = s.heads, plane = int64_t(rows.size()) / lse_planes(),
                len = plane / (s.batch * heads);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < len; ++i) {
        const size_t at = size_t((b * heads + h) * len + i);
        const double before = lse_of_row(rows, plane, at), with_sink = sink[size_t(h)];
        const double top = std::max(before, with_sink);  // e^−∞ = 0: a row that saw no key
        const double after = top + std::log(std::exp(before - top) + std::exp(with_sink - top));
        const float keep = float(std::exp(before - after));
        float* row = out.data() + ((b * len + i) * heads + h) * dv;
        std::transform(row, row + dv, row, [keep](float x) { return x * keep; });
        rows[at] = float(after);
        if (lse_planes() > 1) rows[size_t(plane) + at] = float(after - double(rows[at]));
      }
  upload(o, out.data());
  upload(lse, rows.data());
}

void Device::attn_sink_grad(const AttnShape& s, const Tensor& sinks, const Tensor& o, const Tensor& lse,
                            const Tensor& dout, Tensor& dsinks) {
  Tensor delta = alloc_rows_of_lse(lse);
  attn_bwd_delta(s, o, dout, delta);
  const std::vector<float> sink = host_copy(*this, sinks), rows = host_copy(*this, lse),
                           d = host_copy(*this, delta);
  std::vector<float> grad = host_copy(*this, dsinks);
  const int64_t heads = s.heads, plane = int64_t(d.size()), len = plane / (s.batch * heads);
  for (int64_t h = 0; h < heads; ++h) {
    double sum = 0;  // the probability of the sink times delta, over every row of the head
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < len; ++i) {
        const size_t at = size_t((b * heads + h) * len + i);
        sum += std::exp(double(sink[size_t(h)]) - lse_of_row(rows, plane, at)) * d[at];
      }
    grad[size_t(h)] -= float(sum);
  }
  upload(dsinks, grad.data());
}

void Device::round_to_precision(Tensor& t) {
  if (precision() == DType::f32) return;
  Tensor rounded = alloc(t.shape(), precision());
  copy(rounded, t);
  copy(t, rounded);
}

void Device::attn_fwd_masked(const AttnShape& s, const AttnFwdBlock& blk) {
  if (!s.documents || kernels_mask_documents()) return attn_fwd_block(s, blk);
  attn_fwd_by_documents(*this, s, blk,
                        [this](const AttnShape& part, const AttnFwdBlock& b) { attn_fwd_block(part, b); });
}

void Device::attn_bwd_masked(const AttnShape& s, const AttnBwdBlock& blk) {
  if (!s.documents || kernels_mask_documents()) return attn_bwd_block(s, blk);
  attn_bwd_by_documents(*this, s, blk,
                        [this](const AttnShape& part, const AttnBwdBlock& b) { attn_bwd_block(part, b); });
}

// With storage partials a block is computed on its own, from the merge's identity (zero
// gradients), and its result is rounded before it joins the sums: what the sums then hold
// is what a kernel returning 16-bit blocks would have given them. With accumulator
// partials the sums are rounded again after it joins: a running accumulator of 16 bits.
void Device::attn_fwd(const AttnShape& s, const AttnFwdBlock& blk) {
  if (!rounds_partials()) return attn_fwd_masked(s, blk);
  Tensor o = alloc(blk.o->shape()), lse = alloc(blk.lse->shape());
  attn_init(o, lse);
  attn_fwd_masked(s, {blk.q, blk.k, blk.v, &o, &lse});
  round_to_precision(o);
  lse_merge(s, *blk.o, *blk.lse, o, lse);
  if (rounds_sums()) round_to_precision(*blk.o);
}

void Device::attn_bwd(const AttnShape& s, const AttnBwdBlock& blk) {
  if (!rounds_partials()) return attn_bwd_masked(s, blk);
  Tensor dq = zeros(blk.dq->shape()), dk = zeros(blk.dk->shape()), dv = zeros(blk.dv->shape());
  attn_bwd_masked(s, {blk.q, blk.k, blk.v, blk.dout, blk.lse, blk.delta, &dq, &dk, &dv});
  for (auto [sum, part] : {std::pair{blk.dq, &dq}, std::pair{blk.dk, &dk}, std::pair{blk.dv, &dv}}) {
    round_to_precision(*part);
    add(*sum, *part);
    if (rounds_sums()) round_to_precision(*sum);
  }
}

}  // namespace minictx
