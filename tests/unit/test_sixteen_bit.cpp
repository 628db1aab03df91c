// 16-bit tensors on the host: the conversions (core/half_float.hpp) against independent
// roundings, the host device's converting copy/fill/add, and attention fed 16-bit
// operands, which must give exactly what fp32 operands holding the rounded values give.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/error.hpp"
#include "core/half_float.hpp"
#include "device/kokkos_device.hpp"
#include "tests/unit/device_test_support.hpp"

using namespace minictx;
using namespace minictx::test;
namespace hf = minictx::half_float;

namespace {

// Float bit patterns: random (so every exponent, mantissas and signs), plus the edges.
std::vector<float> probe_floats() {
  std::mt19937 rng(7);
  std::vector<float> v;
  v.reserve(400020);
  for (int i = 0; i < 400000; ++i) v.push_back(hf::float_of(uint32_t(rng())));
  for (float x :
       {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f,
        2.9802326e-08f, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    v.push_back(x);
  return v;
}

// bf16 by definition: of the two bf16 values around x, the nearer; on a tie the one with
// an even last mantissa bit (computed in double, without bit tricks). Past the largest
// bf16 the upper neighbour is inf, which IEEE rounding places at 2^128.
uint16_t bf16_by_definition(float x) {
  const uint32_t down = hf::bits_of(x) & 0xffff0000u;
  const uint32_t up = down + 0x10000u;  // next bf16 away from zero (may be inf)
  const double up_value = std::isinf(hf::float_of(up)) ? std::ldexp(1.0, 128) : double(hf::float_of(up));
  const double dd = std::fabs(double(x) - double(hf::float_of(down)));
  const double du = std::fabs(up_value) - std::fabs(double(x));
  if (dd < du) return uint16_t(down >> 16);
  if (du < dd) return uint16_t(up >> 16);
  return uint16_t(((down >> 16) & 1u) ? up >> 16 : down >> 16);
}

TEST(HalfFloat, EveryNon_NaN_16BitValueRoundTrips) {
  for (DType t : {DType::bf16, DType::f16})
    for (uint32_t h = 0; h < 0x10000u; ++h) {
      const float x = hf::widen(uint16_t(h), t);
      if (std::isnan(x))
        EXPECT_TRUE(std::isnan(hf::widen(hf::narrow(x, t), t))) << h;
      else
        ASSERT_EQ(hf::narrow(x, t), h) << to_string(t) << " " << h;
    }
}

TEST(HalfFloat, Bf16RoundsToNearestEven) {
  for (float x : probe_floats()) {
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(hf::from_bf16(hf::to_bf16(x))));
      continue;
    }
    if (std::isinf(x)) {
      EXPECT_EQ(hf::from_bf16(hf::to_bf16(x)), x);
      continue;
    }
    ASSERT_EQ(hf::to_bf16(x), bf16_by_definition(x)) << x;
  }
}

#ifdef __FLT16_MAX__
// The compiler's own float → _Float16 conversion (IEEE, nearest even) as the reference.
TEST(HalfFloat, F16MatchesTheCompilersConversion) {
  for (float x : probe_floats()) {
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, sizeof want);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(hf::from_f16(hf::to_f16(x))));
      continue;
    }
    ASSERT_EQ(hf::to_f16(x), want) << x;
    ASSERT_EQ(hf::from_f16(want), float(h)) << x;
  }
}
#endif

std::vector<float> host_of(const Tensor& t) {
  std::vector<float> out(size_t(t.numel()));
  Tensor f = host_device().alloc(t.shape());
  host_device().copy(f, t);
  host_device().download(f, out.data());
  return out;
}

