// The fp64 reference checked against itself: analytic gradients against central
// differences of its own forward, and forward identities of softmax attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/half_float.hpp"
#include "reference/reference.hpp"

namespace minictx::reference {
namespace {

using Vec = std::vector<double>;

// Fourth-order central differences, f'(t) ≈ [8(f(t+h) − f(t−h)) − (f(t+2h) − f(t−2h))] / 12h:
// truncation error ≈ h⁴|f⁽⁵⁾|/30 and rounding error ≈ ε|f|/h. Inputs and weights are O(1)
// or smaller and the objectives O(0.1..1), so h = 1e-3 keeps both near 1e-12 absolute.
// (The plain two-point formula needs h ≈ 1e-5 to cut its h² error, which makes the ε/h
// term ~1e-7 relative on the smaller sampled gradients: too close to the tolerance.)
// Measured worst relative error is ~4e-9, so a 1e-6 tolerance has a wide margin while a
// wrong term in a backward formula still shows up as an O(1) error.
constexpr double kStep = 1e-3;
constexpr double kRelTol = 1e-6;

// Relative error with a floor: an entry that is zero (dq of causal row 0, whose softmax
// is exactly 1) or nearly so would only measure rounding noise, so the denominator is at
// least 1e-4 of the tensor's largest gradient.
double rel_err(double fd, double analytic, double floor) {
  return std::abs(fd - analytic) / std::max(std::abs(analytic), floor);
}

double max_abs(const Vec& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// n indices from the golden-ratio sequence frac(0.5 + k/φ): spread over [0, size) with no
// stride, so the samples of a [rows, cols] weight fall in varied rows and columns (hence
// varied heads) rather than all in one column.
std::vector<size_t> samples(size_t size, size_t n) {
  const double inv_phi = (std::sqrt(5.0) - 1) / 2;
  std::vector<size_t> idx;
  for (size_t k = 0; k < n; ++k) {
    const double u = 0.5 + double(k) * inv_phi;
    idx.push_back(size_t((u - std::floor(u)) * double(size)));
  }
  return idx;
}

// Checks analytic[i] against d f / d t[i] for the sampled i, perturbing t in place.
template <class F>
void check_gradient(const std::string& what, Vec& t, const Vec& analytic, const std::vector<size_t>& idx,
                    F&& f) {
  const double floor = 1e-4 * max_abs(analytic);
  ASSERT_GT(floor, 0.0) << what << ": an all-zero gradient checks nothing";
  for (size_t i : idx) {
    const double saved = t[i];
    auto at = [&](double offset) {
      t[i] = saved + offset;
      const double v = f();
      t[i] = saved;
      return v;
    };
    const double fd = (8 * (at(kStep) - at(-kStep)) - (at(2 * kStep) - at(-2 * kStep))) / (12 * kStep);
    EXPECT_LT(rel_err(fd, analytic[i], floor), kRelTol)
        << what << "[" << i << "]: finite difference " << fd << ", analytic " << analytic[i];
  }
}

Problem tiny_model(bool causal) {
  Problem p;
  p.batch = 2;
  p.seq_len = 7;
  p.layers = 2;
  p.d_model = 16;
  p.heads = 4;
  p.kv_heads = 2;
  p.head_dim = 4;
  p.ffn_hidden = 24;
  p.causal = causal;
  p.seed = 42;
  return p;
}

class ModelGradient : public ::testing::TestWithParam<bool> {};

TEST_P(ModelGradient, MatchesFiniteDifferences) {
  const Problem p = tiny_model(GetParam());
  const ModelResult r = model(p);
  Weights w = make_weights(p);
  Vec x = make_input(p);
  EXPECT_NEAR(model_loss(p, w, x), r.loss, 1e-15);
  auto loss = [&] { return model_loss(p, w, x); };

  check_gradient("dx", x, r.dx, samples(x.size(), 8), loss);
  ASSERT_EQ(r.weight_grads.size(), size_t(p.layers));
  for (int l = 0; l < p.layers; ++l) {
    for (int k = 0; k < int(Weight::count); ++k) {
      const auto& g = r.weight_grads[size_t(l)][size_t(k)];
      auto& t = w[size_t(l)][size_t(k)];
      ASSERT_EQ(g.size(), t.size()) << weight_name(Weight(k));
      check_gradient("layer " + std::to_string(l) + " " + weight_name(Weight(k)), t, g, samples(t.size(), 4),
                     loss);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, ModelGradient, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "causal" : "full"; });

// The LM head: the cross-entropy's gradients with respect to the input, a layer's weight
// and the head's weight against finite differences of the loss.
TEST(ReferenceModel, LmHeadGradientsMatchFiniteDifferences) {
  Problem p = tiny_model(true);
  p.vocab = 11;
  const ModelResult r = model(p);
  Weights w = make_weights(p);
  Vec x = make_input(p), head = make_head(p);
  ASSERT_EQ(r.head_grad.size(), head.size());
  EXPECT_NEAR(model_loss(p, w, x, head), r.loss, 1e-15);
  auto loss = [&] { return model_loss(p, w, x, head); };
  check_gradient("dx", x, r.dx, samples(x.size(), 8), loss);
  check_gradient("w2", w[1][size_t(Weight::w2)], r.weight_grads[1][size_t(Weight::w2)], samples(24 * 16, 4),
                 loss);
  check_gradient("head", head, r.head_grad, samples(head.size(), 8), loss);
}

// The loss is the mean over the tokens of log Σ exp(logits) − the label's logit: at least
// the cross-entropy of a uniform guess over a vocabulary the logits barely separate.
TEST(ReferenceModel, LmHeadLossIsTheMeanCrossEntropy) {
  Problem p = tiny_model(false);
  p.vocab = 1000;
  const ModelResult r = model(p);
  const Vec head = make_head(p);
  const std::vector<int64_t> labels = make_labels(p);
  double sum = 0;
  for (size_t t = 0; t < labels.size(); ++t) {
    ASSERT_TRUE(labels[t] >= 0 && labels[t] < p.vocab);
    std::vector<double> z(size_t(p.vocab), 0.0);
    for (int64_t v = 0; v < p.vocab; ++v)
      for (int j = 0; j < p.d_model; ++j)
        z[size_t(v)] += r.y[t * size_t(p.d_model) + size_t(j)] * head[size_t(j * p.vocab + v)];
    double e = 0;
    for (double zv : z) e += std::exp(zv);
    sum += std::log(e) - z[size_t(labels[t])];
  }
  EXPECT_NEAR(r.loss, sum / double(labels.size()), 1e-12);
  EXPECT_GT(r.loss, 0.9 * std::log(1000.0));
}

TEST(ReferenceModel, LossIsWeightedMeanOfOutput) {
  const Problem p = tiny_model(true);
  const ModelResult r = model(p);
  const Vec c = make_loss_weights(p);
  ASSERT_EQ(r.y.size(), c.size());
  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) sum += c[i] * r.y[i];
  EXPECT_NEAR(r.loss, sum / double(p.batch * p.seq_len), 1e-15);
}

// With B = 1 the input of a shorter sequence is a prefix of the longer one's, and a causal
// stack must give the same output rows for it: no token reads a later one.
TEST(ReferenceModel, CausalOutputIgnoresLaterTokens) {
  Problem p = tiny_model(true);
  p.batch = 1;
  const Vec full = model(p).y;
  p.seq_len = 4;
  const Vec prefix = model(p).y;
  for (size_t i = 0; i < prefix.size(); ++i) EXPECT_NEAR(prefix[i], full[i], 1e-14) << i;
}

// Attention mode with GQA (2 query heads per kv head) and S = 7.
Problem tiny_attention(bool causal) {
  Problem p;
  p.batch = 2;
  p.seq_len = 7;
  p.heads = 4;
  p.kv_heads = 2;
  p.head_dim = 4;
  p.causal = causal;
  p.seed = 7;
  return p;
}

Vec generate(const Problem& p, uint64_t tensor, int heads) {
  Vec t(size_t(p.batch) * p.seq_len * heads * p.head_dim);
  for (size_t i = 0; i < t.size(); ++i) t[i] = data_value(p.seed, tensor, i);
  return t;
}

std::vector<int64_t> iota_positions(int64_t S) {
  std::vector<int64_t> pos(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) pos[size_t(s)] = s;
  return pos;
}

class AttentionGradient : public ::testing::TestWithParam<bool> {};

TEST_P(AttentionGradient, MatchesFiniteDifferences) {
  const Problem p = tiny_attention(GetParam());
  Vec q = generate(p, tensor_id::attn_q, p.heads), k = generate(p, tensor_id::attn_k, p.kv_heads),
      v = generate(p, tensor_id::attn_v, p.kv_heads);
  const Vec dout = generate(p, tensor_id::attn_do, p.heads);
  const auto pos = iota_positions(p.seq_len);
  const AttentionResult r = attention(p);
  // Σ dO∘O, whose gradient is exactly what the backward computes for upstream dO.
  auto objective = [&] {
    const Vec o = attention_forward(p, q, k, v, pos).o;
    double s = 0;
    for (size_t i = 0; i < o.size(); ++i) s += dout[i] * o[i];
    return s;
  };
  auto all = [](const Vec& t) {
    std::vector<size_t> idx(t.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    return idx;
  };
  check_gradient("dq", q, r.dq, all(q), objective);
  check_gradient("dk", k, r.dk, all(k), objective);
  check_gradient("dv", v, r.dv, all(v), objective);
}

INSTANTIATE_TEST_SUITE_P(Reference, AttentionGradient, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "causal" : "full"; });

TEST(ReferenceAttention, LseIsLogSumExpOfScaledScores) {
  for (bool causal : {true, false}) {
    const Problem p = tiny_attention(causal);
    const Vec q = generate(p, tensor_id::attn_q, p.heads), k = generate(p, tensor_id::attn_k, p.kv_heads);
    const AttentionResult r = attention(p);
    const int64_t S = p.seq_len, D = p.head_dim;
    for (int b = 0; b < p.batch; ++b)
      for (int h = 0; h < p.heads; ++h)
        for (int64_t i = 0; i < S; ++i) {
          const int g = h / (p.heads / p.kv_heads);
          double sum = 0;  // scores are O(1): no max shift needed here
          for (int64_t j = 0; j < (causal ? i + 1 : S); ++j) {
            double s = 0;
            for (int64_t e = 0; e < D; ++e)
              s += q[size_t(((b * S + i) * p.heads + h) * D + e)] *
                   k[size_t(((b * S + j) * p.kv_heads + g) * D + e)];
            sum += std::exp(s / std::sqrt(double(D)));
          }
          EXPECT_NEAR(r.lse[size_t((b * p.heads + h) * S + i)], std::log(sum), 1e-13);
        }
  }
}

TEST(ReferenceAttention, CausalFirstRowIsFirstValue) {
  const Problem p = tiny_attention(true);
  const Vec v = generate(p, tensor_id::attn_v, p.kv_heads);
  const AttentionResult r = attention(p);
  const int64_t S = p.seq_len, D = p.head_dim;
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h)
      for (int64_t e = 0; e < D; ++e)
        EXPECT_NEAR(r.o[size_t(((b * S) * p.heads + h) * D + e)],
                    v[size_t(((b * S) * p.kv_heads + h / (p.heads / p.kv_heads)) * D + e)], 1e-15);
}

TEST(ReferenceAttention, SoftmaxRowsSumToOne) {
  for (bool causal : {true, false}) {
    const Problem p = tiny_attention(causal);
    const Vec q = generate(p, tensor_id::attn_q, p.heads), k = generate(p, tensor_id::attn_k, p.kv_heads);
    const Vec ones(k.size(), 1.0);
    for (double o : attention_forward(p, q, k, ones, iota_positions(p.seq_len)).o) EXPECT_NEAR(o, 1.0, 1e-14);
  }
}

TEST(ReferenceData, InputIsDeterministicPerSeed) {
  Problem p = tiny_model(true);
  const Vec a = make_input(p);
  EXPECT_EQ(a, make_input(p));
  p.seed += 1;
  EXPECT_NE(a, make_input(p));
}

// The reference rounds its own way (frexp, nearbyint); the app's conversions are bit
// manipulations (core/half_float.hpp). They agree on random values, on ties, below the
// smallest normal and past fp16's largest value.
TEST(ReferenceData, StoredInRoundsAsTheRunDoes) {
  Vec xs = {1 + std::ldexp(1, -8),
            1 + 3 * std::ldexp(1, -8),
            -1 - std::ldexp(1, -11),
            1 + 3 * std::ldexp(1, -11),
            1.5 * std::ldexp(1, -130),
            1.3 * std::ldexp(1, -20),
            0.7 * std::ldexp(1, -25),
            65504,
            65519.9,
            65520,
            -7e4,
            std::ldexp(1.999, 127),
            0.0};
  for (size_t i = 0; i < 20000; ++i) xs.push_back(data_value(1, 99, i) * std::ldexp(1.0, int(i % 41) - 30));
  for (DType t : {DType::bf16, DType::f16})
    for (double x : xs) {
      const float app = half_float::widen(half_float::narrow(float(x), t), t);
      EXPECT_EQ(stored_in(t, x), double(app)) << x << (t == DType::bf16 ? " bf16" : " fp16");
    }
  EXPECT_EQ(stored_in(DType::f32, 0.1), 0.1);
}

TEST(ReferenceData, AttentionInputsAreStoredInTheRunsDtype) {
  Problem p = tiny_attention(true);
  const AttentionInputs wide = attention_inputs(p);
  p.inputs_dtype = DType::bf16;
  const AttentionInputs narrow = attention_inputs(p);
  ASSERT_EQ(narrow.k.size(), wide.k.size());
  for (size_t i = 0; i < wide.k.size(); ++i) EXPECT_EQ(narrow.k[i], stored_in(DType::bf16, wide.k[i]));
  EXPECT_NE(narrow.dout, wide.dout);
  // At an input scale other than 1 the inputs have 8 significant bits: bf16 holds them.
  p.input_scale = 128;
  const AttentionInputs scaled = attention_inputs(p);
  p.inputs_dtype = DType::f32;
  EXPECT_EQ(scaled.q, attention_inputs(p).q);
}

}  // namespace
}  // namespace minictx::reference