TEST(SixteenBitTensors, ConvertingCopiesRoundOnceAndWidenExactly) {
  const std::vector<double> values = generated(6 * 10, 11);
  Tensor x = upload(host_device(), values, {6, 10});
  for (DType t : {DType::bf16, DType::f16}) {
    Tensor h = host_device().alloc({6, 10}, t);
    EXPECT_EQ(h.bytes(), 6 * 10 * 2);
    EXPECT_THROW(h.data(), Error);  // the fp32 kernels refuse it
    host_device().copy(h, x);
    const std::vector<float> back = host_of(h);
    for (size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(back[i], hf::widen(hf::narrow(float(values[i]), t), t)) << i;

    // Rows 1..3, columns 2..6 of x into rows 0..2 of a 16-bit [3, 5], and back out.
    Tensor part = host_device().alloc({3, 5}, t);
    host_device().copy_rows(part, 0, 5, x, 12, 10, 3, 5);
    Tensor wide = host_device().zeros({3, 8});
    host_device().copy_rows(wide, 1, 8, part, 0, 5, 3, 5);
    const std::vector<double> got = download(host_device(), wide);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 8; ++c) {
        const double want =
            c >= 1 && c < 6 ? hf::widen(hf::narrow(float(values[size_t(r + 1) * 10 + size_t(c + 1)]), t), t)
                            : 0;
        ASSERT_EQ(got[size_t(r) * 8 + size_t(c)], want) << r << "," << c;
      }

    // fill, and sums into a 16-bit tensor: added in fp32, rounded once.
    host_device().fill(h, 0.5f);
    host_device().add(h, x);
    const std::vector<float> sum = host_of(h);
    for (size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(sum[i], hf::widen(hf::narrow(0.5f + float(values[i]), t), t)) << i;
    Tensor y = upload(host_device(), values, {6, 10});
    host_device().add(y, h);  // fp32 += 16-bit
    const std::vector<double> y_got = download(host_device(), y);
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(y_got[i], double(float(values[i]) + sum[i])) << i;
  }
}

// attn_fwd/attn_bwd with q, k, v, dO in 16 bits against the same call on fp32 tensors
// that hold the 16-bit values: bit for bit, since widening is exact.
TEST(SixteenBitTensors, AttentionOn16BitOperandsIsAttentionOnTheirValues) {
  const int B = 2, H = 4, Hkv = 2, D = 16;
  const int64_t L = 37;
  const AttentionProblem a = attention_problem(B, H, Hkv, D, L, true, 1);
  const AttnShape s{B, H, Hkv, D, true, 1 << 30, 16, 16, {}};
  const int64_t rows = B * L;
  for (DType t : {DType::bf16, DType::f16}) {
    auto both = [&](const std::vector<double>& v, int64_t width) {
      Tensor f = upload(host_device(), v, {rows, width});
      Tensor h = host_device().alloc(f.shape(), t);
      host_device().copy(h, f);
      host_device().copy(f, h);  // f now holds the rounded values
      return std::pair{f, h};
    };
    const std::pair<Tensor, Tensor> q = both(a.q, H * D), k = both(a.k, Hkv * D), v = both(a.v, Hkv * D),
                                    dout = both(a.dout, H * D);
    const auto& pos = a.positions;
    auto run = [&](const Tensor& tq, const Tensor& tk, const Tensor& tv, const Tensor& tdo) {
      // Rows 5.. of the queries against keys 0..29: blocks that do not start at zero.
      const SeqBlock qb{&tq, 5, L - 5, pos.data() + 5}, kb{&tk, 0, 30, pos.data()},
          vb{&tv, 0, 30, pos.data()};
      Tensor o = host_device().alloc({rows, H * D}), lse = host_device().alloc_lse(B, H, L);
      host_device().attn_init(o, lse);
      host_device().attn_fwd(s, {qb, kb, vb, &o, &lse});
      Tensor delta = host_device().alloc({B, H, L});
      host_device().attn_bwd_delta(s, o, dout.first, delta);  // D from the fp32 values either way
      Tensor dq = host_device().zeros({rows, H * D}), dk = host_device().zeros({rows, Hkv * D}),
             dv = host_device().zeros({rows, Hkv * D});
      host_device().attn_bwd(s, {qb, kb, vb, &tdo, &lse, &delta, &dq, &dk, &dv});
      return std::vector{download(host_device(), o), download(host_device(), lse),
                         download(host_device(), dq), download(host_device(), dk),
                         download(host_device(), dv)};
    };
    const auto want = run(q.first, k.first, v.first, dout.first);
    const auto got = run(q.second, k.second, v.second, dout.second);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << to_string(t) << " output " << i;
  }
}

// The model's operations on 16-bit tensors against the same operations on fp32 tensors
// holding the 16-bit values, with each 16-bit result rounded once: bit for bit, since
// the device widens 16-bit operands exactly and rounds its fp32 results once.
TEST(SixteenBitTensors, ModelOperationsOn16BitTensorsAreTheFp32OnesRoundedOnce) {
  const int64_t rows = 6, cols = 8, inner = 5;
  for (DType t : {DType::bf16, DType::f16}) {
    uint64_t id = 20;
    // A 16-bit tensor and an fp32 one holding its values.
    auto both = [&](std::vector<int64_t> shape) {
      const int64_t n = shape[0] * (shape.size() > 1 ? shape[1] : 1);
      Tensor f = upload(host_device(), generated(size_t(n), id++), shape);
      Tensor h = host_device().alloc(f.shape(), t);
      host_device().copy(h, f);
      host_device().copy(f, h);
      return std::pair{f, h};
    };
    // The fp32 result rounded as a 16-bit result would be.
    auto rounded = [&](const Tensor& f) {
      Tensor h = host_device().alloc(f.shape(), t);
      host_device().copy(h, f);
      return host_of(h);
    };
    auto a = both({rows, inner}), b = both({inner, cols}), c = both({rows, cols}), x = both({rows, cols}),
         g = both({cols}), dy = both({rows, cols});

    // gemm into a fresh 16-bit C, and accumulated into one (beta = 1), with an fp32 A.
    Tensor c16 = host_device().alloc({rows, cols}, t), c32 = host_device().alloc({rows, cols});
    host_device().gemm(false, false, 1.0f, a.second, b.second, 0.0f, c16);
    host_device().gemm(false, false, 1.0f, a.first, b.first, 0.0f, c32);
    EXPECT_EQ(host_of(c16), rounded(c32)) << to_string(t) << " gemm";
    Tensor& acc16 = c.second;
    Tensor& acc32 = c.first;
    host_device().gemm(true, false, 0.5f, a.first, c.second, 1.0f, b.second);
    host_device().gemm(true, false, 0.5f, a.first, c.first, 1.0f, b.first);
    EXPECT_EQ(host_of(b.second), rounded(b.first)) << to_string(t) << " gemm, beta = 1";
    EXPECT_EQ(host_device().dot(x.second, dy.second), host_device().dot(x.first, dy.first))
        << to_string(t) << " dot";

    // RMSNorm forward and backward; the gradients accumulate into 16-bit tensors.
    Tensor y16 = host_device().alloc({rows, cols}, t), y32 = host_device().alloc({rows, cols});
    Tensor r16 = host_device().alloc({rows}), r32 = host_device().alloc({rows});
    host_device().rmsnorm_fwd(x.second, g.second, 1e-5, y16, r16);
    host_device().rmsnorm_fwd(x.first, g.first, 1e-5, y32, r32);
    EXPECT_EQ(host_of(y16), rounded(y32)) << to_string(t) << " rmsnorm_fwd";
    EXPECT_EQ(host_of(r16), host_of(r32)) << to_string(t) << " rmsnorm_fwd rstd";
    host_device().rmsnorm_bwd(x.second, g.second, r32, dy.second, acc16, g.second);
    host_device().rmsnorm_bwd(x.first, g.first, r32, dy.first, acc32, g.first);
    EXPECT_EQ(host_of(acc16), rounded(acc32)) << to_string(t) << " rmsnorm_bwd dx";
    EXPECT_EQ(host_of(g.second), rounded(g.first)) << to_string(t) << " rmsnorm_bwd dg";

    // RoPE in place (2 heads of 4), SwiGLU forward and backward.
    const std::vector<int64_t> positions = {3, 4, 5, 10, 11, 12};
    host_device().rope(x.second, 2, positions, 10000.0, false);
    host_device().rope(x.first, 2, positions, 10000.0, false);
    EXPECT_EQ(host_of(x.second), rounded(x.first)) << to_string(t) << " rope";
    Tensor m16 = host_device().alloc({rows, cols}, t), m32 = host_device().alloc({rows, cols});
    host_device().copy(y32, y16);  // the operands of both calls hold the same values again
    host_device().swiglu_fwd(y16, dy.second, m16);
    host_device().swiglu_fwd(y32, dy.first, m32);
    EXPECT_EQ(host_of(m16), rounded(m32)) << to_string(t) << " swiglu_fwd";
    Tensor da16 = host_device().alloc({rows, cols}, t), du16 = host_device().alloc({rows, cols}, t);
    Tensor da32 = host_device().alloc({rows, cols}), du32 = host_device().alloc({rows, cols});
    host_device().swiglu_bwd(y16, dy.second, m16, da16, du16);
    host_device().copy(m32, m16);
    host_device().swiglu_bwd(y32, dy.first, m32, da32, du32);
    EXPECT_EQ(host_of(da16), rounded(da32)) << to_string(t) << " swiglu_bwd da";
    EXPECT_EQ(host_of(du16), rounded(du32)) << to_string(t) << " swiglu_bwd du";

    // The backward's D from 16-bit o and dO (2 heads of 4, batch 1, 6 rows): fp32 out.
    const AttnShape s{1, 2, 2, 4, true, 1 << 30, 16, 16, {}};
    Tensor delta16 = host_device().alloc({1, 2, rows}), delta32 = host_device().alloc({1, 2, rows});
    host_device().attn_bwd_delta(s, m16, dy.second, delta16);
    host_device().attn_bwd_delta(s, m32, dy.first, delta32);
    EXPECT_EQ(host_of(delta16), host_of(delta32)) << to_string(t) << " attn_bwd_delta";
  }
}

}  // namespace
